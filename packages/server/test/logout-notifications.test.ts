import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { TargetGuard } from '../src/http/index.js';
import { BackchannelLogout } from '../src/protocol/openid-connect/logout-notifications.js';
import { FormClient, firstForm, inputValue, pkce } from './support/forms.js';
import { Receiver } from './support/logout-receiver.js';
import { adminToken, api, eventually, startServer, startServerPair, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 40, item 5: back-channel logout (a signed logout_token POSTed to each client's `backchannel.logout.url`,
 * from the durable outbox, with retries, never holding up the logout) and front-channel logout (the logout page's
 * frames), as Keycloak 26.7.3 configures them. Receivers are on 127.0.0.1 only.
 */

const REALM = 'bcl';
const PASSWORD = 'Logout-password-7';
/** Never contacted: the tests read where the server redirects and do not follow. */
const CALLBACK = 'http://127.0.0.1:9/cb';
const EVENT = 'http://schemas.openid.net/event/backchannel-logout';

let t: TestServer;
let token: string;
let userId: string;
const receiver = new Receiver();
let jwks: ReturnType<typeof createRemoteJWKSet>;
const issuer = () => `${t.url}/realms/${REALM}`;

const ok = (response: { status: number; body: unknown }) => expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);

async function client(clientId: string, extra: Record<string, unknown> = {}, attributes: Record<string, string> = {}): Promise<string> {
  const created = await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, {
    clientId,
    publicClient: true,
    directAccessGrantsEnabled: true,
    redirectUris: [CALLBACK],
    frontchannelLogout: false,
    attributes: { 'backchannel.logout.url': receiver.url(`/${clientId}`), 'post.logout.redirect.uris': '+', ...attributes },
    ...extra,
  });
  ok(created);
  return created.headers.get('location')!.split('/').pop()!;
}

const authPath = (clientId: string, challenge: string) =>
  `/realms/${REALM}/protocol/openid-connect/auth?${new URLSearchParams({ client_id: clientId, redirect_uri: CALLBACK, response_type: 'code', scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256', state: 'st' })}`;

/** A code flow for `clientId` in `browser` (the login form the first time, SSO after): the client's tokens. */
async function signIn(browser: FormClient, clientId: string): Promise<Record<string, string>> {
  const { verifier, challenge } = pkce();
  let response = await browser.get(authPath(clientId, challenge));
  if (response.status === 200) {
    response = await browser.post(`/realms/${REALM}/login-actions/authenticate`, { username: 'lena', password: PASSWORD, session_code: inputValue(response.text, 'session_code')! });
  }
  expect(response.status, response.text.slice(0, 300)).toBe(302);
  const code = new URL(response.location!).searchParams.get('code')!;
  const tokens = await tokenRequest(t.url, REALM, { grant_type: 'authorization_code', client_id: clientId, code, redirect_uri: CALLBACK, code_verifier: verifier });
  expect(tokens.status).toBe(200);
  return tokens.body as Record<string, string>;
}

/** Logs the browser out through the confirmation page; the final page. */
async function browserLogout(browser: FormClient, query: Record<string, string> = {}) {
  const page = await browser.get(`/realms/${REALM}/protocol/openid-connect/logout?${new URLSearchParams(query)}`);
  if (page.status !== 200 || !page.text.includes('session_code')) return page;
  const form = firstForm(page.text);
  return browser.post(form.action, form.hidden);
}

/** Waits until `check` gives a non-empty list. */
const some = <T>(check: () => T[] | Promise<T[]>, timeoutMs?: number) =>
  eventually(async () => {
    const list = await check();
    return list.length > 0 ? list : null;
  }, timeoutMs);

/** Waits for exactly one request at `path`. */
const arrived = (path: string, timeoutMs?: number) => some(() => (receiver.at(path).length === 1 ? receiver.at(path) : []), timeoutMs);

const sidOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString()).sid as string;

/** A logout token as a receiver checks it (Back-Channel Logout 1.0, 2.6), with jose against the realm's JWKS. */
async function verifyLogoutToken(jwt: string, audience: string): Promise<JWTPayload> {
  expect(decodeProtectedHeader(jwt).typ).toBe('logout+jwt');
  const { payload } = await jwtVerify(jwt, jwks, { issuer: issuer(), audience, typ: 'logout+jwt', maxTokenAge: 120 });
  expect(payload.events).toMatchObject({ [EVENT]: {} });
  expect(payload.nonce).toBeUndefined();
  expect(typeof payload.jti).toBe('string');
  expect(payload.exp! - payload.iat!).toBe(120);
  expect(payload.sub).toBe(userId);
  return payload;
}

beforeAll(async () => {
  await receiver.start();
  t = await startServer();
  t.server.context.logoutNotifications.settings.backoffMs = [300];
  token = await adminToken(t.url);
  ok(await api(t.url, 'POST', '/admin/realms', token, { realm: REALM, enabled: true }));
  const user = await api(t.url, 'POST', `/admin/realms/${REALM}/users`, token, { username: 'lena', email: 'lena@example.com', emailVerified: true, enabled: true, credentials: [{ type: 'password', value: PASSWORD }] });
  ok(user);
  userId = user.headers.get('location')!.split('/').pop()!;
  jwks = createRemoteJWKSet(new URL(`${issuer()}/protocol/openid-connect/certs`));
  await client('app-a');
  await client('app-b');
  await client('no-sid', {}, { 'backchannel.logout.session.required': 'false', 'backchannel.logout.revoke.offline.tokens': 'true' });
  await client('front', { frontchannelLogout: true }, { 'frontchannel.logout.url': receiver.url('/front-logout'), 'backchannel.logout.url': receiver.url('/front') });
});
afterAll(async () => {
  await t?.close();
  await receiver.stop();
});
beforeEach(() => {
  receiver.received.length = 0;
  receiver.hold = false;
  receiver.status = 200;
});

describe('back-channel logout', () => {
  it('the user logs out in the browser: both clients of the session get a logout token (jose: iss, aud, sid, events, no nonce)', async () => {
    const browser = new FormClient(t.url);
    const a = await signIn(browser, 'app-a');
    await signIn(browser, 'app-b');
    const sid = sidOf(a.access_token);
    const done = await browserLogout(browser);
    expect(done.status).toBe(200);
    await eventually(() => receiver.at('/app-a').length === 1 && receiver.at('/app-b').length === 1);
    const [toA, toB] = [receiver.at('/app-a')[0], receiver.at('/app-b')[0]];
    for (const [received, audience] of [[toA, 'app-a'], [toB, 'app-b']] as const) {
      expect(received.method).toBe('POST');
      const payload = await verifyLogoutToken(received.token!, audience);
      expect(payload.sid).toBe(sid);
      expect(payload.events).toEqual({ [EVENT]: {} });
    }
    expect(receiver.at('/no-sid')).toHaveLength(0);
  });

  it('logout with a refresh token tells every client of the session, the caller too', async () => {
    const browser = new FormClient(t.url);
    const a = await signIn(browser, 'app-a');
    await signIn(browser, 'app-b');
    const response = await fetch(`${issuer()}/protocol/openid-connect/logout`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: 'app-a', refresh_token: a.refresh_token }),
    });
    expect(response.status).toBe(204);
    await eventually(() => receiver.at('/app-a').length === 1 && receiver.at('/app-b').length === 1);
    expect((await verifyLogoutToken(receiver.at('/app-b')[0].token!, 'app-b')).sid).toBe(sidOf(a.access_token));
  });

  it('backchannel.logout.session.required "false": no sid; revoke.offline.tokens: revoke_offline_access in events', async () => {
    const browser = new FormClient(t.url);
    await signIn(browser, 'no-sid');
    expect((await browserLogout(browser)).status).toBe(200);
    const [received] = await arrived('/no-sid');
    const payload = await verifyLogoutToken(received.token!, 'no-sid');
    expect(payload.sid).toBeUndefined();
    expect(payload.events).toEqual({ [EVENT]: {}, revoke_offline_access: true });
  });

  it('an administrator signs the user out (users/{id}/logout) or ends one session (DELETE sessions/{id}): receivers are told', async () => {
    const first = new FormClient(t.url);
    const a = await signIn(first, 'app-a');
    const second = new FormClient(t.url);
    const b = await signIn(second, 'app-b');
    expect((await api(t.url, 'POST', `/admin/realms/${REALM}/users/${userId}/logout`, token)).status).toBe(204);
    await eventually(() => receiver.at('/app-a').length === 1 && receiver.at('/app-b').length === 1);
    expect((await verifyLogoutToken(receiver.at('/app-a')[0].token!, 'app-a')).sid).toBe(sidOf(a.access_token));
    expect((await verifyLogoutToken(receiver.at('/app-b')[0].token!, 'app-b')).sid).toBe(sidOf(b.access_token));

    receiver.received.length = 0;
    const third = new FormClient(t.url);
    const c = await signIn(third, 'app-b');
    expect((await api(t.url, 'DELETE', `/admin/realms/${REALM}/sessions/${sidOf(c.access_token)}`, token)).status).toBe(204);
    const [received] = await arrived('/app-b');
    expect((await verifyLogoutToken(received.token!, 'app-b')).sid).toBe(sidOf(c.access_token));
    expect(receiver.at('/app-a')).toHaveLength(0);
  });

  it('the logout answers while a receiver has not answered yet (delivery is in the background)', async () => {
    const browser = new FormClient(t.url);
    const a = await signIn(browser, 'app-a');
    receiver.hold = true;
    const done = await browserLogout(browser);
    expect(done.status).toBe(200);
    // The logout has answered; the delivery under way (now or soon) is still open: nothing waited for it to finish.
    expect(receiver.received.every((r) => !r.closed)).toBe(true);
    const [held] = await arrived('/app-a');
    expect(held.closed).toBe(false);
    held.answer(200);
    const [item] = await some(() => rows('app-a', sidOf(a.access_token), 'delivered'));
    expect(item.totalAttempts).toBe(1);
  });

  it('a receiver that is down is tried again and gets the token once it is up', async () => {
    const browser = new FormClient(t.url);
    const a = await signIn(browser, 'app-a');
    const port = receiver.port;
    await receiver.stop();
    try {
      expect((await browserLogout(browser)).status).toBe(200);
      // At least one attempt failed (no listener) before the receiver comes back.
      await some(async () => (await rows('app-a', sidOf(a.access_token), 'pending')).filter((i) => i.totalAttempts >= 1));
    } finally {
      await receiver.start(port);
    }
    const [received] = await arrived('/app-a', 10_000);
    expect((await verifyLogoutToken(received.token!, 'app-a')).sid).toBe(sidOf(a.access_token));
    const [item] = await some(() => rows('app-a', sidOf(a.access_token), 'delivered'));
    expect(item.totalAttempts).toBeGreaterThanOrEqual(2);
    const attempts = (await t.server.context.logoutNotifications.store.attempts([item.id])).get(item.id)!;
    expect(attempts[0]).toMatchObject({ status: null });
    expect(attempts.at(-1)).toMatchObject({ status: 200, error: null });
  });

  it('a receiver answering 4xx is not tried again; 503 is', async () => {
    const browser = new FormClient(t.url);
    const a = await signIn(browser, 'app-a');
    receiver.status = 503;
    expect((await browserLogout(browser)).status).toBe(200);
    await eventually(() => receiver.at('/app-a').length >= 2);
    receiver.status = 400;
    const dead = await some(() => rows('app-a', sidOf(a.access_token), 'dead'));
    expect(dead[0].lastStatus).toBe(400);
    const count = receiver.at('/app-a').length;
    // Another logout after it: delivered (the same endpoint is not paused by the dead one), and no extra try of the dead row.
    receiver.status = 200;
    const again = new FormClient(t.url);
    await signIn(again, 'app-a');
    expect((await browserLogout(again)).status).toBe(200);
    await eventually(() => receiver.at('/app-a').length === count + 1);
  });

  it('production mode: the guard refuses a logout URL on an internal (loopback) address, outboundAllow lets it through', async () => {
    const ctx = t.server.context;
    const realm = (await ctx.storage.realms.byName(REALM))!;
    for (const [guard, expected] of [[new TargetGuard({ mode: 'production' }), 'dead'], [new TargetGuard({ mode: 'production', allow: ['loopback'] }), 'delivered']] as const) {
      receiver.received.length = 0;
      const browser = new FormClient(t.url);
      const a = await signIn(browser, 'app-a');
      const session = (await ctx.storage.sessions.byId(sidOf(a.access_token)))!;
      // A second worker over the same outbox rows, with a production guard; the server's own worker is paused meanwhile.
      const notifier = new BackchannelLogout({ storage: ctx.storage, tokens: ctx.tokens, outbound: guard, logger: ctx.logger });
      const own = ctx.logoutNotifications;
      own.settings.concurrency = 0;
      try {
        expect(await notifier.enqueue(realm, [session], issuer(), (c) => c.clientId === 'app-a')).toBe(1);
        notifier.start();
        const [item] = await some(async () => (await notifier.store.list({ realmId: realm.id, endpoint: await clientUuid('app-a'), states: [expected] })).filter((i) => i.label === session.id));
        const ofSession = () => receiver.at('/app-a').filter((r) => r.token && sidOf(r.token) === session.id);
        if (expected === 'dead') {
          expect(item.lastError).toMatch(/refused by outboundAllow: 127\.0\.0\.1 is a loopback address/);
          expect(ofSession()).toHaveLength(0);
        } else {
          expect(ofSession()).toHaveLength(1);
        }
      } finally {
        await notifier.close(1000);
        own.settings.concurrency = 8;
        own.wake();
      }
      await browserLogout(browser);
    }
  });
});

describe('front-channel logout', () => {
  it('frontchannelLogout false is kept false (it was saved as true); false for a client created without it, as Keycloak 26.7.3 answers', async () => {
    const id = await clientUuid('app-a');
    expect((await api(t.url, 'GET', `/admin/realms/${REALM}/clients/${id}`, token)).body.frontchannelLogout).toBe(false);
    const created = await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'plain', publicClient: true });
    ok(created);
    const plain = created.headers.get('location')!.split('/').pop()!;
    const rep = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients/${plain}`, token)).body;
    expect(rep.frontchannelLogout).toBe(false);
    ok(await api(t.url, 'PUT', `/admin/realms/${REALM}/clients/${plain}`, token, { ...rep, frontchannelLogout: true }));
    expect((await api(t.url, 'GET', `/admin/realms/${REALM}/clients/${plain}`, token)).body.frontchannelLogout).toBe(true);
    ok(await api(t.url, 'PUT', `/admin/realms/${REALM}/clients/${plain}`, token, { ...rep, frontchannelLogout: false }));
    expect((await api(t.url, 'GET', `/admin/realms/${REALM}/clients/${plain}`, token)).body.frontchannelLogout).toBe(false);
  });

  it('the logout page frames each front-channel client with sid and iss; back-channel goes to the others only', async () => {
    const browser = new FormClient(t.url);
    const front = await signIn(browser, 'front');
    await signIn(browser, 'app-b');
    const sid = sidOf(front.access_token);
    const done = await browserLogout(browser, { id_token_hint: front.id_token, post_logout_redirect_uri: CALLBACK, state: 'bye' });
    expect(done.status).toBe(200);
    const frame = /<iframe class="frontchannel-logout"[^>]*src="([^"]*)"/.exec(done.text);
    expect(frame).not.toBeNull();
    const src = new URL(frame![1].replace(/&amp;/g, '&'));
    expect(`${src.origin}${src.pathname}`).toBe(receiver.url('/front-logout'));
    expect(src.searchParams.get('sid')).toBe(sid);
    expect(src.searchParams.get('iss')).toBe(issuer());
    expect(done.headers.get('content-security-policy')).toContain(`frame-src 'self' http://127.0.0.1:${receiver.port}`);
    const next = /<a id="continue"[^>]*href="([^"]*)"/.exec(done.text);
    expect(new URL(next![1].replace(/&amp;/g, '&')).searchParams.get('state')).toBe('bye');
    // app-b (frontchannelLogout false) is told by back-channel; the front-channel client not.
    await eventually(() => receiver.at('/app-b').length === 1);
    expect(receiver.at('/front')).toHaveLength(0);
  });
});

/** The outbox rows of `clientId`'s notifications about session `sid` in this state. */
async function rows(clientId: string, sid: string, state: 'pending' | 'delivered' | 'dead') {
  const items = await t.server.context.logoutNotifications.store.list({ realmId: await realmId(), endpoint: await clientUuid(clientId), states: [state] });
  return items.filter((item) => item.label === sid);
}

async function realmId(): Promise<string> {
  return (await t.server.context.storage.realms.byName(REALM))!.id;
}

async function clientUuid(clientId: string): Promise<string> {
  return (await t.server.context.storage.clients.byClientId(await realmId(), clientId))!.id;
}



describe('back-channel logout on two nodes (one PostgreSQL, one Redis)', () => {
  let nodes: Awaited<ReturnType<typeof startServerPair>>;
  const pairReceiver = new Receiver();
  beforeAll(async () => {
    await pairReceiver.start();
    nodes = await startServerPair();
    const { a } = nodes;
    const admin = await adminToken(a.url);
    ok(await api(a.url, 'POST', '/admin/realms', admin, { realm: 'pair', enabled: true }));
    ok(await api(a.url, 'POST', '/admin/realms/pair/users', admin, { username: 'lena', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] }));
    ok(await api(a.url, 'POST', '/admin/realms/pair/clients', admin, { clientId: 'svc', publicClient: true, directAccessGrantsEnabled: true, attributes: { 'backchannel.logout.url': pairReceiver.url('/svc') } }));
  });
  afterAll(async () => {
    await nodes?.close();
    await pairReceiver.stop();
  });

  const logoutOn = async (node: TestServer) => {
    const grant = await tokenRequest(node.url, 'pair', { grant_type: 'password', client_id: 'svc', username: 'lena', password: PASSWORD });
    expect(grant.status).toBe(200);
    const response = await fetch(`${node.url}/realms/pair/protocol/openid-connect/logout`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: 'svc', refresh_token: grant.body.refresh_token as string }),
    });
    expect(response.status).toBe(204);
    return sidOf(grant.body.access_token as string);
  };

  it('a node whose worker is stopped leaves its rows to the other node, which delivers them', async () => {
    const { a, b } = nodes;
    // A's worker stops (as at shutdown: any claim under way finishes first); A still answers logouts.
    await a.server.context.logoutNotifications.close(10_000);
    try {
      const sid = await logoutOn(a);
      const [received] = await some(() => pairReceiver.received.filter((r) => r.token && sidOf(r.token) === sid), 10_000);
      expect(received.method).toBe('POST');
      const realm = (await b.server.context.storage.realms.byName('pair'))!;
      const [row] = await some(async () => (await b.server.context.logoutNotifications.store.list({ realmId: realm.id, states: ['delivered'] })).filter((i) => i.label === sid));
      const [attempt] = (await b.server.context.logoutNotifications.store.attempts([row.id])).get(row.id)!;
      expect(attempt.node).toBe(b.server.context.logoutNotifications.store.nodeId);
    } finally {
      a.server.context.logoutNotifications.start();
    }
  });

  it('logouts on both nodes: every notification is delivered once (leases: no node sends another\'s row)', async () => {
    const { a, b } = nodes;
    pairReceiver.received.length = 0;
    const sids: string[] = [];
    for (let i = 0; i < 6; i++) sids.push(await logoutOn(i % 2 === 0 ? a : b));
    const realm = (await a.server.context.storage.realms.byName('pair'))!;
    await eventually(async () => {
      const delivered = await a.server.context.logoutNotifications.store.list({ realmId: realm.id, states: ['delivered'] });
      return sids.every((sid) => delivered.some((i) => i.label === sid));
    }, 10_000);
    const got = pairReceiver.received.map((r) => sidOf(r.token!));
    expect([...got].sort()).toEqual([...sids].sort());
  });
});
