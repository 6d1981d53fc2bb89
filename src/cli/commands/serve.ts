// serve: starts the service in this process, as `npm start` does (without npm and without a build).
import type { Command } from '../command.js';

const serve: Command = {
  name: 'serve',
  summary: 'start the service here (as npm start does): the config file, the data directory',
  options: {
    config: { type: 'string', short: 'c', value: 'FILE', description: 'the config file (default: SWITCHYARD_CONFIG, else the bundled config/default.json)' },
    'data-dir': { type: 'string', short: 'd', value: 'DIR', description: "the data directory (default: SWITCHYARD_DATA_DIR, else the config's dataDir)" },
    host: { type: 'string', value: 'ADDRESS', description: 'listen address (SWITCHYARD_HOST)' },
    port: { type: 'string', short: 'p', value: 'PORT', description: 'HTTP port (SWITCHYARD_PORT)' },
  },
  details: [
    'Every other setting comes from the config file and the environment (README.md, Configuration).',
    'Stops cleanly on SIGTERM or Ctrl-C (its local nodes with it). Exit codes: 0 stopped, 1 failed,',
    '2 a bad setting (named on stderr).',
  ].join('\n'),
  async run(_ctx, { values }) {
    // The flags are settings of the environment the service reads; its own flags it is given none.
    const env = { ...process.env };
    const set = (name: string, value: unknown) => {
      if (typeof value === 'string') env[name] = value;
    };
    set('SWITCHYARD_CONFIG', values.config);
    set('SWITCHYARD_DATA_DIR', values['data-dir']);
    set('SWITCHYARD_HOST', values.host);
    set('SWITCHYARD_PORT', values.port);
    const { main } = await import('../../main.js');
    await main(env, []);
    // It runs until a signal stops it (main.ts exits the process).
    await new Promise(() => {});
  },
};

export const serveCommands = [serve];
