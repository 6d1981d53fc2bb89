// `npm run docs:config`: writes docs/configuration.md from the config schema.
import { writeFileSync } from 'node:fs';
import { configurationReference } from '../config/reference.js';
import { projectPath } from '../paths.js';

writeFileSync(projectPath('docs', 'configuration.md'), configurationReference());
process.stdout.write('wrote docs/configuration.md\n');
