// The platform of each node group, built once: the local and static platforms are shared, a
// Terraform platform is one working directory, and so one per group. Terraform's progress becomes
// `platform.progress` events.
import type { NodeGroup, TerraformOperatorConfig } from '../../src/config/types.js';
import type { EventBody } from '../../src/domain/events.js';
import type { TokenSigner } from '../../src/auth/tokens.js';
import { LocalPlatform } from '../../src/platforms/local.js';
import type { Platform } from '../../src/platforms/platform.js';
import { StaticPlatform } from '../../src/platforms/static.js';
import { TerraformPlatform } from '../../src/platforms/terraform/platform.js';
import type { TerraformModules } from '../../src/policy/terraform/requests.js';
import type { RunnerProgress } from '../../src/platforms/terraform/runner.js';
import type { BackendSettings } from '../../src/platforms/terraform/backend.js';

export interface PlatformSettings {
  dataDir: string;
  /** Where agents on this machine reach the service (the local platform's nodes). */
  serviceUrl: string;
  /** Where other machines reach it (`server.publicUrl`): Terraform-made nodes, unless their group says otherwise. */
  publicUrl?: string;
  nodeTokenTtl: number;
  /** Agents of the local platform exit after this long without reaching the service. */
  orphanTimeoutMs?: number;
  /** The operator's Terraform CLI and environment, and the modules read at start: never a node group's. */
  terraform: {
    operator: Pick<TerraformOperatorConfig, 'binary' | 'env'>;
    modules: TerraformModules;
    /** Cluster mode: the state lives behind this instance's own http backend (docs/cluster.md). */
    backend?: BackendSettings;
  };
}

export class GroupPlatforms {
  private readonly local: LocalPlatform;
  private readonly fixed = new StaticPlatform();
  /** One Terraform working directory, and so one platform, per node group. */
  private readonly terraform = new Map<string, TerraformPlatform>();

  constructor(
    private readonly settings: PlatformSettings,
    private readonly signer: TokenSigner,
    private readonly emit: (events: EventBody[]) => void,
  ) {
    this.local = new LocalPlatform({
      serviceUrl: settings.serviceUrl,
      dataDir: settings.dataDir,
      nodeToken: (group, nodeId) => signer.nodeToken(group, nodeId, settings.nodeTokenTtl),
      ...(settings.orphanTimeoutMs !== undefined ? { orphanTimeoutMs: settings.orphanTimeoutMs } : {}),
    });
  }

  of(group: NodeGroup): Platform {
    switch (group.platform.type) {
      case 'local':
        return this.local;
      case 'static':
        return this.fixed;
      case 'terraform': {
        let tp = this.terraform.get(group.name);
        if (!tp) {
          const s = this.settings;
          tp = new TerraformPlatform({
            dataDir: s.dataDir,
            group,
            serviceUrl: s.publicUrl ?? s.serviceUrl,
            operator: s.terraform.operator,
            modules: s.terraform.modules,
            ...(s.terraform.backend ? { backend: s.terraform.backend } : {}),
            nodeToken: (g, nodeId) => this.signer.nodeToken(g, nodeId, s.nodeTokenTtl),
            onProgress: (g, event) => this.emit([terraformEvent(g, event)]),
          });
          this.terraform.set(group.name, tp);
        }
        return tp;
      }
    }
  }

  /** A group's definition changed: a platform already built for it follows. */
  reconfigure(group: NodeGroup): void {
    if (group.platform.type === 'terraform') this.terraform.get(group.name)?.reconfigure(group);
  }

  /**
   * Cluster mode: the group is no longer this instance's. Its Terraform runs no further command
   * (one under way finishes, and its state write is refused unless this instance serves the group
   * again); a later acquisition starts from the shared state with a new runner.
   */
  release(name: string): void {
    const tp = this.terraform.get(name);
    if (!tp) return;
    this.terraform.delete(name);
    void tp.shutdown();
  }

  /** The service stops: unfinished Terraform applies are waited for (cloud nodes outlive it). */
  async close(): Promise<void> {
    await Promise.allSettled([...this.terraform.values()].map((tp) => tp.shutdown()));
  }
}

function terraformEvent(group: string, e: RunnerProgress): EventBody {
  const base = { type: 'platform.progress' as const, group, platform: 'terraform' as const, operation: e.operation, phase: e.phase };
  if ('diagnostic' in e)
    return {
      ...base,
      message: `${e.diagnostic.severity}: ${e.diagnostic.summary}${e.diagnostic.detail ? `: ${e.diagnostic.detail}` : ''}`,
      ...(e.diagnostic.nodeId ? { nodeId: e.diagnostic.nodeId } : {}),
    };
  if ('resource' in e) return { ...base, resource: e.resource, action: e.action, ...(e.nodeId ? { nodeId: e.nodeId } : {}) };
  if (e.phase === 'summary' && 'add' in e) return { ...base, message: `${e.add} added, ${e.change} changed, ${e.remove} destroyed` };
  return {
    ...base,
    ...('attempt' in e && e.attempt !== undefined ? { attempt: e.attempt } : {}),
    ...('message' in e && e.message ? { message: e.message } : {}),
    ...('ok' in e && e.ok !== undefined ? { message: e.ok ? 'ok' : (e.message ?? 'failed') } : {}),
  };
}
