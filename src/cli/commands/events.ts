// events tail: what the service says happened (GET /as/v1/events), live, resumed after a cut.
import type { Command } from '../command.js';
import { usage } from '../api.js';
import { describe, follow } from '../follow.js';
import { out } from '../table.js';

const tail: Command = {
  name: 'events tail',
  summary: 'follow events as they happen (node states, streams, scaling, platform progress)',
  options: {
    since: { type: 'string', value: 'N', description: 'replay the kept events after number N first (0: all of them)' },
    type: { type: 'string', short: 't', value: 'PREFIXES', description: 'only these types, comma-separated prefixes: node.,scaling.' },
    group: { type: 'string', short: 'g', value: 'GROUP', description: 'only events of this node group' },
    'no-follow': { type: 'boolean', description: 'stop after the events already logged (with --since)' },
  },
  details: [
    'One line per event; with --json one JSON object per line, each exactly as the API sends it.',
    'A stream cut by the network or a restart resumes where it was (Last-Event-ID). Ctrl-C stops.',
  ].join('\n'),
  async run(ctx, { values }) {
    const sinceRaw = values.since as string | undefined;
    if (sinceRaw !== undefined && !/^[0-9]{1,15}$/.test(sinceRaw)) throw usage(`--since ${JSON.stringify(sinceRaw)}: expected an event number (0 for every kept event)`);
    const since = sinceRaw === undefined ? undefined : Number(sinceRaw);
    if (values['no-follow'] && since === undefined) throw usage('--no-follow needs --since N');
    const controller = new AbortController();
    const stop = () => controller.abort();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    let last = Infinity;
    const prefixes = (values.type as string | undefined)?.split(',');
    // --no-follow stops at the log's last event, whatever its type: the service filters only a followed stream.
    const serverTypes = values['no-follow'] ? undefined : (values.type as string | undefined);
    try {
      for await (const e of follow(ctx, {
        signal: controller.signal,
        ...(since !== undefined ? { since } : {}),
        ...(serverTypes ? { types: serverTypes } : {}),
        onConnect: (id) => {
          // With --no-follow, the log's last id when the stream opened is where to stop.
          if (last === Infinity) last = id;
          if (values['no-follow'] && (since ?? 0) >= last) controller.abort();
        },
      })) {
        const wanted = (!values.group || ('group' in e && e.group === values.group)) && (!prefixes || prefixes.some((p) => e.type.startsWith(p)));
        if (wanted) out(ctx.jsonOut ? JSON.stringify(e) : describe(e));
        if (values['no-follow'] && e.seq >= last) break;
      }
    } finally {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    }
  },
};

export const eventCommands = [tail];
