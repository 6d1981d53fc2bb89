// Starts and stops the whole service. Start order: data directory and store → credentials and
// signing key → node-group actors (loaded from LMDB) → HTTP → supervisor (it needs the URL the
// node agents will post to). Stop order is the reverse; a clean stop also stops local nodes.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { ActorHost } from '../../actors/host.js';
import type { GroupCounts } from '../model/views.js';
import { ConfigError, terraformConfigProblems } from '../config/load.js';
import type { Config } from '../config/types.js';
import { PasswordHasher } from '../auth/passwords.js';
import { LoginThrottle } from '../auth/login-throttle.js';
import { NodeTokens } from '../auth/node-tokens.js';
import { LookupRateLimiter } from '../auth/lookup-rate.js';
import { pkcs8Der, TokenSigner, type SigningKey } from '../auth/tokens.js';
import { AdmissionIssuer } from '../admission/issuer.js';
import { NodeKeys } from '../admission/node-keys.js';
import { AdmissionWebhooks } from '../admission/webhook.js';
import { LmdbWebhookKeeping } from '../webhooks/keeping.js';
import { Webhooks } from '../webhooks/webhooks.js';
import { registerStreamMetrics } from '../observability/stream-metrics.js';
import { Users } from '../auth/users.js';
import type { EventRecord } from '../domain/events.js';
import { EventLog, type Events } from '../events/log.js';
import type { ClusterRuntime } from './cluster.js';
import type { Waiting } from '../cluster/waiting-server.js';
import { noLocator, type Locator } from '../geo/locator.js';
import { bundledDatabases, openGeoIp } from '../geo/maxmind.js';
import { allRoutes, createApp } from '../http/app.js';
import { red5sm2Mount } from '../compat/red5sm2/index.js';
import { closeUnusedConnections, createServer } from '../http/server.js';
import { buildOpenApi } from '../http/openapi.js';
import type { Services } from '../http/services.js';
import { createLogger } from '../observability/log.js';
import { Metrics } from '../observability/metrics.js';
import { projectPath } from '../paths.js';
import { lockDataDir } from '../store/lock.js';
import { surviveCommitFailures } from '../store/failures.js';
import { openStore, type Store } from '../store/store.js';
import { Backups } from '../store/backup.js';
import { keepPrivate, makePrivate } from '../store/private-dir.js';
import { NodeGroupRegistry } from '../nodegroups/registry.js';
import { knownMetrics } from '../domain/metrics.js';
import { loadTerraformModules } from '../platforms/terraform/modules.js';

export interface ServiceOptions {
  log?: Logger;
  locator?: Locator;
  /** Local node agents exit after this long without reaching the service (default 5 min). */
  orphanTimeoutMs?: number;
  /** The scrypt pool's threads and queue (default 1 and 64): small in tests of a login storm. */
  passwordPool?: { threads?: number; maxQueue?: number };
  /** Where a line meant for the operator's eyes only goes (the generated password): stderr, never the JSON log. */
  announce?: (line: string) => void;
  /** The front end's clock (token expiry on open node channels and in the verified-token cache, lookup rate buckets), for tests. */
  now?: () => number;
  /** Cluster mode: why the start is waiting (NATS unreachable), for /readyz meanwhile (src/main.ts). */
  waiting?: (why: string) => void;
}

export interface Service {
  /** The HTTP base URL, e.g. http://127.0.0.1:5080 */
  url: string;
  port: number;
  /** The HTTPS listener's port, when `server.tls` is set. */
  tlsPort?: number;
  services: Services;
  actors: ActorHost;
  /** Stops accepting, finishes requests in flight, stops the actors and (by default) local nodes. */
  close(options?: { stopNodes?: boolean }): Promise<void>;
}

const LISTEN_ERRORS: Record<string, string> = {
  EADDRINUSE: 'another process listens on that port; expected a free port ({port})',
  EADDRNOTAVAIL: 'no interface of this machine has that address; expected one of its addresses, 127.0.0.1 or 0.0.0.0 (SWITCHYARD_HOST)',
  ENOTFOUND: 'the name does not resolve; expected an address or a resolvable host name of this machine (SWITCHYARD_HOST)',
  EACCES: 'ports below 1024 need privileges; expected a port from 1024 ({port}) or the capability to bind',
};

const VERSION = (JSON.parse(readFileSync(projectPath('package.json'), 'utf8')) as { version: string }).version;

const LOUD_EVENTS = /^(node\.|scaling\.|platform\.|actor\.|nodegroup\.|store\.)/;

export async function startService(config: Config, options: ServiceOptions = {}): Promise<Service> {
  const log = options.log ?? createLogger(config.log.level, undefined, config.log.format);
  // First: the actors' threads load their modules while the rest of the start goes on.
  const threads = ActorHost.preload(Boolean(config.cluster), (err) => log.error({ err }, 'an actor thread started early failed'));
  surviveCommitFailures((message) => log.error(message));
  // The Terraform modules node groups may name, read (in a thread of their own) while GeoIP loads.
  const modulesLoading = loadTerraformModules(config.terraform);
  modulesLoading.catch(() => {});
  let locator: Locator = options.locator ?? noLocator;
  if (!options.locator && config.geoip.enabled) {
    const paths = config.geoip.databases ?? bundledDatabases();
    if (paths.length === 0) log.warn('no GeoIP database: regions are tried in their configured order');
    else {
      try {
        locator = await openGeoIp(paths);
        log.info({ databases: paths }, 'GeoIP database loaded');
      } catch (err) {
        if (config.geoip.databases) {
          throw new ConfigError('at start', [`geoip.databases (SWITCHYARD_GEOIP_DB) = ${JSON.stringify(paths.join(','))}: ${(err as Error).message}; expected readable MaxMind-format City databases`]);
        }
        log.warn({ err }, 'the bundled GeoIP database cannot be read: regions are tried in their configured order');
      }
    }
  }
  const { catalog: terraformModules, problems: terraformProblems, warnings } = await modulesLoading;
  for (const w of warnings) log.warn(w);
  const badGroups = terraformConfigProblems(config, terraformModules);
  if (terraformProblems.length + badGroups.length > 0) throw new ConfigError(config.source, [...terraformProblems, ...badGroups]);
  const tightened = makePrivate(config.dataDir);
  if (tightened.changed.length > 0) {
    log.warn(
      { dataDir: config.dataDir, entries: tightened.changed.length, first: tightened.changed.slice(0, 10) },
      'the data directory was readable by other users: took group and other permissions off it and everything in it',
    );
  }
  if (tightened.failed.length > 0) log.error({ dataDir: config.dataDir, failed: tightened.failed.slice(0, 10) }, 'could not make everything in the data directory private');
  const unlock = lockDataDir(config.dataDir);
  const store = openStore(config.dataDir, config.durability, config.minFreeBytes);
  // LMDB creates its files under the process's umask.
  keepPrivate(config.dataDir, ['switchyard.mdb', 'switchyard.mdb-lock']);

  // Cluster mode (docs/cluster.md): loaded only when configured; the embedded default never loads NATS.
  let cluster: ClusterRuntime | null = null;
  if (config.cluster) {
    const { ClusterRuntime: Runtime, instanceIdOf } = await import('./cluster.js');
    const instance = instanceIdOf(config.cluster, config.dataDir);
    // NATS may be away: then the port answers meanwhile (readyz says why) and the start waits for
    // it. Only then: an instance restarting in a rolling restart must not take requests it cannot
    // serve before its real server listens.
    const { waitingServer } = await import('../cluster/waiting-server.js');
    let waiting = null as Promise<Waiting> | null;
    try {
      cluster = await Runtime.connect(config.cluster, instance, log, (why) => {
        if (config.server.port !== 0) waiting ??= waitingServer(config.server.host, config.server.port);
        void waiting?.then((w) => (w.why = why));
        options.waiting?.(why);
      });
    } finally {
      if (waiting) await (await waiting).close();
    }
  }

  const signingKey = await signingKeyOf(config, store, cluster);
  const hasher = new PasswordHasher(options.passwordPool);
  const users = await Users.open(store, config, hasher, log, options.announce, cluster?.sharedUsers());
  const signer = new TokenSigner(signingKey);
  const events: Events = cluster ? cluster.events : new EventLog(store);
  if (cluster) await cluster.events.start();
  const nodeTokens = new NodeTokens(store.meta, config.auth.nodeTokenTtl);
  // Admission (docs/security.md, "Who may publish and play"): one secret, each node's key derived from it.
  const admissionSecret = await secretMadeOnce('admission-secret', () => randomBytes(32), store, cluster);
  const admissionIssuer = new AdmissionIssuer(new NodeKeys(admissionSecret), (group, nodeId) => nodeTokens.generation(group, nodeId), options.now);

  let actors!: ActorHost;
  let registry!: NodeGroupRegistry;
  const counts = async (): Promise<GroupCounts[]> =>
    // The groups whose actor runs here (in cluster mode, those this instance owns: its own metrics).
    (await Promise.all([...actors.groups.values()].filter((g) => g.running).map((g) => g.callHere('counts').catch(() => null)))).filter((c): c is GroupCounts => c !== null);
  const actorStats = async () =>
    (await Promise.all([...actors.groups.values()].filter((g) => g.running).map(async (g) => ({ group: g.name, ...(await g.callHere('stats').catch(() => null)) })))).filter(
      (s): s is { group: string; heapUsed: number; busySeconds: number; lookups: number; heartbeats: number; batches: number } => 'heapUsed' in s,
    );
  const nodeLoads = async () =>
    await Promise.all(
      [...actors.groups.values()]
        .filter((g) => g.running)
        .map(async (g) => ({ group: g.name, ...(await g.callHere('nodeLoads', config.metrics.nodeSeries).catch(() => ({ nodes: [], omitted: 0 }))) })),
    );
  const metrics = new Metrics(counts, actorStats, nodeLoads);
  const webhooks = new Webhooks({
    events,
    // Cluster mode: endpoints and cursors shared in NATS; one instance, the webhooks lease's holder, sends (src/cluster/webhook-keeping.ts).
    keeping: cluster ? cluster.webhookKeeping() : new LmdbWebhookKeeping(store.meta),
    ...(cluster ? { sending: () => cluster?.sendsWebhooks() ?? false } : {}),
    ...(options.now ? { now: options.now } : {}),
    observe: (id, outcome) => metrics.webhookDelivery({ endpoint: id, outcome }).inc(),
  });
  await cluster?.driveWebhooks(webhooks);
  metrics.trackWebhooks(() => webhooks.list());
  registerStreamMetrics(metrics.registry, async () => {
    const all = await Promise.all(
      [...actors.groups.values()].filter((g) => g.running).map(async (g) => (await g.callHere('busiestStreams', config.metrics.streamSeries).catch(() => [])).map((s) => ({ group: g.name, ...s }))),
    );
    return all
      .flat()
      .sort((a, b) => b.viewers - a.viewers)
      .slice(0, config.metrics.streamSeries);
  });
  const admission = {
    issuer: admissionIssuer,
    webhooks: new AdmissionWebhooks(
      options.now,
      undefined,
      (outcome) => metrics.admissionWebhook({ outcome }).inc(),
      (msg, extra) => log.warn(extra, msg),
    ),
  };
  const onEvent = (e: EventRecord) => {
    metrics.observeEvent(e);
    if (LOUD_EVENTS.test(e.type)) log.info({ event: e }, e.type);
    else log.debug({ event: e }, e.type);
    // A destroyed node's tokens die with it: a copy left on its disk or in Terraform's state must not heartbeat for it.
    if (e.type === 'node.state' && e.to === null)
      nodeTokens.revoke(e.group, e.nodeId).catch((err: Error) => log.warn({ err, nodeId: e.nodeId }, "could not record the revocation of a destroyed node's tokens"));
    if (e.type === 'nodegroup.changed' && e.change === 'drained') {
      registry.finish(e.group).catch((err: Error) => log.error({ group: e.group, err }, 'could not remove a drained node group'));
    }
  };
  events.subscribeLocal(onEvent);
  actors = new ActorHost({
    dataDir: config.dataDir,
    ...(cluster ? { cluster: cluster.seam() } : {}),
    durability: config.durability,
    minFreeBytes: config.minFreeBytes,
    onEvents: (bodies, key) => events.append(bodies, key),
    observe: (method, seconds) => metrics.actorCall({ method }).observe(seconds),
    onError: (group, err) => log.error({ group, err }, 'actor error'),
    onSupervisorRestarted: () => log.warn('the supervisor thread is back: health checks, failover and scaling resume'),
    preloaded: threads,
  });
  registry = new NodeGroupRegistry(store, actors, log, (bodies) => events.append(bodies), terraformModules, knownMetrics(config.metrics.custom));
  const groups = await registry.load(config.nodeGroups);
  if (cluster) {
    // Listed here, started where owned (cluster.own below); every instance's changes followed.
    await registry.share(cluster.groupSharing());
    await cluster.follow(users, nodeTokens, (name, value) => registry.adopt(name, value));
    for (const g of groups) await actors.listGroup(g.group);
  } else {
    await actors.startGroups(groups.map((g) => g.group));
  }

  const stopping = new AbortController();
  // Cluster mode: Terraform's state is this instance's to serve to its own Terraform (docs/cluster.md),
  // under credentials derived from this secret, which lives in memory only.
  const terraformSecret = cluster ? randomBytes(32) : null;
  let ready = false;
  let openapi: unknown;
  const throttle = new LoginThrottle(config.auth.loginThrottle);
  const lookupRate = new LookupRateLimiter(config.limits.lookups, options.now);
  // Cluster mode: held for the cluster, not once per instance (docs/cluster.md, "Limits across instances").
  cluster?.shareLimits(lookupRate, throttle);
  const services: Services = {
    config,
    actors,
    registry,
    users,
    hasher,
    signer,
    admission,
    webhooks,
    throttle,
    nodeTokens,
    lookupRate,
    events,
    metrics,
    locator,
    log,
    ready: () => ready && !stopping.signal.aborted && [...actors.groups.values()].every((g) => g.ready),
    ...(cluster ? { cluster: cluster.view() } : {}),
    ...(cluster && terraformSecret ? { terraformState: { secret: terraformSecret, state: cluster.terraformState((bodies) => events.append(bodies)) } } : {}),
    openapi: () => openapi,
    backups: new Backups(store, config.dataDir, config.minFreeBytes),
    stopping: stopping.signal,
    now: options.now ?? Date.now,
  };
  // Red5 Pro Stream Manager 2.0's paths beside ours, when compat.red5sm2.enabled (docs/migrating-from-red5-sm2.md).
  const mounts = [red5sm2Mount];
  const routes = allRoutes(services, mounts);
  openapi = buildOpenApi(routes, VERSION, { metricsAuth: config.server.metricsAuth });
  const app = createApp(services, routes, mounts);

  const servers: Server[] = [];
  const listen = (server: Server, port: number, setting: { port: string; env: string }) =>
    new Promise<number>((resolve, reject) => {
      // What an operator can fix is named as a setting, not shown as a stack.
      server.once('error', (err: NodeJS.ErrnoException) => {
        const why = LISTEN_ERRORS[err.code ?? '']?.replace('{port}', `${setting.env}, ${setting.port}`);
        reject(why ? new ConfigError('at start', [`server.host = ${JSON.stringify(config.server.host)}, ${setting.port} = ${port}: ${err.code}; ${why}`]) : err);
      });
      server.listen(port, config.server.host, () => resolve((server.address() as AddressInfo).port));
      servers.push(server);
    });
  const limits = { requestTimeout: config.server.requestTimeout, headersTimeout: config.server.headersTimeout };
  const port = await listen(createServer(app.callback(), limits), config.server.port, { port: 'server.port', env: 'SWITCHYARD_PORT' });
  let tlsPort: number | undefined;
  if (config.server.tls) {
    const tls = { cert: readFileSync(config.server.tls.cert), key: readFileSync(config.server.tls.key) };
    tlsPort = await listen(createServer(app.callback(), { ...limits, tls }), config.server.tls.port, { port: 'server.tls.port', env: 'the config file' });
  }
  const reachable = config.server.host === '0.0.0.0' || config.server.host === '::' ? '127.0.0.1' : config.server.host;
  const url = `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;

  await actors.startSupervisor({
    dataDir: config.dataDir,
    serviceUrl: url,
    ...(config.server.publicUrl ? { publicUrl: config.server.publicUrl } : {}),
    jwtKey: signingKey,
    nodeTokenTtl: config.auth.nodeTokenTtl,
    tickMs: config.supervisorTick,
    terraform: {
      operator: { binary: config.terraform.binary, env: config.terraform.env },
      modules: terraformModules,
      // Its own listening address: Terraform runs on this machine, and the route refuses anyone else.
      ...(terraformSecret ? { backend: { url, secret: terraformSecret } } : {}),
    },
    ...(options.orphanTimeoutMs !== undefined ? { orphanTimeoutMs: options.orphanTimeoutMs } : {}),
  });
  for (const g of groups) if (g.deleting) await registry.retire(actors.group(g.group.name)!);
  if (cluster) {
    cluster.registerMetrics(metrics.registry);
    await cluster.own(actors, config.cluster!.advertiseUrl ?? config.server.publicUrl ?? url, store);
  }
  await webhooks.start(config.webhooks);
  ready = true;
  log.info({ url, dataDir: config.dataDir, groups: groups.map((g) => g.group.name) }, 'listening');

  let closed: Promise<void> | null = null;
  const close = (opts: { stopNodes?: boolean } = {}) =>
    (closed ??= (async () => {
      stopping.abort();

      const drained = Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
      // Connections that fall idle while draining (their answer said Connection: close) go too.
      const idle = setInterval(() => servers.forEach(closeUnusedConnections), 100);
      for (const s of servers) closeUnusedConnections(s);
      const timer = setTimeout(() => {
        log.warn({ shutdownTimeout: config.server.shutdownTimeout }, 'requests still in flight at the shutdown timeout: closing their connections');
        for (const s of servers) s.closeAllConnections();
      }, config.server.shutdownTimeout);
      await drained;
      clearTimeout(timer);
      clearInterval(idle);
      webhooks.stop();
      // Cluster mode: groups handed over first (the next owners take them at once), and nodes keep
      // running: they belong to the cluster, and report to another instance.
      await cluster?.stop();
      await actors.stop(cluster ? false : (opts.stopNodes ?? true));
      await hasher.close();
      await store.close();
      unlock();
      log.info('stopped');
      log.flush?.();
    })());

  return { url, port, ...(tlsPort !== undefined ? { tlsPort } : {}), services, actors, close };
}

/**
 * The key tokens are signed with: from the environment, else generated once and kept in LMDB, so
 * that tokens outlive a restart. ES256 keys are kept apart from the HS256 secret: switching the
 * algorithm back and forth does not mint a new key each time.
 */
async function signingKeyOf(config: Config, store: Store, cluster: ClusterRuntime | null): Promise<SigningKey> {
  const { jwtAlgorithm: algorithm, jwtSecret, jwtPrivateKey } = config.auth;
  if (algorithm === 'HS256' && jwtSecret) return { algorithm, material: Buffer.from(jwtSecret) };
  if (algorithm === 'ES256' && jwtPrivateKey) return { algorithm, material: pkcs8Der(jwtPrivateKey) };
  const name = algorithm === 'HS256' ? 'jwt-secret' : 'jwt-es256-key';
  const make = () => (algorithm === 'HS256' ? randomBytes(32) : generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'der', type: 'pkcs8' }));
  return { algorithm, material: await secretMadeOnce(name, make, store, cluster) };
}

/**
 * A secret made once and kept: in LMDB, or in cluster mode shared by every instance (the first to
 * start makes it), so that what one instance signs every other accepts.
 */
async function secretMadeOnce(name: string, make: () => Buffer, store: Store, cluster: ClusterRuntime | null): Promise<Buffer> {
  if (cluster) return await cluster.shared.signingKey(name, make);
  const kept = store.meta.get(name) as Uint8Array | undefined;
  if (kept) return Buffer.from(kept);
  const material = make();
  await store.meta.put(name, material);
  await store.durable();
  return material;
}
