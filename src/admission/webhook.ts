// The operator's app has its say (docs/security.md, "Who may publish and play"): before a lookup
// hands out a node, a group with `admission.webhook` POSTs what the client asked for, and what it
// gave for the purpose (`credential`), to the app, signed the Standard Webhooks way; the app
// answers allow or deny. As Red5's round-trip authentication and SRS's on_publish do, but once
// per lookup rather than once per connection, and with answers kept briefly per (stream, action,
// credential). Fail-closed by default: an app that does not answer in time refuses the lookup.
import { createHash, randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { AdmissionWebhookConfig } from '../config/types.js';
import type { Failure } from '../domain/failure.js';
import { OutboundError, type PostAnswer, postJson } from '../outbound/http-post.js';
import type { AdmissionAction } from './grant.js';

export interface AdmissionAsk {
  group: string;
  scope: string;
  action: AdmissionAction;
  stream: string;
  /** What the client gave for its admission (`?credential=`): passed on as given, never logged. */
  credential: string | undefined;
  /** The client's address as the lookup saw it (the TCP peer, clientIp, or a trusted proxy's hop). */
  clientAddress: string;
  /** The token subject that asked (an app, an admin). */
  subject: string;
}

/** The body the app receives. */
export interface AdmissionRequestBody {
  type: 'admission.request';
  action: AdmissionAction;
  nodeGroup: string;
  scope: string;
  stream: string;
  credential: string | null;
  client: { address: string };
  subject: string;
}

export type WebhookOutcome = 'allowed' | 'denied' | 'cached-allowed' | 'cached-denied' | 'unavailable' | 'failed-open';

interface Kept {
  allow: boolean;
  reason: string;
  until: number;
}

const MAX_KEPT = 10_000;
const MAX_REASON = 200;

type Post = (url: string, body: string, headers: Record<string, string>, options: { timeoutMs: number; allowLinkLocal?: boolean }) => Promise<PostAnswer>;

export class AdmissionWebhooks {
  private readonly kept = new Map<string, Kept>();
  private readonly signers = new Map<string, Webhook>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly post: Post = postJson,
    private readonly observe: (outcome: WebhookOutcome) => void = () => {},
    private readonly warn: (msg: string, extra: Record<string, unknown>) => void = () => {},
  ) {}

  /** null: the app allows; else the failure the lookup answers. */
  async ask(hook: AdmissionWebhookConfig, ask: AdmissionAsk): Promise<Failure | null> {
    const key = [
      ask.group,
      ask.action,
      ask.stream,
      createHash('sha256')
        .update(ask.credential ?? '')
        .digest('base64url'),
    ].join('\0');
    const now = this.now();
    const hit = this.kept.get(key);
    if (hit && hit.until > now) {
      this.observe(hit.allow ? 'cached-allowed' : 'cached-denied');
      return hit.allow ? null : this.denied(ask, hit.reason);
    }
    let answer: { allow: boolean; reason: string };
    try {
      answer = await this.call(hook, ask);
    } catch (err) {
      const why = err instanceof OutboundError ? err.message : `answered ${(err as Error).message}`;
      this.warn('the admission webhook did not decide', { group: ask.group, url: hook.url, why, failOpen: hook.failOpen });
      if (hook.failOpen) {
        this.observe('failed-open');
        return null;
      }
      this.observe('unavailable');
      return {
        ok: false,
        status: 503,
        code: 'ADMISSION_UNAVAILABLE',
        detail: `node group '${ask.group}' asks its admission webhook before handing out a node, and it did not decide (${why}); retry later`,
        retryAfter: 1,
      };
    }
    if (hook.cacheTtl > 0) {
      if (this.kept.size >= MAX_KEPT) this.kept.delete(this.kept.keys().next().value!);
      this.kept.delete(key);
      this.kept.set(key, { ...answer, until: now + hook.cacheTtl });
    }
    this.observe(answer.allow ? 'allowed' : 'denied');
    return answer.allow ? null : this.denied(ask, answer.reason);
  }

  private denied(ask: AdmissionAsk, reason: string): Failure {
    const because = reason ? `: ${reason}` : '';
    return { ok: false, status: 403, code: 'ADMISSION_DENIED', detail: `the app refused to let this client ${ask.action} stream '${ask.stream}'${because}` };
  }

  private signer(secret: string): Webhook {
    let w = this.signers.get(secret);
    if (!w) {
      w = new Webhook(secret);
      this.signers.set(secret, w);
    }
    return w;
  }

  private async call(hook: AdmissionWebhookConfig, ask: AdmissionAsk): Promise<{ allow: boolean; reason: string }> {
    const body: AdmissionRequestBody = {
      type: 'admission.request',
      action: ask.action,
      nodeGroup: ask.group,
      scope: ask.scope,
      stream: ask.stream,
      credential: ask.credential ?? null,
      client: { address: ask.clientAddress },
      subject: ask.subject,
    };
    const payload = JSON.stringify(body);
    const id = `adm_${randomUUID()}`;
    const at = new Date(this.now());
    const headers = { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': this.signer(hook.secret).sign(id, at, payload) };
    const res = await this.post(hook.url, payload, headers, { timeoutMs: hook.timeout, allowLinkLocal: hook.allowLinkLocal });
    if (res.status === 401 || res.status === 403) return { allow: false, reason: reasonOf(res.body) };
    if (res.status < 200 || res.status > 299) throw new Error(`HTTP ${res.status}`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(res.body);
    } catch {
      throw new Error(`HTTP ${res.status} without a JSON body`);
    }
    const allow = (parsed as { allow?: unknown } | null)?.allow;
    if (typeof allow !== 'boolean') throw new Error(`HTTP ${res.status} without a boolean "allow"`);
    return { allow, reason: reasonOf(res.body) };
  }
}

/** The app's reason, as a line fit to show a client: bounded, printable. */
function reasonOf(body: string): string {
  try {
    const r = (JSON.parse(body) as { reason?: unknown } | null)?.reason;
    if (typeof r !== 'string') return '';
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this strips
    return r.replace(/[\u0000-\u001f\u007f]/g, ' ').slice(0, MAX_REASON);
  } catch {
    return '';
  }
}
