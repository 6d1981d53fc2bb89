// Reading Janus's counters over HTTP (src/agent/webrtc/janus/admin-stats.ts) from an admin API that
// misbehaves: a real HTTP server on the Janus tests' loopback range that answers what no Janus
// should (nothing at all, not JSON, errors, too much). A round always ends, never throws, reads
// what answered, logs a run of failures once; the real Janus's answers are in janus-engine.test.ts.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { AdminStats, type ReadableHandle } from '../../src/agent/webrtc/janus/admin-stats.js';
import { within } from '../helpers/janus.js';

const HOST = '127.5.0.50';

/** An admin API whose answer to each handle (by its id in the path) the test picks. */
async function adminApi(t: { teardown(fn: () => Promise<void>): void }, answer: (handle: string, body: string, res: ServerResponse) => void) {
  const asked: string[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => {
      const handle = req.url?.split('/').at(-1) ?? '';
      asked.push(handle);
      answer(handle, body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
  t.teardown(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://${HOST}:${(server.address() as AddressInfo).port}/admin`, asked };
}

const json = (res: ServerResponse, value: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value));
const counting = (inBytes: number, outBytes: number) => ({ janus: 'success', info: { webrtc: { media: { v: { stats: { in: { bytes: inBytes }, out: { bytes: outBytes } } } } } } });

/** A reader whose round deadline is a bound (nothing is asserted of its length) unless the test hangs the API on purpose. */
function stats(url: string | null, o: { roundMs?: number; concurrency?: number } = {}) {
  const logs: string[] = [];
  const s = new AdminStats({
    admin: () => (url ? { url, secret: 'the-admin-secret' } : null),
    log: (msg, extra) => logs.push(`${msg} ${JSON.stringify(extra ?? {})}`),
    roundMs: o.roundMs ?? 20_000,
    concurrency: o.concurrency ?? 2,
  });
  return { s, logs };
}

const handle = (id: string, stream: string, counts: 'in' | 'out', janusHandle: number): ReadableHandle => ({ id, stream, counts, janusSession: 7, janusHandle });

test('each handle’s answer on its own: the good ones counted, a gone handle quietly skipped, junk and errors logged once for the run', async (t) => {
  const api = await adminApi(t, (h, body, res) => {
    t.like(JSON.parse(body), { janus: 'handle_info', admin_secret: 'the-admin-secret' });
    if (h === '1') return json(res, counting(5000, 0));
    if (h === '2') return json(res, counting(0, 700));
    if (h === '3') return json(res, { janus: 'error', error: { code: 459, reason: 'No such handle' } });
    if (h === '4') return res.writeHead(200).end('<html>not janus</html>');
    if (h === '5') return json(res, { janus: 'error', error: { code: 403, reason: 'Unauthorized request (wrong or missing secret/token)' } });
    if (h === '6') return json(res, { janus: 'success', info: { webrtc: { media: { v: { stats: { out: { bytes: 'lots' } } } } } } });
    if (h === '7') return json(res, { ...counting(1e6, 1e6), padding: 'x'.repeat(300_000) });
    res.writeHead(500).end();
  });
  const { s, logs } = stats(api.url);
  const handles = [
    handle('p', 'cam', 'in', 1),
    handle('v', 'cam', 'out', 2),
    handle('gone', 'cam', 'out', 3),
    handle('junk', 'cam', 'out', 4),
    handle('denied', 'cam', 'out', 5),
    handle('odd', 'other', 'out', 6),
    handle('huge', 'cam', 'in', 7),
  ];
  await s.poll(handles);
  t.deepEqual(s.of('cam'), { bytesIn: 5000, bytesOut: 700 });
  t.deepEqual(s.of('other'), { bytesIn: 0, bytesOut: 0 }, 'an answer of the right kind with odd counters counts zero');
  t.deepEqual(api.asked.toSorted(), ['1', '2', '3', '4', '5', '6', '7']);
  t.is(logs.length, 1, logs.join('\n'));
  t.regex(logs[0]!, /could not read janus counters/);
  // The same failures again: not logged again.
  await s.poll(handles);
  t.is(logs.length, 1);
});

test('handles that are not Janus ids are not asked for; a Janus that is down is not asked at all', async (t) => {
  const api = await adminApi(t, (_h, _b, res) => json(res, counting(1, 1)));
  const { s } = stats(api.url);
  await s.poll([{ ...handle('a', 'cam', 'in', 1), janusSession: -1 }, handle('b', 'cam', 'in', Number.NaN), handle('c', 'cam', 'in', 2 ** 60)]);
  t.deepEqual(api.asked, []);
  const down = stats(null);
  await down.s.poll([handle('a', 'cam', 'in', 1)]);
  t.is(down.s.of('cam'), undefined);
});

test('an admin API that never answers: the round ends at its deadline with what did answer; the next round asks the unread first', async (t) => {
  let hang = true;
  const api = await adminApi(t, (h, _b, res) => {
    if (h === '1') return json(res, counting(1000, 0));
    if (!hang) return json(res, counting(0, 400));
    // Never answered (until the test ends).
  });
  // One call at a time, so that which handles a round reached is known: the publisher, then a viewer that hangs.
  const { s, logs } = stats(api.url, { roundMs: 2000, concurrency: 1 });
  const handles = [handle('p', 'cam', 'in', 1), handle('v1', 'cam', 'out', 2), handle('v2', 'cam', 'out', 3), handle('v3', 'cam', 'out', 4)];
  await within(10_000, 'a round against a hung admin API', s.poll(handles));
  t.deepEqual(s.of('cam'), { bytesIn: 1000, bytesOut: 0 });
  t.is(logs.length, 1);
  t.regex(logs[0]!, /no answer within 2000 ms/);
  // Janus answers again: the handles left unread are read, and the failure's end is logged.
  hang = false;
  api.asked.length = 0;
  await within(10_000, 'a round', s.poll(handles));
  t.deepEqual(api.asked, ['2', '3', '4', '1'], 'the handles not read last time first');
  t.deepEqual(s.of('cam'), { bytesIn: 1000, bytesOut: 1200 }, 'the publisher added nothing new');
  t.regex(logs.at(-1)!, /janus counters read again/);
});
