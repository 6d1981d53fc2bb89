// Every command of the CLI, in the order its help lists them.
import type { Command } from '../command.js';
import { backupCommands } from './backup.js';
import { eventCommands } from './events.js';
import { lookupCommands } from './lookup.js';
import { nodeGroupCommands } from './nodegroups.js';
import { nodeCommands } from './nodes.js';
import { provisionCommands } from './provisions.js';
import { serveCommands } from './serve.js';
import { sessionCommands } from './session.js';

export const COMMANDS: readonly Command[] = [...sessionCommands, ...lookupCommands, ...nodeGroupCommands, ...nodeCommands, ...provisionCommands, ...eventCommands, ...serveCommands, ...backupCommands];
