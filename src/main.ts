// The service's program (`npm start`, `switchyard serve`): load the config, start the service,
// stop it cleanly on SIGTERM or SIGINT. `main` takes its environment and arguments, so that the
// CLI's `serve` runs it with its own flags' settings instead of rewriting process.env; this file
// run as a program (node dist/src/main.js) calls it with the process's own.
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig } from './config/load.js';
import { startService } from './root/service.js';
import { DataDirInUse } from './store/lock.js';
import { answerFlags, SERVICE_HELP } from './cli/flags.js';

export async function main(env: NodeJS.ProcessEnv = process.env, args: readonly string[] = process.argv.slice(2)): Promise<void> {
  // --help and --version answer instead of starting.
  answerFlags([...args], SERVICE_HELP, 'switchyard');
  // What the service and the programs it starts (Terraform, node agents) write is theirs alone:
  // the data directory holds the signing key (docs/security.md).
  process.umask(0o077);
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`switchyard: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  let service: Awaited<ReturnType<typeof startService>>;
  try {
    service = await startService(config);
  } catch (err) {
    // A setting that does not work here (a port in use, a database that cannot be read, a data
    // directory another service holds): one line, exit code 2, no stack.
    if (err instanceof ConfigError || err instanceof DataDirInUse) {
      process.stderr.write(`switchyard: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    const deadline = setTimeout(() => {
      process.stderr.write(`switchyard: did not stop within ${config.server.shutdownTimeout * 2} ms after ${signal}; exiting\n`);
      process.exit(1);
    }, config.server.shutdownTimeout * 2);
    deadline.unref();
    service.close({ stopNodes: true }).then(
      () => process.exit(0),
      (err: Error) => {
        process.stderr.write(`switchyard: error while stopping: ${err.message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

/** Run as a program, not imported (by `switchyard serve`, or a test). */
const isProgram = process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
if (isProgram) {
  main().catch((err: Error) => {
    process.stderr.write(`switchyard: ${err.stack ?? err.message}\n`);
    process.exit(1);
  });
}
