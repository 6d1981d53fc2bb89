// Holds LMDB's write lock on a data directory from a process of its own (holdWrites, for a
// service that runs inside the test's process): `held` once holding, released on any message.
import { holdWrites } from './hold-writes.js';

const hold = holdWrites(process.argv[2]!);
process.send!('held');
process.once('message', () => void hold.release().then(() => process.exit(0)));
