// Terraform type constraints (the `type` of a module's `variable` block) and whether a JSON value
// fits one. Pure. The grammar is Terraform's (https://developer.hashicorp.com/terraform/language/expressions/type-constraints):
//
//   type      := "string" | "number" | "bool" | "any"
//              | ("list" | "set" | "map") "(" type ")"
//              | "tuple" "(" "[" [ type { "," type } [","] ] "]" ")"
//              | "object" "(" "{" [ attribute { ("," | newline) attribute } ] "}" ")"
//   attribute := identifier ("=" | ":") ( type | "optional" "(" type [ "," default ] ")" )
//
// Comments (#, //, /* */) may appear between tokens, as in any HCL expression; an optional
// attribute's default is an expression that is skipped (a value that leaves the attribute out
// gets it from Terraform). Values are checked strictly by their JSON type, with no conversions:
// a request's variables are data and must say what they are.

export type TypeExpr =
  | { kind: 'string' | 'number' | 'bool' | 'any' }
  | { kind: 'list' | 'set' | 'map'; element: TypeExpr }
  | { kind: 'tuple'; elements: TypeExpr[] }
  /** Attributes as a list: names come from a module file and must not meet Object.prototype. */
  | { kind: 'object'; attributes: Array<{ name: string; type: TypeExpr; optional: boolean }> };

export class TypeSyntaxError extends Error {
  constructor(
    readonly reason: string,
    readonly position: number,
  ) {
    super(`${reason} (at column ${position + 1})`);
    this.name = 'TypeSyntaxError';
  }
}

type Token = { kind: 'ident' | 'punct' | 'newline' | 'string' | 'number' | 'other'; text: string; at: number };

const IDENT = /^[A-Za-z_][A-Za-z0-9_-]*/;
const NUMBER = /^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?/;
/** Nesting beyond this is refused: no module needs it, and the parser and checker recurse. */
const MAX_DEPTH = 32;

function tokenize(text: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '\n') {
      out.push({ kind: 'newline', text: c, at: i++ });
    } else if (c === ' ' || c === '\t' || c === '\r') {
      i++;
    } else if (c === '#' || (c === '/' && text[i + 1] === '/')) {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      if (end < 0) throw new TypeSyntaxError('unclosed comment', i);
      // A multi-line comment ends a line as far as separators go.
      if (text.slice(i, end).includes('\n')) out.push({ kind: 'newline', text: '\n', at: i });
      i = end + 2;
    } else if (c === '"') {
      const start = i;
      i = skipString(text, i);
      out.push({ kind: 'string', text: text.slice(start, i), at: start });
    } else if ('(){}[],=:'.includes(c)) {
      out.push({ kind: 'punct', text: c, at: i++ });
    } else {
      const rest = text.slice(i);
      const m = IDENT.exec(rest) ?? NUMBER.exec(rest);
      if (m) {
        out.push({ kind: /^[0-9]/.test(m[0]) ? 'number' : 'ident', text: m[0], at: i });
        i += m[0].length;
      } else {
        // Operators and the like can only appear in an optional attribute's default.
        out.push({ kind: 'other', text: c, at: i++ });
      }
    }
  }
  return out;
}

/** The index after a quoted string that starts at `i`, templates (`${ … }`) and escapes included. */
function skipString(text: string, i: number): number {
  const start = i++;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '\\') i += 2;
    else if (c === '"') return i + 1;
    else if ((c === '$' || c === '%') && text[i + 1] === '{') {
      let depth = 1;
      i += 2;
      while (i < text.length && depth > 0) {
        if (text[i] === '"') i = skipString(text, i);
        else {
          if (text[i] === '{') depth++;
          else if (text[i] === '}') depth--;
          i++;
        }
      }
    } else if (c === '\n') break;
    else i++;
  }
  throw new TypeSyntaxError('unclosed string', start);
}

/** Parses a type constraint, as written in a `variable` block (without the `${ }` hcl2json adds). */
export function parseType(text: string): TypeExpr {
  const tokens = tokenize(text);
  let pos = 0;
  const peek = () => tokens[pos];
  const skipNewlines = () => {
    while (peek()?.kind === 'newline') pos++;
  };
  const fail = (reason: string): never => {
    throw new TypeSyntaxError(reason, peek()?.at ?? text.length);
  };
  const expect = (punct: string) => {
    skipNewlines();
    const t = peek();
    if (t?.kind !== 'punct' || t.text !== punct) fail(`expected '${punct}'${t ? ` but found '${t.text}'` : ' but the type ended'}`);
    pos++;
  };
  const isPunct = (punct: string) => {
    const t = peek();
    return t?.kind === 'punct' && t.text === punct;
  };

  function type(depth: number): TypeExpr {
    if (depth > MAX_DEPTH) fail(`types nest at most ${MAX_DEPTH} deep`);
    skipNewlines();
    const t = peek();
    if (t?.kind !== 'ident') return fail(t ? `expected a type but found '${t.text}'` : 'expected a type');
    pos++;
    switch (t.text) {
      case 'string':
      case 'number':
      case 'bool':
      case 'any':
        return { kind: t.text };
      case 'list':
      case 'set':
      case 'map': {
        expect('(');
        const element = type(depth + 1);
        expect(')');
        return { kind: t.text, element };
      }
      case 'tuple': {
        expect('(');
        expect('[');
        const elements: TypeExpr[] = [];
        skipNewlines();
        while (!isPunct(']')) {
          elements.push(type(depth + 1));
          skipNewlines();
          if (isPunct(',')) pos++;
          else if (!isPunct(']')) fail("expected ',' or ']'");
          skipNewlines();
        }
        pos++;
        expect(')');
        return { kind: 'tuple', elements };
      }
      case 'object': {
        expect('(');
        expect('{');
        const attributes: Array<{ name: string; type: TypeExpr; optional: boolean }> = [];
        skipNewlines();
        while (!isPunct('}')) {
          const name = peek();
          if (name?.kind !== 'ident') fail('expected an attribute name (an identifier)');
          pos++;
          if (attributes.some((a) => a.name === name!.text)) fail(`attribute '${name!.text}' is declared twice`);
          skipNewlines();
          if (isPunct('=') || isPunct(':')) pos++;
          else fail("expected '=' after an attribute name");
          skipNewlines();
          let optional = false;
          let attrType: TypeExpr;
          if (peek()?.kind === 'ident' && peek()!.text === 'optional') {
            pos++;
            optional = true;
            expect('(');
            attrType = type(depth + 1);
            skipNewlines();
            if (isPunct(',')) {
              pos++;
              skipExpression();
            }
            expect(')');
          } else attrType = type(depth + 1);
          attributes.push({ name: name!.text, type: attrType, optional });
          // Attributes are separated by a comma or a new line.
          const t2 = peek();
          if (t2?.kind === 'newline' || isPunct(',')) {
            pos++;
            skipNewlines();
          } else if (!isPunct('}')) fail("expected ',', a new line or '}' after an attribute");
        }
        pos++;
        expect(')');
        return { kind: 'object', attributes };
      }
      case 'optional':
        return fail('optional(...) is only allowed for an attribute of an object type');
      default:
        return fail(`'${t.text}' is not a type (string, number, bool, any, list, set, map, tuple, object)`);
    }
  }

  /** An optional attribute's default: any expression, up to the ')' that closes optional(. */
  function skipExpression(): void {
    let depth = 0;
    let seen = false;
    for (;;) {
      const t = peek();
      if (!t) fail('the default of optional(...) is not closed');
      if (t!.kind === 'punct' && '([{'.includes(t!.text)) depth++;
      else if (t!.kind === 'punct' && ')]}'.includes(t!.text)) {
        if (depth === 0) break;
        depth--;
      } else if (depth === 0 && t!.kind === 'punct' && t!.text === ',') fail('optional(...) takes a type and at most one default');
      if (t!.kind !== 'newline') seen = true;
      pos++;
    }
    if (!seen) fail('expected a default after the comma');
  }

  const result = type(0);
  skipNewlines();
  if (pos < tokens.length) fail(`unexpected '${peek()!.text}' after the type`);
  return result;
}

/** The type as Terraform writes it, for messages. */
export function typeToString(t: TypeExpr): string {
  switch (t.kind) {
    case 'list':
    case 'set':
    case 'map':
      return `${t.kind}(${typeToString(t.element)})`;
    case 'tuple':
      return `tuple([${t.elements.map(typeToString).join(', ')}])`;
    case 'object':
      return `object({ ${t.attributes.map((a) => `${a.name} = ${a.optional ? `optional(${typeToString(a.type)})` : typeToString(a.type)}`).join(', ')} })`;
    default:
      return t.kind;
  }
}

export interface ValueProblem {
  /** Steps below the variable: attribute names and element indexes. */
  at: Array<string | number>;
  message: string;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * What is wrong with a JSON value for a type (nothing: an empty list). Null is the caller's
 * matter at the top (a variable's `nullable`); inside, an object's attribute may be null, and an
 * element of a collection may not.
 */
export function valueProblems(type: TypeExpr, value: unknown, at: Array<string | number> = [], out: ValueProblem[] = []): ValueProblem[] {
  const problem = (message: string) => out.push({ at, message });
  const what = `must be ${article(type)}`;
  switch (type.kind) {
    case 'any':
      return out;
    case 'string':
      if (typeof value !== 'string') problem(what);
      return out;
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) problem(what);
      return out;
    case 'bool':
      if (typeof value !== 'boolean') problem(what);
      return out;
    case 'list':
    case 'set':
      if (!Array.isArray(value)) problem(what);
      else for (const [i, v] of value.entries()) v === null ? out.push({ at: [...at, i], message: 'must not be null (an element of a collection)' }) : valueProblems(type.element, v, [...at, i], out);
      return out;
    case 'map':
      if (!isPlainObject(value)) problem(what);
      else
        for (const [k, v] of Object.entries(value))
          v === null ? out.push({ at: [...at, k], message: 'must not be null (an element of a collection)' }) : valueProblems(type.element, v, [...at, k], out);
      return out;
    case 'tuple':
      if (!Array.isArray(value) || value.length !== type.elements.length) problem(what);
      else for (const [i, v] of value.entries()) if (v !== null) valueProblems(type.elements[i]!, v, [...at, i], out);
      return out;
    case 'object': {
      if (!isPlainObject(value)) {
        problem(what);
        return out;
      }
      const declared = new Map(type.attributes.map((a) => [a.name, a]));
      for (const [k, v] of Object.entries(value)) {
        const attr = declared.get(k);
        if (!attr) out.push({ at: [...at, k], message: `is not an attribute of ${typeToString(type)}` });
        else if (v !== null) valueProblems(attr.type, v, [...at, k], out);
      }
      for (const a of type.attributes) if (!a.optional && !Object.hasOwn(value, a.name)) out.push({ at: [...at, a.name], message: 'is required' });
      return out;
    }
  }
}

function article(t: TypeExpr): string {
  switch (t.kind) {
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    case 'bool':
      return 'a boolean';
    case 'list':
    case 'set':
      return `an array (${typeToString(t)})`;
    case 'tuple':
      return `an array of ${t.elements.length} (${typeToString(t)})`;
    case 'map':
    case 'object':
      return `an object (${typeToString(t)})`;
    default:
      return 'any value';
  }
}
