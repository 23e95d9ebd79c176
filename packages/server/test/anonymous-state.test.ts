import type { Logger, SharedStore } from '@realmgate/spi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore, namespacedStore } from '../src/store/index.js';
import { FormClient, inputValue, pkce, textOf } from './support/forms.js';
import { adminToken, api, eventually, startServer, tokenRequest, type TestServer } from './support/server.js';
import { linkIn, startSmtp } from './support/smtp.js';

/**
 * Issue 11, point 5, tried as an attacker would: anonymous GETs of the login and logout pages write nothing to
 * the shared store; a flood of other keys does not evict a used-link marker; another user's id_token_hint does
 * not sign the browser out without asking.
 */

const REALM = 'anon';
const R = `/realms/${REALM}`;
const PASSWORD = 'Correct-horse-7';

let t: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
/** Never contacted: these tests read where the server redirects and do not follow. */
const callback = 'http://127.0.0.1:9/cb';
let token: string;

beforeAll(async () => {
  t = await startServer();
  smtp = await startSmtp();
  token = await adminToken(t.url);
  const ok = (response: { status: number }) => expect(response.status).toBeLessThan(300);
  ok(await api(t.url, 'POST', '/admin/realms', token, { realm: REALM, enabled: true, registrationAllowed: true, resetPasswordAllowed: true, smtpServer: { host: '127.0.0.1', port: String(smtp.port), from: 'noreply@example.test' } }));
  ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'web', publicClient: true, redirectUris: [callback], attributes: { 'post.logout.redirect.uris': callback } }));
  for (const username of ['vera', 'mallory', 'rita']) {
    ok(await api(t.url, 'POST', `/admin/realms/${REALM}/users`, token, { username, email: `${username}@example.com`, emailVerified: true, enabled: true, credentials: [{ type: 'password', value: PASSWORD }] }));
  }
});
afterAll(async () => {
  await t?.close();
  await smtp?.close();
});

const authQuery = (challenge = pkce().challenge, extra: Record<string, string> = {}) =>
  new URLSearchParams({ client_id: 'web', redirect_uri: callback, response_type: 'code', scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256', state: 'st', nonce: 'n', ...extra }).toString();

/** The code flow without a browser; the client ends up with an SSO cookie. */
async function codeLogin(client: FormClient, username: string): Promise<{ id_token: string; refresh_token: string }> {
  const { verifier, challenge } = pkce();
  const page = await client.get(`${R}/protocol/openid-connect/auth?${authQuery(challenge)}`);
  expect(page.status).toBe(200);
  const done = await client.post(`${R}/login-actions/authenticate`, { username, password: PASSWORD, session_code: inputValue(page.text, 'session_code')! });
  expect(done.status).toBe(302);
  const location = new URL(done.location!);
  expect(location.searchParams.get('state')).toBe('st');
  const tokens = await tokenRequest(t.url, REALM, { grant_type: 'authorization_code', client_id: 'web', code: location.searchParams.get('code')!, redirect_uri: callback, code_verifier: verifier });
  expect(tokens.status).toBe(200);
  return tokens.body as { id_token: string; refresh_token: string };
}

const userId = async (username: string) => ((await api(t.url, 'GET', `/admin/realms/${REALM}/users?username=${username}&exact=true`, token)).body as { id: string }[])[0].id;
const sessionsOf = async (username: string) => {
  const id = await userId(username);
  return (await t.server.context.storage.db.selectFrom('user_session').select('id').where('user_id', '=', id).execute()).length;
};

/** Counts every write to the server's shared store (all namespaces go through it) while `run` runs. */
async function storeWrites(run: () => Promise<void>): Promise<{ writes: string[]; sizeBefore: number; sizeAfter: number }> {
  const store = t.server.context.store as unknown as SharedStore & { size: number };
  const writes: string[] = [];
  const originals = { set: store.set, setIfAbsent: store.setIfAbsent, increment: store.increment, recordHit: store.recordHit };
  for (const name of Object.keys(originals) as (keyof typeof originals)[]) {
    const original = originals[name] as (key: string, ...rest: unknown[]) => Promise<unknown>;
    (store as unknown as Record<string, unknown>)[name] = (key: string, ...rest: unknown[]) => {
      writes.push(`${name} ${key}`);
      return original.call(store, key, ...rest);
    };
  }
  const sizeBefore = store.size;
  try {
    await run();
  } finally {
    Object.assign(store, originals);
  }
  return { writes, sizeBefore, sizeAfter: store.size };
}

async function inBatches(count: number, request: (i: number) => Promise<void>): Promise<void> {
  for (let i = 0; i < count; i += 20) await Promise.all(Array.from({ length: Math.min(20, count - i) }, (_, j) => request(i + j)));
}

describe('GETs before a user acts', () => {
  it('1,000 anonymous GETs of the login, registration, account and logout pages write nothing to the store', async () => {
    expect(t.server.context.store).toBeInstanceOf(MemoryStore);
    const { writes, sizeBefore, sizeAfter } = await storeWrites(() =>
      inBatches(1000, async (i) => {
        const client = new FormClient(t.url);
        const kind = i % 5;
        const response =
          kind === 0
            ? await client.get(`${R}/protocol/openid-connect/auth?${authQuery()}`)
            : kind === 1
              ? await client.get(`${R}/protocol/openid-connect/registrations?${authQuery()}`)
              : kind === 2
                ? await client.get(`${R}/account/profile`)
                : kind === 3
                  ? await client.get(`${R}/protocol/openid-connect/logout`)
                  : await client.get(`${R}/protocol/openid-connect/logout?${new URLSearchParams({ client_id: 'web', post_logout_redirect_uri: callback, state: `s${i}` })}`);
        expect(response.status).toBe(200);
        if (kind <= 2) {
          // The login pages reached from there are GETs too.
          expect((await client.get(`${R}/login-actions/reset-credentials`)).status).toBe(200);
          expect((await client.get(`${R}/login-actions/authenticate`)).status).toBe(200);
        }
      }),
    );
    expect(writes).toEqual([]);
    expect(sizeAfter).toBeLessThanOrEqual(sizeBefore);
  });

  it('a logged-in browser opening the logout confirmation writes nothing either', async () => {
    const client = new FormClient(t.url);
    await codeLogin(client, 'rita');
    const { writes } = await storeWrites(() => inBatches(100, async () => void expect((await client.get(`${R}/protocol/openid-connect/logout`)).status).toBe(200)));
    expect(writes).toEqual([]);
  });

  it('the login state lives in a signed cookie: it works, and a tampered or foreign one is refused', async () => {
    const client = new FormClient(t.url);
    await codeLogin(client, 'vera');
    const other = new FormClient(t.url);
    const page = await other.get(`${R}/protocol/openid-connect/auth?${authQuery()}`);
    const cookie = other.cookies.get('AUTH_SESSION')!;
    expect(cookie).toBeTruthy();
    const csrf = inputValue(page.text, 'session_code')!;
    // The same cookie with another redirect_uri or client inside it: the MAC no longer matches.
    const [kid, body, mac] = decodeURIComponent(cookie).split('.');
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString());
    const forged = `${kid}.${Buffer.from(JSON.stringify({ ...payload, redirectUri: 'https://evil.example/cb' })).toString('base64url')}.${mac}`;
    const attacker = new FormClient(t.url);
    attacker.cookies.set('AUTH_SESSION', encodeURIComponent(forged));
    const refused = await attacker.post(`${R}/login-actions/authenticate`, { username: 'vera', password: PASSWORD, session_code: csrf });
    expect(refused.status).toBe(400);
    expect(textOf(refused.text, 'error-text')).toMatch(/no longer valid/);
    expect(refused.location).toBeNull();
    // The master realm's cookie is not this realm's.
    const master = new FormClient(t.url);
    const masterPage = await master.get(`/realms/master/account/profile`);
    const foreign = new FormClient(t.url);
    foreign.cookies.set('AUTH_SESSION', master.cookies.get('AUTH_SESSION')!);
    expect((await foreign.post(`${R}/login-actions/authenticate`, { username: 'vera', password: PASSWORD, session_code: inputValue(masterPage.text, 'session_code')! })).status).toBe(400);
  });
});

describe('logout with an id_token_hint', () => {
  it("another user's ID token shows a confirmation and leaves the browser signed in", async () => {
    const victim = new FormClient(t.url);
    await codeLogin(victim, 'vera');
    const veraSessions = await sessionsOf('vera');
    const mallory = await codeLogin(new FormClient(t.url), 'mallory');
    const mallorySessions = await sessionsOf('mallory');

    const response = await victim.get(`${R}/protocol/openid-connect/logout?${new URLSearchParams({ id_token_hint: mallory.id_token, post_logout_redirect_uri: callback, state: 'x' })}`);
    expect(response.status).toBe(200);
    expect(response.location).toBeNull();
    expect(textOf(response.text, 'page-title')).toBe('Sign out');
    expect(response.setCookies).not.toContain('REALMGATE_SESSION');
    expect(await sessionsOf('vera')).toBe(veraSessions);
    expect(await sessionsOf('mallory')).toBe(mallorySessions);
    // Still signed in: a new authorization request completes without the login page.
    const again = await victim.get(`${R}/protocol/openid-connect/auth?${authQuery()}`);
    expect(again.status).toBe(302);
    expect(new URL(again.location!).searchParams.get('code')).toBeTruthy();

    // The user who confirms is signed out (their own session), and sent where the client asked.
    const confirmed = await victim.post(`${R}/protocol/openid-connect/logout`, { client_id: inputValue(response.text, 'client_id')!, post_logout_redirect_uri: callback, state: 'x', session_code: inputValue(response.text, 'session_code')! });
    expect(confirmed.status).toBe(302);
    expect(confirmed.location).toBe(`${callback}?state=x`);
    expect(await sessionsOf('vera')).toBe(veraSessions - 1);
    expect(await sessionsOf('mallory')).toBe(mallorySessions);
  });

  it("the browser's own ID token signs out without asking, as Keycloak", async () => {
    const browser = new FormClient(t.url);
    const own = await codeLogin(browser, 'rita');
    const before = await sessionsOf('rita');
    const response = await browser.get(`${R}/protocol/openid-connect/logout?${new URLSearchParams({ id_token_hint: own.id_token, post_logout_redirect_uri: callback, state: 'bye' })}`);
    expect(response.status).toBe(302);
    expect(response.location).toBe(`${callback}?state=bye`);
    expect(await sessionsOf('rita')).toBe(before - 1);
  });
});

describe('replay markers under a flood of other keys', () => {
  const logger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

  it('the memory store evicts ordinary keys but never a claim (used link, spent challenge)', async () => {
    const store = new MemoryStore({ logger, maxKeys: 100 });
    const host = namespacedStore(store, 'host');
    const pow = namespacedStore(store, 'ext-pow');
    expect(await host.setIfAbsent('action-used:link-1', '1', 600_000)).toBe(true);
    expect(await pow.setIfAbsent('spent:challenge-1', '1', 600_000)).toBe(true);
    await host.set('code:early', 'x', 600_000);
    for (let i = 0; i < 10_000; i++) await host.set(`flood:${i}`, 'x', 600_000);
    // The flood did evict: the early ordinary key is gone, and the store holds its bound.
    expect(await host.get('code:early')).toBeNull();
    expect(store.size).toBeLessThanOrEqual(102);
    // The claims did not go: the link and the challenge still count as used.
    expect(await host.setIfAbsent('action-used:link-1', '1', 600_000)).toBe(false);
    expect(await pow.setIfAbsent('spent:challenge-1', '1', 600_000)).toBe(false);
    await store.close();
  });

  it('claims have their own bound: when full of live claims, a new one is refused, never an old one forgotten', async () => {
    const store = new MemoryStore({ logger, maxClaims: 10 });
    for (let i = 0; i < 10; i++) expect(await store.setIfAbsent(`claim:${i}`, '1', 600_000)).toBe(true);
    await expect(store.setIfAbsent('claim:new', '1', 600_000)).rejects.toThrow(/shared store full/);
    for (let i = 0; i < 10; i++) expect(await store.setIfAbsent(`claim:${i}`, '1', 600_000)).toBe(false);
    // Ordinary keys are unaffected by the claims' bound.
    await store.set('ordinary', 'x', 600_000);
    expect(await store.get('ordinary')).toBe('x');
    // Expired claims make room again.
    const short = new MemoryStore({ logger, maxClaims: 2 });
    expect(await short.setIfAbsent('a', '1', 30)).toBe(true);
    expect(await short.setIfAbsent('b', '1', 30)).toBe(true);
    await new Promise((r) => setTimeout(r, 60));
    expect(await short.setIfAbsent('c', '1', 600_000)).toBe(true);
    await store.close();
    await short.close();
  });

  it('a used reset link stays used on the running server after a signed-in client floods the store with codes', async () => {
    // A small store, so that the flood that would have evicted the marker takes seconds, not a million requests.
    const store = t.server.context.store as unknown as { maxKeys: number; size: number };
    const original = store.maxKeys;
    store.maxKeys = 200;
    try {
      const page = new FormClient(t.url);
      const login = await page.get(`${R}/protocol/openid-connect/auth?${authQuery()}`);
      const sent = await page.post(`${R}/login-actions/reset-credentials`, { username: 'rita', session_code: inputValue(login.text, 'session_code')! });
      expect(sent.status).toBe(200);
      const link = linkIn(await eventually(() => smtp.mails.filter((m) => m.to.includes('rita@example.com')).at(-1)));
      const key = new URL(link).searchParams.get('key')!;
      const used = await page.post(`${R}/login-actions/reset-password`, { 'password-new': 'Reset-pass-1', 'password-confirm': 'Reset-pass-1', session_code: key });
      expect(textOf(used.text, 'page-title')).toBe('Your password has been updated');

      // The flood: every GET of /auth by a signed-in browser writes an authorization code.
      const attacker = new FormClient(t.url);
      await codeLogin(attacker, 'mallory');
      const early = await attacker.get(`${R}/protocol/openid-connect/auth?${authQuery()}`);
      const earlyCode = new URL(early.location!).searchParams.get('code')!;
      await inBatches(600, async () => void expect((await attacker.get(`${R}/protocol/openid-connect/auth?${authQuery()}`)).status).toBe(302));
      // It did evict (the first code of the flood is gone)…
      expect((await tokenRequest(t.url, REALM, { grant_type: 'authorization_code', client_id: 'web', code: earlyCode, redirect_uri: callback, code_verifier: 'x'.repeat(43) })).body.error_description).toBe('Code not valid');
      expect(store.size).toBeLessThan(600);
      // …but the link is still used: neither its page nor its form works again.
      const replay = new FormClient(t.url);
      const again = await replay.get(link);
      expect(textOf(again.text, 'error-text')).toMatch(/expired or has already been used/);
      const reused = await replay.post(`${R}/login-actions/reset-password`, { 'password-new': 'Attacker-pass-1', 'password-confirm': 'Attacker-pass-1', session_code: key });
      expect(textOf(reused.text, 'error-text')).toMatch(/expired or has already been used/);
      expect((await tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'admin-cli', username: 'rita', password: 'Attacker-pass-1' })).status).toBe(400);
    } finally {
      store.maxKeys = original;
    }
  });
});
