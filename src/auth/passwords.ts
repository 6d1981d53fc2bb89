// Password hashing through a small piscina pool: scrypt is deliberately slow and memory-hungry,
// so it runs on its own threads with a bounded queue. A login storm then waits in that queue (or
// is refused when it is full) instead of stalling lookups on the main thread or starving libuv.
import { Piscina } from 'piscina';
import type { HashTask, VerifyTask } from './scrypt-task.js';

export class PoolBusy extends Error {
  constructor() {
    super('too many password checks are waiting');
    this.name = 'PoolBusy';
  }
}

export class PasswordHasher {
  private readonly pool: Piscina<HashTask | VerifyTask, string | boolean>;

  constructor(options: { threads?: number; maxQueue?: number } = {}) {
    this.pool = new Piscina({
      filename: new URL('./scrypt-task.js', import.meta.url).href,
      minThreads: 0,
      maxThreads: options.threads ?? 1,
      maxQueue: options.maxQueue ?? 64,
      idleTimeout: 30_000,
    });
  }

  async hash(password: string): Promise<string> {
    return (await this.run({ op: 'hash', password })) as string;
  }

  async verify(password: string, encoded: string): Promise<boolean> {
    return (await this.run({ op: 'verify', password, encoded })) as boolean;
  }

  private async run(task: HashTask | VerifyTask): Promise<string | boolean> {
    try {
      return await this.pool.run(task);
    } catch (err) {
      // Piscina 5 says "Task queue is at limit" (older versions, "queue is full").
      if (/queue is (?:at limit|full)/i.test((err as Error).message)) throw new PoolBusy();
      throw err;
    }
  }

  close(): Promise<void> {
    return this.pool.destroy();
  }
}
