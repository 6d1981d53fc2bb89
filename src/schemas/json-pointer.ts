// JSON pointers (RFC 6901) as people read them and as code follows them. Apart from the schema
// checks (validate.ts), which load TypeBox: the supervisor's thread shows Terraform's refusals with
// readablePath and must not load a schema library to do so.

/** A JSON pointer's segments, unescaped (RFC 6901: `~1` is `/`, `~0` is `~`). */
export function pointerSegments(pointer: string): string[] {
  return pointer
    .split('/')
    .slice(1)
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/**
 * `/streams/0/name` → `streams[0].name`, under an optional prefix such as `body`: the one way a
 * pointer is shown to people (API errors, config errors, Terraform's refusals).
 */
export function readablePath(pointer: string, prefix = ''): string {
  let out = prefix;
  for (const part of pointerSegments(pointer)) {
    if (/^[0-9]+$/.test(part)) out += `[${part}]`;
    else out += out === '' ? part : `.${part}`;
  }
  return out;
}

/** The value at a JSON pointer, for messages that show what was given. */
export function valueAt(value: unknown, pointer: string): unknown {
  let node = value;
  for (const segment of pointerSegments(pointer)) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[segment];
  }
  return node;
}
