// A service logger whose lines a test reads, and can wait for (an event, not a sleep).
import { Writable } from 'node:stream';
import { createLogger } from '../../src/observability/log.js';

export interface CapturedLog {
  lines: string[];
  log: ReturnType<typeof createLogger>;
  /** Settles when a line containing `text` is logged (or already was). */
  logged(text: string): Promise<void>;
}

export function captureLog(level = 'info'): CapturedLog {
  const lines: string[] = [];
  const waiting: Array<{ text: string; resolve: () => void }> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        lines.push(line);
        for (const w of waiting.filter((x) => line.includes(x.text))) {
          waiting.splice(waiting.indexOf(w), 1);
          w.resolve();
        }
      }
      done();
    },
  });
  const logged = (text: string) => (lines.some((l) => l.includes(text)) ? Promise.resolve() : new Promise<void>((resolve) => waiting.push({ text, resolve })));
  return { lines, log: createLogger(level, sink), logged };
}
