#!/usr/bin/env node
// `switchyard`, the command-line client (docs/cli.md): finds the command, parses its options with
// util.parseArgs, runs it against the public REST API, and exits with the code that says how it
// went (src/cli/api.ts: 0 done, 1 failed, 2 usage, 3 unreachable, 4 unauthorised, 5 timed out).
import { CliError, EXIT } from './api.js';
import { commandHelp, findCommand, overview, parseCommand } from './command.js';
import { COMMANDS } from './commands/all.js';
import { Context } from './context.js';
import { packageVersion } from './flags.js';
import { json, note, out } from './table.js';

async function main(argv: string[]): Promise<number> {
  if (argv[0] === '--version' || argv[0] === '-V' || argv[0] === 'version') {
    out(packageVersion());
    return EXIT.ok;
  }
  if (argv[0] === 'help') {
    const { command, group } = findCommand(COMMANDS, argv.slice(1));
    out(command ? commandHelp(command) : overview(COMMANDS, group));
    return EXIT.ok;
  }
  const { command, group, rest } = findCommand(COMMANDS, argv);
  if (!command) {
    const asked = rest.includes('--help') || rest.includes('-h');
    const unknown = rest.find((a) => !a.startsWith('-'));
    if (asked && !unknown) {
      out(overview(COMMANDS, group));
      return EXIT.ok;
    }
    note(unknown ? `switchyard: unknown command '${[group, unknown].filter(Boolean).join(' ')}'\n` : '');
    note(overview(COMMANDS, group));
    return EXIT.usage;
  }
  const parsed = parseCommand(command, rest);
  if (parsed.values.help) {
    out(commandHelp(command));
    return EXIT.ok;
  }
  await command.run(new Context(parsed), parsed);
  return EXIT.ok;
}

// A command whose work stopped half-way with nothing left to wait on (a promise that never settles)
// would otherwise end the process with 0, as if it had succeeded.
process.once('beforeExit', () => {
  note('switchyard: the command stopped before it finished (this is a bug in switchyard)');
  process.exit(EXIT.failed);
});

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error) => {
    if (err instanceof CliError) {
      if (err.json !== undefined && process.argv.includes('--json')) json(err.json);
      note(`switchyard: ${err.message}`);
      process.exit(err.exitCode);
    }
    if ((err as { interrupted?: boolean }).interrupted) process.exit(130);
    note(`switchyard: ${err.stack ?? err.message}`);
    process.exit(EXIT.failed);
  },
);
