// --help and --version of the programs that otherwise take no arguments (the service, the node
// agent): they answer and exit instead of starting; any other argument is a usage error (exit 2),
// since both take their settings from the environment and the config file.
import { readFileSync } from 'node:fs';
import { projectPath } from '../paths.js';

export function packageVersion(): string {
  return (JSON.parse(readFileSync(projectPath('package.json'), 'utf8')) as { version: string }).version;
}

export const SERVICE_HELP = `usage: switchyard serve   (or: node dist/src/main.js, npm start)

Starts the Switchyard control plane: the REST API on SWITCHYARD_HOST:SWITCHYARD_PORT, node-group
actors over LMDB in the data directory, and the supervisor that creates and retires nodes.
Stops cleanly on SIGTERM or SIGINT. It takes no arguments; its settings are the config file's,
overridden by the environment:

  SWITCHYARD_CONFIG             the config file (default: the bundled config/default.json)
  SWITCHYARD_HOST, _PORT        listen address and HTTP port (127.0.0.1, 5080)
  SWITCHYARD_DATA_DIR           the data directory: LMDB, node logs (./data)
  SWITCHYARD_ADMIN_USER         the admin's name (admin)
  SWITCHYARD_ADMIN_PASSWORD     the admin's password (default: generated once, printed, kept in
                                <dataDir>/initial-admin-password until changed)
  SWITCHYARD_JWT_SECRET         the HS256 signing secret, 32 bytes or more (generated once)
  SWITCHYARD_JWT_PRIVATE_KEY    the ES256 signing key (PEM), with auth.jwtAlgorithm "ES256"
  SWITCHYARD_GEOIP_DB           MaxMind-format City database(s), comma-separated
  SWITCHYARD_TERRAFORM_BIN      the Terraform or OpenTofu CLI (terraform)
  SWITCHYARD_TERRAFORM_MODULES  the operator's Terraform modules directory
  SWITCHYARD_LOG_LEVEL          fatal, error, warn, info, debug, trace, silent (info)

Exit codes: 0 stopped, 1 failed, 2 a bad setting (named on stderr).
Documentation: README.md, docs/operations.md; the API at /as/v1/openapi.json.`;

export const AGENT_HELP = `usage: switchyard-agent   (or: node dist/src/agent/main.js)

The Switchyard node agent: runs beside a node's media server, reports it to the control plane
every heartbeat and does what the reply says (parent, drain, transcode jobs). Platforms start it
with its environment; on a static or cloud node, systemd does (config/systemd/switchyard-agent.service):

  SWITCHYARD_URL                  the control plane (required)
  SWITCHYARD_NODE_ID              this node's id (required)
  SWITCHYARD_NODE_TOKEN           its node token (required; switchyard nodes token NODE)
  SWITCHYARD_NODE_TOKEN_FILE      where renewed tokens are kept across restarts
  SWITCHYARD_NODE_ROLE            origin, edge, relay or transcoder (required)
  SWITCHYARD_NODE_SCOPE           the application scope (live)
  SWITCHYARD_NODE_BACKEND         simulated or nginx-rtmp (simulated)
  SWITCHYARD_NODE_DIR             the node's own directory (nginx-rtmp: required)
  SWITCHYARD_NODE_ADDRESS         the address to bind (127.0.0.1)
  SWITCHYARD_NODE_PUBLIC_ADDRESS  the address clients reach, behind NAT
  SWITCHYARD_NODE_PORT            the media port (nginx-rtmp: 1935)
  SWITCHYARD_NODE_STAT_PORT       nginx's stat page port (18080)
  SWITCHYARD_HEARTBEAT_TRANSPORT  channel (a WebSocket) or post (channel)
  SWITCHYARD_NGINX_BIN, SWITCHYARD_FFMPEG_BIN, SWITCHYARD_NGINX_RTMP_MODULE  where the media tools are

Documentation: docs/nodes.md, docs/operations.md.`;

/**
 * Answers --help and --version and exits; refuses any other argument. Returns when there is none
 * but `ignored` ones: options with a value that only mark the process (the platforms start each
 * agent with `--node-id ID`, so that its command line names its node).
 */
export function answerFlags(argv: readonly string[], help: string, name: string, ignored: readonly string[] = []): void {
  const rest = [...argv];
  for (let i = 0; i < rest.length; ) {
    if (ignored.includes(rest[i]!) && i + 1 < rest.length) rest.splice(i, 2);
    else i++;
  }
  argv = rest;
  if (argv.length === 0) return;
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${help}\n`);
    process.exit(0);
  }
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-V')) {
    process.stdout.write(`${packageVersion()}\n`);
    process.exit(0);
  }
  process.stderr.write(`${name}: unexpected argument '${argv[0]}': settings come from the environment and the config file (${name} --help)\n`);
  process.exit(2);
}
