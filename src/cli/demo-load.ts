// `npm run demo`: a short scripted load against a running service on its default config. It opens
// simulated viewer sessions until the edge rule scales out, kills a node agent with SIGKILL and
// waits for its replacement, then closes the sessions until the cluster shrinks back. It prints the
// events (GET /as/v1/events) as they come and the node group between the phases. Bounded: it gives
// up after DEMO_TIMEOUT_S (default 240) seconds.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { openEvents } from '../events/stream-client.js';
import { readSaved, tokenFile } from './credentials.js';

const BASE = (process.env.SWITCHYARD_URL ?? 'http://127.0.0.1:5080').replace(/\/$/, '');
const GROUP = process.env.DEMO_GROUP ?? 'default';
const VIEWERS = Number(process.env.DEMO_VIEWERS ?? 260);
const deadline = Date.now() + Number(process.env.DEMO_TIMEOUT_S ?? 240) * 1000;
const started = Date.now();

const say = (line: string) => process.stdout.write(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)} s] ${line}\n`);

async function call<T>(method: string, url: string, token?: string): Promise<{ status: number; body: T }> {
  const res = await fetch(url, { method, headers: token ? { authorization: `Bearer ${token}` } : {}, signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

interface NodeView {
  id: string;
  role: string;
  region: string;
  state: string;
  load: number;
  platform: { pid?: number };
}

async function nodes(token: string): Promise<NodeView[]> {
  return (await call<{ nodeList: NodeView[] }>('GET', `${BASE}/as/v1/nodegroups/${GROUP}?limit=1000`, token)).body.nodeList;
}

async function show(token: string): Promise<void> {
  for (const n of await nodes(token)) say(`   ${n.state.padEnd(12)} ${n.role.padEnd(10)} ${n.region.padEnd(8)} load ${String(n.load).padStart(4)}  ${n.id}`);
}

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function follow(token: string, signal: AbortSignal): Promise<void> {
  for await (const e of await openEvents(BASE, token, { signal })) {
    if (e.type === 'scaling.action') say(`event scaling.action: ${e.action} ${e.role} in ${e.region} (${e.trigger}: ${e.reason}) ${e.values ? JSON.stringify(e.values) : ''}`);
    else if (e.type === 'node.state' && ['INSERVICE', 'FAULT', 'SOFT_SUNSET', null].includes(e.to))
      say(`event node.state: ${e.nodeId} ${e.from} → ${e.to ?? 'removed'}${e.reason ? ` (${e.reason})` : ''}`);
    else if (e.type === 'stream.moved' || e.type === 'scaling.blocked') say(`event ${e.type}: ${JSON.stringify(e)}`);
  }
}

/**
 * An admin token: SWITCHYARD_TOKEN, else the CLI's saved login to this service (`switchyard
 * login`), else a login with SWITCHYARD_ADMIN_PASSWORD or the generated password's file (which is
 * gone once the password is changed, as the start-up log asks).
 */
async function adminToken(): Promise<string> {
  if (process.env.SWITCHYARD_TOKEN) return process.env.SWITCHYARD_TOKEN;
  const saved = readSaved(tokenFile());
  if (saved && saved.url === BASE && saved.expiresAt > Date.now()) return saved.token;
  let password = process.env.SWITCHYARD_ADMIN_PASSWORD;
  if (!password) {
    try {
      password = readFileSync(resolve(process.env.SWITCHYARD_DATA_DIR ?? 'data', 'initial-admin-password'), 'utf8').trim();
    } catch {
      throw new Error(
        `no admin credentials: log in first with \`npx switchyard login --url ${BASE}\` (or set SWITCHYARD_ADMIN_PASSWORD); the generated password's file is removed once the password is changed`,
      );
    }
  }
  const login = await fetch(`${BASE}/as/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: process.env.SWITCHYARD_ADMIN_USER ?? 'admin', password }),
  });
  if (!login.ok) throw new Error(`login failed: ${login.status} ${await login.text()}`);
  return ((await login.json()) as { accessToken: string }).accessToken;
}

async function main(): Promise<void> {
  const token = await adminToken();
  const events = new AbortController();
  void follow(token, events.signal).catch(() => {});

  say(`the node group '${GROUP}' now:`);
  await show(token);
  const edgesAtStart = (await nodes(token)).filter((n) => n.role === 'edge' && n.state === 'INSERVICE').length;

  say(`phase 1: a publisher and ${VIEWERS} viewers of stream 'demo'`);
  // Each client connects to the url its lookup answered: the node admits only the token in it.
  const pub = await call<{ url: string; nodeId: string }>('GET', `${BASE}/as/v1/streams/live/demo/publish?nodeGroup=${GROUP}`, token);
  await call('POST', pub.body.url);
  say(`publisher on ${pub.body.nodeId}`);
  const sessions: Array<{ url: string; session: string }> = [];
  for (let i = 0; i < VIEWERS && Date.now() < deadline; i++) {
    const edge = await call<{ url: string; code?: string }>('GET', `${BASE}/as/v1/streams/live/demo/subscribe?nodeGroup=${GROUP}`, token);
    if (edge.status !== 200) {
      await new Promise((r) => setTimeout(r, 1000));
      continue;
    }
    const s = await call<{ session: string }>('POST', edge.body.url);
    if (s.status === 201) sessions.push({ url: new URL(edge.body.url).origin, session: s.body.session });
    await new Promise((r) => setTimeout(r, 25));
  }
  await until('the cluster to grow', async () => (await nodes(token)).filter((n) => n.role === 'edge' && n.state === 'INSERVICE').length > edgesAtStart);
  say('the cluster grew:');
  await show(token);

  // A node whose loss leaves its region below min: the only edge of the last region.
  const list = await nodes(token);
  const regions = [...new Set(list.map((n) => n.region))];
  const victim =
    list.find((n) => n.role === 'edge' && n.state === 'INSERVICE' && n.platform.pid && list.filter((m) => m.role === 'edge' && m.region === n.region).length === 1 && n.region === regions.at(-1)) ??
    list.find((n) => n.role === 'edge' && n.state === 'INSERVICE' && n.platform.pid)!;
  say(`phase 2: kill -9 of ${victim.id} (pid ${victim.platform.pid}), the only edge in ${victim.region}`);
  process.kill(victim.platform.pid!, 'SIGKILL');
  await until('the killed node to be faulty', async () => (await nodes(token)).find((n) => n.id === victim.id)?.state !== 'INSERVICE');
  await until('a replacement in service', async () => (await nodes(token)).some((n) => n.role === 'edge' && n.region === victim.region && n.id !== victim.id && n.state === 'INSERVICE'));
  say('replaced:');
  await show(token);

  say(`phase 3: the ${sessions.length} viewers leave`);
  await Promise.allSettled(sessions.map((s) => call('DELETE', `${s.url}/sessions/${s.session}`)));
  await until('the cluster to shrink back', async () => {
    const now = await nodes(token);
    const leaving = ['SOFT_SUNSET', 'HARD_SUNSET', 'DESTRUCTION_REQUESTED', 'DESTROYING'];
    return now.filter((n) => n.role === 'edge' && n.state === 'INSERVICE').length === edgesAtStart && !now.some((n) => leaving.includes(n.state));
  });
  say('back to where it started:');
  await show(token);
  events.abort();
}

main().catch((err: Error) => {
  say(`demo: ${err.message}`);
  process.exit(1);
});
