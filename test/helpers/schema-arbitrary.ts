// fast-check arbitraries from the JSON Schemas of the OpenAPI document: values the document says
// are valid, for tests that hold the service to what it publishes. Covers the subset the
// document uses (objects, arrays, records, strings with patterns, numbers, unions, consts).
import fc from 'fast-check';

export type JsonSchema = {
  type?: string;
  anyOf?: JsonSchema[];
  const?: unknown;
  enum?: unknown[];
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minItems?: number;
  maxItems?: number;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  patternProperties?: Record<string, JsonSchema>;
  required?: string[];
  maxProperties?: number;
  $ref?: string;
};

/** Valid values of `schema` (sizes kept small: these go over HTTP). */
export function arbitraryOf(schema: JsonSchema, resolve: (ref: string) => JsonSchema = () => ({})): fc.Arbitrary<unknown> {
  if (schema.$ref) return arbitraryOf(resolve(schema.$ref), resolve);
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map((s) => arbitraryOf(s, resolve)));
  if ('const' in schema) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  switch (schema.type) {
    case 'string':
      if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern));
      if (schema.format === 'date-time') return fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }).map((d) => d.toISOString());
      return fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 40, 40) });
    case 'integer':
      return fc.integer({ min: Math.max(schema.minimum ?? -1e6, -1e9), max: Math.min(schema.maximum ?? 1e6, 1e9) });
    case 'number': {
      const min = schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1e-3 : (schema.minimum ?? -1e6);
      return fc.double({ min: Math.max(min, -1e9), max: Math.min(schema.maximum ?? 1e6, 1e9), noNaN: true, noDefaultInfinity: true });
    }
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(arbitraryOf(schema.items ?? {}, resolve), { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 4, Math.max(schema.minItems ?? 0, 4)) });
    case 'object': {
      if (schema.patternProperties) {
        const [pattern, value] = Object.entries(schema.patternProperties)[0]!;
        return fc.dictionary(fc.stringMatching(new RegExp(pattern)), arbitraryOf(value, resolve), { maxKeys: Math.min(schema.maxProperties ?? 4, 4) });
      }
      const required = new Set(schema.required ?? []);
      const props = Object.entries(schema.properties ?? {});
      return fc.record(Object.fromEntries(props.map(([k, s]) => [k, arbitraryOf(s, resolve)])), { requiredKeys: props.map(([k]) => k).filter((k) => required.has(k)) });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}
