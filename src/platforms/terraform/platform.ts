// The `terraform` platform (CONTRACT §8): nodes are resources of the operator's Terraform module,
// applied by a TerraformRunner in the group's working directory under the data directory.
import { isAbsolute, join } from 'node:path';
import type { NodeGroup } from '../../config/types.js';
import type { PlatformData } from '../../domain/records.js';
import { projectPath } from '../../paths.js';
import { PlatformError, type NewNode, type NodeRef, type Platform } from '../platform.js';
import { TerraformRunner, type RunnerProgress } from './runner.js';

export interface TerraformPlatformOptions {
  dataDir: string;
  group: NodeGroup;
  serviceUrl: string;
  nodeToken(group: string, nodeId: string): string;
  onProgress(group: string, event: RunnerProgress): void;
}

/** A module named in the config: one shipped under config/terraform, or an operator's path. */
export function moduleDirOf(module: string): string {
  return isAbsolute(module) || module.startsWith('.') ? module : projectPath('config', 'terraform', module);
}

/** The shipped `local` module needs to know where the node agent is: fill in what was not given. */
function withLocalDefaults(group: NodeGroup, dataDir: string): NodeGroup {
  const tf = group.platform.terraform;
  if (tf.module !== 'local') return group;
  const variables = { agent: projectPath('dist', 'src', 'agent', 'main.js'), node_binary: process.execPath, state_dir: join(dataDir, 'terraform-nodes'), ...tf.variables };
  return { ...group, platform: { ...group.platform, terraform: { ...tf, variables } } };
}

export class TerraformPlatform implements Platform {
  readonly type = 'terraform' as const;
  readonly runner: TerraformRunner;
  private readonly dataDir: string;

  constructor(o: TerraformPlatformOptions) {
    this.dataDir = o.dataDir;
    this.runner = new TerraformRunner({
      dir: join(o.dataDir, 'terraform', o.group.name),
      group: withLocalDefaults(o.group, o.dataDir),
      moduleDir: moduleDirOf(o.group.platform.terraform.module),
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
      return { type: 'terraform', ...(a.public ?? a.private ? { address: a.public ?? a.private } : {}), ...(a.private ? { privateAddress: a.private } : {}) };
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

  exists(node: NodeRef): boolean {
    return this.runner.has(node.id);
  }

  /**
   * At start: Terraform's state against the recorded nodes. Recorded nodes in the state are
   * adopted; recorded nodes missing from it are reported; resources of unknown nodes (orphans,
   * say of a create that finished after a crash) are destroyed.
   */
  async reconcile(nodes: readonly NodeRef[]): Promise<{ missing: string[]; orphans: string[] }> {
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
    const orphans = [...state].filter((id) => !known.has(id));
    return { missing, orphans };
  }

  reconfigure(group: NodeGroup): void {
    this.runner.reconfigure(withLocalDefaults(group, this.dataDir));
  }

  /** Cloud nodes outlive the service; only unfinished applies are waited for. */
  async shutdown(): Promise<void> {
    await this.runner.close();
  }
}
