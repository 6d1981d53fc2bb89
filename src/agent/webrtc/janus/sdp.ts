// SDP as the Janus engine rewrites it (docs/webrtc.md, "Janus nodes"). Pure: text in, text out.
//
// - WHIP: a publisher's `a=setup:actpass` becomes `a=setup:active`, so that Janus answers
//   `passive` and the client starts DTLS; with Janus as the DTLS client its first ClientHello
//   often arrives before the client listens and is retransmitted a second later.
// - WHEP: Janus 1.1.2 ignores a subscriber's offer and sends its own (1.1.4 takes the offer). The
//   engine bridges the two offers: the client's answer is Janus's offer made to look like an answer
//   to the client's (the client's mids, `setup:passive`), and Janus's answer is the client's offer
//   made to look like an answer to Janus's (Janus's mids, `setup:active`). Both sides started as
//   ICE controlling; RFC 8445's role conflict (487) settles it. Payload types are not rewritten
//   (Janus sends what it offered), so a codec is taken only where both offered it under the same
//   number: the engine makes the mountpoint with the viewer's numbers (viewerPayloadTypes).

/** One m= section: its kind (`video`, `audio`, `application`) and its lines, the m= line first. */
export interface MediaSection {
  kind: string;
  lines: string[];
}

export interface Sdp {
  session: string[];
  media: MediaSection[];
}

export class SdpError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SdpError';
  }
}

const MAX_SDP = 64 * 1024;

export function parseSdp(text: string): Sdp {
  if (text.length > MAX_SDP) throw new SdpError(`the SDP is over ${MAX_SDP} characters`);
  const lines = text.split(/\r?\n/).filter((l) => l.length > 0);
  if (lines[0] !== 'v=0') throw new SdpError('the SDP does not start with v=0');
  const sdp: Sdp = { session: [], media: [] };
  for (const line of lines) {
    if (!/^[a-z]=/.test(line)) throw new SdpError(`not an SDP line: ${JSON.stringify(line.slice(0, 80))}`);
    if (line.startsWith('m=')) {
      const kind = line.slice(2).split(' ')[0] ?? '';
      if (!/^[a-z]{1,32}$/.test(kind)) throw new SdpError(`not a media kind: ${JSON.stringify(kind)}`);
      sdp.media.push({ kind, lines: [line] });
    } else if (sdp.media.length > 0) {
      sdp.media[sdp.media.length - 1]!.lines.push(line);
    } else {
      sdp.session.push(line);
    }
  }
  if (sdp.media.length === 0) throw new SdpError('the SDP has no m= section');
  return sdp;
}

export function serializeSdp(sdp: Sdp): string {
  return `${[...sdp.session, ...sdp.media.flatMap((m) => m.lines)].join('\r\n')}\r\n`;
}

/** The value of the first `a=<name>:` (or bare `a=<name>`) line, or null. */
export function attribute(lines: readonly string[], name: string): string | null {
  for (const l of lines) {
    if (l === `a=${name}`) return '';
    if (l.startsWith(`a=${name}:`)) return l.slice(name.length + 3);
  }
  return null;
}

const isAttr = (l: string, name: string) => l === `a=${name}` || l.startsWith(`a=${name}:`);

export function midOf(section: MediaSection): string | null {
  return attribute(section.lines, 'mid');
}

const DIRECTIONS = ['sendrecv', 'sendonly', 'recvonly', 'inactive'] as const;
type Direction = (typeof DIRECTIONS)[number];

export function directionOf(section: MediaSection, session: readonly string[] = []): Direction {
  for (const lines of [section.lines, session]) for (const d of DIRECTIONS) if (lines.includes(`a=${d}`)) return d;
  return 'sendrecv';
}

/** The port of the m= line: 0 for a rejected section. */
export function portOf(section: MediaSection): number {
  return Number(section.lines[0]!.split(' ')[1]);
}

/** WHIP: `a=setup:actpass` → `a=setup:active` (the publisher takes the DTLS client's part). */
export function preferActiveSetup(offer: string): string {
  return offer.replace(/^a=setup:actpass$/gm, 'a=setup:active');
}

export function hasEndOfCandidates(sdp: string): boolean {
  return /^a=end-of-candidates\r?$/m.test(sdp);
}

/** An ICE candidate as Janus's trickle takes it. */
export interface Candidate {
  sdpMid: string;
  sdpMLineIndex: number;
  candidate: string;
}

/** A trickle-ice-sdpfrag (RFC 8840) of a PATCH: its candidates, whether it ends the gathering, and its ICE credentials. */
export interface TrickleFragment {
  ufrag: string | null;
  pwd: string | null;
  candidates: Candidate[];
  complete: boolean;
}

export function parseTrickleFragment(text: string): TrickleFragment {
  if (text.length > MAX_SDP) throw new SdpError(`the fragment is over ${MAX_SDP} characters`);
  const out: TrickleFragment = { ufrag: null, pwd: null, candidates: [], complete: false };
  let index = -1;
  let mid: string | null = null;
  for (const line of text.split(/\r?\n/)) {
    if (line === '') continue;
    if (!/^[a-z]=/.test(line)) throw new SdpError(`not an SDP line: ${JSON.stringify(line.slice(0, 80))}`);
    if (line.startsWith('m=')) {
      index++;
      mid = null;
    } else if (line.startsWith('a=mid:')) {
      mid = line.slice(6);
    } else if (line.startsWith('a=ice-ufrag:')) {
      out.ufrag = line.slice(12);
    } else if (line.startsWith('a=ice-pwd:')) {
      out.pwd = line.slice(10);
    } else if (line.startsWith('a=candidate:')) {
      if (mid === null && index < 0) throw new SdpError('a candidate outside any m= section');
      out.candidates.push({ sdpMid: mid ?? String(index), sdpMLineIndex: Math.max(index, 0), candidate: line.slice(2) });
    } else if (line === 'a=end-of-candidates') {
      out.complete = true;
    }
  }
  return out;
}

/** A codec of an m= section: payload type, `name/clock[/channels]` (lower case), and its apt for rtx. */
interface Codec {
  pt: string;
  rtpmap: string;
  apt: string | null;
}

/** The value of `a=<name>:<pt> <value>` for one payload type, or null. */
function perPayloadType(lines: readonly string[], name: string, pt: string): string | null {
  const prefix = `a=${name}:${pt} `;
  const line = lines.find((l) => l.startsWith(prefix));
  return line === undefined ? null : line.slice(prefix.length);
}

function codecsOf(section: MediaSection): Codec[] {
  const formats = section.lines[0]!.split(' ').slice(3);
  return formats.map((pt) => ({
    pt,
    rtpmap: (perPayloadType(section.lines, 'rtpmap', pt) ?? '').toLowerCase(),
    apt: /(?:^|;)\s*apt=(\d+)/.exec(perPayloadType(section.lines, 'fmtp', pt) ?? '')?.[1] ?? null,
  }));
}

/**
 * The payload types both sections can carry: same number, same codec. An rtx format is kept only
 * with the format it repairs.
 */
export function commonPayloadTypes(a: MediaSection, b: MediaSection): string[] {
  const theirs = new Map(codecsOf(b).map((c) => [c.pt, c]));
  const same = codecsOf(a).filter((c) => c.rtpmap !== '' && theirs.get(c.pt)?.rtpmap === c.rtpmap);
  const kept = new Set(same.filter((c) => !c.rtpmap.startsWith('rtx/')).map((c) => c.pt));
  return same.filter((c) => kept.has(c.pt) || (c.rtpmap.startsWith('rtx/') && c.apt !== null && kept.has(c.apt) && theirs.get(c.pt)?.apt === c.apt)).map((c) => c.pt);
}

/** The payload types a viewer's offer receives VP8 and Opus under (its first receiving section of each kind); null where it has none. */
export function viewerPayloadTypes(offer: string): { video: number | null; audio: number | null } {
  const sdp = parseSdp(offer);
  const find = (kind: 'video' | 'audio', codec: string): number | null => {
    for (const m of sdp.media) {
      const d = directionOf(m, sdp.session);
      if (m.kind !== kind || portOf(m) === 0 || d === 'sendonly' || d === 'inactive') continue;
      const c = codecsOf(m).find((x) => x.rtpmap.startsWith(`${codec}/`));
      if (c) return Number(c.pt);
    }
    return null;
  };
  return { video: find('video', 'vp8'), audio: find('audio', 'opus') };
}

/** Lines of the ICE and DTLS transport: with BUNDLE, one for the whole session, carried in every accepted section. */
const TRANSPORT = ['ice-ufrag', 'ice-pwd', 'ice-options', 'fingerprint', 'candidate', 'end-of-candidates', 'setup', 'ice-lite'];
const isTransport = (l: string) => TRANSPORT.some((n) => isAttr(l, n));

function transportOf(sdp: Sdp): string[] {
  const session = sdp.session.filter(isTransport);
  const first = sdp.media.find((m) => portOf(m) !== 0 && m.lines.some((l) => isAttr(l, 'ice-ufrag'))) ?? sdp.media.find((m) => portOf(m) !== 0);
  const media = first ? first.lines.filter(isTransport) : [];
  // Session-level lines hold where the section says nothing of its own.
  return [...media, ...session.filter((l) => !media.some((m) => m.split(':')[0] === l.split(':')[0]))].filter((l) => !isAttr(l, 'setup'));
}

/** A section rebuilt: its m= line with only `pts`, its non-transport lines (those of other payload types dropped), then `transport`. */
function rebuild(from: MediaSection, pts: readonly string[], mid: string, setup: 'active' | 'passive', direction: Direction, transport: readonly string[]): MediaSection {
  const [m, ...rest] = from.lines;
  const head = m!.split(' ').slice(0, 3);
  const keep = new Set(pts);
  const perPt = /^a=(rtpmap|fmtp|rtcp-fb):(\d+|\*)[ ]/;
  const body = rest.filter((l) => {
    if (isTransport(l) || isAttr(l, 'mid') || isAttr(l, 'extmap') || DIRECTIONS.some((d) => l === `a=${d}`)) return false;
    const pt = perPt.exec(l)?.[2];
    return pt === undefined || pt === '*' || keep.has(pt);
  });
  return {
    kind: from.kind,
    lines: [[...head, ...pts].join(' '), ...body.filter((l) => l.startsWith('c=')), `a=mid:${mid}`, `a=${direction}`, ...body.filter((l) => !l.startsWith('c=')), ...transport, `a=setup:${setup}`],
  };
}

/** A section refused in an answer: port 0, the offer's first format, its mid. */
function rejected(offered: MediaSection, mid: string | null): MediaSection {
  const [, , proto, first] = offered.lines[0]!.split(' ');
  return { kind: offered.kind, lines: [`m=${offered.kind} 0 ${proto} ${first ?? '0'}`, 'c=IN IP4 0.0.0.0', ...(mid !== null ? [`a=mid:${mid}`] : []), 'a=inactive'] };
}

/** The direction an answer takes for what the offer's direction asks (RFC 3264 §6.1). */
function answering(offered: Direction): Direction {
  return offered === 'sendonly' ? 'recvonly' : offered === 'recvonly' ? 'sendonly' : offered === 'sendrecv' ? 'sendrecv' : 'inactive';
}

function bundled(session: readonly string[], mids: readonly string[]): string[] {
  const rest = session.filter((l) => !l.startsWith('a=group:BUNDLE') && !isTransport(l) && !isAttr(l, 'extmap') && !isAttr(l, 'extmap-allow-mixed'));
  return mids.length > 0 ? [...rest, `a=group:BUNDLE ${mids.join(' ')}`] : rest;
}

export interface BridgedOffers {
  /** The answer to give the client (WHEP's 201 body). */
  toClient: string;
  /** The answer to give Janus (`start` with this jsep). */
  toJanus: string;
  /** Client mid → Janus mid and m-line, for the client's trickled candidates. */
  mids: Map<string, { mid: string; index: number }>;
}

/**
 * Bridges a viewer's offer and Janus's offer for the same session (see the top of this file):
 * each client section takes the first Janus section of its kind not yet taken that shares a
 * codec with it; the rest are refused in both answers. Null (with why) when no media is left.
 */
export function bridgeOffers(clientOffer: string, janusOffer: string): BridgedOffers | { refused: string } {
  const client = parseSdp(clientOffer);
  const janus = parseSdp(janusOffer);
  const taken = new Set<number>();
  const pairs: Array<{ c: number; j: number; pts: string[] } | null> = client.media.map((c) => {
    if (portOf(c) === 0) return null;
    const wants = directionOf(c, client.session);
    if (wants === 'sendonly' || wants === 'inactive') return null;
    for (const [j, section] of janus.media.entries()) {
      if (taken.has(j) || section.kind !== c.kind || portOf(section) === 0) continue;
      const pts = commonPayloadTypes(section, c);
      if (pts.length === 0) continue;
      taken.add(j);
      return { c: client.media.indexOf(c), j, pts };
    }
    return null;
  });
  const accepted = pairs.filter((p) => p !== null);
  if (accepted.length === 0) {
    const offered = janus.media
      .map(
        (m) =>
          `${m.kind} ${codecsOf(m)
            .map((c) => `${c.rtpmap} as ${c.pt}`)
            .join(', ')}`,
      )
      .join('; ');
    return { refused: `the offer shares no receivable media with this node, which sends ${offered} (payload types as given: this engine does not renumber them)` };
  }
  const clientTransport = transportOf(client);
  const janusTransport = transportOf(janus);
  const mids = new Map<string, { mid: string; index: number }>();
  const jMid = (j: number) => midOf(janus.media[j]!) ?? String(j);
  const cMid = (c: number) => midOf(client.media[c]!) ?? String(c);
  for (const p of accepted) mids.set(cMid(p.c), { mid: jMid(p.j), index: p.j });

  const toClient: Sdp = {
    session: bundled(
      janus.session,
      accepted.map((p) => cMid(p.c)),
    ),
    media: client.media.map((c, i) => {
      const p = pairs[i];
      if (!p) return rejected(c, midOf(c));
      return rebuild(janus.media[p.j]!, p.pts, cMid(i), 'passive', answering(directionOf(c, client.session)), janusTransport);
    }),
  };
  const byJanus = new Map(accepted.map((p) => [p.j, p]));
  const toJanus: Sdp = {
    session: bundled(
      client.session,
      janus.media.map((_, j) => (byJanus.has(j) ? jMid(j) : null)).filter((m) => m !== null),
    ),
    media: janus.media.map((section, j) => {
      const p = byJanus.get(j);
      if (!p) return rejected(section, midOf(section));
      return rebuild(client.media[p.c]!, p.pts, jMid(j), 'active', answering(directionOf(section, janus.session)), clientTransport);
    }),
  };
  return { toClient: serializeSdp(toClient), toJanus: serializeSdp(toJanus), mids };
}
