// Worker-thread entry that parses `.tf` files with HashiCorp's HCL parser (@cdktf/hcl2json) for
// ./modules.ts, posts what it got, and is ended: the parser's WebAssembly runtime stays behind in
// whatever thread loaded it.
import { parentPort, workerData } from 'node:worker_threads';

export interface ParseRequest {
  module: string;
  /** The file's name in its module (messages name it, never the machine's paths). */
  file: string;
  text: string;
}

export type ParseResult = { ok: true; body: unknown } | { ok: false; error: string };

if (parentPort) {
  const { parse } = await import('@cdktf/hcl2json');
  const results: ParseResult[] = [];
  for (const r of workerData as ParseRequest[]) {
    try {
      results.push({ ok: true, body: await parse(r.file, r.text) });
    } catch (err) {
      results.push({ ok: false, error: (err as Error).message.replace(/^parse config: /, '') });
    }
  }
  parentPort.postMessage(results);
}
