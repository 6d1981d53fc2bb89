// Terraform's machine-readable UI (`apply -json`): one JSON object per line, told apart by `type`
// (https://developer.hashicorp.com/terraform/internals/machine-readable-ui). Pure: fed lines, it
// reports which nodes' resources started, finished and failed, with their diagnostics. OpenTofu
// writes the same types with `@module: "tofu.ui"`. Lines that are not JSON (an early failure
// prints plain text) are kept as they are.

export interface Diagnostic {
  severity: 'error' | 'warning';
  summary: string;
  detail?: string;
  address?: string;
  nodeId?: string;
}

export type Progress =
  | { phase: 'start' | 'complete' | 'errored'; resource: string; action: string; nodeId?: string; elapsed?: number }
  | { phase: 'diagnostic'; diagnostic: Diagnostic }
  | { phase: 'summary'; add: number; change: number; remove: number };

export interface ApplyReport {
  /** Node ids with at least one resource action that completed, by action. */
  completed: Map<string, Set<string>>;
  /** Node ids with a resource that failed, with the diagnostic that says why. */
  errored: Map<string, string>;
  diagnostics: Diagnostic[];
  summary?: { add: number; change: number; remove: number };
  outputs?: Record<string, { value?: unknown; sensitive?: boolean }>;
  /** Output that was not JSON, such as the text of a failure before Terraform got going. */
  text: string[];
}

/**
 * The node a resource belongs to: the for_each key of its address inside one of the region
 * modules Switchyard renders, `module.nodes_us-east.aws_instance.node["us-east-edge-1a2b3c"]`. The
 * module contract keys every string-keyed resource by node id; resources of the operator's own
 * root configuration are not nodes.
 */
export function nodeIdOf(address: string | undefined): string | undefined {
  if (!address?.startsWith('module.nodes_')) return undefined;
  const keys = [...address.matchAll(/\["((?:[^"\\]|\\.)*)"\]/g)];
  return keys.length > 0 ? JSON.parse(`"${keys.at(-1)![1]}"`) : undefined;
}

interface Hook {
  resource?: { addr?: string };
  action?: string;
  elapsed_seconds?: number;
}

export class ApplyStream {
  private readonly report: ApplyReport = { completed: new Map(), errored: new Map(), diagnostics: [], text: [] };

  /** Reads one line; returns what it says for progress reporting, if anything. */
  push(line: string): Progress | null {
    const trimmed = line.trim();
    if (trimmed === '') return null;
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(trimmed) as Record<string, unknown>;
      if (msg === null || typeof msg !== 'object' || typeof msg.type !== 'string') throw new Error('not a message');
    } catch {
      this.report.text.push(trimmed);
      return null;
    }
    const hook = (msg.hook ?? {}) as Hook;
    const resource = hook.resource?.addr ?? '';
    const nodeId = nodeIdOf(resource);
    const action = hook.action ?? '';
    switch (msg.type) {
      case 'apply_start':
        return { phase: 'start', resource, action, ...(nodeId ? { nodeId } : {}) };
      case 'apply_complete': {
        if (nodeId) {
          let actions = this.report.completed.get(nodeId);
          if (!actions) this.report.completed.set(nodeId, (actions = new Set()));
          actions.add(action);
        }
        return { phase: 'complete', resource, action, ...(nodeId ? { nodeId } : {}), ...(hook.elapsed_seconds !== undefined ? { elapsed: hook.elapsed_seconds } : {}) };
      }
      case 'apply_errored':
      case 'provision_errored':
        if (nodeId) this.report.errored.set(nodeId, this.report.errored.get(nodeId) ?? `${action || 'apply'} of ${resource} failed`);
        return { phase: 'errored', resource, action, ...(nodeId ? { nodeId } : {}) };
      case 'diagnostic': {
        const d = (msg.diagnostic ?? {}) as { severity?: string; summary?: string; detail?: string; address?: string };
        // Only a diagnostic's own address names its node: Terraform prints every diagnostic at the
        // end of the run, and those without one ("execution halted") belong to no node.
        const id = nodeIdOf(d.address);
        const diagnostic: Diagnostic = {
          severity: d.severity === 'warning' ? 'warning' : 'error',
          summary: d.summary ?? String(msg['@message'] ?? 'unknown error'),
          ...(d.detail ? { detail: d.detail } : {}),
          ...(d.address ? { address: d.address } : {}),
          ...(id ? { nodeId: id } : {}),
        };
        this.report.diagnostics.push(diagnostic);
        if (id && diagnostic.severity === 'error') this.report.errored.set(id, `${diagnostic.summary}${diagnostic.detail ? `: ${diagnostic.detail}` : ''}`);
        return { phase: 'diagnostic', diagnostic };
      }
      case 'change_summary': {
        const c = (msg.changes ?? {}) as { add?: number; change?: number; remove?: number; operation?: string };
        // apply -json first summarises its plan: only the apply's own summary says what was done.
        if (c.operation !== undefined && c.operation !== 'apply') return null;
        this.report.summary = { add: c.add ?? 0, change: c.change ?? 0, remove: c.remove ?? 0 };
        return { phase: 'summary', ...this.report.summary };
      }
      case 'outputs':
        this.report.outputs = (msg.outputs ?? {}) as ApplyReport['outputs'];
        return null;
      default:
        return null;
    }
  }

  result(): ApplyReport {
    return this.report;
  }
}

export interface NodeAddress {
  public?: string;
  private?: string;
}

/** The module's `nodes` output, from `output -json`: node id → its addresses. */
export function nodeAddresses(outputJson: unknown, name = 'nodes'): Map<string, NodeAddress> {
  const out = new Map<string, NodeAddress>();
  const value = (outputJson as Record<string, { value?: unknown }> | null)?.[name]?.value;
  if (value === null || typeof value !== 'object') return out;
  for (const [id, v] of Object.entries(value as Record<string, unknown>)) {
    const a = (v ?? {}) as Record<string, unknown>;
    const pick = (...keys: string[]) => keys.map((k) => a[k]).find((x): x is string => typeof x === 'string' && x !== '');
    const pub = pick('public', 'public_ip', 'ipv4_address');
    const priv = pick('private', 'private_ip', 'ipv4_address_private');
    out.set(id, { ...(pub ? { public: pub } : {}), ...(priv ? { private: priv } : {}) });
  }
  return out;
}

/** Node ids with resources in `show -json` state. */
export function nodesInState(showJson: unknown): Set<string> {
  const ids = new Set<string>();
  const walk = (module: unknown) => {
    const m = (module ?? {}) as { resources?: Array<{ address?: string; mode?: string; tainted?: boolean }>; child_modules?: unknown[] };
    for (const r of m.resources ?? []) {
      // A tainted resource failed part way: Terraform will replace it, so the node is not there.
      if (r.mode !== 'data' && r.tainted !== true) {
        const id = nodeIdOf(r.address);
        if (id) ids.add(id);
      }
    }
    for (const child of m.child_modules ?? []) walk(child);
  };
  walk((showJson as { values?: { root_module?: unknown } } | null)?.values?.root_module);
  return ids;
}
