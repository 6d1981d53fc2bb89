// SDP as WHIP and WHEP carry it (docs/webrtc.md), checked before anything reads it: an offer
// from the network is hostile, so its size, its lines and its shape are bounded here, for the
// control plane's proxy and for every node engine alike. Pure: text in, verdicts and text out.

/** The largest offer or answer accepted: a browser's offer with audio, video and every candidate is under 16 KiB. */
export const MAX_SDP_BYTES = 64 * 1024;
/** The largest trickle-ice-sdpfrag (a PATCH): a few candidates. */
export const MAX_FRAGMENT_BYTES = 16 * 1024;
const MAX_LINES = 2000;
const MAX_LINE = 4096;
const MAX_MEDIA = 16;

export const SDP_TYPE = 'application/sdp';
export const FRAGMENT_TYPE = 'application/trickle-ice-sdpfrag';

export type SdpVerdict = { ok: true } | { ok: false; reason: string };

/** Whether a Content-Type header names `type` (parameters such as charset allowed). */
export function isContentType(header: string | undefined, type: string): boolean {
  return (header ?? '').split(';')[0]!.trim().toLowerCase() === type;
}

/** Lines of an SDP text, CRLF or LF. */
const linesOf = (text: string) => text.split(/\r?\n/).filter((l) => l !== '');

/**
 * Whether `text` has the shape of an SDP offer a WHIP or WHEP client sends: `v=0` first, printable
 * lines of `x=` form, at least one and at most a few media sections, each bounded.
 */
export function checkOffer(text: string): SdpVerdict {
  if (Buffer.byteLength(text) > MAX_SDP_BYTES) return { ok: false, reason: `the offer is over ${MAX_SDP_BYTES} bytes` };
  const lines = linesOf(text);
  if (lines[0] !== 'v=0') return { ok: false, reason: 'not an SDP offer: it must begin with v=0' };
  if (lines.length > MAX_LINES) return { ok: false, reason: `the offer has more than ${MAX_LINES} lines` };
  let media = 0;
  for (const line of lines) {
    if (line.length > MAX_LINE) return { ok: false, reason: `a line of the offer is over ${MAX_LINE} characters` };
    // Printable text only: no NUL, no control characters a parser might trip on.
    if (!/^[a-z]=[\x20-\x7e\u00a0-\uffff]*$/.test(line)) return { ok: false, reason: 'the offer has a line that is not of the form x=… in printable text' };
    if (line.startsWith('m=')) media++;
  }
  if (media === 0) return { ok: false, reason: 'the offer has no media section (m=)' };
  if (media > MAX_MEDIA) return { ok: false, reason: `the offer has more than ${MAX_MEDIA} media sections` };
  return { ok: true };
}

/** One candidate a client trickles in a PATCH. */
export interface TrickledCandidate {
  candidate: string;
  mid: string | null;
}

export type Fragment = { ok: true; ufrag: string | null; pwd: string | null; candidates: TrickledCandidate[]; end: boolean } | { ok: false; reason: string };

/**
 * A trickle-ice-sdpfrag (RFC 8840) as a WHIP/WHEP client PATCHes it: its ICE credentials, the
 * candidates under each `a=mid`, and whether gathering ended. Bounded like an offer.
 */
export function parseFragment(text: string): Fragment {
  if (Buffer.byteLength(text) > MAX_FRAGMENT_BYTES) return { ok: false, reason: `the fragment is over ${MAX_FRAGMENT_BYTES} bytes` };
  const lines = linesOf(text);
  if (lines.length > 200) return { ok: false, reason: 'the fragment has more than 200 lines' };
  let ufrag: string | null = null;
  let pwd: string | null = null;
  let mid: string | null = null;
  let end = false;
  const candidates: TrickledCandidate[] = [];
  for (const line of lines) {
    if (line.length > 1024 || !/^[a-z]=[\x20-\x7e]*$/.test(line)) return { ok: false, reason: 'the fragment has a line that is not of the form x=… in printable ASCII' };
    if (line.startsWith('a=ice-ufrag:')) ufrag = line.slice(12);
    else if (line.startsWith('a=ice-pwd:')) pwd = line.slice(10);
    else if (line.startsWith('a=mid:')) mid = line.slice(6);
    else if (line.startsWith('a=candidate:')) candidates.push({ candidate: line.slice(2), mid });
    else if (line === 'a=end-of-candidates') end = true;
  }
  return { ok: true, ufrag, pwd, candidates, end };
}

/** The ICE username fragment of a session description (its first). */
export function ufragOf(sdp: string): string | null {
  const m = /^a=ice-ufrag:(.+)$/m.exec(sdp);
  return m ? m[1]!.trim() : null;
}

/**
 * An answer's host candidates on `bound` only (engines that gather on every interface
 * advertise addresses they do not listen on when bound to one: docs/webrtc.md), with that address
 * rewritten to `advertised` (a node's public address in front of its private one, as Janus's
 * nat_1_1_mapping does).
 */
export function candidatesOn(sdp: string, bound: string, advertised = bound): string {
  const eol = sdp.includes('\r\n') ? '\r\n' : '\n';
  const out: string[] = [];
  for (const line of sdp.split(eol)) {
    if (!line.startsWith('a=candidate:')) {
      out.push(line);
      continue;
    }
    const parts = line.split(' ');
    // a=candidate:<foundation> <component> <transport> <priority> <address> <port> typ <type> …
    if (bound !== '0.0.0.0' && bound !== '::' && parts[4] !== bound) continue;
    if (bound !== advertised && parts[4] === bound) parts[4] = advertised;
    out.push(parts.join(' '));
  }
  return out.join(eol);
}
