// A program that embeds the service, as tests and operators' own programs do (embedded-start.test.ts).
// `refused DIR`: a Terraform group pins a variable Switchyard sets, refused once the Terraform modules
// are read, by when the actor threads the start begins with (actors/spare.ts) are up.
// `restarts DIR`: starts, stops and starts again three times, with nothing else running meanwhile.
// Each prints how it went and then has nothing left to do: the process must end by itself.
import { parseConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/observability/log.js';
import { startService } from '../../src/root/service.js';
import { staticGroup } from './fixtures.js';
import { ADMIN_PASSWORD_HASH } from './service.js';

const [mode, dataDir] = process.argv.slice(2) as [string, string];
const env = {};
// A stored hash: no password is hashed at start, so a start reaches its threads as soon as it can.
const base = { dataDir, server: { host: '127.0.0.1', port: 0 }, geoip: { enabled: false }, auth: { adminPasswordHash: ADMIN_PASSWORD_HASH } };
const log = createLogger('silent');

if (mode === 'refused') {
  const group = { ...staticGroup({ name: 'g', regions: ['r1'] }), platform: { type: 'terraform', terraform: { module: 'local', variables: { node_binary: 'x' } } } };
  await startService(parseConfig({ ...base, nodeGroups: [group] }, 'test', env), { log }).then(
    () => console.log('started'),
    (err: Error) => console.log(`refused: ${err.constructor.name}: ${err.message.split('\n')[1]?.trim()}`),
  );
} else {
  for (let round = 1; round <= 3; round++) {
    const service = await startService(parseConfig({ ...base, nodeGroups: [staticGroup({ name: 'g' })] }, 'test', env), { log });
    await service.close();
    console.log(`round ${round}`);
  }
}
