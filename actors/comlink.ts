// comlink's Node adapter has no `exports` entry and types wrongly under nodenext; one typed
// import here keeps the cast in a single place (see ../shared/notes/stack-node20.md).
import type { Endpoint } from 'comlink';
import type { MessagePort, Worker } from 'node:worker_threads';
import adapter from 'comlink/dist/umd/node-adapter.js';

export const nodeEndpoint = adapter as unknown as (port: MessagePort | Worker) => Endpoint;
