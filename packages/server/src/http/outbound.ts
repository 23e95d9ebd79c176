import type { LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { OutboundGuard } from '@realmgate/spi';

/**
 * The server's own HTTP requests to places an administrator configured (an identity provider's token, user info and
 * JWKS endpoints, a client's JWKS URL), through the one target guard (target-guard.ts, which webhooks use too): the
 * URL is judged before anything is sent, and a host name is resolved by the guard, which refuses a name any of whose
 * addresses is refused and hands back the address to connect to (no second lookup: no rebinding).
 */

export interface OutboundResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** At most this much of a response is read (a JWKS or a token response is a few KiB). */
const MAX_RESPONSE_BYTES = 1024 * 1024;
const TIMEOUT_MS = 10_000;

/** node's lookup, answered by the guard's pinned address. */
function guardedLookup(guard: OutboundGuard): LookupFunction {
  return (hostname, options, callback) => {
    guard.pin(hostname).then(
      (address) => {
        const family = isIP(address);
        if ((options as { all?: boolean }).all) (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, [{ address, family }]);
        else callback(null, address, family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
}

/**
 * One request through the guard: http(s) only, no redirects followed, a bounded body and time. Rejects with the
 * guard's refusal (`code` ERR_OUTBOUND_TARGET_REFUSED) for a refused target, another Error when the upstream cannot
 * be reached.
 */
export function outboundRequest(guard: OutboundGuard, url: string, init: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string } = {}): Promise<OutboundResponse> {
  // Scheme, literal addresses (connected to without a lookup), localhost names and host rules.
  const refused = guard.checkUrl(url);
  if (refused) return Promise.reject(refused);
  const target = new URL(url);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(target, { method: init.method ?? 'GET', headers: init.headers, lookup: guardedLookup(guard), timeout: TIMEOUT_MS }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_RESPONSE_BYTES) {
          req.destroy(new Error(`response from ${target.host} larger than ${MAX_RESPONSE_BYTES} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${target.host} within ${TIMEOUT_MS} ms`)));
    req.on('error', reject);
    if (init.body !== undefined) req.write(init.body);
    req.end();
  });
}
