// The `terraform` platform (docs/nodes.md): nodes are resources of the operator's Terraform module,
// applied by a TerraformRunner in the group's working directory under the data directory.
import { join } from 'node:path';
import type { NodeGroup, TerraformOperatorConfig } from '../../config/types.js';
import type { PlatformData } from '../../domain/records.js';
import { projectPath } from '../../paths.js';
import { capabilitiesOf } from '../../domain/capabilities.js';
import { PlatformError, type NewNode, type NodeRef, type Platform, type Reconciliation } from '../platform.js';
import type { BackendSettings } from './backend.js';
import type { ModuleInfo, TerraformModules } from '../../policy/terraform/requests.js';
import { TerraformRunner, type RunnerProgress, type Timers } from './runner.js';

export interface TerraformPlatformOptions {
  dataDir: string;
  group: NodeGroup;
  serviceUrl: string;
  /** The operator's settings (CLI, environment) and the modules read at start. */
  operator: Pick<TerraformOperatorConfig, 'binary' | 'env'>;
  modules: TerraformModules;
  /** Cluster mode: the state is behind this instance's http backend, not in the working directory. */
  backend?: BackendSettings;
  nodeToken(group: string, nodeId: string): string;
  onProgress(group: string, event: RunnerProgress): void;
  timers?: Timers;
}

/**
 * The inputs of a module no node group sets (./policy.ts SERVICE_PINNED): for the shipped `local` module, where the node agent
 * is, the Node.js that runs it and where nodes keep their files (this machine's paths); then
 * whatever the operator pins (terraform.modules.<name>.variables), which wins.
 */
export function pinnedInputs(module: ModuleInfo, dataDir: string): Record<string, unknown> {
  const service: Record<string, unknown> =
    module.shipped && module.name === 'local' ? { agent: projectPath('dist', 'src', 'agent', 'main.js'), node_binary: process.execPath, state_dir: join(dataDir, 'terraform-nodes') } : {};
  return { ...service, ...module.pinned };
}

export class TerraformPlatform implements Platform {
  readonly capabilities = capabilitiesOf('terraform');
  readonly runner: TerraformRunner;

  constructor(o: TerraformPlatformOptions) {
    this.runner = new TerraformRunner({
      dir: join(o.dataDir, 'terraform', o.group.name),
      group: o.group,
      modules: o.modules,
      pinned: (module) => pinnedInputs(module, o.dataDir),
      binary: o.operator.binary,
      passEnv: o.operator.env,
      ...(o.timers ? { timers: o.timers } : {}),
      ...(o.backend ? { backend: o.backend } : {}),
      serviceUrl: o.group.platform.terraform.serviceUrl ?? o.serviceUrl,
      nodeToken: (id) => o.nodeToken(o.group.name, id),
      onProgress: (event) => o.onProgress(o.group.name, event),
    });
  }

  prepare(_group: NodeGroup, _node: NewNode): PlatformData {
    return { type: 'terraform' };
  }

  async create(_group: NodeGroup, node: NodeRef): Promise<PlatformData> {
    try {
      const a = await this.runner.ensure(node);
      return { type: 'terraform', ...((a.public ?? a.private) ? { address: a.public ?? a.private } : {}), ...(a.private ? { privateAddress: a.private } : {}) };
    } catch (err) {
      throw new PlatformError((err as Error).message);
    }
  }

  async destroy(node: NodeRef): Promise<void> {
    try {
      await this.runner.remove(node.id);
    } catch (err) {
      throw new PlatformError((err as Error).message);
    }
  }

  /**
   * At start: Terraform's state against the recorded nodes. Recorded nodes in the state are
   * adopted; recorded nodes missing from it are reported; resources of unknown nodes (orphans,
   * say of a create that finished after a crash) are destroyed.
   */
  async reconcile(_group: NodeGroup, nodes: readonly NodeRef[]): Promise<Reconciliation> {
    const state = await this.runner.state();
    const known = new Set(nodes.map((n) => n.id));
    const missing: string[] = [];
    for (const n of nodes) {
      if (state.has(n.id)) this.runner.adopt(n);
      else {
        // Faulted and replaced by the supervisor: an apply must not bring it back beside its replacement.
        this.runner.forget(n.id);
        missing.push(n.id);
      }
    }
    // Only what the state and the records agree on is wanted: a variables file left from an earlier
    // time (cluster mode: this instance owned the group before) must not bring old nodes back.
    this.runner.retain(new Set(nodes.filter((n) => state.has(n.id)).map((n) => n.id)));
    const orphans = [...state].filter((id) => !known.has(id));
    return { listed: [], missing, missingReason: 'its resources are not in the Terraform state', retired: [], orphans };
  }

  async removeOrphan(id: string): Promise<void> {
    await this.runner.remove(id);
  }

  reconfigure(group: NodeGroup): void {
    this.runner.reconfigure(group);
  }

  /** Cloud nodes outlive the service; only unfinished applies are waited for. */
  async shutdown(): Promise<void> {
    await this.runner.close();
  }
}
