/**
 * Standard Webhooks (https://www.standardwebhooks.com) symmetric signatures: HMAC-SHA256 over
 * `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the base64-decoded part of a `whsec_` secret.
 */
import { createHmac } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Decodes a `whsec_<base64>` secret; throws (without echoing the secret) when it is not one. */
export function parseSecret(secret: string): Buffer {
  const trimmed = secret.trim();
  if (!trimmed.startsWith(SECRET_PREFIX)) throw new Error('a webhook secret must start with whsec_');
  const encoded = trimmed.slice(SECRET_PREFIX.length);
  if (encoded.length === 0 || !BASE64.test(encoded)) {
    throw new Error('a webhook secret must be whsec_ followed by a non-empty standard base64 key');
  }
  return Buffer.from(encoded, 'base64');
}

/** `v1,<base64 HMAC-SHA256>` of `id.timestamp.body`. */
export function sign(key: Buffer, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

export interface SignatureHeaders extends Record<string, string> {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * The three headers for one attempt. The timestamp is the attempt's, as the Standard Webhooks spec asks
 * ("every time an attempt is retried the timestamp of the attempt is updated"), so a retry after a long
 * backoff still passes a receiver's replay window; the id stays the event's.
 */
export function signatureHeaders(key: Buffer, id: string, body: string, nowMs = Date.now()): SignatureHeaders {
  const timestamp = Math.floor(nowMs / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': sign(key, id, timestamp, body),
  };
}
