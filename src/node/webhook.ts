// Webhooks: when a task ends, its TaskInfo (plus the engine's images.json) is POSTed to the task's webhook and
// to the node's, retried with growing delays as NodeODM does. Nothing waits for them.
import { setTimeout as sleep } from 'node:timers/promises';
import { type OutboundPolicy, outboundFetch, refusal } from '../net/outbound.ts';

const ATTEMPTS = 5;
const TIMEOUT_MS = 15_000;

async function deliver(url: string, body: string, policy: OutboundPolicy, log: (message: string) => void): Promise<void> {
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    try {
      const request = { method: 'POST', headers: { 'Content-Type': 'application/json' }, body, signal: AbortSignal.timeout(TIMEOUT_MS) };
      const response = await outboundFetch(url, request, policy);
      await response.body?.cancel();
      if (response.ok) return;
      log(`Webhook ${url} answered HTTP ${response.status} (attempt ${attempt} of ${ATTEMPTS})`);
    } catch (err) {
      const refused = refusal(err);
      if (refused) {
        log(`Webhook ${url} not sent: ${refused.message} (start the node with --allow-private-urls to allow it)`);
        return;
      }
      log(`Webhook ${url} failed: ${(err as Error).message} (attempt ${attempt} of ${ATTEMPTS})`);
    }
    if (attempt < ATTEMPTS) await sleep(1000 * 2 ** attempt, undefined, { ref: false });
  }
}

export function sendWebhooks(urls: string[], payload: object, policy: OutboundPolicy, log: (message: string) => void): void {
  const body = JSON.stringify(payload);
  for (const url of urls) void deliver(url, body, policy, log);
}
