// The configuration reference (docs/configuration.md), generated from the config schema itself:
// every field, its type, default, range and meaning, and the environment variables that
// override it. `npm run docs:config` writes it; a unit test fails when the file is stale.
import type { TSchema } from 'typebox';
import { ENV_FIELDS } from './load.js';
import { ConfigSchema } from './schema.js';
import { NodeGroupConfig } from './node-group-schema.js';

type S = TSchema & {
  type?: string;
  anyOf?: S[];
  const?: unknown;
  default?: unknown;
  description?: string;
  properties?: Record<string, S>;
  patternProperties?: Record<string, S>;
  items?: S;
  required?: string[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  deprecated?: boolean;
};

/** Environment variables that are not a config field's override. */
const OTHER_ENV: ReadonlyArray<[string, string]> = [
  ['SWITCHYARD_CONFIG', 'the config file (default: config/default.json of the installation)'],
  ['SWITCHYARD_ADMIN_PASSWORD', "the admin's password (12–1024 characters); never from a file"],
  ['SWITCHYARD_JWT_SECRET', 'the HS256 signing secret (at least 32 bytes); default: generated once and kept in the data directory'],
  ['SWITCHYARD_JWT_PRIVATE_KEY', 'the ES256 signing key (PEM, EC P-256), with auth.jwtAlgorithm "ES256"; default: generated once and kept'],
  ['SWITCHYARD_METRICS_TOKEN', 'a secret (32–4096 characters) a scraper may send to /as/v1/metrics instead of an admin token (docs/observability.md)'],
  ['SWITCHYARD_COMPAT_RED5SM2', '`on` turns on compat.red5sm2.enabled (docs/migrating-from-red5-sm2.md)'],
];

const isDuration = (s: S) =>
  !!s.anyOf &&
  s.anyOf.some((b) => b.type === 'integer') &&
  s.anyOf.some((b) => b.type === 'string' && typeof (b as { pattern?: string }).pattern === 'string' && (b as { pattern: string }).pattern.includes('ms|s|m|h|d'));

function typeOf(s: S): string {
  if (isDuration(s)) return 'duration';
  if (s.anyOf) {
    if (s.anyOf.every((b) => 'const' in b)) return s.anyOf.map((b) => `\`${JSON.stringify(b.const)}\``).join(', ');
    return s.anyOf.map(typeOf).join(' or ');
  }
  if (s.type === 'array') return `list of ${s.items?.type === 'object' && s.items.properties ? 'objects' : typeOf(s.items ?? {})}`;
  if (s.type === 'object') return s.patternProperties ? 'map' : 'object';
  return s.type ?? 'any';
}

function rangeOf(s: S): string {
  const parts: string[] = [];
  if (s.minimum !== undefined && s.maximum !== undefined) parts.push(`${s.minimum}–${s.maximum}`);
  else if (s.minimum !== undefined) parts.push(`≥ ${s.minimum}`);
  else if (s.maximum !== undefined) parts.push(`≤ ${s.maximum}`);
  if (s.exclusiveMinimum !== undefined) parts.push(`> ${s.exclusiveMinimum}`);
  if (s.maxLength !== undefined) parts.push(`${s.minLength ?? 0}–${s.maxLength} characters`);
  if (s.maxItems !== undefined) parts.push(`${s.minItems ?? 0}–${s.maxItems} items`);
  return parts.join(', ');
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const defaultOf = (s: S) =>
  s.default === undefined || (typeof s.default === 'object' && s.default !== null && !Array.isArray(s.default) && Object.keys(s.default).length === 0) ? '' : `\`${JSON.stringify(s.default)}\``;

interface Row {
  path: string;
  s: S;
  required: boolean;
}

/** The leaves and inner objects of an object schema, in order, with dotted paths; lists of objects become sections of their own. */
function rows(prefix: string, object: S, sections: Array<[string, S]>): Row[] {
  const out: Row[] = [];
  const required = new Set(object.required ?? []);
  let properties = Object.entries(object.properties ?? {});
  // Alike members (the roles: origin, edge, relay, transcoder) are shown once, as <one of them>.
  const shapes = new Set(properties.map(([, p]) => JSON.stringify(p)));
  if (properties.length > 2 && shapes.size === 1) properties = [[`<${properties.map(([k]) => k).join(', ')}>`, properties[0]![1]]];
  for (const [name, s] of properties) {
    if (s.deprecated) continue;
    const path = prefix ? `${prefix}.${name}` : name;
    if (s.type === 'array' && s.items?.type === 'object' && s.items.properties) {
      out.push({ path, s, required: required.has(name) });
      sections.push([`${path}[]`, s.items]);
    } else if (s.type === 'object' && s.properties) {
      out.push({ path, s, required: required.has(name) });
      out.push(...rows(path, s, sections));
    } else {
      out.push({ path, s, required: required.has(name) });
    }
  }
  return out;
}

function table(title: string, object: S, env: Map<string, string>): string[] {
  const sections: Array<[string, S]> = [];
  const lines = [`## ${title}`, ''];
  if (object.description) lines.push(`${object.description[0]!.toUpperCase()}${object.description.slice(1)}.`, '');
  lines.push('| field | type | default | range | meaning |', '|---|---|---|---|---|');
  for (const r of rows('', object, sections)) {
    const sentence = r.s.description ? `${r.s.description[0]!.toUpperCase()}${r.s.description.slice(1)}.` : '';
    // Required only where nothing fills it in: fields with a default are filled before the check.
    const required = r.required && r.s.default === undefined;
    const meaning = [sentence, env.has(r.path) ? `Environment: \`${env.get(r.path)}\`.` : '', required ? '**Required.**' : ''].filter(Boolean).join(' ');
    lines.push(`| \`${r.path}\` | ${cell(typeOf(r.s))} | ${cell(defaultOf(r.s))} | ${cell(rangeOf(r.s))} | ${cell(meaning)} |`);
  }
  lines.push('');
  for (const [path, s] of sections) lines.push(...table(`\`${title === 'Top level' ? '' : `${title.replace(/`/g, '')}.`}${path}\``.replace('``', '`'), s, new Map()));
  return lines;
}

export function configurationReference(): string {
  const env = new Map(ENV_FIELDS.map((f) => [f.path.join('.'), f.env]));
  const top = { ...(ConfigSchema as S), properties: Object.fromEntries(Object.entries((ConfigSchema as S).properties!).filter(([k]) => k !== 'nodeGroups')) };
  return [
    '# Configuration reference',
    '',
    '<!-- Generated from src/config/schema.ts by `npm run docs:config`; a unit test fails when it is stale. -->',
    '',
    'One JSON file (`SWITCHYARD_CONFIG`, default `config/default.json`), with the environment laid',
    'over it, validated at start: an invalid value stops the start with a message that names the field,',
    'the value and what was expected. A node group has the same schema in the file and in',
    '`POST /as/v1/nodegroups`. Durations take milliseconds or strings such as `"500ms"`, `"10s"`, `"5m"`,',
    '`"1h"`.',
    '',
    '## Environment variables',
    '',
    '| variable | meaning |',
    '|---|---|',
    ...OTHER_ENV.map(([name, meaning]) => `| \`${name}\` | ${meaning} |`),
    ...ENV_FIELDS.map((f) => `| \`${f.env}\` | overrides \`${f.path.join('.')}\` |`),
    '',
    ...table('Top level', top, env),
    ...table('`nodeGroups[]`', NodeGroupConfig as S, new Map()),
  ].join('\n');
}
