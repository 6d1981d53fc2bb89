// The Janus gateway of one node, kept running: its network (a namespace of its own on the local
// platform, src/os/netns.ts), the process (process.ts) and the janode connection (gateway.ts).
// Ready once the admin API answers and janode is connected; a crash (the process exits, or the
// connection drops) is reported not ready with the reason and Janus is started again with backoff,
// as the nginx backend does (src/agent/media/backend.ts). Everything Janus held is gone after a
// restart: the engine hears of it (onRestart) and forgets its sessions.
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import type { NetnsPlan } from '../../../policy/network/netns-plan.js';
import { forgetPlan, inNamespace, netnsDown, netnsUp, recordPlan } from '../../../os/netns.js';
import { describeExit } from '../../media/nginx-process.js';
import type { AdminEndpoint } from './admin-stats.js';
import { DEFAULT_JANUS_LIB_DIR, janusPaths, type JanusNode, type JanusSecrets } from './config.js';
import { JanusGateway } from './gateway.js';
import { DIRECT, JanusProcess } from './process.js';

/** Where the node's Janus lives on the network. */
export type JanusNetwork =
  /** A namespace made for the node (the local platform): media and control on its address. */
  | { kind: 'netns'; plan: NetnsPlan }
  /** The host's own network (a real media host): media on its NIC's address, control on loopback. */
  | { kind: 'host'; mediaAddress: string; controlAddress: string };

export interface JanusRuntimeOptions {
  nodeId: string;
  /** The node's folder: Janus's config in conf/, its log and pid file, the namespace record (src/os/netns.ts). */
  dir: string;
  binary: string;
  libDir?: string;
  network: JanusNetwork;
  publicAddress?: string;
  stunServer?: string;
  wsPort?: number;
  adminPort?: number;
  icePorts?: readonly [number, number];
  mountpointPorts?: readonly [number, number];
  log(msg: string, extra?: Record<string, unknown>): void;
}

/** Restart delays after a crash; the count starts again once Janus has stayed up this long. */
const BACKOFF_MS = [250, 500, 1000, 2000, 4000, 8000, 10_000];
const STABLE_MS = 30_000;

const secret = () => randomBytes(24).toString('base64url');

export class JanusRuntime {
  private readonly process: JanusProcess;
  private readonly node: JanusNode;
  private gw: JanusGateway | null = null;
  private problemText: string | null = 'starting';
  private stopped = false;
  private startedAt = 0;
  private crashes = 0;
  private restartTimer: NodeJS.Timeout | null = null;
  private generation = 0;
  /** Operations one at a time: launch, restart, stop. */
  private queue: Promise<unknown> = Promise.resolve();
  /** Called after Janus came back from a crash: every session, room and mountpoint is gone. */
  onRestart: (() => void) | null = null;
  /** Called when Janus goes down (before the restart). */
  onDown: (() => void) | null = null;
  version: { version: number; versionString: string } | null = null;

  constructor(private readonly o: JanusRuntimeOptions) {
    const net = o.network;
    const media = net.kind === 'netns' ? net.plan.address : net.mediaAddress;
    const control = net.kind === 'netns' ? net.plan.address : net.controlAddress;
    this.node = {
      nodeId: o.nodeId,
      dir: o.dir,
      mediaAddress: media,
      controlAddress: control,
      wsPort: o.wsPort ?? 8188,
      adminPort: o.adminPort ?? 7088,
      icePorts: o.icePorts ?? [20000, 29999],
      mountpointPorts: o.mountpointPorts ?? [30000, 39999],
      ...(o.publicAddress ? { publicAddress: o.publicAddress } : {}),
      ...(o.stunServer ? { stunServer: o.stunServer } : {}),
      secrets: { api: secret(), admin: secret(), pluginKey: secret() } satisfies JanusSecrets,
      libDir: o.libDir ?? DEFAULT_JANUS_LIB_DIR,
    };
    this.process = new JanusProcess(o.binary, net.kind === 'netns' ? (argv) => inNamespace(net.plan, argv) : DIRECT);
    this.process.onExit = (exit) => this.crashed(`janus ${describeExit(exit)}`);
  }

  /** Where Janus sends media from and viewers' candidates point to. */
  get mediaAddress(): string {
    return this.node.mediaAddress;
  }

  /** The admin API (its counters: admin-stats.ts), or null while Janus is down. */
  get admin(): AdminEndpoint | null {
    return this.problemText === null ? { url: `http://${this.node.controlAddress}:${this.node.adminPort}/admin`, secret: this.node.secrets.admin } : null;
  }

  /** The connected gateway, or null while Janus is down. */
  get gateway(): JanusGateway | null {
    return this.problemText === null ? this.gw : null;
  }

  /** Why Janus is not serving, or null when it is. */
  get problem(): string | null {
    return this.problemText;
  }

  private serial<T>(op: () => Promise<T>): Promise<T> {
    const next = this.queue.then(op, op);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Makes the network, starts Janus. A failure is not thrown: it is the problem the node reports while it tries again. */
  async start(): Promise<void> {
    mkdirSync(this.o.dir, { recursive: true });
    // A Janus left by an agent killed outright holds the namespace and its ports.
    if (await JanusProcess.stopStale(this.o.dir)) this.o.log('stopped a janus left by an earlier agent of this node');
    rmSync(janusPaths(this.o.dir).pid, { force: true });
    await this.serial(async () => {
      try {
        if (this.o.network.kind === 'netns') {
          // Recorded first: if this agent is killed, the local platform removes what it names.
          recordPlan(this.o.dir, this.o.network.plan);
          await netnsUp(this.o.network.plan);
        }
        await this.launch();
      } catch (err) {
        this.crashed((err as Error).message);
      }
    });
  }

  private async launch(): Promise<void> {
    this.version = await this.process.start(this.node);
    const generation = ++this.generation;
    try {
      this.gw = await JanusGateway.connect(`ws://${this.node.controlAddress}:${this.node.wsPort}/`, this.node.secrets.api, this.node.secrets.pluginKey);
    } catch (err) {
      await this.process.stop();
      throw err;
    }
    this.gw.onLost((why) => {
      if (generation === this.generation) this.crashed(`the connection to janus dropped: ${why}`);
    });
    this.startedAt = Date.now();
    const wasDown = this.crashes > 0;
    this.problemText = null;
    this.o.log('janus started', { pid: this.process.pid, version: this.version.versionString, media: this.node.mediaAddress, ws: `${this.node.controlAddress}:${this.node.wsPort}` });
    if (wasDown) this.onRestart?.();
  }

  private crashed(why: string): void {
    if (this.stopped) return;
    if (this.problemText !== null && this.restartTimer) return;
    if (this.startedAt > 0 && Date.now() - this.startedAt > STABLE_MS) this.crashes = 0;
    this.startedAt = 0;
    this.generation++;
    const delay = BACKOFF_MS[Math.min(this.crashes, BACKOFF_MS.length - 1)]!;
    this.crashes++;
    this.problemText = `${why}; restarting (attempt ${this.crashes})`;
    this.o.log('janus down', { why, restartInMs: delay, attempt: this.crashes });
    const gw = this.gw;
    this.gw = null;
    void gw?.close();
    this.onDown?.();
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      void this.serial(async () => {
        if (this.stopped) return;
        // A connection that dropped with Janus still running: start afresh all the same.
        await this.process.stop();
        try {
          if (this.o.network.kind === 'netns') await netnsUp(this.o.network.plan);
          await this.launch();
        } catch (err) {
          this.crashed((err as Error).message);
        }
      });
    }, delay);
  }

  /** Stops Janus and removes the node's namespace. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    await this.serial(async () => {
      const gw = this.gw;
      this.gw = null;
      await gw?.close();
      await this.process.stop();
      rmSync(janusPaths(this.o.dir).pid, { force: true });
      if (this.o.network.kind === 'netns') {
        try {
          await netnsDown(this.o.network.plan);
          forgetPlan(this.o.dir);
        } catch (err) {
          this.o.log('could not remove the namespace', { error: (err as Error).message });
        }
      }
    });
  }

  /** For tests: the Janus process id (null while down). */
  get pid(): number | null {
    return this.process.pid;
  }
}
