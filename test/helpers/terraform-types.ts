// Random Terraform type constraints and values that fit them, for property tests
// (test/unit/terraform-types.test.ts) and for checks against the real CLI.
import fc from 'fast-check';
import type { TypeExpr } from '../../src/policy/terraform/type-constraint.js';

const identifier = fc.stringMatching(/^[a-z_][a-z0-9_-]{0,8}$/).filter((s) => !['optional'].includes(s));

export const typeArb: fc.Arbitrary<TypeExpr> = fc.letrec<{ type: TypeExpr }>((tie) => ({
  type: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom<TypeExpr>({ kind: 'string' }, { kind: 'number' }, { kind: 'bool' }, { kind: 'any' }),
    fc.record({ kind: fc.constantFrom('list' as const, 'set' as const, 'map' as const), element: tie('type') }),
    fc.record({ kind: fc.constant('tuple' as const), elements: fc.array(tie('type'), { maxLength: 3 }) }),
    fc.record({
      kind: fc.constant('object' as const),
      attributes: fc.uniqueArray(fc.record({ name: identifier, type: tie('type'), optional: fc.boolean() }), { maxLength: 3, selector: (a) => a.name }),
    }),
  ),
})).type;

/** A value that fits a type. */
export function valueArb(t: TypeExpr): fc.Arbitrary<unknown> {
  switch (t.kind) {
    case 'string':
      return fc.string();
    case 'number':
      return fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }));
    case 'bool':
      return fc.boolean();
    case 'any':
      // Not null: an element of a collection may not be (a variable's own null is its nullable's matter).
      return fc.jsonValue({ maxDepth: 2 }).filter((v) => v !== null);
    case 'list':
    case 'set':
      return fc.array(valueArb(t.element), { maxLength: 3 });
    case 'map':
      return fc.dictionary(
        fc.string({ minLength: 1, maxLength: 5 }).filter((k) => k !== '__proto__'),
        valueArb(t.element),
        { maxKeys: 3 },
      );
    case 'tuple':
      return fc.tuple(...t.elements.map(valueArb));
    case 'object':
      return fc
        .tuple(...t.attributes.map((a) => (a.optional ? fc.option(valueArb(a.type), { nil: undefined }) : valueArb(a.type))))
        .map((values) => Object.fromEntries(t.attributes.flatMap((a, i) => (values[i] === undefined ? [] : [[a.name, values[i]]]))));
  }
}
