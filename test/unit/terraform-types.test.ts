// Terraform type constraints (src/policy/terraform/type-constraint.ts): the parser against the
// printer over random types and layouts, and the value check over values made to fit.
import test from 'ava';
import fc from 'fast-check';
import { parseType, typeToString, TypeSyntaxError, valueProblems, type TypeExpr } from '../../src/policy/terraform/type-constraint.js';
import { typeArb, valueArb } from '../helpers/terraform-types.js';

/** Whitespace, comments and separators as a module author might write them. */
const layout = fc.record({
  space: fc.constantFrom('', ' ', '  ', '\n', ' \n  ', ' # note\n', ' // note\n', ' /* c */ ', '\n/* multi\nline */\n'),
  assign: fc.constantFrom('=', ':', ' = ', ': '),
  objectSeparator: fc.constantFrom(',', '\n', ',\n', ' ,  '),
  trailingComma: fc.boolean(),
  defaultText: fc.constantFrom(undefined, '"x"', '3', '[1, 2]', '{ a = 1, b = "}" }', 'null', '"${a}"'),
});

interface Layout {
  space: string;
  assign: string;
  objectSeparator: string;
  trailingComma: boolean;
  defaultText: string | undefined;
}

function print(t: TypeExpr, l: Layout): string {
  const s = l.space;
  switch (t.kind) {
    case 'list':
    case 'set':
    case 'map':
      return `${t.kind}(${s}${print(t.element, l)}${s})`;
    case 'tuple':
      return `tuple(${s}[${s}${t.elements.map((e) => print(e, l)).join(`,${s}`)}${t.elements.length > 0 && l.trailingComma ? ',' : ''}${s}]${s})`;
    case 'object':
      return `object(${s}{${s}${t.attributes
        .map((a) => `${a.name}${l.assign}${a.optional ? `optional(${print(a.type, l)}${l.defaultText ? `, ${l.defaultText}` : ''})` : print(a.type, l)}`)
        .join(l.objectSeparator.includes('\n') ? l.objectSeparator : `${l.objectSeparator}${s}`)}${s}}${s})`;
    default:
      return t.kind;
  }
}

test('a type constraint parses back to what was printed, whatever its layout (property)', (t) => {
  fc.assert(
    fc.property(typeArb, layout, (type, l) => {
      const text = print(type, l);
      const parsed = parseType(text);
      return JSON.stringify(parsed) === JSON.stringify(type) && JSON.stringify(parseType(typeToString(type))) === JSON.stringify(type);
    }),
    { numRuns: 500 },
  );
  t.pass();
});

test('a value made to fit a type is accepted; the same value under a different top-level kind is not (property)', (t) => {
  fc.assert(
    fc.property(
      typeArb.chain((type) => fc.tuple(fc.constant(type), valueArb(type))),
      ([type, value]) => valueProblems(type, value).length === 0,
    ),
    { numRuns: 500 },
  );
  const kindOf = (v: unknown) => (Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v);
  const expected: Record<string, string> = { string: 'string', number: 'number', bool: 'boolean', list: 'array', set: 'array', tuple: 'array', map: 'object', object: 'object' };
  fc.assert(
    fc.property(
      typeArb.filter((type) => type.kind !== 'any'),
      fc.jsonValue({ maxDepth: 2 }).filter((v) => v !== null),
      (type, value) => {
        fc.pre(kindOf(value) !== expected[type.kind]);
        return valueProblems(type, value).length > 0;
      },
    ),
    { numRuns: 500 },
  );
  t.pass();
});

test('values are checked strictly, with a path to what is wrong', (t) => {
  const type = parseType('map(object({ region = string, sizes = optional(list(number), []), tags = map(string) }))');
  t.deepEqual(valueProblems(type, { a: { region: 'x', tags: {} } }), []);
  t.deepEqual(valueProblems(type, { a: { region: 1, sizes: [1, '2', null], tags: { k: 'v' }, extra: true } }), [
    { at: ['a', 'region'], message: 'must be a string' },
    { at: ['a', 'sizes', 1], message: 'must be a number' },
    { at: ['a', 'sizes', 2], message: 'must not be null (an element of a collection)' },
    { at: ['a', 'extra'], message: 'is not an attribute of object({ region = string, sizes = optional(list(number)), tags = map(string) })' },
  ]);
  t.deepEqual(valueProblems(type, { a: { region: 'x' } }), [{ at: ['a', 'tags'], message: 'is required' }]);
  t.deepEqual(valueProblems(parseType('number'), '1'), [{ at: [], message: 'must be a number' }], 'no conversions: a request says what it means');
  t.deepEqual(valueProblems(parseType('tuple([string, bool])'), ['a']), [{ at: [], message: 'must be an array of 2 (tuple([string, bool]))' }]);
});

test('what is not a type constraint is refused with where', (t) => {
  const bad: Array<[string, RegExp]> = [
    ['"string"', /expected a type but found '"string"'/],
    ['list', /expected '\('/],
    ['optional(string)', /only allowed for an attribute of an object type/],
    ['object({ "a" = string })', /expected an attribute name/],
    ['object({ a = string b = number })', /expected ',', a new line or '}'/],
    ['object({ a = string, a = number })', /declared twice/],
    ['map(string', /expected '\)'/],
    ['map(strin)', /'strin' is not a type/],
    ['string string', /unexpected 'string' after the type/],
    ['object({ a = optional(string, 1, 2) })', /at most one default/],
    ['list(/* unclosed', /unclosed comment/],
    [`${'list('.repeat(40)}string${')'.repeat(40)}`, /nest at most 32 deep/],
  ];
  for (const [text, message] of bad) {
    const err = t.throws(() => parseType(text), { instanceOf: TypeSyntaxError }, text);
    t.regex(err!.message, message, text);
  }
});
