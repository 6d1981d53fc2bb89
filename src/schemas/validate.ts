// Compiled schema checks that explain themselves: every failure becomes {path, message} with a
// readable path (`streams[0].videoBR`) and one message per field, for API errors (docs/api.md)
// and for config errors at start (docs/configuration.md).
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { pointerSegments, readablePath } from './json-pointer.js';

export interface FieldError {
  path: string;
  message: string;
  /** JSON pointer into the checked value, for messages that quote what was given. */
  pointer: string;
}

export interface Checker<T> {
  readonly schema: TSchema;
  check(value: unknown): value is T;
  /** Fills `default`s in place (where the value is an object) and returns the value. */
  withDefaults(value: unknown): unknown;
  /** Converts strings to the numbers and booleans the schema asks for (query strings). */
  convert(value: unknown): unknown;
  explain(value: unknown, prefix?: string): FieldError[];
}

function schemaAt(root: TSchema, schemaPath: string): Record<string, unknown> | undefined {
  let node: unknown = root;
  for (const segment of pointerSegments(schemaPath.replace(/^#/, ''))) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[segment];
  }
  return node !== null && typeof node === 'object' ? (node as Record<string, unknown>) : undefined;
}

/** Whether a schema declares a `default` anywhere (a property named "default" is not one). */
export function declaresDefaults(schema: unknown): boolean {
  if (Array.isArray(schema)) return schema.some(declaresDefaults);
  if (schema === null || typeof schema !== 'object') return false;
  for (const [key, sub] of Object.entries(schema)) {
    if (key === 'default') return true;
    if (key === 'properties' || key === 'patternProperties' || key === '$defs') {
      if (Object.values(sub as object).some(declaresDefaults)) return true;
    } else if (declaresDefaults(sub)) return true;
  }
  return false;
}

export function compile<T>(schema: TSchema): Checker<T> {
  const validator = Compile(schema);
  // Filling defaults walks the whole value: not worth it on a hot path (heartbeats) with none to fill.
  const defaults = declaresDefaults(schema);
  return {
    schema,
    check: (value: unknown): value is T => validator.Check(value),
    withDefaults: (value) => (defaults ? validator.Default(value) : value),
    convert: (value) => validator.Convert(value),
    explain(value, prefix = '') {
      const raw = validator.Errors(value);
      const byPath = new Map<string, FieldError>();
      // Alternatives (anyOf) fail once per branch; one message per field, naming what was
      // expected, reads better than a list of every branch's complaint.
      const unions = new Set(raw.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath));
      for (const e of raw) {
        if (e.keyword === 'additionalProperties' && raw.some((o) => o.keyword === 'boolean' && o.instancePath.startsWith(`${e.instancePath}/`))) continue;
        const path = e.instancePath;
        let message = e.message;
        if (e.keyword === 'boolean') message = 'is not an allowed field';
        else if (e.keyword === 'pattern' || e.keyword === 'format') {
          // A regex reads badly in an error; the field's description says the same in words.
          const at = schemaAt(schema, e.schemaPath);
          const described = at?.['x-expected'] ?? at?.description;
          if (typeof described === 'string') message = `must be ${described}`;
        } else if (e.keyword === 'required') {
          const missing = (e.params as { requiredProperties?: string[] }).requiredProperties ?? [];
          for (const name of missing) {
            const p = `${path}/${name}`;
            if (!byPath.has(p)) byPath.set(p, { path: readablePath(p, prefix), message: 'is required', pointer: p });
          }
          continue;
        } else if (unions.has(path)) {
          const union = schemaAt(schema, e.keyword === 'anyOf' ? e.schemaPath : e.schemaPath.replace(/\/anyOf\/[0-9]+.*$/, ''));
          const allowed = (union?.anyOf as Array<{ const?: unknown }> | undefined)?.map((b) => b.const);
          const expected = union?.['x-expected'] ?? union?.description;
          message =
            typeof expected === 'string'
              ? `must be ${expected}`
              : allowed?.every((a) => a !== undefined)
                ? `must be one of ${allowed.map((a) => JSON.stringify(a)).join(', ')}`
                : 'does not match any allowed form';
        }
        if (!byPath.has(path)) byPath.set(path, { path: readablePath(path, prefix), message, pointer: path });
      }
      return [...byPath.values()];
    },
  };
}

/**
 * A converter for a flat query schema, made once per route: strings become the booleans and
 * numbers the schema asks for (what the schema library's generic conversion does, without
 * walking the schema on every request). Values that do not convert stay strings, for the check
 * to refuse with its message.
 */
export function compileQueryConverter(schema: TSchema): (raw: Record<string, string>) => Record<string, unknown> {
  const props = ((schema as { properties?: Record<string, { type?: string }> }).properties ?? {}) as Record<string, { type?: string }>;
  const kinds = new Map(Object.entries(props).map(([k, v]) => [k, v.type]));
  const NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/;
  return (raw) => {
    const out: Record<string, unknown> = {};
    for (const key in raw) {
      const v = raw[key]!;
      const kind = kinds.get(key);
      if (kind === 'boolean') out[key] = v === 'true' ? true : v === 'false' ? false : v;
      else if ((kind === 'integer' || kind === 'number') && NUMBER.test(v)) out[key] = Number(v);
      else out[key] = v;
    }
    return out;
  };
}
