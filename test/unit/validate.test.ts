// Compiled checks skip filling defaults where a schema declares none: safe only if filling would
// have changed nothing. Properties over the API's own schemas and random values say so.
import { isDeepStrictEqual } from 'node:util';
import test from 'ava';
import fc from 'fast-check';
import Type, { type TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import * as api from '../../src/schemas/api.js';
import * as heartbeat from '../../src/schemas/heartbeat.js';
import { compile, declaresDefaults } from '../../src/schemas/validate.js';

const schemas = (Object.entries({ ...api, ...heartbeat }) as Array<[string, unknown]>).filter(
  (e): e is [string, TSchema] => typeof e[1] === 'object' && e[1] !== null && ('type' in e[1] || 'anyOf' in e[1]),
);

test('a default anywhere is found; a property named "default" is not one', (t) => {
  t.true(declaresDefaults(Type.Object({ a: Type.Integer({ default: 1 }) })));
  t.true(declaresDefaults(Type.Array(Type.Object({ a: Type.Optional(Type.Union([Type.String({ default: 'x' }), Type.Null()])) }))));
  t.true(declaresDefaults(Type.Record(Type.String(), Type.Object({ b: Type.Boolean({ default: false }) }))));
  t.false(declaresDefaults(Type.Object({ default: Type.String(), nested: Type.Object({ default: Type.Integer() }) })));
  t.false(declaresDefaults(heartbeat.HeartbeatSchema), 'the heartbeat body has none: its hot path skips the walk');
  t.true(schemas.length > 10);
});

test('for every API schema without defaults, filling them changes no value', (t) => {
  const plain = schemas.filter(([, s]) => !declaresDefaults(s));
  t.true(plain.length > 0);
  t.true(plain.some(([name]) => name === 'HeartbeatSchema'));
  for (const [name, schema] of plain) {
    const full = Compile(schema);
    const ours = compile(schema);
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), (value) => {
        const mine = ours.withDefaults(structuredClone(value));
        const theirs = full.Default(structuredClone(value));
        // The same value, or one that fails the check either way (TypeBox's walk copies an
        // array's inherited keys method onto it for an object schema with a "keys" field).
        if (isDeepStrictEqual(mine, theirs)) return true;
        if (ours.check(mine) || full.Check(theirs)) throw new Error(`${name}: ${JSON.stringify(mine)} against ${JSON.stringify(theirs)}`);
        return true;
      }),
      { numRuns: 200 },
    );
  }
});
