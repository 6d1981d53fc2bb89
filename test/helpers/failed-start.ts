// A program that embeds the service and whose start is refused (start-errors.test.ts): a Terraform
// group pins a variable Switchyard sets, refused once the Terraform modules are read, by when the
// actor threads the start begins with (actors/spare.ts) are up. It prints how the start ended, then
// has nothing left to do: the process must end by itself.
import { parseConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/observability/log.js';
import { startService } from '../../src/root/service.js';
import { staticGroup } from './fixtures.js';

const dataDir = process.argv[2]!;
const group = { ...staticGroup({ name: 'g', regions: ['r1'] }), platform: { type: 'terraform', terraform: { module: 'local', variables: { node_binary: 'x' } } } };
const config = parseConfig({ dataDir, server: { host: '127.0.0.1', port: 0 }, geoip: { enabled: false }, nodeGroups: [group] }, 'test', { SWITCHYARD_ADMIN_PASSWORD: 'correct-horse-battery' });
await startService(config, { log: createLogger('silent') }).then(
  () => console.log('started'),
  (err: Error) => console.log(`refused: ${err.constructor.name}: ${err.message.split('\n')[1]?.trim()}`),
);
