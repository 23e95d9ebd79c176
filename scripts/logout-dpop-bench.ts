/**
 * Issue 40's two figures, each beside its baseline in the same run (one server in this process, loopback only):
 *  - a DPoP-bound client_credentials grant (a fresh ES256 proof per request, made before the clock starts) beside a
 *    Bearer one, as requests per second, one request at a time (goal: ratio >= 0.8);
 *  - the user's logout (`POST …/logout` with a refresh token) of a session with 10 clients, each with a back-channel
 *    logout URL (a loopback receiver answering 200), beside a session of 10 clients without one (goal: ratio <= 1.05,
 *    with over without: delivery is in the background, the logout only writes the outbox rows).
 * The two kinds alternate request by request, so drifting machine load touches both alike; figures are medians.
 * LOGOUT_DPOP_BENCH_N: requests of each kind (default 300). BENCH_NO_DELIVERY=1: the logouts are timed with this node's
 * delivery worker paused (rows are written, none sent), which separates the logout's own cost (the outbox rows, written
 * in the session's deletion's transaction) from the background deliveries' share of the machine.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { Worker } from 'node:worker_threads';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { newId } from '../packages/server/src/credentials/index.js';
import { adminToken, api, startServer, tokenRequest } from '../packages/server/test/support/server.js';

const N = Number(process.env.LOGOUT_DPOP_BENCH_N ?? 300);

/** The worker that sends each timed logout and measures it from its own thread (see `logout` below). */
const TIMED_LOGOUT = `
const { parentPort, workerData } = require('node:worker_threads');
parentPort.on('message', async ({ seq, clientId, refreshToken }) => {
  const started = performance.now();
  const response = await fetch(workerData.url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: clientId, refresh_token: refreshToken }),
  });
  await response.arrayBuffer();
  parentPort.postMessage({ seq, elapsed: performance.now() - started, status: response.status });
});
`;
const REALM = 'bench40';
const CLIENTS = 10;

export interface Figure {
  name: string;
  value: number;
  unit: string;
  baseline: { name: string; value: number };
  ratio: number;
  goal: string;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};

export async function run(): Promise<Figure[]> {
  const receiver = createServer((request, response) => request.resume().on('end', () => response.writeHead(200).end()));
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/logout`;
  const t = await startServer({ config: { REALMGATE_LOG_LEVEL: 'warn' } });
  try {
    const token = await adminToken(t.url);
    await api(t.url, 'POST', '/admin/realms', token, { realm: REALM, enabled: true });
    await api(t.url, 'POST', `/admin/realms/${REALM}/users`, token, { username: 'bea', enabled: true, credentials: [{ type: 'password', value: 'Bench-password-1' }] });
    await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'svc', secret: 'svc-secret-1', serviceAccountsEnabled: true, publicClient: false });
    for (const kind of ['told', 'silent'] as const) {
      for (let i = 0; i < CLIENTS; i++) {
        await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, {
          clientId: `${kind}-${i}`,
          publicClient: true,
          directAccessGrantsEnabled: true,
          ...(kind === 'told' ? { attributes: { 'backchannel.logout.url': receiverUrl } } : {}),
        });
      }
    }
    const ctx = t.server.context;
    const realm = (await ctx.storage.realms.byName(REALM))!;

    // DPoP beside Bearer.
    const tokenUrl = `${t.url}/realms/${REALM}/protocol/openid-connect/token`;
    const key = await generateKeyPair('ES256', { extractable: true });
    const jwk = await exportJWK(key.publicKey);
    const form = { grant_type: 'client_credentials', client_id: 'svc', client_secret: 'svc-secret-1' };
    const bearer: number[] = [];
    const dpop: number[] = [];
    for (let round = 0; round < N; round += 50) {
      // Proofs for the next 50 requests, made before they are timed (iat stays within the 25 s window).
      const proofs = await Promise.all(
        Array.from({ length: 50 }, () =>
          new SignJWT({ jti: randomUUID(), htm: 'POST', htu: tokenUrl, iat: Math.floor(Date.now() / 1000) }).setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk }).sign(key.privateKey),
        ),
      );
      for (const proof of proofs) {
        let started = performance.now();
        const plain = await tokenRequest(t.url, REALM, form);
        bearer.push(performance.now() - started);
        started = performance.now();
        const bound = await tokenRequest(t.url, REALM, form, { dpop: proof });
        dpop.push(performance.now() - started);
        if (plain.status !== 200 || bound.status !== 200 || bound.body.token_type !== 'DPoP') throw new Error(`grant failed: ${JSON.stringify(bound.body)}`);
      }
    }

    // Logout of a session with 10 clients: with back-channel URLs beside without.
    const sessionWith = async (kind: 'told' | 'silent') => {
      const first = await tokenRequest(t.url, REALM, { grant_type: 'password', client_id: `${kind}-0`, username: 'bea', password: 'Bench-password-1' });
      const sid = JSON.parse(Buffer.from((first.body.access_token as string).split('.')[1], 'base64url').toString()).sid as string;
      for (let i = 1; i < CLIENTS; i++) {
        const client = (await ctx.storage.clients.byClientId(realm.id, `${kind}-${i}`))!;
        await ctx.storage.sessions.upsertClientSession({ id: newId(), sessionId: sid, clientId: client.id, refreshTokenId: null, scope: 'openid', started: Date.now() });
      }
      return first.body.refresh_token as string;
    };
    // The user's side of the logout runs in a worker thread: a user is never in the server's process, and an in-process
    // client would read its answer only once the server's event loop is free, that is after the background deliveries
    // the logout wakes (10 signed logout tokens and their POSTs), which the user does not wait for.
    const timer = new Worker(TIMED_LOGOUT, { eval: true, workerData: { url: `${t.url}/realms/${REALM}/protocol/openid-connect/logout` } });
    const pending = new Map<number, (result: { elapsed: number; status: number }) => void>();
    timer.on('message', (result: { seq: number; elapsed: number; status: number }) => pending.get(result.seq)?.(result));
    let seq = 0;
    const logout = async (kind: 'told' | 'silent', refreshToken: string) => {
      const id = seq++;
      const result = await new Promise<{ elapsed: number; status: number }>((resolve) => {
        pending.set(id, resolve);
        timer.postMessage({ seq: id, clientId: `${kind}-0`, refreshToken });
      });
      pending.delete(id);
      if (result.status !== 204) throw new Error(`logout answered ${result.status}`);
      return result.elapsed;
    };
    if (process.env.BENCH_NO_DELIVERY) ctx.logoutNotifications.settings.concurrency = 0;
    const told: number[] = [];
    const silent: number[] = [];
    const logouts = Math.max(20, Math.floor(N / 3));
    for (let i = 0; i < logouts; i++) {
      const [a, b] = [await sessionWith('told'), await sessionWith('silent')];
      if (i % 2 === 0) {
        told.push(await logout('told', a));
        silent.push(await logout('silent', b));
      } else {
        silent.push(await logout('silent', b));
        told.push(await logout('told', a));
      }
    }
    await timer.terminate();
    const delivered = await ctx.logoutNotifications.store.list({ realmId: realm.id, states: ['delivered', 'pending', 'sending'], max: 100_000 });

    const bearerRate = 1000 / median(bearer);
    const dpopRate = 1000 / median(dpop);
    return [
      {
        name: 'client_credentials with a DPoP proof (bound token)',
        value: dpopRate,
        unit: 'grants/s (1 / median latency)',
        baseline: { name: 'client_credentials, Bearer', value: bearerRate },
        ratio: dpopRate / bearerRate,
        goal: '>= 0.8',
      },
      {
        name: `logout of a session with ${CLIENTS} clients with back-channel URLs (${delivered.length} notifications written)`,
        value: median(told),
        unit: 'ms (median)',
        baseline: { name: `logout of a session with ${CLIENTS} clients without`, value: median(silent) },
        ratio: median(told) / median(silent),
        goal: '<= 1.05',
      },
    ];
  } finally {
    await t.close();
    receiver.close();
  }
}

export function format(figures: Figure[]): string {
  return figures
    .map((f) => `  ${f.name}: ${f.value.toFixed(2)} ${f.unit}  | baseline ${f.baseline.name}: ${f.baseline.value.toFixed(2)}  | ratio ${f.ratio.toFixed(2)} (goal ${f.goal})`)
    .join('\n');
}
