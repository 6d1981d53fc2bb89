// Red5 Stream Manager 2.0 names a stream by a "guid": `scope/name`, or `scope/room/name` for a
// stream in a room. Switchyard names it by the node group (whose scope is fixed) and a stream name
// of 1–128 characters of [A-Za-z0-9._~-] not starting with a dot. The mapping, both ways
// (docs/migrating-from-red5-sm2.md):
//
//   live/cam1        ⇄  cam1
//   live/room1/cam1  ⇄  room1~cam1
//
// `~` joins a room to its stream: our names allow it and SM2's clients never use it, so a guid
// segment may not contain one and the mapping stays reversible. Pure: no I/O.
import { STREAM_NAME_RE } from '../../domain/vocabulary.js';

/** Joins a room segment to its stream's name. */
export const ROOM_SEPARATOR = '~';

/** One segment of a guid: SM2's names, less the room separator; never `.`, `..` or hidden. */
export const SEGMENT_PATTERN = '^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$';
const SEGMENT_RE = new RegExp(SEGMENT_PATTERN);
export const SEGMENT_DESCRIPTION = '1–128 characters of [A-Za-z0-9._-], not starting with a dot';

export interface Guid {
  scope: string;
  room?: string;
  name: string;
}

export type Parsed = { ok: true; stream: string } | { ok: false; errors: Array<{ path: string; message: string }> };

/**
 * The stream name a guid stands for in a group of `scope`: a segment that does not fit, or a
 * scope that is not the group's, is named (path.scope, path.room, path.name) for a 400.
 */
export function streamOf(guid: Guid, scope: string): Parsed {
  const errors: Array<{ path: string; message: string }> = [];
  if (guid.scope !== scope) errors.push({ path: 'path.scope', message: `must be the node group's scope '${scope}'` });
  for (const part of ['room', 'name'] as const) {
    const value = guid[part];
    if (value !== undefined && !SEGMENT_RE.test(value)) errors.push({ path: `path.${part}`, message: `must be ${SEGMENT_DESCRIPTION}` });
  }
  if (errors.length > 0) return { ok: false, errors };
  const stream = guid.room === undefined ? guid.name : `${guid.room}${ROOM_SEPARATOR}${guid.name}`;
  if (!STREAM_NAME_RE.test(stream)) return { ok: false, errors: [{ path: 'path.name', message: 'with its room makes a stream name over 128 characters' }] };
  return { ok: true, stream };
}

/** A guid written as one string (`live/room1/cam1`), as bodies carry it; null when it is not one. */
export function splitGuid(text: string): Guid | null {
  const parts = text.split('/');
  if (parts.length === 2) return { scope: parts[0]!, name: parts[1]! };
  if (parts.length === 3) return { scope: parts[0]!, room: parts[1]!, name: parts[2]! };
  return null;
}

/** The guid SM2's clients know a stream of ours by: the first `~` marks its room. */
export function guidOf(scope: string, stream: string): string {
  const at = stream.indexOf(ROOM_SEPARATOR);
  return at < 0 ? `${scope}/${stream}` : `${scope}/${stream.slice(0, at)}/${stream.slice(at + 1)}`;
}

/**
 * The greatest key below `name` that no stream name can fall between: a list's cursor that makes
 * its first entry `name` itself, when that stream exists (the actors list in key order from a
 * cursor, and have no call for one stream).
 */
export function cursorBefore(name: string): string {
  const last = name.charCodeAt(name.length - 1);
  return `${name.slice(0, -1)}${String.fromCharCode(last - 1)}\uffff`;
}
