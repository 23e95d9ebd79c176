import type { FastifyInstance } from 'fastify';
import { devPage, devPageHeaders, escapeHtml } from './html.js';

/** Enough to see a session's deliveries; older ones drop off, so a chatty client cannot grow memory. */
const KEPT_DELIVERIES = 100;
/** A delivery's body is shown up to this size (JSON is accepted up to the server's 1 MiB body limit). */
const SHOWN_BODY_CHARS = 64 * 1024;

interface Delivery {
  receivedAt: Date;
  /** The payload's event type, for the heading. */
  type: string | null;
  headers: [string, string][];
  body: string;
}

/** Keeps its last four characters, enough to tell two keys apart, and hides the length. */
export const maskSecret = (value: string): string => `••••••••${value.slice(-4)}`;

function readable(body: unknown): string {
  const text = typeof body === 'string' ? body : body === undefined ? '' : JSON.stringify(body, null, 2);
  return text.length > SHOWN_BODY_CHARS ? `${text.slice(0, SHOWN_BODY_CHARS)}\n… (${text.length - SHOWN_BODY_CHARS} more characters not shown)` : text;
}

function deliveryHtml(delivery: Delivery): string {
  const rows = delivery.headers.map(([name, value]) => `<tr><th>${escapeHtml(name)}</th><td>${escapeHtml(value)}</td></tr>`).join('');
  return `<article>
<h2>${escapeHtml(delivery.type ?? 'delivery')} <span class="note">received ${escapeHtml(delivery.receivedAt.toISOString())}</span></h2>
<table>${rows}</table>
<pre>${escapeHtml(delivery.body)}</pre>
</article>`;
}

/** A webhook receiver for the demo client's `api.url`: POST records a delivery, GET shows them newest first. */
export function webhookInboxRoutes(app: FastifyInstance): void {
  const deliveries: Delivery[] = [];

  app.post('/dev/webhooks/inbox', async (request, reply) => {
    const headers = Object.entries(request.headers)
      .filter((entry): entry is [string, string | string[]] => entry[1] !== undefined)
      .map(([name, value]): [string, string] => {
        const text = Array.isArray(value) ? value.join(', ') : value;
        return [name, name === 'authorization' ? maskSecret(text) : text];
      });
    const type = (request.body as { type?: unknown } | null)?.type;
    deliveries.unshift({ receivedAt: new Date(), type: typeof type === 'string' ? type.slice(0, 100) : null, headers, body: readable(request.body) });
    deliveries.length = Math.min(deliveries.length, KEPT_DELIVERIES);
    return reply.code(204).send();
  });

  app.get('/dev/webhooks', async (_request, reply) => {
    const list = deliveries.length
      ? deliveries.map(deliveryHtml).join('\n')
      : '<p>No deliveries yet. Register a user in the <code>demo</code> realm and this page shows the webhook it sends.</p>';
    const body = `<h1>Webhook inbox</h1>
<p class="note">Deliveries POSTed to <code>/dev/webhooks/inbox</code>, newest first (the last ${KEPT_DELIVERIES}); this page reloads every 5 seconds.</p>
${list}`;
    return reply.headers(devPageHeaders).send(devPage('Webhook inbox', body, '<meta http-equiv="refresh" content="5">'));
  });
}
