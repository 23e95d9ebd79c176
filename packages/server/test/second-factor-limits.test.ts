import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FormClient, inputValue, textOf } from './support/forms.js';
import { eventErrors, newOtpRealm, newOtpUser, ok, OTP_USER_PASSWORD, passwordGrant, passwordStep, withOtp, type Realmed } from './support/otp-users.js';
import { adminToken, api, startServer, startServerPair, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 33, finding 3 and part of 7: a second factor (the OTP code, through the browser's step and the password
 * grant's `totp`) cannot be guessed without limit once the password is known; the account page's current-password
 * check is limited as a login is; an e-mail address is looked up as Keycloak does. The numbers are the README's
 * "Second-factor limits": a step's key takes 5 codes, a user 10 wrong proofs in 12 hours.
 */

const STEP_ATTEMPTS = 5;
const USER_CAP = 10;
const INVALID_CODE = 'Invalid one-time code.';

describe('one server (sqlite, memory store)', () => {
  let t: TestServer;
  let token: string;

  beforeAll(async () => {
    t = await startServer({ config: { REALMGATE_BRUTE_FORCE_IP_MAX_FAILURES: '100000' } });
    token = await adminToken(t.url);
  });
  afterAll(async () => {
    await t?.close();
  });

  it("the OTP step's key takes 5 codes, then the sign-in must start again; after 10 wrong codes the right one no longer signs in", async () => {
    const r = await newOtpRealm(t, token);
    const user = await newOtpUser(r);
    const app = await withOtp(r, user);

    // One key: four wrong codes are answered on the OTP page, the fifth sends the user back to the sign-in page.
    const first = await passwordStep(r, user.username);
    for (let i = 1; i < STEP_ATTEMPTS; i++) {
      const wrong = await first.post('login-otp', { otp: app.wrongCode() });
      expect(wrong.status).toBe(401);
      expect(textOf(wrong.text, 'input-error-otp')).toBe(INVALID_CODE);
    }
    const last = await first.post('login-otp', { otp: app.wrongCode() });
    expect(last.status).toBe(401);
    expect(textOf(last.text, 'page-message')).toMatch(/Too many wrong codes/);
    expect(textOf(last.text, 'page-title')).toContain('Sign in');
    // The dead key takes nothing more, the right code included.
    const dead = await first.post('login-otp', { otp: app.codes.next() });
    expect(dead.status).toBe(400);
    expect(textOf(dead.text, 'page-message')).toContain('expired');

    // An attacker who knows the password starts again and again: 50 wrong codes in all.
    let step = await passwordStep(r, user.username);
    let onKey = 0;
    for (let i = STEP_ATTEMPTS; i < 50; i++) {
      if (onKey === STEP_ATTEMPTS) {
        step = await passwordStep(r, user.username);
        expect(textOf(step.page.text, 'page-title')).toContain('one-time code');
        onKey = 0;
      }
      expect((await step.post('login-otp', { otp: app.wrongCode() })).status).toBe(401);
      onKey++;
    }
    // The right code on a fresh key: refused as a wrong code, since the user's cap is reached.
    const fresh = await passwordStep(r, user.username);
    const refused = await fresh.post('login-otp', { otp: app.codes.next() });
    expect(refused.status).toBe(401);
    expect(textOf(refused.text, 'input-error-otp')).toBe(INVALID_CODE);
    // Ten codes were checked; the others were refused unchecked.
    const errors = await eventErrors(r, user.id);
    expect(errors.filter((e) => e === 'invalid_user_credentials')).toHaveLength(USER_CAP);
    expect(errors.filter((e) => e === 'user_temporarily_disabled')).toHaveLength(50 - USER_CAP + 1);

    // An administrator's unlock (attack detection) clears the cap.
    ok(await api(t.url, 'DELETE', `/admin/realms/${r.realm}/attack-detection/brute-force/users/${user.id}`, token));
    expect((await (await passwordStep(r, user.username)).post('login-otp', { otp: app.codes.next() })).status).toBe(302);
  });

  it("the password grant's totp: 50 wrong codes, then the right one is refused as Keycloak refuses a wrong one", async () => {
    const r = await newOtpRealm(t, token);
    const user = await newOtpUser(r);
    const app = await withOtp(r, user);
    for (let i = 0; i < 50; i++) {
      expect(await passwordGrant(r, user.username, { totp: app.wrongCode() })).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: 'Invalid user credentials' } });
    }
    expect(await passwordGrant(r, user.username, { totp: app.codes.next() })).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: 'Invalid user credentials' } });
    expect((await eventErrors(r, user.id)).filter((e) => e === 'invalid_user_credentials')).toHaveLength(USER_CAP);
  });

  it('a right code does not reset the cap; it slides: 12 hours after the tenth wrong code, the right one signs in (fake Date)', async () => {
    const r = await newOtpRealm(t, token);
    const user = await newOtpUser(r);
    const app = await withOtp(r, user);
    for (let i = 0; i < USER_CAP - 1; i++) expect((await passwordGrant(r, user.username, { totp: app.wrongCode() })).status).toBe(400);
    expect((await passwordGrant(r, user.username, { totp: app.codes.next() })).status).toBe(200);
    expect((await passwordGrant(r, user.username, { totp: app.wrongCode() })).status).toBe(400);
    expect((await passwordGrant(r, user.username, { totp: app.codes.next() })).status).toBe(400);
    try {
      // Date only: the server's timers and the store's TTLs keep real time; the cap reads its window by Date.
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(Date.now() + 12 * 3600_000 - 60_000);
      expect((await passwordGrant(r, user.username, { totp: app.codes.next() })).status).toBe(400);
      vi.setSystemTime(Date.now() + 61_000);
      expect((await passwordGrant(r, user.username, { totp: app.codes.next() })).status).toBe(200);
    } finally {
      vi.useRealTimers();
    }
  });

  it('concurrent wrong codes: exactly 10 are checked, whatever the burst', async () => {
    const r = await newOtpRealm(t, token);
    const user = await newOtpUser(r);
    const app = await withOtp(r, user);
    const answers = await Promise.all(Array.from({ length: 30 }, () => passwordGrant(r, user.username, { totp: app.wrongCode() })));
    expect(answers.every((a) => a.status === 400)).toBe(true);
    expect((await eventErrors(r, user.id)).filter((e) => e === 'invalid_user_credentials')).toHaveLength(USER_CAP);
  });

  it('with brute-force detection on, wrong codes count with wrong passwords in the attack-detection API, as Keycloak', async () => {
    const r = await newOtpRealm(t, token, { bruteForceProtected: true, failureFactor: 30, quickLoginCheckMilliSeconds: 0 });
    const user = await newOtpUser(r);
    const app = await withOtp(r, user);
    const step = await passwordStep(r, user.username);
    for (let i = 0; i < 3; i++) expect((await step.post('login-otp', { otp: app.wrongCode() })).status).toBe(401);
    for (let i = 0; i < 2; i++) expect((await passwordGrant(r, user.username, { totp: app.wrongCode() })).status).toBe(400);
    expect((await passwordGrant(r, user.username, { password: 'not-the-password' })).status).toBe(400);
    const status = (await api(t.url, 'GET', `/admin/realms/${r.realm}/attack-detection/brute-force/users/${user.id}`, token)).body;
    expect(status).toMatchObject({ numFailures: 6, numSecondaryAuthFailures: 5, disabled: false, lastIPFailure: '127.0.0.1' });
  });

  it("a username that is another user's e-mail address does not capture that user's sign-in by e-mail", async () => {
    const r = await newOtpRealm(t, token, { loginWithEmailAllowed: true });
    const owner = await newOtpUser(r, { email: `owner-${r.realm}@example.com` });
    const ownerEmail = `owner-${r.realm}@example.com`;
    const squatter = await api(t.url, 'POST', `/admin/realms/${r.realm}/users`, token, { username: ownerEmail, enabled: true, credentials: [{ type: 'password', value: 'Squatter-password-1' }] });
    expect(squatter.status, JSON.stringify(squatter.body)).toBe(201);
    const squatterId = squatter.headers.get('location')!.split('/').pop()!;

    // Keycloak looks an input with '@' up as an e-mail address first: the owner signs in with their address.
    const tokens = await passwordGrant(r, ownerEmail);
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    const claims = JSON.parse(Buffer.from((tokens.body.access_token as string).split('.')[1], 'base64url').toString());
    expect(claims.sub).toBe(owner.id);
    expect((await passwordGrant(r, ownerEmail, { password: 'Squatter-password-1' })).status).toBe(400);
    const form = await passwordStep(r, ownerEmail);
    expect(form.page.status).toBe(302);
    expect((await eventErrors(r, squatterId)).length).toBe(0);
    // Without login by e-mail, the name is only a username.
    ok(await api(t.url, 'PUT', `/admin/realms/${r.realm}`, token, { loginWithEmailAllowed: false }));
    expect((await passwordGrant(r, ownerEmail)).status).toBe(400);
    expect((await passwordGrant(r, ownerEmail, { password: 'Squatter-password-1' })).status).toBe(200);
  });

  it("the account page's current-password check is refused after 10 wrong ones, the right one included", async () => {
    const r = await newOtpRealm(t, token);
    const user = await newOtpUser(r);
    const client = new FormClient(t.url);
    const login = await client.get(`/realms/${r.realm}/account/profile`);
    const done = await client.post(`/realms/${r.realm}/login-actions/authenticate`, { username: user.username, password: OTP_USER_PASSWORD, session_code: inputValue(login.text, 'session_code')! });
    expect(done.status).toBe(302);
    const csrf = inputValue((await client.get(done.location!)).text, 'session_code')!;
    const change = (password: string) => client.post(`/realms/${r.realm}/account/password`, { password, 'password-new': 'Changed-password-1', 'password-confirm': 'Changed-password-1', session_code: csrf });
    for (let i = 0; i < USER_CAP; i++) {
      const wrong = await change(`wrong-${i}`);
      expect(wrong.status).toBe(400);
      expect(textOf(wrong.text, 'input-error-password')).toBe('Invalid existing password.');
    }
    const limited = await change(OTP_USER_PASSWORD);
    expect(limited.status).toBe(429);
    expect(textOf(limited.text, 'page-message')).toMatch(/Too many failed attempts/);
    // The password is unchanged.
    expect((await passwordGrant(r, user.username)).status).toBe(200);
    expect((await eventErrors(r, user.id, 'UPDATE_PASSWORD_ERROR')).filter((e) => e === 'invalid_user_credentials')).toHaveLength(USER_CAP);
  });
});

describe('the per-address limit', () => {
  let t: TestServer;
  let token: string;

  beforeAll(async () => {
    t = await startServer({ config: { REALMGATE_BRUTE_FORCE_IP_MAX_FAILURES: '5', REALMGATE_BRUTE_FORCE_IP_WINDOW_SECONDS: '600' } });
    token = await adminToken(t.url);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('counts wrong codes: after five, every sign-in from the address is refused (429)', async () => {
    const r = await newOtpRealm(t, token);
    const user = await newOtpUser(r);
    const app = await withOtp(r, user);
    const step = await passwordStep(r, user.username);
    for (let i = 0; i < 3; i++) expect((await step.post('login-otp', { otp: app.wrongCode() })).status).toBe(401);
    for (let i = 0; i < 2; i++) expect((await passwordGrant(r, user.username, { totp: app.wrongCode() })).status).toBe(400);
    const blocked = await passwordGrant(r, user.username, { totp: app.codes.next() });
    expect(blocked).toMatchObject({ status: 429, body: { error: 'invalid_grant' } });
    // The OTP page too: the address is told, with the form.
    const onPage = await step.post('login-otp', { otp: app.codes.next() });
    expect(onPage.status).toBe(429);
    expect(textOf(onPage.text, 'page-message')).toMatch(/Too many failed sign-ins/);
    expect((await tokenRequest(t.url, 'master', { grant_type: 'password', client_id: 'admin-cli', username: 'admin', password: 'x' })).status).toBe(429);
  });
});

describe('two servers on one Redis and one PostgreSQL', () => {
  let pair: Awaited<ReturnType<typeof startServerPair>> | undefined;
  let a: TestServer;
  let b: TestServer;
  let token: string;

  beforeAll(async () => {
    pair = await startServerPair();
    ({ a, b } = pair);
    token = await adminToken(a.url);
  });
  afterAll(async () => {
    await pair?.close();
  });

  it("wrong codes on either server count on both: after 10, the right code is refused on each", async () => {
    const r: Realmed = await newOtpRealm(a, token);
    const user = await newOtpUser(r);
    const app = await withOtp(r, user);
    for (let i = 0; i < USER_CAP; i++) expect((await passwordGrant(r, user.username, { totp: app.wrongCode() }, i % 2 ? a.url : b.url)).status).toBe(400);
    expect((await passwordGrant(r, user.username, { totp: app.codes.next() }, a.url)).status).toBe(400);
    expect((await passwordGrant(r, user.username, { totp: app.codes.next() }, b.url)).status).toBe(400);
    // Cleared on one, cleared on both.
    ok(await api(b.url, 'DELETE', `/admin/realms/${r.realm}/attack-detection/brute-force/users/${user.id}`, token));
    expect((await passwordGrant(r, user.username, { totp: app.codes.next() }, a.url)).status).toBe(200);
  });
});
