// The guard every call to a thread goes through (actors/comlink.ts): when the thread goes away,
// exactly the calls still unanswered fail with its end, and so does every later call; answered
// calls keep their answers. A comlink call to a dead thread would otherwise never settle.
import test from 'ava';
import fc from 'fast-check';
import { InFlight } from '../../actors/comlink.js';

test('a thread that goes away fails exactly the unanswered calls, and every later one', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.boolean(), { maxLength: 30 }), async (answeredFirst) => {
      const inFlight = new InFlight();
      const answers: Array<(v: number) => void> = [];
      const calls = answeredFirst.map((_, i) => inFlight.run(() => new Promise<number>((resolve) => answers.push(() => resolve(i)))));
      for (const [i, answered] of answeredFirst.entries()) if (answered) answers[i]!(i);
      await Promise.resolve();
      const end = new Error('the thread exited');
      inFlight.fail(end);
      const settled = await Promise.allSettled(calls);
      for (const [i, s] of settled.entries()) {
        if (answeredFirst[i]) t.deepEqual(s, { status: 'fulfilled', value: i });
        else t.deepEqual(s, { status: 'rejected', reason: end });
      }
      await t.throwsAsync(() => inFlight.run(async () => 1), { is: end });
      // An answer that arrives after the end changes nothing.
      for (const answer of answers) answer(-1);
    }),
  );
});
