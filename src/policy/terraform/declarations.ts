// What a Terraform module declares: its input variables (name, type, whether it has a default,
// whether it takes null) and its required providers (local name, source, version). Pure: fed the
// bodies of the module's files as HashiCorp's HCL parser turns them into JSON (@cdktf/hcl2json,
// run by src/platforms/terraform/modules.ts) or, for `*.tf.json` files, as they are.
import { parseType, TypeSyntaxError, type TypeExpr } from './type-constraint.js';

export interface ModuleVariable {
  name: string;
  type: TypeExpr;
  /** No default: someone must set it (a node group, the operator, or Switchyard). */
  required: boolean;
  /** Whether null is a value (`nullable`, true unless the module says false). */
  nullable: boolean;
}

export interface RequiredProvider {
  /** The module's local name for it, e.g. `aws`. */
  name: string;
  /** Its registry address, e.g. `hashicorp/aws`. */
  source: string;
  version?: string;
}

export interface Declarations {
  variables: ModuleVariable[];
  providers: RequiredProvider[];
}

export class DeclarationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeclarationError';
  }
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_-]*$/;
/** A registry address: [hostname/]namespace/type. */
const SOURCE = /^(?:[a-z0-9.-]+\/)?[a-z0-9_-]+\/[a-z0-9_-]+$/i;

/** hcl2json writes an expression as "${…}"; a `.tf.json` file writes a type as plain text. */
function expressionText(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const m = /^\$\{([\s\S]*)\}$/.exec(value);
  return m ? m[1]! : value;
}

/** A block in hcl2json's output is a list of bodies; in a `.tf.json` file, a body or a list. */
const bodies = (value: unknown): Record<string, unknown>[] =>
  (Array.isArray(value) ? value : [value]).filter((b): b is Record<string, unknown> => b !== null && typeof b === 'object' && !Array.isArray(b));

/** The declarations of one module, from the parsed bodies of its files (`{file, body}`). */
export function declarationsOf(files: ReadonlyArray<{ file: string; body: unknown }>): Declarations {
  const variables = new Map<string, ModuleVariable>();
  const providers = new Map<string, RequiredProvider>();
  for (const { file, body } of files) {
    if (body === null || typeof body !== 'object') continue;
    const b = body as Record<string, unknown>;
    for (const block of bodies(b.variable)) {
      for (const [name, raw] of Object.entries(block)) {
        if (!IDENTIFIER.test(name)) throw new DeclarationError(`${file}: variable "${name}" is not a Terraform identifier`);
        if (variables.has(name)) throw new DeclarationError(`${file}: variable "${name}" is declared twice`);
        const decl = bodies(raw)[0] ?? {};
        const text = decl.type === undefined ? 'any' : expressionText(decl.type);
        if (text === undefined) throw new DeclarationError(`${file}: variable "${name}": its type is not a type expression`);
        let type: TypeExpr;
        try {
          type = parseType(text);
        } catch (err) {
          if (!(err instanceof TypeSyntaxError)) throw err;
          throw new DeclarationError(`${file}: variable "${name}": type ${JSON.stringify(text.trim())}: ${err.message}`);
        }
        variables.set(name, { name, type, required: !Object.hasOwn(decl, 'default'), nullable: decl.nullable !== false });
      }
    }
    for (const tf of bodies(b.terraform)) {
      for (const rp of bodies(tf.required_providers)) {
        for (const [name, spec] of Object.entries(rp)) {
          if (!IDENTIFIER.test(name)) throw new DeclarationError(`${file}: required provider "${name}" is not a Terraform identifier`);
          // `name = "version"` is the old short form: the source is then hashicorp/<name>.
          const s = typeof spec === 'string' ? { version: spec } : ((bodies(spec)[0] ?? {}) as { source?: unknown; version?: unknown });
          const source = typeof s.source === 'string' ? s.source : `hashicorp/${name}`;
          if (!SOURCE.test(source)) throw new DeclarationError(`${file}: required provider "${name}": source ${JSON.stringify(source)} is not a registry address`);
          const version = typeof s.version === 'string' ? s.version : undefined;
          providers.set(name, { name, source, ...(version !== undefined ? { version } : {}) });
        }
      }
    }
  }
  return { variables: [...variables.values()].sort((a, b) => (a.name < b.name ? -1 : 1)), providers: [...providers.values()] };
}
