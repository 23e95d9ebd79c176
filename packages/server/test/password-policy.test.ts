import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashNeedsUpgrade, hashPassword, passwordHashCost, verifyPassword } from '../src/credentials/index.js';
import { checkPassword, parsePasswordPolicy } from '../src/credentials/password-policy.js';
import { FormClient, inputValue, pkce, textOf } from './support/forms.js';
import { adminToken, api, httpDatabases, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 17, point 2: the realm's password policy in Keycloak's syntax, refused on PUT when a rule is unknown or
 * malformed, checked wherever a password is set (registration, reset, account page, admin API, realm import),
 * hashIterations applied at the next login, and 10,000-character passwords refused without a 5xx.
 */

describe('parsing a policy', () => {
  it("reads Keycloak's syntax, with Keycloak's value for a rule given without one", () => {
    expect(parsePasswordPolicy('length(12) and upperCase(2) and lowerCase and digits(1) and specialChars(1) and notUsername(undefined) and notEmail and passwordHistory(4) and maxLength and hashAlgorithm(argon2) and hashIterations(3)')).toEqual({
      ok: true,
      policy: { length: 12, upperCase: 2, lowerCase: 1, digits: 1, specialChars: 1, notUsername: true, notEmail: true, passwordHistory: 4, maxLength: 64, hashAlgorithm: 'argon2', hashIterations: 3 },
    });
    expect(parsePasswordPolicy('')).toEqual({ ok: true, policy: {} });
    expect(parsePasswordPolicy('length')).toEqual({ ok: true, policy: { length: 8 } });
    expect(parsePasswordPolicy('forceExpiredPasswordChange(90) and passwordHistory')).toEqual({ ok: true, policy: { forceExpiredPasswordChange: 90, passwordHistory: 3 } });
  });

  it.each([
    ['lenght(8)', 'lenght(8)', /not a known password policy rule/],
    ['length(8) and nope', 'nope', /not a known/],
    ['length(abc)', 'length(abc)', /whole number from 1 to 1024/],
    ['length(-1)', 'length(-1)', /whole number/],
    ['length(0)', 'length(0)', /whole number/],
    ['length(99999999999)', 'length(99999999999)', /whole number/],
    ['length(8', 'length(8', /not a rule of the form/],
    ['length(8) and', 'length(8) and', /not a rule of the form/],
    ['length(8) and length(9)', 'length(9)', /given twice/],
    ['hashAlgorithm(pbkdf2-sha256)', 'hashAlgorithm(pbkdf2-sha256)', /argon2 \(Argon2id\) only/],
    ['hashIterations(27500)', 'hashIterations(27500)', /from 1 to 20/],
    ['passwordHistory(1000)', 'passwordHistory(1000)', /from 1 to 24/],
    ['forceExpiredPasswordChange(0)', 'forceExpiredPasswordChange(0)', /whole number/],
    ['regexPattern(.*)', 'regexPattern(.*)', /not supported/],
    ['length(20) and maxLength(10)', 'length(20)', /more than maxLength\(10\)/],
    ['constructor(1)', 'constructor(1)', /not a known/],
    ['__proto__', '__proto__', /not a rule of the form|not a known/],
  ])('refuses %s, naming %s', (text, rule, message) => {
    const parsed = parsePasswordPolicy(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.rule).toBe(rule);
      expect(parsed.message).toMatch(message);
    }
  });
});

describe('checking a password', () => {
  const user = { username: 'rita', email: 'rita@example.com' };
  const policy = (text: string) => {
    const parsed = parsePasswordPolicy(text);
    if (!parsed.ok) throw new Error(parsed.message);
    return parsed.policy;
  };

  it.each([
    ['length(8)', 'invalidPasswordMinLengthMessage', ['8'], 'Short-1'],
    ['maxLength(10)', 'invalidPasswordMaxLengthMessage', ['10'], 'Much-too-long-1'],
    ['upperCase(2)', 'invalidPasswordMinUpperCaseCharsMessage', ['2'], 'One-upper'],
    ['lowerCase(1)', 'invalidPasswordMinLowerCaseCharsMessage', ['1'], 'NO-LOWER-1'],
    ['digits(2)', 'invalidPasswordMinDigitsMessage', ['2'], 'One-digit-1'],
    ['specialChars(2)', 'invalidPasswordMinSpecialCharsMessage', ['2'], 'One-special1'],
    ['notUsername', 'invalidPasswordNotUsernameMessage', [], 'RITA'],
    ['notEmail', 'invalidPasswordNotEmailMessage', [], 'Rita@Example.com'],
    ['(no policy)', 'invalidPasswordMaxLengthMessage', ['1024'], 'x'.repeat(10_000)],
    ['maxLength(1024)', 'invalidPasswordMaxLengthMessage', ['1024'], 'x'.repeat(1025)],
  ] as const)('%s refuses with %s', (text, key, params, password) => {
    expect(checkPassword(policy(text === '(no policy)' ? '' : text), password, user)).toEqual({ key, params });
  });

  it('accepts a password that keeps every rule; letters and digits of any script count, characters not code units', () => {
    const all = policy('length(8) and maxLength(12) and upperCase(1) and lowerCase(1) and digits(1) and specialChars(1) and notUsername and notEmail');
    expect(checkPassword(all, 'Good-pass-1', user)).toBeNull();
    expect(checkPassword(policy('length(3) and upperCase(1) and lowerCase(1) and digits(1)'), 'Éé٣', user)).toBeNull();
    expect(checkPassword(policy('maxLength(4)'), '😀😀😀😀', user)).toBeNull();
  });

  it('tells a stored hash made with other Argon2id parameters (or another algorithm) from a current one', async () => {
    const five = await hashPassword('pw');
    expect(hashNeedsUpgrade(five)).toBe(false);
    expect(hashNeedsUpgrade(five, passwordHashCost(2, false))).toBe(true);
    expect(hashNeedsUpgrade(await hashPassword('pw', passwordHashCost(2, false)), passwordHashCost(2, false))).toBe(false);
    expect(hashNeedsUpgrade('$pbkdf2-sha256$27500$abc$def')).toBe(true);
  });

  it('the test-only cost changes the memory of new hashes, not their iterations; hashes of either cost verify', async () => {
    const production = await hashPassword('pw', passwordHashCost(5, false));
    const test = await hashPassword('pw', passwordHashCost(5, true));
    expect(production).toMatch(/^\$argon2id\$v=19\$m=7168,t=5,p=1\$/);
    expect(test).toMatch(/^\$argon2id\$v=19\$m=8,t=5,p=1\$/);
    for (const stored of [production, test]) {
      expect(await verifyPassword('pw', stored, passwordHashCost(5, true))).toBe(true);
      expect(await verifyPassword('pw', stored, passwordHashCost(5, false))).toBe(true);
      expect(await verifyPassword('pwx', stored)).toBe(false);
    }
    // A sign-in rehashes at the cost in force, whichever way it changed.
    expect(hashNeedsUpgrade(production, passwordHashCost(5, true))).toBe(true);
    expect(hashNeedsUpgrade(test, passwordHashCost(5, false))).toBe(true);
    expect(hashNeedsUpgrade(test, passwordHashCost(5, true))).toBe(false);
  });
});

const REALM = 'policy';
const CALLBACK = 'http://127.0.0.1:9/cb';

describe.each(httpDatabases)('the password policy on the server (%s)', (database) => {
  let t: TestServer;
  let admin: string;
  let userId: string;
  const setPolicy = (passwordPolicy: string) => api(t.url, 'PUT', `/admin/realms/${REALM}`, admin, { passwordPolicy });
  const reset = (id: string, value: string) => api(t.url, 'PUT', `/admin/realms/${REALM}/users/${id}/reset-password`, admin, { type: 'password', value, temporary: false });
  const grant = (username: string, password: string) => tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'admin-cli', username, password });
  const storedHash = async (id: string) =>
    (await t.server.context.storage.db.selectFrom('user_entity').select('password_hash').where('id', '=', id).executeTakeFirstOrThrow()).password_hash!;

  beforeAll(async () => {
    // About hashing: the hashes' parameters are asserted, at Keycloak's cost.
    t = await startServer({ database, passwordHashing: 'production' });
    admin = await adminToken(t.url);
    expect((await api(t.url, 'POST', '/admin/realms', admin, { realm: REALM, enabled: true, registrationAllowed: true, resetPasswordAllowed: true })).status).toBe(201);
    expect((await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { clientId: 'web', publicClient: true, redirectUris: [CALLBACK] })).status).toBe(201);
    const created = await api(t.url, 'POST', `/admin/realms/${REALM}/users`, admin, { username: 'rita', email: 'rita@example.com', emailVerified: true, enabled: true, credentials: [{ type: 'password', value: 'Start-pass-1' }] });
    expect(created.status).toBe(201);
    userId = created.headers.get('location')!.split('/').pop()!;
  });
  afterAll(() => t?.close());

  it('PUT refuses an unknown or malformed rule with 400 naming it, and keeps the policy it had', async () => {
    expect((await setPolicy('length(10) and upperCase(1)')).status).toBe(204);
    for (const [policy, rule] of [
      ['length(10) and lenght(3)', 'lenght(3)'],
      ['length(ten)', 'length(ten)'],
      ['hashAlgorithm(pbkdf2-sha256)', 'hashAlgorithm(pbkdf2-sha256)'],
      ['regexPattern([a-z]+)', 'regexPattern([a-z]+)'],
    ]) {
      const refused = await setPolicy(policy);
      expect(refused.status).toBe(400);
      expect(refused.body.errorMessage).toContain('passwordPolicy');
      expect(refused.body.errorMessage).toContain(rule);
    }
    expect((await setPolicy(5 as unknown as string)).status).toBe(400);
    expect((await api(t.url, 'GET', `/admin/realms/${REALM}`, admin)).body.passwordPolicy).toBe('length(10) and upperCase(1)');
  });

  it("admin reset-password: 400 with Keycloak's message key and the rule's value; a good password is set", async () => {
    await setPolicy('length(10) and upperCase(1) and digits(1) and notUsername');
    const short = await reset(userId, 'Short-1');
    expect(short.status).toBe(400);
    expect(short.body).toMatchObject({ error: 'invalidPasswordMinLengthMessage', error_description: expect.stringContaining('10'), params: ['10'] });
    expect((await reset(userId, 'no-upper-case-1')).body.error).toBe('invalidPasswordMinUpperCaseCharsMessage');
    expect((await reset(userId, 'No-Digits-Here')).body.error).toBe('invalidPasswordMinDigitsMessage');
    expect((await grant('rita', 'Start-pass-1')).status).toBe(200);
    expect((await reset(userId, 'Second-pass-2')).status).toBe(204);
    expect((await grant('rita', 'Second-pass-2')).status).toBe(200);
  });

  it('admin user create and update with a credential the policy refuses: 400, nothing created or changed', async () => {
    await setPolicy('length(10) and notEmail');
    const created = await api(t.url, 'POST', `/admin/realms/${REALM}/users`, admin, { username: 'weak', enabled: true, credentials: [{ type: 'password', value: 'short' }] });
    expect(created.status).toBe(400);
    expect(created.body).toMatchObject({ error: 'invalidPasswordMinLengthMessage', errorMessage: 'Password policy not met' });
    expect((await api(t.url, 'GET', `/admin/realms/${REALM}/users?username=weak&exact=true`, admin)).body).toEqual([]);
    const updated = await api(t.url, 'PUT', `/admin/realms/${REALM}/users/${userId}`, admin, { credentials: [{ type: 'password', value: 'rita@example.com' }] });
    expect(updated.status).toBe(400);
    expect(updated.body.error).toBe('invalidPasswordNotEmailMessage');
    // The new address counts, and a refused password leaves the other fields of that PUT unwritten.
    const both = await api(t.url, 'PUT', `/admin/realms/${REALM}/users/${userId}`, admin, { firstName: 'Changed', email: 'new-rita@example.com', credentials: [{ type: 'password', value: 'NEW-RITA@example.com' }] });
    expect(both.body.error).toBe('invalidPasswordNotEmailMessage');
    const after = (await api(t.url, 'GET', `/admin/realms/${REALM}/users/${userId}`, admin)).body;
    expect(after.email).toBe('rita@example.com');
    expect(after.firstName).toBeUndefined();
    expect((await grant('rita', 'Second-pass-2')).status).toBe(200);
  });

  it('passwordHistory(n): the current password and the n-1 before it are refused, older ones allowed', async () => {
    await setPolicy('passwordHistory(3)');
    expect((await reset(userId, 'History-pass-1')).status).toBe(204);
    expect((await reset(userId, 'History-pass-2')).status).toBe(204);
    for (const old of ['History-pass-2', 'History-pass-1', 'Second-pass-2']) {
      const refused = await reset(userId, old);
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ error: 'invalidPasswordHistoryMessage', params: ['3'] });
    }
    expect((await reset(userId, 'History-pass-3')).status).toBe(204);
    // Second-pass-2 is now the fourth password back: allowed again.
    expect((await reset(userId, 'Second-pass-2')).status).toBe(204);
    const kept = await t.server.context.storage.db.selectFrom('password_history').select('password_hash').where('user_id', '=', userId).execute();
    expect(kept).toHaveLength(2);
  });

  it('hashIterations: a login with a hash of other parameters hashes the password again, once', async () => {
    await setPolicy('hashAlgorithm(argon2) and hashIterations(2)');
    const before = await storedHash(userId);
    expect(before).toMatch(/\$m=7168,t=5,p=1\$/);
    expect((await grant('rita', 'wrong-password')).status).toBe(400);
    expect(await storedHash(userId)).toBe(before);
    expect((await grant('rita', 'Second-pass-2')).status).toBe(200);
    const upgraded = await storedHash(userId);
    expect(upgraded).toMatch(/\$m=7168,t=2,p=1\$/);
    expect((await grant('rita', 'Second-pass-2')).status).toBe(200);
    expect(await storedHash(userId)).toBe(upgraded);
    // A new password is hashed with the policy's parameters at once.
    expect((await reset(userId, 'Third-pass-3')).status).toBe(204);
    expect(await storedHash(userId)).toMatch(/\$m=7168,t=2,p=1\$/);
    await setPolicy('');
    expect((await grant('rita', 'Third-pass-3')).status).toBe(200);
    expect(await storedHash(userId)).toMatch(/\$m=7168,t=5,p=1\$/);
  });

  it('10,000-character passwords: 400, never a 5xx, and no hash of them', async () => {
    await setPolicy('maxLength(64)');
    const long = 'A1-'.repeat(3334);
    expect((await reset(userId, long)).status).toBe(400);
    expect((await reset(userId, 'x'.repeat(65))).body).toMatchObject({ error: 'invalidPasswordMaxLengthMessage', params: ['64'] });
    expect((await grant('rita', long)).status).toBe(400);
    // Its first 1024 characters are not the password either: a long guess with the right start is wrong.
    expect((await grant('rita', 'Third-pass-3' + 'x'.repeat(9_988))).status).toBe(400);
    expect((await grant('rita', 'Third-pass-3')).status).toBe(200);
  });

  it('realm import: a user whose plain credential the imported policy refuses fails the import, nothing created', async () => {
    const importRealm = (passwordPolicy: string, password: string) =>
      api(t.url, 'POST', '/admin/realms', admin, { realm: 'policy-import', enabled: true, passwordPolicy, users: [{ username: 'ivan', enabled: true, credentials: [{ type: 'password', value: password }] }] });
    const imported = await importRealm('length(12) and specialChars(1)', 'too-short');
    expect(imported.status).toBe(400);
    expect(imported.body.error).toBe('invalidPasswordMinLengthMessage');
    expect(imported.body.error_description).toMatch(/^realm\.users\[0\]\.credentials: /);
    expect((await api(t.url, 'GET', '/admin/realms/policy-import', admin)).status).toBe(404);
    const good = await importRealm('length(12) and specialChars(1) and notUsername(undefined)', 'long-enough-pass!');
    expect(good.status).toBe(201);
    expect((await api(t.url, 'GET', '/admin/realms/policy-import', admin)).body.passwordPolicy).toBe('length(12) and specialChars(1) and notUsername(undefined)');
    expect((await api(t.url, 'POST', '/admin/realms', admin, { realm: 'policy-bad', enabled: true, passwordPolicy: 'length(12) and foo(1)' })).body.errorMessage).toContain('passwordPolicy');
  });

  describe('pages: the refusal inline at the password field', () => {
    const R = `/realms/${REALM}`;
    const authQuery = () => new URLSearchParams({ client_id: 'web', redirect_uri: CALLBACK, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256' });

    it('registration', async () => {
      await setPolicy('length(10) and digits(2)');
      const client = new FormClient(t.url);
      const page = await client.get(`${R}/protocol/openid-connect/registrations?${authQuery()}`);
      expect(page.status).toBe(200);
      const form = { firstName: 'Reg', lastName: 'Istrant', email: 'reg@example.com', username: 'reg', session_code: inputValue(page.text, 'session_code')! };
      const refused = await client.post(`${R}/login-actions/registration`, { ...form, password: 'Only-one-1', 'password-confirm': 'Only-one-1' });
      expect(refused.status).toBe(400);
      expect(textOf(refused.text, 'input-error-password')).toMatch(/at least 2 digit/);
      expect((await api(t.url, 'GET', `/admin/realms/${REALM}/users?username=reg&exact=true`, admin)).body).toEqual([]);
      const accepted = await client.post(`${R}/login-actions/registration`, { ...form, password: 'Now-two-12', 'password-confirm': 'Now-two-12' });
      expect(accepted.status).toBe(302);
    });

    it('reset by e-mailed link: refused before the link is spent, which then still works', async () => {
      await setPolicy('length(10) and upperCase(1)');
      const realm = (await t.server.context.storage.realms.byName(REALM))!;
      const key = await t.server.context.actionTokens.issue(realm, 'reset-credentials', userId);
      const client = new FormClient(t.url);
      const refused = await client.post(`${R}/login-actions/reset-password`, { 'password-new': 'lower-case-only', 'password-confirm': 'lower-case-only', session_code: key });
      expect(refused.status).toBe(400);
      expect(textOf(refused.text, 'input-error-password-new')).toMatch(/upper-case/);
      const accepted = await client.post(`${R}/login-actions/reset-password`, { 'password-new': 'Reset-pass-10', 'password-confirm': 'Reset-pass-10', session_code: key });
      expect(textOf(accepted.text, 'page-title')).toBe('Your password has been updated');
      expect((await grant('rita', 'Reset-pass-10')).status).toBe(200);
    });

    it('forceExpiredPasswordChange: an expired password is changed at the login page; the password grant refuses', async () => {
      await setPolicy('forceExpiredPasswordChange(30) and length(10)');
      const db = t.server.context.storage.db;
      expect((await grant('rita', 'Reset-pass-10')).status).toBe(200);
      await db.updateTable('user_entity').set({ password_created: Date.now() - 31 * 86_400_000 }).where('id', '=', userId).execute();
      expect(await grant('rita', 'Reset-pass-10')).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: 'Account is not fully set up' } });

      const client = new FormClient(t.url);
      const login = await client.get(`${R}/protocol/openid-connect/auth?${authQuery()}`);
      const csrf = inputValue(login.text, 'session_code')!;
      // A wrong password does not reach the page.
      expect((await client.post(`${R}/login-actions/authenticate`, { username: 'rita', password: 'Wrong-pass-10', session_code: csrf })).status).toBe(401);
      const expired = await client.post(`${R}/login-actions/authenticate`, { username: 'rita', password: 'Reset-pass-10', session_code: csrf });
      expect(expired.status).toBe(200);
      expect(textOf(expired.text, 'page-message')).toMatch(/expired/);
      const key = inputValue(expired.text, 'key')!;
      const post = (password: string, confirm = password, extra: Record<string, string> = {}) =>
        client.post(`${R}/login-actions/update-password`, { 'password-new': password, 'password-confirm': confirm, session_code: csrf, key, ...extra });
      expect(textOf((await post('Expired-new-1', 'Other-new-1')).text, 'input-error-password-confirm')).toBeTruthy();
      const weak = await post('short');
      expect(weak.status).toBe(400);
      expect(textOf(weak.text, 'input-error-password-new')).toMatch(/at least 10/);
      // Without the page's proof of sign-in, or with the auth session's CSRF token missing: nothing changes.
      expect((await post('Forged-new-10', 'Forged-new-10', { key: 'forged' })).status).toBe(400);
      expect((await post('Forged-new-10', 'Forged-new-10', { session_code: 'forged' })).status).toBe(400);
      const done = await post('Expired-new-10');
      expect(done.status).toBe(302);
      expect(done.location).toMatch(/^http:\/\/127\.0\.0\.1:9\/cb\?.*code=/);
      // The page's proof is spent, and the new password is not expired.
      expect((await post('Again-new-10')).status).toBe(400);
      expect((await grant('rita', 'Expired-new-10')).status).toBe(200);
      expect((await grant('rita', 'Forged-new-10')).status).toBe(400);
      const row = await db.selectFrom('user_entity').select('password_created').where('id', '=', userId).executeTakeFirstOrThrow();
      expect(Date.now() - Number(row.password_created)).toBeLessThan(60_000);
      await reset(userId, 'Reset-pass-10');
    });

    it('account page password change', async () => {
      await setPolicy('notUsername and length(4)');
      const client = new FormClient(t.url);
      const login = await client.get(`${R}/account/profile`);
      const done = await client.post(`${R}/login-actions/authenticate`, { username: 'rita', password: 'Reset-pass-10', session_code: inputValue(login.text, 'session_code')! });
      expect(done.status).toBe(302);
      const account = await client.get(done.location!);
      const csrf = inputValue(account.text, 'session_code')!;
      const refused = await client.post(`${R}/account/password`, { password: 'Reset-pass-10', 'password-new': 'rita', 'password-confirm': 'rita', session_code: csrf });
      expect(refused.status).toBe(400);
      expect(textOf(refused.text, 'input-error-password-new')).toMatch(/may not be the username/);
      const accepted = await client.post(`${R}/account/password`, { password: 'Reset-pass-10', 'password-new': 'Account-pass-1', 'password-confirm': 'Account-pass-1', session_code: csrf });
      expect(accepted.status).toBe(200);
      expect((await grant('rita', 'Account-pass-1')).status).toBe(200);
    });
  });
});
