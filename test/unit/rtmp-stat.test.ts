import test from 'ava';
import fc from 'fast-check';
import { classify, mergeSummaries, parseRtmpStat, StatParseError, summarize, streamMediaOf } from '../../src/agent/media/rtmp-stat.js';

/** A summary's streams without their media figures (tested on their own, at the end). */
const loads = (streams: ReadonlyArray<{ name: string; publishing: boolean; publishers: number; subscribers: number }>) =>
  streams.map(({ name, publishing, publishers, subscribers }) => ({ name, publishing, publishers, subscribers }));
import { PULL_FLASHVER_PREFIX } from '../../src/agent/media/nginx-config.js';
import { TRANSCODER_FLASHVER } from '../../src/agent/media/transcode.js';

// What nginx-rtmp 1.2.2 (stat page 1.1.4) wrote on an edge pulling cam1 for one viewer: lines end
// in \r\n, the pull shows as a <publishing/> client named by the parent's URL.
const EDGE_PAGE = [
  '<?xml version="1.0" encoding="utf-8" ?>',
  '<rtmp>',
  '<nginx_version>1.22.1</nginx_version>',
  '<nginx_rtmp_version>1.1.4</nginx_rtmp_version>',
  '<built>Feb 13 2023 11:56:56</built>',
  '<pid>24239</pid>',
  '<uptime>5</uptime>',
  '<naccepted>1</naccepted>',
  '<bw_in>0</bw_in>',
  '<bytes_in>33120</bytes_in>',
  '<bw_out>0</bw_out>',
  '<bytes_out>33065</bytes_out>',
  '<server>',
  '<application>',
  '<name>live</name>',
  '<live>',
  '<stream>',
  '<name>cam1</name>',
  '<time>1751</time><bw_in>0</bw_in>',
  '<bytes_in>31105</bytes_in>',
  '<bw_out>0</bw_out>',
  '<bytes_out>31047</bytes_out>',
  '<bw_audio>0</bw_audio>',
  '<bw_video>0</bw_video>',
  '<client><id>2</id><address>127.0.50.2:1935/live</address><time>1751</time><flashver>ngx-local-relay</flashver><dropped>0</dropped><avsync>-4</avsync><timestamp>2790</timestamp><publishing/><active/></client>',
  '<client><id>1</id><address>127.0.0.1</address><time>1936</time><flashver>LNX 9,0,124,2</flashver><dropped>0</dropped><avsync>-4</avsync><timestamp>2790</timestamp><active/></client>',
  '<meta><video><width>640</width><height>352</height><frame_rate>30</frame_rate><codec>H264</codec><profile></profile><compat>0</compat><level>3.0</level></video><audio><codec>AAC</codec><profile>LC</profile><channels>1</channels><sample_rate>44100</sample_rate></audio></meta>',
  '<nclients>2</nclients>',
  '<publishing/>',
  '<active/>',
  '</stream>',
  '<nclients>2</nclients>',
  '</live>',
  '</application>',
  '</server>',
  '</rtmp>',
  '',
].join('\r\n');

test('a real edge page: the pull is not a publisher, the viewer is a subscriber', (t) => {
  const stat = parseRtmpStat(EDGE_PAGE, 'live');
  t.is(stat.pid, 24239);
  t.is(stat.bytesOut, 33065);
  const s = summarize(stat);
  t.deepEqual(loads(s.streams), [{ name: 'cam1', publishing: false, publishers: 0, subscribers: 1 }]);
  t.is(s.publishers, 0);
  t.is(s.subscribers, 1);
  t.deepEqual(s.children, []);
  t.deepEqual(summarize(parseRtmpStat(EDGE_PAGE, 'other')).streams, [], 'other applications are not ours');
});

type Kind = 'publisher' | 'viewer' | 'relay-in' | 'child' | 'internal';
interface GenStream {
  name: string;
  clients: Array<{ kind: Kind; child: string }>;
}

const xmlEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

function flashver(kind: Kind, child: string): string {
  switch (kind) {
    case 'publisher':
      return 'FMLE/3.0 (compatible; Lavf59.27';
    case 'viewer':
      return 'LNX 9,0,124,2';
    case 'relay-in':
      return 'ngx-local-relay';
    case 'child':
      return `${PULL_FLASHVER_PREFIX}${child}`;
    case 'internal':
      return TRANSCODER_FLASHVER;
  }
}

/** A stat page as nginx-rtmp writes it, \r\n line endings and all. */
function page(apps: Array<{ name: string; streams: GenStream[] }>): string {
  const out = ['<?xml version="1.0" encoding="utf-8" ?>', '<rtmp>', '<pid>77</pid>', '<bytes_in>10</bytes_in>', '<bytes_out>20</bytes_out>', '<server>'];
  for (const app of apps) {
    out.push('<application>', `<name>${xmlEscape(app.name)}</name>`, '<live>');
    for (const s of app.streams) {
      out.push('<stream>', `<name>${xmlEscape(s.name)}</name>`, '<time>10</time><bw_in>0</bw_in>');
      s.clients.forEach((c, i) => {
        const publishing = c.kind === 'publisher' || c.kind === 'relay-in';
        out.push(
          `<client><id>${i}</id><address>127.0.0.1</address><time>5</time><flashver>${xmlEscape(flashver(c.kind, c.child))}</flashver><dropped>0</dropped>${publishing ? '<publishing/>' : ''}<active/></client>`,
        );
      });
      out.push(`<nclients>${s.clients.length}</nclients>`, s.clients.some((c) => c.kind === 'publisher' || c.kind === 'relay-in') ? '<publishing/>' : '', '</stream>');
    }
    out.push(`<nclients>0</nclients>`, '</live>', '</application>');
  }
  out.push('</server>', '</rtmp>', '');
  return out.join('\r\n');
}

const goodName = fc.stringMatching(/^[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,19}$/);
const client = fc.record({ kind: fc.constantFrom<Kind>('publisher', 'viewer', 'viewer', 'relay-in', 'child', 'internal'), child: fc.constantFrom('edge-a', 'edge-b', 'relay-1') });
const streams = fc.uniqueArray(fc.record({ name: fc.oneof(goodName, goodName, fc.constantFrom('bad name', 'a&b', '<x>', '007', '1e3')), clients: fc.array(client, { maxLength: 8 }) }), {
  selector: (s) => s.name,
  maxLength: 6,
});

test('publishers, subscribers and cluster children are counted client by client on generated pages', (t) => {
  fc.assert(
    fc.property(streams, streams, (mine, others) => {
      const s = summarize(
        parseRtmpStat(
          page([
            { name: 'live', streams: mine },
            { name: 'other', streams: others },
          ]),
          'live',
        ),
      );
      const valid = mine.filter((x) => /^[A-Za-z0-9._~-]{1,128}$/.test(x.name));
      const n = (xs: GenStream[], kinds: Kind[]) => xs.reduce((a, x) => a + x.clients.filter((c) => kinds.includes(c.kind)).length, 0);
      t.is(s.publishers, n(valid, ['publisher']));
      t.is(s.subscribers, n(valid, ['viewer', 'child']));
      t.deepEqual(s.children, [...new Set(valid.flatMap((x) => x.clients.filter((c) => c.kind === 'child').map((c) => c.child)))].sort());
      t.deepEqual(
        loads(s.streams),
        valid.map((x) => ({
          name: x.name,
          publishing: x.clients.some((c) => c.kind === 'publisher'),
          publishers: n([x], ['publisher']),
          subscribers: n([x], ['viewer', 'child']),
        })),
      );
      t.deepEqual(
        s.ignored,
        mine.filter((x) => !valid.includes(x)).map((x) => x.name),
      );
    }),
    { numRuns: 300 },
  );
});

test('names that look like numbers stay names', (t) => {
  const s = summarize(parseRtmpStat(page([{ name: 'live', streams: [{ name: '007', clients: [{ kind: 'publisher', child: '' }] }] }]), 'live'));
  t.deepEqual(
    s.streams.map((x) => x.name),
    ['007'],
  );
});

test('a client is classified by its flash version first, then by whether it publishes', (t) => {
  t.is(classify({ address: 'rtmp://x', flashver: 'ngx-local-relay', publishing: true }), 'relay-in');
  t.is(classify({ address: '', flashver: TRANSCODER_FLASHVER, publishing: false }), 'internal');
  t.is(classify({ address: '', flashver: `${PULL_FLASHVER_PREFIX}e1`, publishing: false }), 'child');
  t.is(classify({ address: '', flashver: 'OBS', publishing: true }), 'publisher');
  t.is(classify({ address: '', flashver: 'OBS', publishing: false }), 'subscriber');
});

test('an empty page, and pages that are not stat pages', (t) => {
  t.deepEqual(summarize(parseRtmpStat(page([{ name: 'live', streams: [] }]), 'live')), { publishers: 0, subscribers: 0, children: [], streams: [], ignored: [] });
  t.throws(() => parseRtmpStat('<html><body>502</body>', 'live'), { instanceOf: StatParseError });
  t.throws(() => parseRtmpStat('<rtmp><server>', 'live'), { instanceOf: StatParseError });
  t.throws(() => parseRtmpStat('<html></html>', 'live'), { instanceOf: StatParseError });
});

test('what an older generation of workers carries is added to the current figures', (t) => {
  const a = summarize(
    parseRtmpStat(
      page([
        {
          name: 'live',
          streams: [
            {
              name: 'cam1',
              clients: [
                { kind: 'relay-in', child: '' },
                { kind: 'viewer', child: '' },
              ],
            },
          ],
        },
      ]),
      'live',
    ),
  );
  const b = summarize(
    parseRtmpStat(
      page([
        {
          name: 'live',
          streams: [
            {
              name: 'cam1',
              clients: [
                { kind: 'viewer', child: '' },
                { kind: 'child', child: 'e9' },
              ],
            },
            { name: 'cam2', clients: [{ kind: 'publisher', child: '' }] },
          ],
        },
      ]),
      'live',
    ),
  );
  const m = mergeSummaries(a, b);
  t.is(m.subscribers, 3);
  t.is(m.publishers, 1);
  t.deepEqual(m.children, ['e9']);
  t.deepEqual(loads(m.streams), [
    { name: 'cam1', publishing: false, publishers: 0, subscribers: 3 },
    { name: 'cam2', publishing: true, publishers: 1, subscribers: 0 },
  ]);
  t.deepEqual(loads(a.streams)[0], { name: 'cam1', publishing: false, publishers: 0, subscribers: 1 }, 'the inputs are left alone');
});

test("a stream's media: the publisher's metadata as the page has it, rates from the byte counters between readings", (t) => {
  const page = [
    '<?xml version="1.0" encoding="utf-8" ?>',
    '<rtmp><nginx_version>1.22.1</nginx_version><pid>7</pid><bytes_in>0</bytes_in><bytes_out>0</bytes_out><server><application><name>live</name><live><stream>',
    '<name>cam1</name><time>11841</time><bw_in>120344</bw_in><bytes_in>169127</bytes_in><bw_out>0</bw_out><bytes_out>0</bytes_out><bw_audio>64800</bw_audio><bw_video>55544</bw_video>',
    '<client><id>1</id><address>127.0.0.1</address><time>12017</time><flashver>FMLE/3.0 (compatible; Lavf59.27</flashver><dropped>0</dropped><avsync>-14</avsync><timestamp>10520</timestamp><publishing/><active/></client>',
    '<meta><video><width>320</width><height>240</height><frame_rate>25</frame_rate><codec>H264</codec><profile></profile><compat>0</compat><level>1.3</level></video><audio><codec>AAC</codec><profile>LC</profile><channels>1</channels><sample_rate>44100</sample_rate></audio></meta>',
    '<nclients>1</nclients><publishing/><active/></stream></live></application></server></rtmp>',
  ].join('\r\n');
  const media = parseRtmpStat(page, 'live').streams[0]!.media;
  t.deepEqual(media, {
    timeMs: 11841,
    bytesIn: 169127,
    bytesOut: 0,
    bwIn: 120344,
    bwOut: 0,
    video: { codec: 'H264', width: 320, height: 240, fps: 25 },
    audio: { codec: 'AAC', channels: 1, sampleRate: 44100 },
  });
  // First reading: nginx's own average; then the bytes since the previous reading.
  t.like(streamMediaOf(media, undefined, 1000), { bitrateIn: 120344, bitrateOut: 0, uptimeMs: 11841 });
  t.like(streamMediaOf(media, { at: 0, bytesIn: 169127 - 25_000, bytesOut: 0 }, 2000), { bitrateIn: 100_000 });
  // Counters that went back (nginx restarted) fall back to the average rather than a negative rate.
  t.like(streamMediaOf(media, { at: 0, bytesIn: 10_000_000, bytesOut: 0 }, 2000), { bitrateIn: 120344 });
  // Hostile metadata is dropped, not passed on.
  const hostile = parseRtmpStat(page.replace('<codec>H264</codec>', '<codec>H264&lt;script&gt;</codec>').replace('<width>320</width>', '<width>-5</width>'), 'live').streams[0]!.media;
  t.deepEqual(hostile.video, { height: 240, fps: 25 });
});
