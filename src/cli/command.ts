// The CLI's commands as data (name, usage, options, what they do) and the parsing around them:
// Node's own util.parseArgs (strict: an unknown option or a missing value is a usage error, exit
// 2), so every command's --help is written from the same table its parser uses.
import { parseArgs } from 'node:util';
import { usage } from './api.js';
import type { Context } from './context.js';

export interface Option {
  type: 'string' | 'boolean';
  short?: string;
  /** The value's name in help ("FILE"). */
  value?: string;
  description: string;
  multiple?: boolean;
  /** Shown without brackets in the usage line, and refused when missing. */
  required?: boolean;
}

export interface Parsed {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

export interface Command {
  /** Words after `switchyard`: 'status', 'nodegroups create'. */
  name: string;
  summary: string;
  /** Positionals, as they appear in the usage line ("STREAM", "[NAME]"). */
  args?: string[];
  options?: Record<string, Option>;
  /** More words for --help: what it waits for, what --json prints. */
  details?: string;
  run(ctx: Context, parsed: Parsed): Promise<void>;
}

export const GLOBAL_OPTIONS: Record<string, Option> = {
  url: { type: 'string', value: 'URL', description: 'the service (default: SWITCHYARD_URL, else the one logged in to, else http://127.0.0.1:5080)' },
  json: { type: 'boolean', description: "print the API's JSON unchanged (for scripts)" },
  quiet: { type: 'boolean', short: 'q', description: 'no progress on stderr' },
  help: { type: 'boolean', short: 'h', description: 'this help' },
};

const spec = (options: Record<string, Option>) =>
  Object.fromEntries(Object.entries(options).map(([name, o]) => [name, { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) }]));

/** Finds the command the words name (two words first: `nodegroups create`), and what is left. */
export function findCommand(commands: readonly Command[], argv: readonly string[]): { command: Command | undefined; group: string | undefined; rest: string[] } {
  // Every option any command knows, so that an option's value is never taken for a command word.
  const all: Record<string, Option> = { ...GLOBAL_OPTIONS };
  for (const c of commands) Object.assign(all, c.options);
  const { tokens } = parseArgs({ args: [...argv], options: spec(all), strict: false, allowPositionals: true, tokens: true });
  const words = tokens.filter((t) => t.kind === 'positional').slice(0, 2);
  const drop = (n: number) => {
    const indexes = new Set(words.slice(0, n).map((w) => w.index));
    return argv.filter((_, i) => !indexes.has(i));
  };
  const two = words.length === 2 ? commands.find((c) => c.name === `${words[0]!.value} ${words[1]!.value}`) : undefined;
  if (two) return { command: two, group: undefined, rest: drop(2) };
  const one = words[0] ? commands.find((c) => c.name === words[0]!.value) : undefined;
  if (one) return { command: one, group: undefined, rest: drop(1) };
  const group = words[0] && commands.some((c) => c.name.startsWith(`${words[0]!.value} `)) ? words[0].value : undefined;
  return { command: undefined, group, rest: drop(group ? 1 : 0) };
}

export function parseCommand(command: Command, argv: readonly string[]): Parsed {
  const options = { ...GLOBAL_OPTIONS, ...command.options };
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...argv], options: spec(options), strict: true, allowPositionals: true });
  } catch (err) {
    throw usage(`${(err as Error).message.replace(/\. To specify a positional argument.*$/s, '')}\n${usageLine(command)}\n(switchyard ${command.name} --help says more)`);
  }
  const values = parsed.values as Parsed['values'];
  if (values.help) return { values, positionals: parsed.positionals };
  for (const [name, o] of Object.entries(command.options ?? {})) if (o.required && values[name] === undefined) throw usage(`--${name} is required\n${usageLine(command)}`);
  const wanted = command.args ?? [];
  const min = wanted.filter((a) => !a.startsWith('[')).length;
  const max = wanted.some((a) => a.endsWith('...]')) ? Infinity : wanted.length;
  if (parsed.positionals.length < min) throw usage(`missing ${wanted.slice(parsed.positionals.length, min).join(' ')}\n${usageLine(command)}`);
  if (parsed.positionals.length > max) throw usage(`unexpected argument '${parsed.positionals[max]}'\n${usageLine(command)}`);
  return { values, positionals: parsed.positionals };
}

const optionLine = (name: string, o: Option) => `${o.short ? `-${o.short}, ` : '    '}--${name}${o.type === 'string' ? ` ${o.value ?? 'VALUE'}` : ''}`;

export function usageLine(c: Command): string {
  const opts = Object.entries(c.options ?? {}).map(([n, o]) => {
    const text = `${o.short ? `-${o.short}` : `--${n}`}${o.type === 'string' ? ` ${o.value ?? 'VALUE'}` : ''}`;
    return o.required ? text : `[${text}]`;
  });
  return `usage: switchyard ${c.name}${c.args?.length ? ` ${c.args.join(' ')}` : ''}${opts.length ? ` ${opts.join(' ')}` : ''}`;
}

function optionsHelp(options: Record<string, Option>): string[] {
  const rows = Object.entries(options).map(([n, o]) => [optionLine(n, o), o.description] as const);
  const width = Math.max(...rows.map(([l]) => l.length));
  return rows.map(([l, d]) => `  ${l.padEnd(width)}  ${d}`);
}

export function commandHelp(c: Command): string {
  return [
    usageLine(c),
    '',
    c.summary,
    ...(c.details ? ['', c.details] : []),
    ...(c.options && Object.keys(c.options).length ? ['', 'options:', ...optionsHelp(c.options)] : []),
    '',
    'global options:',
    ...optionsHelp(GLOBAL_OPTIONS),
  ].join('\n');
}

export function overview(commands: readonly Command[], group?: string): string {
  const listed = commands.filter((c) => !group || c.name.startsWith(`${group} `));
  const width = Math.max(...listed.map((c) => c.name.length + (c.args?.length ? c.args.join(' ').length + 1 : 0)));
  return [
    group ? `usage: switchyard ${group} COMMAND [options]` : 'usage: switchyard COMMAND [options]',
    '',
    group ? `commands of '${group}':` : 'Switchyard from the command line: the public REST API, for people (tables) and scripts (--json).',
    ...(group ? [] : ['', 'commands:']),
    ...listed.map((c) => `  ${`${c.name}${c.args?.length ? ` ${c.args.join(' ')}` : ''}`.padEnd(width)}  ${c.summary}`),
    '',
    'global options:',
    ...optionsHelp({ ...GLOBAL_OPTIONS, version: { type: 'boolean', description: 'the version of this program' } }),
    '',
    'exit codes: 0 done, 1 the service answered with a failure, 2 usage error, 3 service not reachable,',
    '            4 not authorised (log in again), 5 gave up waiting (--timeout)',
    '',
    `'switchyard COMMAND --help' says more about each; docs/cli.md has them all.`,
  ].join('\n');
}
