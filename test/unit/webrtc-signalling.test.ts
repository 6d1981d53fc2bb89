// The pure parts of WebRTC signalling (docs/webrtc.md): the SDP checks every offer passes before
// anything reads it, the proxy's sealed session ids, the URL a lookup answers for WHIP and WHEP
// nodes, and a stream hub's keyframe throttle. Properties where the input is hostile.
import test from 'ava';
import fc from 'fast-check';
import { clientUrl } from '../../src/admission/client-url.js';
import { StreamHub, KEYFRAME_INTERVAL_MS } from '../../src/agent/webrtc/werift/hub.js';
import { candidatesOn, checkOffer, MAX_SDP_BYTES, parseFragment } from '../../src/domain/sdp.js';
import { openSession, type ProxiedSession, sealSession } from '../../src/http/proxy/sessions.js';
import { createHmac } from 'node:crypto';
import { RTCRtpCodecParameters } from 'werift';

const OFFER = [
  'v=0',
  'o=- 1 2 IN IP4 127.0.0.1',
  's=-',
  't=0 0',
  'a=group:BUNDLE 0',
  'm=video 9 UDP/TLS/RTP/SAVPF 96',
  'c=IN IP4 0.0.0.0',
  'a=mid:0',
  'a=sendonly',
  'a=rtpmap:96 VP8/90000',
  'a=candidate:1 1 udp 2130706431 127.0.0.1 50000 typ host',
  'a=candidate:2 1 udp 2130706431 192.0.2.7 50001 typ host',
  '',
].join('\r\n');

test('an SDP offer is checked for shape and size before anything reads it; no input makes the check throw', (t) => {
  t.deepEqual(checkOffer(OFFER), { ok: true });
  t.like(checkOffer(''), { ok: false });
  t.like(checkOffer('v=0\r\ns=-\r\n'), { ok: false, reason: 'the offer has no media section (m=)' });
  t.like(checkOffer('v=1\r\nm=video 9 x 96\r\n'), { ok: false });
  t.like(checkOffer(`${OFFER}a=x\u0000y\r\n`), { ok: false });
  t.like(checkOffer(`${OFFER}${'m=video 9 x 96\r\n'.repeat(20)}`), { ok: false });
  t.like(checkOffer(`v=0\r\nm=video 9 x 96\r\na=${'x'.repeat(MAX_SDP_BYTES)}\r\n`), { ok: false });
  fc.assert(
    fc.property(fc.string({ maxLength: 2000 }), (text) => {
      const v = checkOffer(text);
      return v.ok ? text.split(/\r?\n/)[0] === 'v=0' && text.includes('m=') : v.reason.length > 0;
    }),
  );
  fc.assert(fc.property(fc.string({ maxLength: 2000 }), (text) => typeof parseFragment(text).ok === 'boolean'));
});

test('a trickle fragment yields its candidates under their mid, its ufrag and the end of candidates', (t) => {
  const f = parseFragment('a=ice-ufrag:abcd\r\na=ice-pwd:secret\r\nm=audio 9 RTP/AVP 0\r\na=mid:0\r\na=candidate:1 1 udp 1 127.0.0.1 5000 typ host\r\na=end-of-candidates\r\n');
  t.deepEqual(f, { ok: true, ufrag: 'abcd', pwd: 'secret', candidates: [{ candidate: 'candidate:1 1 udp 1 127.0.0.1 5000 typ host', mid: '0' }], end: true });
  t.like(parseFragment(`${'a=candidate:1\r\n'.repeat(300)}`), { ok: false });
});

test("an answer keeps only the candidates on the node's own address, rewritten to the address clients are told", (t) => {
  const kept = candidatesOn(OFFER, '127.0.0.1', '203.0.113.9');
  t.true(kept.includes('a=candidate:1 1 udp 2130706431 203.0.113.9 50000 typ host'));
  t.false(kept.includes('192.0.2.7'));
  t.is(candidatesOn(OFFER, '0.0.0.0'), OFFER, 'a node bound to every address keeps every candidate');
  fc.assert(
    fc.property(fc.array(fc.ipV4(), { minLength: 1, maxLength: 6 }), fc.ipV4(), (addresses, bound) => {
      const sdp = ['v=0', ...addresses.map((a, i) => `a=candidate:${i} 1 udp 1 ${a} ${5000 + i} typ host`), ''].join('\r\n');
      const out = candidatesOn(sdp, bound)
        .split('\r\n')
        .filter((l) => l.startsWith('a=candidate:'));
      return out.length === addresses.filter((a) => a === bound).length && out.every((l) => l.split(' ')[4] === bound);
    }),
  );
});

const mac = (g: string, n: string, text: string) => createHmac('sha256', `key of ${g}/${n}`).update(text).digest();
const SESSION: ProxiedSession = { g: 'rtc', n: 'here-edge-1', a: '127.4.0.3', p: 18935, r: 'b8f0c6c2-4c9a-4d8e-9a41-0e7c8f1d2a3b', k: 'whep', s: 'cam1' };

test('a session id opens to the node it was sealed for, and to nothing once any byte of it changes', (t) => {
  const id = sealSession(SESSION, mac);
  t.deepEqual(openSession(id, mac), SESSION);
  t.regex(id, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
  // Another node's key, or a payload that names another host with the old MAC: nothing.
  t.is(openSession(sealSession({ ...SESSION, n: 'here-edge-2' }, mac).replace(/\..*$/, id.slice(id.indexOf('.'))), mac), null);
  const forged = `${Buffer.from(JSON.stringify({ ...SESSION, a: '10.0.0.1', p: 22 })).toString('base64url')}${id.slice(id.indexOf('.'))}`;
  t.is(openSession(forged, mac), null);
  fc.assert(
    fc.property(fc.nat({ max: id.length - 1 }), fc.constantFrom(...'ABCDEFabcdef0123456789-_.'), (at, c) => {
      const changed = id.slice(0, at) + c + id.slice(at + 1);
      return changed === id || openSession(changed, mac) === null;
    }),
  );
  fc.assert(fc.property(fc.string({ maxLength: 2000 }), (text) => openSession(text, mac) === null));
});

test('a payload that is well sealed but not a session of the proxy (a path, a host with a scheme) opens to nothing', (t) => {
  for (const bad of [
    { ...SESSION, r: '../admin' },
    { ...SESSION, a: 'http://evil' },
    { ...SESSION, p: 0 },
    { ...SESSION, k: 'rtmp' },
    { ...SESSION, extra: 1 },
  ]) {
    t.is(openSession(sealSession(bad as ProxiedSession, mac), mac), null, JSON.stringify(bad));
  }
});

test('a lookup answer for a WebRTC node names its WHIP or WHEP endpoint, the token in its query', (t) => {
  const base = { serverAddress: '127.4.0.2', scope: 'live', stream: 'cam1', token: 'a.b.c' };
  t.is(clientUrl({ ...base, listener: { protocol: 'whip', port: 18935 }, action: 'publish' }), 'http://127.4.0.2:18935/whip/live/cam1?token=a.b.c');
  t.is(clientUrl({ ...base, listener: { protocol: 'whep', port: 18935 }, action: 'play', serverAddress: '::1' }), 'http://[::1]:18935/whep/live/cam1?token=a.b.c');
  t.is(clientUrl({ ...base, listener: { protocol: 'rtmp', port: 1935 }, action: 'publish' }), 'rtmp://127.4.0.2:1935/live/cam1?token=a.b.c');
});

test('however many viewers ask for a keyframe, the source is asked at most once per interval', (t) => {
  let now = 0;
  let asked = 0;
  const hub = new StreamHub('cam1', () => now);
  t.false(hub.askKeyframe(), 'nothing to ask before a source');
  const vp8 = new RTCRtpCodecParameters({ mimeType: 'video/VP8', clockRate: 90000 });
  hub.addOutput('video', 'video/VP8');
  t.deepEqual(hub.feed('p1', { video: { codec: vp8, requestKeyframe: () => asked++ } }), [], 'a source of the same codec feeds its viewers');
  t.is(asked, 1, 'a new source with viewers is asked for a keyframe at once');
  for (let i = 0; i < 10; i++) hub.askKeyframe();
  t.is(asked, 1);
  now += KEYFRAME_INTERVAL_MS;
  t.true(hub.askKeyframe());
  t.is(asked, 2);
  t.false(hub.unfeed('p2'), 'only the feeder unfeeds');
  t.true(hub.unfeed('p1'));
  t.false(hub.fed);
  const h264 = new RTCRtpCodecParameters({ mimeType: 'video/H264', clockRate: 90000 });
  t.is(hub.feed('p3', { video: { codec: h264, requestKeyframe: () => {} } }).length, 1, 'a source of another codec cannot feed the VP8 viewer');
});
