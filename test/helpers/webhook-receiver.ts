// A webhook receiver as its own process (docs/webhooks.md): verifies each request's Standard
// Webhooks signature with the standardwebhooks package, appends what it took to a file (one JSON
// line each: the webhook-id and the event type), answers 204, and, when told, dies on the Nth
// request before answering it: a receiver crashing mid-stream.
//   node webhook-receiver.js <port> <secret> <file> [dieOnRequest]   (on WEBHOOK_RECEIVER_HOST, 127.0.0.1 by default;
//   answering WEBHOOK_RECEIVER_ANSWER_MS after it took a request, 0 by default)
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const [port, secret, file, dieOn] = process.argv.slice(2) as [string, string, string, string | undefined];
const verifier = new Webhook(secret);
let requests = 0;

createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    requests++;
    if (dieOn !== undefined && requests === Number(dieOn)) process.exit(3);
    try {
      verifier.verify(body, req.headers as Record<string, string>);
    } catch {
      appendFileSync(file, `${JSON.stringify({ bad: true, id: req.headers['webhook-id'] })}\n`);
      res.writeHead(401).end();
      return;
    }
    const payload = JSON.parse(body) as { type: string; data: { seq: number; stream?: string } };
    appendFileSync(file, `${JSON.stringify({ id: req.headers['webhook-id'], type: payload.type, seq: payload.data.seq, stream: payload.data.stream })}\n`);
    // A slow receiver (WEBHOOK_RECEIVER_ANSWER_MS): it has the event, its answer is still on the way.
    setTimeout(() => res.writeHead(204).end(), Number(process.env.WEBHOOK_RECEIVER_ANSWER_MS ?? 0));
  });
}).listen(Number(port), process.env.WEBHOOK_RECEIVER_HOST ?? '127.0.0.1', () => process.stdout.write('listening\n'));
