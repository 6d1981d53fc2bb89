// The Janus engine's SDP rewriting (src/agent/webrtc/janus/sdp.ts), as properties over generated
// offers: the WHIP setup munging, the WHEP bridge of a viewer's offer and Janus's offer, and the
// trickle fragments of PATCH.
import test from 'ava';
import fc from 'fast-check';
import {
  attribute,
  bridgeOffers,
  commonPayloadTypes,
  directionOf,
  hasEndOfCandidates,
  midOf,
  parseSdp,
  parseTrickleFragment,
  portOf,
  preferActiveSetup,
  SdpError,
  serializeSdp,
  viewerPayloadTypes,
} from '../../src/agent/webrtc/janus/sdp.js';

interface CodecSpec {
  pt: number;
  name: string;
  clock: number;
}
interface SectionSpec {
  kind: 'audio' | 'video';
  mid: string;
  codecs: CodecSpec[];
  rtx: boolean;
  direction: 'sendrecv' | 'sendonly' | 'recvonly' | 'inactive';
  rejected: boolean;
}
interface OfferSpec {
  sections: SectionSpec[];
  ufrag: string;
  fingerprint: string;
  candidates: string[];
  endOfCandidates: boolean;
  /** ICE and DTLS lines at session level instead of in each section. */
  sessionLevelTransport: boolean;
  ssrc: number | null;
}

const VIDEO = [
  { name: 'VP8', clock: 90000 },
  { name: 'VP9', clock: 90000 },
  { name: 'H264', clock: 90000 },
];
const AUDIO = [
  { name: 'opus', clock: 48000 },
  { name: 'PCMU', clock: 8000 },
];

const section = (kind: 'audio' | 'video'): fc.Arbitrary<Omit<SectionSpec, 'mid'>> =>
  fc.record({
    kind: fc.constant(kind),
    codecs: fc.uniqueArray(
      fc.record({ pt: fc.integer({ min: 96, max: 127 }), codec: fc.constantFrom(...(kind === 'video' ? VIDEO : AUDIO)) }).map(({ pt, codec }) => ({ pt, ...codec })),
      { minLength: 1, maxLength: 3, selector: (c) => c.pt },
    ),
    rtx: fc.boolean(),
    direction: fc.constantFrom('sendrecv', 'sendonly', 'recvonly', 'inactive'),
    rejected: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
  });

const token = fc.stringMatching(/^[A-Za-z0-9+/]{4,24}$/);
const offerSpec: fc.Arbitrary<OfferSpec> = fc.record({
  sections: fc
    .array(fc.oneof(section('video'), section('audio')), { minLength: 1, maxLength: 4 })
    .chain((ss) => fc.uniqueArray(fc.stringMatching(/^[a-z0-9]{1,3}$/), { minLength: ss.length, maxLength: ss.length }).map((mids) => ss.map((s, i) => ({ ...s, mid: mids[i]! })))),
  ufrag: token,
  fingerprint: fc.stringMatching(/^([0-9A-F]{2}:){7}[0-9A-F]{2}$/),
  candidates: fc.array(
    fc.tuple(fc.integer({ min: 1, max: 254 }), fc.integer({ min: 1024, max: 65535 })).map(([h, p]) => `candidate:1 1 udp 2130706431 10.213.0.${h} ${p} typ host`),
    { maxLength: 3 },
  ),
  endOfCandidates: fc.boolean(),
  sessionLevelTransport: fc.boolean(),
  ssrc: fc.option(fc.integer({ min: 1, max: 2 ** 32 - 1 })),
});

function render(o: OfferSpec, setup = 'actpass'): string {
  const transport = [`a=ice-ufrag:${o.ufrag}`, `a=ice-pwd:${o.ufrag}${o.ufrag}pwd`, `a=fingerprint:sha-256 ${o.fingerprint}`];
  const live = o.sections.filter((s) => !s.rejected);
  const lines = ['v=0', 'o=- 1 1 IN IP4 0.0.0.0', 's=-', 't=0 0', ...(live.length > 0 ? [`a=group:BUNDLE ${live.map((s) => s.mid).join(' ')}`] : []), 'a=msid-semantic: WMS *'];
  if (o.sessionLevelTransport) lines.push(...transport);
  for (const s of o.sections) {
    const pts = s.codecs.map((c) => c.pt);
    const rtx = s.rtx && s.kind === 'video' ? s.codecs.map((c) => ({ pt: c.pt - 64, apt: c.pt })) : [];
    lines.push(`m=${s.kind} ${s.rejected ? 0 : 9} UDP/TLS/RTP/SAVPF ${[...pts, ...rtx.map((r) => r.pt)].join(' ')}`, 'c=IN IP4 0.0.0.0');
    if (!o.sessionLevelTransport) lines.push(...transport);
    lines.push(`a=setup:${setup}`, `a=mid:${s.mid}`, 'a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid', `a=${s.direction}`, 'a=rtcp-mux');
    for (const c of s.codecs) lines.push(`a=rtpmap:${c.pt} ${c.name}/${c.clock}${s.kind === 'audio' && c.name === 'opus' ? '/2' : ''}`, `a=rtcp-fb:${c.pt} nack`);
    for (const r of rtx) lines.push(`a=rtpmap:${r.pt} rtx/90000`, `a=fmtp:${r.pt} apt=${r.apt}`);
    if (o.ssrc !== null) lines.push(`a=ssrc:${o.ssrc} cname:x`);
    if (!o.sessionLevelTransport) {
      lines.push(...o.candidates.map((c) => `a=${c}`));
      if (o.endOfCandidates) lines.push('a=end-of-candidates');
    }
  }
  return `${lines.join('\r\n')}\r\n`;
}

/** Janus's offer of a mountpoint: what the engine's mountpoints carry (video VP8 96 'v', audio opus 111 'a'), sendonly. */
const janusOffer = (o: Partial<OfferSpec> = {}) =>
  render({
    sections: [
      { kind: 'video', mid: 'v', codecs: [{ pt: 96, name: 'VP8', clock: 90000 }], rtx: false, direction: 'sendonly', rejected: false },
      { kind: 'audio', mid: 'a', codecs: [{ pt: 111, name: 'opus', clock: 48000 }], rtx: false, direction: 'sendonly', rejected: false },
    ],
    ufrag: 'JANUS',
    fingerprint: 'AA:AA:AA:AA:AA:AA:AA:AA',
    candidates: ['candidate:1 1 udp 2015363583 10.213.0.3 40575 typ host'],
    endOfCandidates: true,
    sessionLevelTransport: false,
    ssrc: 4242,
    ...o,
  });

const transportLines = (lines: readonly string[]) => lines.filter((l) => /^a=(ice-ufrag|ice-pwd|fingerprint|candidate|end-of-candidates):?/.test(l));

test('parse and serialize keep every line, in order', (t) => {
  fc.assert(
    fc.property(offerSpec, (o) => {
      const text = render(o);
      t.is(serializeSdp(parseSdp(text)), text);
      t.is(parseSdp(text).media.length, o.sections.length);
    }),
  );
});

test('what is not SDP is refused with an SdpError, never a crash', (t) => {
  fc.assert(
    fc.property(fc.string({ maxLength: 300 }), (junk) => {
      try {
        parseSdp(junk);
      } catch (err) {
        t.true(err instanceof SdpError);
      }
    }),
  );
  t.throws(() => parseSdp('v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\n'), { instanceOf: SdpError, message: /no m= section/ });
  t.throws(() => parseSdp(`v=0\r\n${'a=x\r\n'.repeat(20_000)}`), { instanceOf: SdpError, message: /over/ });
});

test('WHIP: actpass becomes active, and nothing else changes; twice is once', (t) => {
  fc.assert(
    fc.property(offerSpec, fc.constantFrom('actpass', 'active', 'passive'), (o, setup) => {
      const text = render(o, setup);
      const out = preferActiveSetup(text);
      const before = text.split('\r\n');
      const after = out.split('\r\n');
      t.is(after.length, before.length);
      for (const [i, l] of before.entries()) t.is(after[i], l === 'a=setup:actpass' ? 'a=setup:active' : l);
      t.is(preferActiveSetup(out), out);
      t.is(hasEndOfCandidates(text), !o.sessionLevelTransport && o.endOfCandidates);
    }),
  );
});

test('WHEP bridge: each answer has the sections of the offer it answers, in order, with that offer’s mids', (t) => {
  fc.assert(
    fc.property(offerSpec, (o) => {
      const bridged = bridgeOffers(render(o), janusOffer());
      // A refusal says why (every run asserts something, also one where each offer is refused).
      if ('refused' in bridged) return void t.regex(bridged.refused, /shares no receivable media/);
      const client = parseSdp(bridged.toClient);
      const janus = parseSdp(bridged.toJanus);
      t.deepEqual(
        client.media.map((m) => [m.kind, midOf(m)]),
        o.sections.map((s) => [s.kind, s.mid]),
      );
      t.deepEqual(
        janus.media.map((m) => [m.kind, midOf(m)]),
        [
          ['video', 'v'],
          ['audio', 'a'],
        ],
      );
    }),
  );
});

test('WHEP bridge: accepted sections carry the other side’s transport, the DTLS roles that meet, no header extensions', (t) => {
  fc.assert(
    fc.property(offerSpec, (o) => {
      const clientOffer = render(o);
      const bridged = bridgeOffers(clientOffer, janusOffer());
      if ('refused' in bridged) return void t.regex(bridged.refused, /shares no receivable media/);
      const jTransport = transportLines(parseSdp(janusOffer()).media[0]!.lines);
      const c = parseSdp(clientOffer);
      const cFirst = c.media.find((m) => portOf(m) !== 0)!;
      const cTransport = transportLines([...cFirst.lines, ...c.session]);
      for (const [answer, setup, transport] of [
        [bridged.toClient, 'passive', jTransport],
        [bridged.toJanus, 'active', cTransport],
      ] as const) {
        const sdp = parseSdp(answer);
        t.false(answer.includes('a=extmap'), 'no header extension: the mid extension would carry the other side’s mids');
        t.false(sdp.session.some((l) => l.startsWith('a=setup')));
        for (const m of sdp.media.filter((x) => portOf(x) !== 0)) {
          t.deepEqual(
            m.lines.filter((l) => l.startsWith('a=setup')),
            [`a=setup:${setup}`],
          );
          t.deepEqual(transportLines(m.lines).sort(), [...transport].sort());
        }
        const live = sdp.media.filter((x) => portOf(x) !== 0).map((x) => midOf(x));
        t.is(attribute(sdp.session, 'group'), live.length > 0 ? `BUNDLE ${live.join(' ')}` : null);
      }
    }),
  );
});

test('WHEP bridge: a section is taken only with a codec both offered under the same number, and only where the viewer receives', (t) => {
  fc.assert(
    fc.property(offerSpec, (o) => {
      const clientOffer = render(o);
      const jOffer = janusOffer();
      const bridged = bridgeOffers(clientOffer, jOffer);
      const c = parseSdp(clientOffer);
      const j = parseSdp(jOffer);
      // What a viewer can take: a live section that receives, sharing a payload type with Janus's section of its kind (first come, first served).
      const taken = new Set<number>();
      const expected = c.media.map((m) => {
        const d = directionOf(m, c.session);
        if (portOf(m) === 0 || d === 'sendonly' || d === 'inactive') return null;
        const jIndex = j.media.findIndex((x, i) => !taken.has(i) && x.kind === m.kind && commonPayloadTypes(x, m).length > 0);
        if (jIndex < 0) return null;
        taken.add(jIndex);
        return commonPayloadTypes(j.media[jIndex]!, m);
      });
      if (expected.every((e) => e === null)) {
        t.true('refused' in bridged);
        return;
      }
      if ('refused' in bridged) return t.fail('refused an offer it could take');
      const answer = parseSdp(bridged.toClient);
      for (const [i, m] of answer.media.entries()) {
        const pts = m.lines[0]!.split(' ').slice(3);
        if (expected[i] === null) {
          t.is(portOf(m), 0);
          t.true(m.lines.includes('a=inactive'));
        } else {
          t.not(portOf(m), 0);
          t.deepEqual(pts, expected[i]);
          t.is(directionOf(m), directionOf(c.media[i]!, c.session) === 'recvonly' ? 'sendonly' : 'sendrecv');
          // Every payload type answered is one the viewer offered, for the same codec.
          for (const pt of pts)
            t.is(
              m.lines.find((l) => l.startsWith(`a=rtpmap:${pt} `)),
              c.media[i]!.lines.find((l) => l.startsWith(`a=rtpmap:${pt} `)),
            );
        }
      }
      // Janus is told the viewer receives, on every section it gets.
      for (const m of parseSdp(bridged.toJanus).media.filter((x) => portOf(x) !== 0)) t.is(directionOf(m), 'recvonly');
      // Trickled candidates of the viewer's mids reach Janus's.
      for (const [mid, to] of bridged.mids) {
        t.true(c.media.some((m) => midOf(m) === mid));
        t.is(midOf(j.media[to.index]!), to.mid);
      }
    }),
  );
});

test('WHEP: a mountpoint made with the payload types a viewer receives VP8 and Opus under is always taken by its bridge', (t) => {
  fc.assert(
    fc.property(offerSpec, (o) => {
      const offer = render(o);
      const pts = viewerPayloadTypes(offer);
      const mountpoint = [
        ...(pts.video !== null ? [{ kind: 'video' as const, mid: 'v', codecs: [{ pt: pts.video, name: 'VP8', clock: 90000 }], rtx: false, direction: 'sendonly' as const, rejected: false }] : []),
        ...(pts.audio !== null ? [{ kind: 'audio' as const, mid: 'a', codecs: [{ pt: pts.audio, name: 'opus', clock: 48000 }], rtx: false, direction: 'sendonly' as const, rejected: false }] : []),
      ];
      // What the viewer receives: a live section, receiving, with VP8 (video) or Opus (audio).
      const c = parseSdp(offer);
      const wanted = c.media.filter((m) => {
        const d = directionOf(m, c.session);
        const codec = m.kind === 'video' ? 'VP8' : 'opus';
        return portOf(m) !== 0 && d !== 'sendonly' && d !== 'inactive' && m.lines.some((l) => l.startsWith('a=rtpmap:') && l.includes(` ${codec}/`));
      });
      t.is(pts.video === null && pts.audio === null, wanted.length === 0);
      if (mountpoint.length === 0) return;
      const bridged = bridgeOffers(offer, janusOffer({ sections: mountpoint }));
      if ('refused' in bridged) return t.fail(bridged.refused);
      t.is(parseSdp(bridged.toJanus).media.filter((m) => portOf(m) !== 0).length, mountpoint.length, 'every medium of the mountpoint reaches the viewer');
    }),
  );
});

test('WHEP bridge: a werift viewer of video at 96 is taken, one of VP8 at another number is refused with a reason', (t) => {
  const viewer = (pt: number) =>
    render({
      sections: [{ kind: 'video', mid: '0', codecs: [{ pt, name: 'VP8', clock: 90000 }], rtx: false, direction: 'recvonly', rejected: false }],
      ufrag: 'VIEW',
      fingerprint: 'BB:BB:BB:BB:BB:BB:BB:BB',
      candidates: ['candidate:1 1 udp 2130706431 10.213.0.1 50000 typ host'],
      endOfCandidates: true,
      sessionLevelTransport: false,
      ssrc: null,
    });
  const ok = bridgeOffers(viewer(96), janusOffer());
  if ('refused' in ok) return t.fail(ok.refused);
  t.true(ok.toClient.includes('a=ssrc:4242 cname:x'), 'the viewer learns the SSRC Janus sends with (no mid extension)');
  t.true(ok.toClient.includes('a=candidate:1 1 udp 2015363583 10.213.0.3 40575 typ host'));
  t.true(ok.toJanus.includes('a=candidate:1 1 udp 2130706431 10.213.0.1 50000 typ host'));
  t.regex(ok.toJanus, /m=audio 0 /, 'the audio the viewer did not ask for is refused to Janus');
  const refused = bridgeOffers(viewer(120), janusOffer());
  t.true('refused' in refused);
  if ('refused' in refused) t.regex(refused.refused, /vp8\/90000 as 96/);
});

test('trickle fragments: candidates with their mid and m-line, the end, the credentials', (t) => {
  const frag = [
    'a=ice-ufrag:abcd',
    'a=ice-pwd:secretsecret',
    'm=audio 9 UDP/TLS/RTP/SAVPF 0',
    'a=mid:0',
    'a=candidate:1 1 udp 1 10.213.0.1 5000 typ host',
    'm=video 9 UDP/TLS/RTP/SAVPF 0',
    'a=mid:v1',
    'a=candidate:2 1 udp 1 10.213.0.1 5002 typ host',
    'a=end-of-candidates',
  ].join('\r\n');
  t.deepEqual(parseTrickleFragment(frag), {
    ufrag: 'abcd',
    pwd: 'secretsecret',
    complete: true,
    candidates: [
      { sdpMid: '0', sdpMLineIndex: 0, candidate: 'candidate:1 1 udp 1 10.213.0.1 5000 typ host' },
      { sdpMid: 'v1', sdpMLineIndex: 1, candidate: 'candidate:2 1 udp 1 10.213.0.1 5002 typ host' },
    ],
  });
  t.throws(() => parseTrickleFragment('a=candidate:1 1 udp 1 1.2.3.4 5 typ host'), { instanceOf: SdpError });
  fc.assert(
    fc.property(fc.string({ maxLength: 200 }), (junk) => {
      try {
        parseTrickleFragment(junk);
      } catch (err) {
        t.true(err instanceof SdpError);
      }
    }),
  );
});
