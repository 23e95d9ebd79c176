import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { FormClient, inputValue, pkce } from './support/forms.js';
import { adminToken, api, startServer, startServerPair, tokenRequest, type TestServer, errorText } from './support/server.js';

/**
 * Issue 17, point 1: brute-force detection as Keycloak 26, once in the sign-in core, for the form login and the
 * password grant; its state in the shared store (memory, or Redis shared by two servers); the attack-detection
 * admin API; the per-address limit on top.
 */

const PASSWORD = 'Brute-force-password-9';
const WRONG = 'not-the-password';
const callback = 'http://127.0.0.1:9/cb';

interface Realmed {
  t: TestServer;
  token: string;
  realm: string;
}

/** A realm with events on, a public client with the password grant, and the given brute-force settings. */
async function newRealm(t: TestServer, token: string, settings: Record<string, unknown>): Promise<Realmed> {
  const realm = `bf-${randomUUID().slice(0, 8)}`;
  const ok = (response: { status: number; body: unknown }) => expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
  ok(await api(t.url, 'POST', '/admin/realms', token, { realm, enabled: true, eventsEnabled: true, ...settings }));
  ok(await api(t.url, 'POST', `/admin/realms/${realm}/clients`, token, { clientId: 'web', publicClient: true, directAccessGrantsEnabled: true, redirectUris: [callback] }));
  return { t, token, realm };
}

async function newUser({ t, token, realm }: Realmed, username = `u${randomUUID().slice(0, 8)}`): Promise<{ id: string; username: string }> {
  const created = await api(t.url, 'POST', `/admin/realms/${realm}/users`, token, { username, enabled: true, credentials: [{ type: 'password', value: PASSWORD }] });
  expect(created.status).toBe(201);
  return { id: created.headers.get('location')!.split('/').pop()!, username };
}

const grant = ({ t, realm }: Realmed, username: string, password: string, url = t.url) =>
  tokenRequest(url, realm, { grant_type: 'password', client_id: 'web', username, password });

async function formLogin({ t, realm }: Realmed, username: string, password: string) {
  const client = new FormClient(t.url);
  const query = new URLSearchParams({ client_id: 'web', redirect_uri: callback, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256' });
  const page = await client.get(`/realms/${realm}/protocol/openid-connect/auth?${query}`);
  expect(page.status).toBe(200);
  return client.post(`/realms/${realm}/login-actions/authenticate`, { username, password, session_code: inputValue(page.text, 'session_code')! });
}

const status = ({ t, token, realm }: Realmed, id: string, url = t.url) => api(url, 'GET', `/admin/realms/${realm}/attack-detection/brute-force/users/${id}`, token);

const loginErrors = async ({ t, token, realm }: Realmed, userId: string): Promise<string[]> => {
  const events = (await api(t.url, 'GET', `/admin/realms/${realm}/events?type=LOGIN_ERROR&max=1000`, token)).body as { userId?: string; error: string }[];
  return events.filter((e) => e.userId === userId).map((e) => e.error);
};

/** Moves the clock `ms` ahead (Date only: the server's timers and the shared store's TTLs keep real time). */
function advanceClock(ms: number): void {
  const target = Date.now() + ms;
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(target);
}

const lockAt3 = { bruteForceProtected: true, failureFactor: 3, waitIncrementSeconds: 60, quickLoginCheckMilliSeconds: 0 };

describe('one server, state in memory', () => {
  let t: TestServer;
  let token: string;

  beforeAll(async () => {
    t = await startServer({ config: { REALMGATE_BRUTE_FORCE_IP_MAX_FAILURES: '100000' } });
  });
  afterAll(() => t?.close());
  // A fresh administrator token for each test, so one that expired while the clock was moved never gets in the way.
  beforeEach(async () => {
    token = await adminToken(t.url);
  });
  afterEach(() => void vi.useRealTimers());

  it('realm fields have Keycloak 26 defaults, are validated, and are stored', async () => {
    const r = await newRealm(t, token, {});
    const rep = (await api(t.url, 'GET', `/admin/realms/${r.realm}`, token)).body;
    expect(rep).toMatchObject({
      bruteForceProtected: false, permanentLockout: false, maxTemporaryLockouts: 0, bruteForceStrategy: 'MULTIPLE', failureFactor: 30,
      waitIncrementSeconds: 60, maxFailureWaitSeconds: 900, maxDeltaTimeSeconds: 43200, quickLoginCheckMilliSeconds: 1000, minimumQuickLoginWaitSeconds: 60,
    });
    expect(rep.attributes).toEqual({});
    expect(errorText((await api(t.url, 'PUT', `/admin/realms/${r.realm}`, token, { bruteForceStrategy: 'EXPONENTIAL' })).body)).toContain('bruteForceStrategy');
    expect((await api(t.url, 'PUT', `/admin/realms/${r.realm}`, token, { failureFactor: 0 })).status).toBe(400);
    expect((await api(t.url, 'PUT', `/admin/realms/${r.realm}`, token, { waitIncrementSeconds: 'x' })).status).toBe(400);
    expect((await api(t.url, 'PUT', `/admin/realms/${r.realm}`, token, { bruteForceProtected: true, bruteForceStrategy: 'LINEAR', failureFactor: 5, attributes: { a: 'b' } })).status).toBe(204);
    const after = (await api(t.url, 'GET', `/admin/realms/${r.realm}`, token)).body;
    expect(after).toMatchObject({ bruteForceProtected: true, bruteForceStrategy: 'LINEAR', failureFactor: 5, waitIncrementSeconds: 60, attributes: { a: 'b' } });
  });

  it('without bruteForceProtected nothing is counted', async () => {
    const r = await newRealm(t, token, {});
    const user = await newUser(r);
    for (let i = 0; i < 4; i++) expect((await grant(r, user.username, WRONG)).status).toBe(400);
    expect((await grant(r, user.username, PASSWORD)).status).toBe(200);
    expect((await status(r, user.id)).body).toEqual({ numFailures: 0, numTemporaryLockouts: 0, numSecondaryAuthFailures: 0, disabled: false, lastIPFailure: 'n/a', lastFailure: 0, failedLoginNotBefore: 0 });
  });

  it('locks a user after failureFactor failures across both entry points; a locked user is told what a wrong password is told', async () => {
    const r = await newRealm(t, token, lockAt3);
    const user = await newUser(r);
    expect((await grant(r, user.username, WRONG)).status).toBe(400);
    expect((await formLogin(r, user.username, WRONG)).status).toBe(401);
    const wrong = await grant(r, user.username, WRONG);
    expect(wrong).toEqual({ status: 400, body: { error: 'invalid_grant', error_description: 'Invalid user credentials' } });
    // Locked: the right password gets the very answer a wrong one gets, at both doors.
    expect(await grant(r, user.username, PASSWORD)).toEqual(wrong);
    const page = await formLogin(r, user.username, PASSWORD);
    expect(page.status).toBe(401);
    expect(page.text).toContain('Invalid username or password.');
    const s = (await status(r, user.id)).body;
    // numTemporaryLockouts counts toward maxTemporaryLockouts, so only with permanentLockout on (off here).
    expect(s).toMatchObject({ numFailures: 3, numTemporaryLockouts: 0, disabled: true, lastIPFailure: '127.0.0.1' });
    expect(Math.abs(s.lastFailure - Date.now())).toBeLessThan(60_000);
    // Keycloak's failedLoginNotBefore: the lockout's end, in seconds, after now.
    expect(s.failedLoginNotBefore).toBeGreaterThan(Math.floor(Date.now() / 1000));
    expect(await loginErrors(r, user.id)).toEqual(['user_temporarily_disabled', 'user_temporarily_disabled', 'invalid_user_credentials', 'invalid_user_credentials', 'invalid_user_credentials']);
    // Attempts while locked are not counted.
    expect((await status(r, user.id)).body.numFailures).toBe(3);
    // Another user of the realm is not affected.
    const other = await newUser(r);
    expect((await grant(r, other.username, PASSWORD)).status).toBe(200);
  });

  it('a temporary lockout ends after waitIncrementSeconds (fake time); MULTIPLE locks again at the next multiple, for twice as long', async () => {
    const r = await newRealm(t, token, lockAt3);
    const user = await newUser(r);
    for (let i = 0; i < 3; i++) await grant(r, user.username, WRONG);
    expect((await grant(r, user.username, PASSWORD)).status).toBe(400);
    advanceClock(59_000);
    expect((await grant(r, user.username, PASSWORD)).status).toBe(400);
    advanceClock(2_000);
    expect((await status(r, user.id)).body).toMatchObject({ numFailures: 3, disabled: false });
    // Failures 4 and 5 do not lock (MULTIPLE); the 6th does, for 2 × 60 s.
    for (let i = 0; i < 2; i++) await grant(r, user.username, WRONG);
    expect((await status(r, user.id)).body).toMatchObject({ numFailures: 5, disabled: false });
    await grant(r, user.username, WRONG);
    advanceClock(61_000);
    expect((await grant(r, user.username, PASSWORD)).status).toBe(400);
    advanceClock(60_000);
    // Open again; a success forgets the failures.
    expect((await grant(r, user.username, PASSWORD)).status).toBe(200);
    expect((await status(r, user.id)).body).toEqual({ numFailures: 0, numTemporaryLockouts: 0, numSecondaryAuthFailures: 0, disabled: false, lastIPFailure: 'n/a', lastFailure: 0, failedLoginNotBefore: 0 });
  });

  it('LINEAR locks at every failure from failureFactor on, one increment longer each time, capped by maxFailureWaitSeconds', async () => {
    const r = await newRealm(t, token, { ...lockAt3, bruteForceStrategy: 'LINEAR', maxFailureWaitSeconds: 90 });
    const user = await newUser(r);
    for (let i = 0; i < 3; i++) await grant(r, user.username, WRONG);
    advanceClock(61_000);
    await grant(r, user.username, WRONG); // 4th: 2 × 60 s, capped to 90 s
    advanceClock(89_000);
    expect((await status(r, user.id)).body.disabled).toBe(true);
    advanceClock(2_000);
    expect((await grant(r, user.username, PASSWORD)).status).toBe(200);
  });

  it('failures are forgotten maxDeltaTimeSeconds after the last one', async () => {
    const r = await newRealm(t, token, { ...lockAt3, maxDeltaTimeSeconds: 600 });
    const user = await newUser(r);
    for (let i = 0; i < 2; i++) await grant(r, user.username, WRONG);
    advanceClock(601_000);
    // The administrator's token from before has expired by this clock.
    const later = { ...r, token: await adminToken(t.url) };
    expect((await status(later, user.id)).body.numFailures).toBe(0);
    await grant(r, user.username, WRONG);
    expect((await status(later, user.id)).body).toMatchObject({ numFailures: 1, disabled: false });
  });

  it('the quick-login check: two failures closer than quickLoginCheckMilliSeconds lock for minimumQuickLoginWaitSeconds', async () => {
    const r = await newRealm(t, token, { bruteForceProtected: true, quickLoginCheckMilliSeconds: 10_000, minimumQuickLoginWaitSeconds: 60 });
    const user = await newUser(r);
    await grant(r, user.username, WRONG);
    expect((await status(r, user.id)).body.disabled).toBe(false);
    await grant(r, user.username, WRONG);
    expect((await status(r, user.id)).body).toMatchObject({ numFailures: 2, disabled: true });
    expect((await grant(r, user.username, PASSWORD)).status).toBe(400);
    expect(await loginErrors(r, user.id)).toContain('user_temporarily_disabled');
    advanceClock(61_000);
    expect((await grant(r, user.username, PASSWORD)).status).toBe(200);
  });

  it('permanent lockout disables the user; it stays locked after an unlock until an administrator enables it', async () => {
    const r = await newRealm(t, token, { ...lockAt3, permanentLockout: true });
    const user = await newUser(r);
    for (let i = 0; i < 3; i++) await grant(r, user.username, WRONG);
    expect((await api(t.url, 'GET', `/admin/realms/${r.realm}/users/${user.id}`, token)).body.enabled).toBe(false);
    expect((await status(r, user.id)).body).toMatchObject({ numFailures: 3, disabled: true });
    // Told what a wrong password is told; recorded as Keycloak records it.
    expect(await grant(r, user.username, PASSWORD)).toEqual({ status: 400, body: { error: 'invalid_grant', error_description: 'Invalid user credentials' } });
    expect((await formLogin(r, user.username, PASSWORD)).status).toBe(401);
    expect((await loginErrors(r, user.id))[0]).toBe('user_disabled');
    advanceClock(3600_000);
    expect((await grant(r, user.username, PASSWORD)).status).toBe(400);
    vi.useRealTimers();
    // Clearing the failures does not enable the user; enabling it does.
    expect((await api(t.url, 'DELETE', `/admin/realms/${r.realm}/attack-detection/brute-force/users/${user.id}`, token)).status).toBe(204);
    expect((await grant(r, user.username, PASSWORD)).status).toBe(400);
    expect((await api(t.url, 'PUT', `/admin/realms/${r.realm}/users/${user.id}`, token, { enabled: true })).status).toBe(204);
    expect((await grant(r, user.username, PASSWORD)).status).toBe(200);
  });

  it('permanent lockout after maxTemporaryLockouts temporary ones', async () => {
    const r = await newRealm(t, token, { ...lockAt3, permanentLockout: true, maxTemporaryLockouts: 1 });
    const user = await newUser(r);
    for (let i = 0; i < 3; i++) await grant(r, user.username, WRONG);
    expect((await api(t.url, 'GET', `/admin/realms/${r.realm}/users/${user.id}`, token)).body.enabled).toBe(true);
    advanceClock(61_000);
    for (let i = 0; i < 3; i++) await grant(r, user.username, WRONG);
    vi.useRealTimers();
    expect((await api(t.url, 'GET', `/admin/realms/${r.realm}/users/${user.id}`, token)).body.enabled).toBe(false);
  });

  it('an administrator unlocks one user, or every user of the realm', async () => {
    const r = await newRealm(t, token, lockAt3);
    const [a, b] = [await newUser(r), await newUser(r)];
    for (const u of [a, b]) for (let i = 0; i < 3; i++) await grant(r, u.username, WRONG);
    expect((await api(t.url, 'DELETE', `/admin/realms/${r.realm}/attack-detection/brute-force/users/${a.id}`, token)).status).toBe(204);
    expect((await grant(r, a.username, PASSWORD)).status).toBe(200);
    expect((await grant(r, b.username, PASSWORD)).status).toBe(400);
    for (let i = 0; i < 3; i++) await grant(r, a.username, WRONG);
    expect((await api(t.url, 'DELETE', `/admin/realms/${r.realm}/attack-detection/brute-force/users`, token)).status).toBe(204);
    for (const u of [a, b]) {
      expect((await status(r, u.id)).body).toEqual({ numFailures: 0, numTemporaryLockouts: 0, numSecondaryAuthFailures: 0, disabled: false, lastIPFailure: 'n/a', lastFailure: 0, failedLoginNotBefore: 0 });
      expect((await grant(r, u.username, PASSWORD)).status).toBe(200);
    }
    // An unknown or malformed id names nothing.
    expect((await status(r, randomUUID())).status).toBe(404);
    expect((await status(r, 'nope')).status).toBe(404);
    expect((await api(t.url, 'DELETE', `/admin/realms/${r.realm}/attack-detection/brute-force/users/${randomUUID()}`, token)).status).toBe(404);
  });

  it('the attack-detection API needs view-users to read and manage-users to clear', async () => {
    const r = await newRealm(t, token, lockAt3);
    const target = await newUser(r);
    const admin = await newUser(r, `viewer-${randomUUID().slice(0, 6)}`);
    const rm = (await api(t.url, 'GET', `/admin/realms/${r.realm}/clients?clientId=realm-management`, token)).body[0];
    const viewUsers = (await api(t.url, 'GET', `/admin/realms/${r.realm}/clients/${rm.id}/roles/view-users`, token)).body;
    expect((await api(t.url, 'POST', `/admin/realms/${r.realm}/users/${admin.id}/role-mappings/clients/${rm.id}`, token, [viewUsers])).status).toBe(204);
    const viewer = (await grant(r, admin.username, PASSWORD)).body.access_token as string;
    expect((await api(t.url, 'GET', `/admin/realms/${r.realm}/attack-detection/brute-force/users/${target.id}`, viewer)).status).toBe(200);
    expect((await api(t.url, 'DELETE', `/admin/realms/${r.realm}/attack-detection/brute-force/users/${target.id}`, viewer)).status).toBe(403);
    expect((await api(t.url, 'DELETE', `/admin/realms/${r.realm}/attack-detection/brute-force/users`, viewer)).status).toBe(403);
    expect((await api(t.url, 'GET', `/admin/realms/${r.realm}/attack-detection/brute-force/users/${target.id}`, null)).status).toBe(401);
  });

  it('50 concurrent wrong passwords are all counted (memory store)', async () => {
    const r = await newRealm(t, token, { bruteForceProtected: true, failureFactor: 1000, quickLoginCheckMilliSeconds: 0 });
    const user = await newUser(r);
    const answers = await Promise.all(Array.from({ length: 50 }, () => grant(r, user.username, WRONG)));
    expect(answers.every((a) => a.status === 400)).toBe(true);
    expect((await status(r, user.id)).body.numFailures).toBe(50);
  });
});

describe('the per-address limit', () => {
  let t: TestServer;
  let token: string;

  beforeAll(async () => {
    t = await startServer({ config: { REALMGATE_BRUTE_FORCE_IP_MAX_FAILURES: '5', REALMGATE_BRUTE_FORCE_IP_WINDOW_SECONDS: '600' } });
    token = await adminToken(t.url);
  });
  afterAll(() => t?.close());

  it('refuses every login from an address that failed too often, whatever the account, in an unprotected realm too', async () => {
    const r = await newRealm(t, token, {});
    const good = await newUser(r);
    // A spray: one guess each at five accounts, unknown ones included.
    for (let i = 0; i < 5; i++) expect((await grant(r, `victim-${i}`, WRONG)).status).toBe(400);
    const refused = await fetch(`${t.url}/realms/${r.realm}/protocol/openid-connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'password', client_id: 'web', username: good.username, password: PASSWORD }),
    });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('600');
    expect(((await refused.json()) as { error: string }).error).toBe('invalid_grant');
    expect((await formLogin(r, good.username, PASSWORD)).status).toBe(429);
    // The master realm's administrator from the same address too: the limit is the server's.
    expect((await tokenRequest(t.url, 'master', { grant_type: 'password', client_id: 'admin-cli', username: 'admin', password: 'x' })).status).toBe(429);
    const events = (await api(t.url, 'GET', `/admin/realms/${r.realm}/events?type=LOGIN_ERROR&max=100`, token)).body as { error: string }[];
    expect(events.filter((e) => e.error === 'ip_temporarily_blocked')).toHaveLength(2);
  });
});

describe('two servers on one Redis and one PostgreSQL', () => {
  let a: TestServer;
  let b: TestServer;
  let pair: Awaited<ReturnType<typeof startServerPair>> | undefined;
  let token: string;

  beforeAll(async () => {
    pair = await startServerPair();
    ({ a, b } = pair);
    token = await adminToken(a.url);
  });
  afterAll(async () => {
    await pair?.close();
  });

  it('share the count: failures on either lock the user on both, and an unlock on one is seen by the other', async () => {
    const r = await newRealm(a, token, lockAt3);
    const user = await newUser(r);
    expect((await grant(r, user.username, WRONG, a.url)).status).toBe(400);
    expect((await grant(r, user.username, WRONG, b.url)).status).toBe(400);
    expect((await grant(r, user.username, WRONG, a.url)).status).toBe(400);
    expect((await grant(r, user.username, PASSWORD, b.url)).status).toBe(400);
    expect((await status(r, user.id, b.url)).body).toMatchObject({ numFailures: 3, disabled: true });
    expect((await api(b.url, 'DELETE', `/admin/realms/${r.realm}/attack-detection/brute-force/users/${user.id}`, token)).status).toBe(204);
    expect((await grant(r, user.username, PASSWORD, a.url)).status).toBe(200);
  });

  it('50 concurrent wrong passwords spread over both servers are all counted (Redis)', async () => {
    const r = await newRealm(a, token, { bruteForceProtected: true, failureFactor: 1000, quickLoginCheckMilliSeconds: 0 });
    const user = await newUser(r);
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => grant(r, user.username, WRONG, i % 2 ? a.url : b.url)));
    expect(answers.every((x) => x.status === 400)).toBe(true);
    expect((await status(r, user.id)).body.numFailures).toBe(50);
  });
});
