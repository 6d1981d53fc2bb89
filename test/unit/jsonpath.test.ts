// The dashboard's JSON editor selects the field a 400 names (body.streams[0].videoBR) in the text
// the operator typed (src/dashboard/app/jsonpath.ts): for any JSON document, however indented,
// every path's span is exactly that value's text, and a path to a missing field finds the object
// that lacks it.
import { isDeepStrictEqual } from 'node:util';
import test from 'ava';
import fc from 'fast-check';
import { locate } from '../../src/dashboard/app/jsonpath.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const key = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,8}$/);
const { json } = fc.letrec<{ json: Json }>((tie) => ({
  json: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.string({ unit: 'grapheme', maxLength: 6 }),
    fc.array(tie('json'), { maxLength: 4 }),
    fc.dictionary(key, tie('json'), { maxKeys: 4 }),
  ),
}));

/** Every path in a value, in the service's notation (a.b[0].c), with the value there. */
function paths(v: Json, at = ''): Array<[string, Json]> {
  const out: Array<[string, Json]> = [[at, v]];
  if (Array.isArray(v)) for (const [i, x] of v.entries()) out.push(...paths(x, `${at}[${i}]`));
  else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) out.push(...paths(x, at === '' ? k : `${at}.${k}`));
  return out;
}

test('every field is found where it is, whatever the layout', (t) => {
  fc.assert(
    fc.property(json, fc.constantFrom(undefined, 0, 1, 2, '\t'), (v, indent) => {
      const text = JSON.stringify(v, null, indent);
      for (const [path, value] of paths(v)) {
        const span = locate(text, `body.${path}`.replace(/\.$/, ''));
        if (!span) return false;
        // As JSON has it: -0 is written 0, so the value is compared after the same round trip.
        if (!isDeepStrictEqual(JSON.parse(text.slice(span.start, span.end)), JSON.parse(JSON.stringify(value)))) return false;
      }
      return true;
    }),
  );
  t.pass();
});

test('a missing field finds the object that lacks it; broken JSON finds what comes before the break', (t) => {
  const text = JSON.stringify({ streams: [{ name: 'a' }] }, null, 2);
  const span = locate(text, 'body.streams[0].videoBR')!;
  t.deepEqual(JSON.parse(text.slice(span.start, span.end)), { name: 'a' });
  const broken = '{"region": "mars", "streams": [ {"name": ';
  const region = locate(broken, 'body.region')!;
  t.is(broken.slice(region.start, region.end), '"mars"');
  t.is(locate(broken, 'body.streams[0].name'), null);
});
