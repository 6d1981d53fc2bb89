// `npm run cluster:local`: several instances on one machine (README.md, "Running several
// instances"): a 3-server nats-server cluster (client ports 4222–4224, routes 6222–6224, monitoring
// 8222–8224) and 3 Switchyard instances (http://127.0.0.1:5081–5083), each with its own data
// directory under ./data-cluster, on the shipped config's node groups. Every two seconds it prints
// which instance owns which group; Ctrl-C stops everything (the nodes too).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { findProgram } from '../os/programs.js';
import { projectPath } from '../paths.js';

const SERVERS = 3;
const INSTANCES = 3;
const root = resolve(process.env.SWITCHYARD_CLUSTER_DIR ?? 'data-cluster');
const password = process.env.SWITCHYARD_ADMIN_PASSWORD ?? 'cluster-local-admin';
const children: ChildProcess[] = [];

function start(cmd: string, args: string[], env: NodeJS.ProcessEnv, log: string): ChildProcess {
  const out = openSync(log, 'a');
  const child = spawn(cmd, args, { env, stdio: ['ignore', out, out] });
  children.push(child);
  return child;
}

async function main(): Promise<void> {
  const nats = findProgram('nats-server');
  if (!nats) {
    process.stderr.write('cluster:local: nats-server is not installed (npm run setup:media installs it, or apt-get install nats-server)\n');
    process.exit(2);
  }
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const routes = Array.from({ length: SERVERS }, (_, i) => `"nats-route://127.0.0.1:${6222 + i}"`);
  for (let i = 0; i < SERVERS; i++) {
    const dir = join(root, `nats-${i + 1}`);
    mkdirSync(dir, { recursive: true });
    const conf = join(root, `nats-${i + 1}.conf`);
    writeFileSync(
      conf,
      `server_name: "n${i + 1}"\nlisten: "127.0.0.1:${4222 + i}"\nhttp: "127.0.0.1:${8222 + i}"\njetstream { store_dir: "${dir}" }\ncluster {\n  name: "switchyard"\n  listen: "127.0.0.1:${6222 + i}"\n  routes: [${routes.join(', ')}]\n}\n`,
    );
    start(nats, ['-c', conf], process.env, join(root, `nats-${i + 1}.log`));
  }
  const urls = Array.from({ length: SERVERS }, (_, i) => `nats://127.0.0.1:${4222 + i}`).join(',');
  const pids: number[] = [];
  for (let i = 0; i < INSTANCES; i++) {
    const child = start(
      process.execPath,
      [projectPath('dist', 'src', 'main.js')],
      {
        ...process.env,
        SWITCHYARD_NATS_URL: urls,
        SWITCHYARD_INSTANCE_ID: `i${i + 1}`,
        SWITCHYARD_PORT: String(5081 + i),
        SWITCHYARD_DATA_DIR: join(root, `i${i + 1}`),
        SWITCHYARD_ADMIN_PASSWORD: password,
      },
      join(root, `i${i + 1}.log`),
    );
    pids.push(child.pid ?? 0);
  }
  process.stdout.write(
    `NATS: ${urls} (monitoring http://127.0.0.1:8222/jsz)\ninstances:\n${pids.map((pid, i) => `  i${i + 1} http://127.0.0.1:${5081 + i} (pid ${pid})`).join('\n')}\nadmin password: ${password}\nlogs: ${root}/*.log; Ctrl-C stops everything\n\n`,
  );
  const stop = () => {
    for (const c of children.reverse()) c.kill('SIGTERM');
    // In cluster mode a stopping instance leaves its nodes running for the others: here every
    // instance stops, so the nodes started under this directory go too.
    setTimeout(() => {
      for (const pid of readdirSync('/proc').filter((e) => /^[0-9]+$/.test(e))) {
        try {
          if (readFileSync(`/proc/${pid}/environ`, 'utf8').includes(`SWITCHYARD_NODE_DIR=${root}/`)) process.kill(Number(pid), 'SIGTERM');
        } catch {
          /* gone, or not ours */
        }
      }
      process.exit(0);
    }, 3000).unref();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  let last = '';
  for (;;) {
    await new Promise((r) => setTimeout(r, 2000));
    const lines: string[] = [];
    for (let i = 0; i < INSTANCES; i++) {
      try {
        const r = await fetch(`http://127.0.0.1:${5081 + i}/as/v1/readyz`, { signal: AbortSignal.timeout(1000) });
        const body = (await r.json()) as { owners?: Record<string, string | null>; detail?: string };
        lines.push(`i${i + 1}: ${r.status === 200 ? `ready, owners ${JSON.stringify(body.owners)}` : `not ready (${body.detail ?? r.status})`}`);
      } catch {
        lines.push(`i${i + 1}: not answering`);
      }
    }
    const now = lines.join('\n');
    if (now !== last) process.stdout.write(`${new Date().toISOString()}\n${now}\n\n`);
    last = now;
  }
}

main().catch((err: Error) => {
  process.stderr.write(`cluster:local: ${err.message}\n`);
  process.exit(1);
});
