import type { Browser } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { flow, step, subflow } from './support/flow-files.js';
import { realmExporter } from '../src/services/realm-export.js';
import { api, eventually, type TestServer } from './support/server.js';
import { authorizationQuery, credentialsOn, signInAndRegister, userIdOf, virtualDevice, webAuthnBed, type Device } from './support/webauthn-device.js';

/**
 * Issue 38's remaining items in Chromium, with its virtual authenticator: the backup flags (BE, BS) of a passkey
 * stored at registration and checked at each sign-in (BE fixed for the credential, BS stored as it changes; the
 * DevTools' WebAuthn.setCredentialProperties changes them on the authenticator), learnt at the first sign-in of a
 * credential imported from a Keycloak file; a cloned authenticator's refusal recorded as Keycloak records it; and
 * the password as a "try another way" choice beside a passkey.
 */

const PASSWORD = 'Backup-pass-1';
const bed = webAuthnBed();
let t: TestServer;
let base: string;
let token: string;
let browser: Browser;
let callback: string;
beforeAll(() => void ({ t, base, token, browser, callback } = bed));

const user = (username: string, requiredActions: string[] = []) => ({ username, enabled: true, firstName: username, lastName: 'Test', email: `${username}@example.com`, emailVerified: true, credentials: [{ type: 'password', value: PASSWORD }], requiredActions });

/** Clients `web` (the realm's password flow) and `passkey-app` (bound by bindFlow to a flow of the realm). */
const realmFile = (realm: string, extra: Record<string, unknown> = {}) => ({
  realm,
  enabled: true,
  eventsEnabled: true,
  clients: [
    { clientId: 'web', publicClient: true, standardFlowEnabled: true, redirectUris: [callback] },
    { clientId: 'passkey-app', publicClient: true, standardFlowEnabled: true, redirectUris: [callback] },
  ],
  ...extra,
});

/** A passkey alone ("usernameless"). */
const passkeyFlows = [flow('passkey browser', true, [step('auth-cookie', 'ALTERNATIVE', 10), subflow('passkey forms', 'ALTERNATIVE', 20)]), flow('passkey forms', false, [step('webauthn-authenticator-passwordless', 'REQUIRED', 10)])];

async function bindFlow(realm: string, clientId: string, alias: string): Promise<void> {
  const flows = (await api(t.url, 'GET', `/admin/realms/${realm}/authentication/flows`, token)).body as { id: string; alias: string }[];
  const [client] = (await api(t.url, 'GET', `/admin/realms/${realm}/clients?clientId=${clientId}`, token)).body as { id: string }[];
  expect((await api(t.url, 'PUT', `/admin/realms/${realm}/clients/${client.id}`, token, { ...client, authenticationFlowBindingOverrides: { browser: flows.find((f) => f.alias === alias)!.id } })).status).toBe(204);
}

async function open(d: Device, realm: string, clientId: string): Promise<void> {
  await d.page.goto('about:blank');
  await d.context.clearCookies();
  await d.page.goto(`${base}/realms/${realm}/protocol/openid-connect/auth?${authorizationQuery(clientId, callback).query}`);
}

const atCallback = (d: Device) => d.page.url().startsWith(callback);

/** Signs in to `web` with the password and registers the passkey the user's required action asks for. */
async function registerPasskey(d: Device, realm: string, username: string): Promise<void> {
  await open(d, realm, 'web');
  await signInAndRegister(d, username, PASSWORD, callback);
}

/** A sign-in to `passkey-app` (the passkey alone); the status of the assertion's post, once any redirect landed. */
async function passkeySignIn(d: Device, realm: string): Promise<number> {
  await open(d, realm, 'passkey-app');
  await d.page.waitForSelector('#authenticateWebAuthnButton');
  const landed = d.page.waitForEvent('framenavigated', { predicate: (frame) => frame === d.page.mainFrame() });
  landed.catch(() => {});
  const [response] = await Promise.all([d.page.waitForResponse((r) => r.request().method() === 'POST' && r.url().includes('login-webauthn')), d.page.click('#authenticateWebAuthnButton')]);
  if (response.status() === 302) await landed;
  return response.status();
}

const userId = (realm: string, username: string) => userIdOf(bed, realm, username);

const storedPasskey = async (id: string) => (await t.server.context.storage.credentials.ofUser(id, 'webauthn-passwordless'))[0];

/** Changes the backup flags of the one credential the authenticator holds (DevTools' WebAuthn.setCredentialProperties). */
async function setFlags(d: Device, flags: { backupEligibility?: boolean; backupState?: boolean }): Promise<void> {
  const [credential] = await credentialsOn(d);
  await d.cdp.send('WebAuthn.setCredentialProperties', { authenticatorId: d.authenticatorId, credentialId: credential.credentialId, ...flags });
}

interface EventRep {
  type: string;
  userId?: string;
  error?: string;
  details?: Record<string, string>;
}
const loginErrorsOf = async (realm: string, id: string) =>
  ((await api(t.url, 'GET', `/admin/realms/${realm}/events?type=LOGIN_ERROR&max=100`, token)).body as EventRep[]).filter((e) => e.userId === id);

describe('backup flags (BE, BS) of a passkey', () => {
  let olga: Device;
  let pia: Device;

  beforeAll(async () => {
    const created = await api(t.url, 'POST', '/admin/realms', token, realmFile('backup', { authenticationFlows: passkeyFlows, users: [user('olga', ['webauthn-register-passwordless']), user('pia', ['webauthn-register-passwordless'])] }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    await bindFlow('backup', 'passkey-app', 'passkey browser');
    // Olga's authenticator makes single-device credentials (BE off); Pia's makes synced ones (BE on, not backed up yet).
    olga = await virtualDevice(browser, { defaultBackupEligibility: false, defaultBackupState: false } as never);
    pia = await virtualDevice(browser, { defaultBackupEligibility: true, defaultBackupState: false } as never);
  });

  it('stores the flags at registration beside Keycloak’s credentialData, which keeps its six fields; the export writes secretData "{}"', async () => {
    await registerPasskey(olga, 'backup', 'olga');
    await registerPasskey(pia, 'backup', 'pia');
    const olgaKey = await storedPasskey(await userId('backup', 'olga'));
    const piaKey = await storedPasskey(await userId('backup', 'pia'));
    expect(olgaKey.secretData).toMatchObject({ backupEligible: false, backupState: false });
    expect(piaKey.secretData).toMatchObject({ backupEligible: true, backupState: false });
    expect(Object.keys(piaKey.credentialData).sort()).toEqual(['aaguid', 'attestationStatementFormat', 'counter', 'credentialId', 'credentialPublicKey', 'transports']);
    // The admin API shows Keycloak's representation: no flags, no secretData.
    const listed = (await api(t.url, 'GET', `/admin/realms/backup/users/${piaKey.userId}/credentials`, token)).body as Record<string, unknown>[];
    const rep = listed.find((c) => c.type === 'webauthn-passwordless')!;
    expect(rep.secretData).toBeUndefined();
    expect(JSON.stringify(rep)).not.toContain('backup');
    const realm = (await t.server.context.storage.realms.byName('backup'))!;
    const { users } = await (await realmExporter(t.server.context, realm)).users(null, 10);
    const exported = (users as { username: string; credentials: Record<string, unknown>[] }[]).find((u) => u.username === 'pia')!.credentials.find((c) => c.type === 'webauthn-passwordless')!;
    expect(exported.secretData).toBe('{}');
    expect(Object.keys(JSON.parse(exported.credentialData as string) as object).sort()).toEqual(['aaguid', 'attestationStatementFormat', 'counter', 'credentialId', 'credentialPublicKey', 'transports']);
  });

  it('stores a backup state that changed (BS), and signs in', async () => {
    const id = await userId('backup', 'pia');
    expect(await passkeySignIn(pia, 'backup')).toBe(302);
    expect((await storedPasskey(id)).secretData).toMatchObject({ backupEligible: true, backupState: false });
    await setFlags(pia, { backupState: true });
    expect(await passkeySignIn(pia, 'backup')).toBe(302);
    expect(atCallback(pia)).toBe(true);
    const stored = await storedPasskey(id);
    expect(stored.secretData).toMatchObject({ backupEligible: true, backupState: true });
    expect(stored.credentialData.counter).toBe((await credentialsOn(pia))[0].signCount);
  });

  it('refuses a credential that was not backup eligible and now says it is (BE changed), recorded as Keycloak records its library’s refusals', async () => {
    const id = await userId('backup', 'olga');
    expect(await passkeySignIn(olga, 'backup')).toBe(302);
    const before = await storedPasskey(id);
    await setFlags(olga, { backupEligibility: true, backupState: true });
    expect(await passkeySignIn(olga, 'backup')).toBe(401);
    expect(atCallback(olga)).toBe(false);
    const after = await storedPasskey(id);
    expect(after.secretData).toMatchObject({ backupEligible: false, backupState: false });
    expect(after.credentialData.counter).toBe(before.credentialData.counter);
    const [event] = await eventually(async () => (await loginErrorsOf('backup', id)).filter((e) => e.details?.web_authn_authentication_error_detail?.includes('backup eligibility')));
    expect(event.error).toBe('invalid_user_credentials');
    expect(event.details?.web_authn_authentication_error).toBe('webauthn-error-auth-verification');
  });

  it('refuses the other way round too: a synced credential that says it is not backup eligible any more', async () => {
    await setFlags(pia, { backupEligibility: false, backupState: false });
    expect(await passkeySignIn(pia, 'backup')).toBe(401);
    expect((await storedPasskey(await userId('backup', 'pia'))).secretData).toMatchObject({ backupEligible: true, backupState: true });
  });

  it('learns the flags of a passkey imported from a Keycloak file (none there) at its first sign-in, then checks them', async () => {
    const id = await userId('backup', 'pia');
    await setFlags(pia, { backupEligibility: true, backupState: true });
    const credentialData = JSON.stringify((await storedPasskey(id)).credentialData);
    // Keycloak's export of the user: its id (the passkey's user handle), secretData "{}", credentialData as a JSON string.
    const file = realmFile('backup-imported', {
      authenticationFlows: passkeyFlows,
      users: [{ id, username: 'pia', enabled: true, credentials: [{ type: 'webauthn-passwordless', userLabel: 'from Keycloak', secretData: '{}', credentialData }] }],
    });
    expect((await api(t.url, 'POST', '/admin/realms', token, file)).status).toBe(201);
    await bindFlow('backup-imported', 'passkey-app', 'passkey browser');
    const imported = await userId('backup-imported', 'pia');
    expect((await storedPasskey(imported)).secretData).not.toHaveProperty('backupEligible');
    expect(await passkeySignIn(pia, 'backup-imported')).toBe(302);
    expect((await storedPasskey(imported)).secretData).toMatchObject({ backupEligible: true, backupState: true });
    await setFlags(pia, { backupEligibility: false, backupState: false });
    expect(await passkeySignIn(pia, 'backup-imported')).toBe(401);
  });
});

describe('a cloned authenticator (sign counter going backwards)', () => {
  it('is refused with Keycloak’s event: LOGIN_ERROR invalid_user_credentials, web_authn_authentication_error webauthn-error-auth-verification', async () => {
    expect((await api(t.url, 'POST', '/admin/realms', token, realmFile('clones', { authenticationFlows: passkeyFlows, users: [user('sven', ['webauthn-register-passwordless'])] }))).status).toBe(201);
    await bindFlow('clones', 'passkey-app', 'passkey browser');
    const sven = await virtualDevice(browser);
    await registerPasskey(sven, 'clones', 'sven');
    const id = await userId('clones', 'sven');
    const storage = t.server.context.storage;
    const stored = await storedPasskey(id);
    // Another copy of the key signed since: the stored counter is ahead of this authenticator's.
    expect(await storage.credentials.replaceData(id, stored.id, stored.credentialData, { ...stored.credentialData, counter: 1_000_000 })).toBe(true);
    expect(await passkeySignIn(sven, 'clones')).toBe(401);
    expect((await storedPasskey(id)).credentialData.counter).toBe(1_000_000);
    const [event] = await eventually(() => loginErrorsOf('clones', id).then((events) => events.filter((e) => e.details?.web_authn_authentication_error)));
    expect(event.error).toBe('invalid_user_credentials');
    expect(event.details?.web_authn_authentication_error).toBe('webauthn-error-auth-verification');
    expect(event.details?.web_authn_authentication_error_detail).toMatch(/counter/i);
  });
});

describe('the password as "try another way" beside a passkey (username form, then a passkey or the password)', () => {
  let quinn: Device;

  beforeAll(async () => {
    const file = realmFile('pwways', {
      authenticationFlows: [
        flow('choice browser', true, [step('auth-cookie', 'ALTERNATIVE', 10), subflow('choice forms', 'ALTERNATIVE', 20)]),
        flow('choice forms', false, [step('auth-username-form', 'REQUIRED', 10), subflow('choice second', 'REQUIRED', 20)]),
        flow('choice second', false, [step('webauthn-authenticator-passwordless', 'ALTERNATIVE', 10), step('auth-password-form', 'ALTERNATIVE', 20)]),
      ],
      users: [user('quinn', ['webauthn-register-passwordless']), user('rosa')],
    });
    const created = await api(t.url, 'POST', '/admin/realms', token, file);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    await bindFlow('pwways', 'passkey-app', 'choice browser');
    quinn = await virtualDevice(browser);
    await registerPasskey(quinn, 'pwways', 'quinn');
  });

  /** The username (the form asks for the password too; the passkey step comes first, so it is not read). */
  async function username(d: Device, name: string): Promise<void> {
    await open(d, 'pwways', 'passkey-app');
    await d.page.fill('#username', name);
    await d.page.fill('#password', 'not-read-here');
    await d.page.click('#kc-login');
    await d.page.waitForSelector('#authenticateWebAuthnButton');
  }

  /** The "try another way" list of the page shown: the names of the ways it offers. */
  async function listWays(d: Device): Promise<(string | null)[]> {
    await d.page.click('#try-another-way');
    await d.page.waitForSelector('#kc-select-credential-form');
    return d.page.$$eval('button[name="authenticationExecution"] strong', (names) => names.map((n) => n.textContent));
  }

  async function choose(d: Device, name: string, landsOn: string): Promise<void> {
    await listWays(d);
    await d.page.click(`button[name="authenticationExecution"]:has-text("${name}")`);
    await d.page.waitForSelector(landsOn);
  }

  async function enterPassword(d: Device, password: string): Promise<void> {
    await d.page.fill('#password', password);
    await d.page.click('#kc-login');
  }

  async function signedIn(d: Device): Promise<void> {
    await d.page.waitForURL((u) => u.href.startsWith(callback));
    expect(atCallback(d)).toBe(true);
  }

  it('lists the password beside the passkey; the password page signs in, after a wrong password shown again with the way back', async () => {
    await username(quinn, 'quinn');
    expect(await listWays(quinn)).toEqual(['Passkey', 'Password']);
    await quinn.page.click('button[name="authenticationExecution"]:has-text("Password")');
    await quinn.page.waitForSelector('#kc-attempted-username');
    expect(await quinn.page.textContent('#kc-attempted-username')).toContain('quinn');
    // The name goes with the form (for password managers), not shown as a field.
    expect(await quinn.page.getAttribute('#kc-form-login input[name="username"]', 'value')).toBe('quinn');
    expect(await quinn.page.isVisible('#kc-form-login input[name="username"]')).toBe(false);
    await enterPassword(quinn, 'wrong-password');
    await quinn.page.waitForSelector('#input-error-password');
    expect(await quinn.page.textContent('#input-error-password')).toContain('Invalid password');
    expect(await quinn.page.isVisible('#try-another-way')).toBe(true);
    await enterPassword(quinn, PASSWORD);
    await signedIn(quinn);
  });

  it('switches back from the password to the passkey, which signs in', async () => {
    await username(quinn, 'quinn');
    await choose(quinn, 'Password', '#kc-attempted-username');
    await choose(quinn, 'Passkey', '#authenticateWebAuthnButton');
    expect(await quinn.page.$('#kc-attempted-username')).toBeNull();
    await quinn.page.click('#authenticateWebAuthnButton');
    await signedIn(quinn);
  });

  it('offers the password to a user without a passkey, who would otherwise be held at the passkey page', async () => {
    const rosa = await virtualDevice(browser);
    await username(rosa, 'rosa');
    expect(await listWays(rosa)).toEqual(['Passkey', 'Password']);
    await rosa.page.click('button[name="authenticationExecution"]:has-text("Password")');
    await rosa.page.waitForSelector('#kc-attempted-username');
    await enterPassword(rosa, PASSWORD);
    await signedIn(rosa);
  });

  it('refuses the password page’s key in another sign-in, and after its attempts are spent', async () => {
    await username(quinn, 'quinn');
    await choose(quinn, 'Password', '#kc-attempted-username');
    const key = (await quinn.page.getAttribute('#kc-form-login input[name="key"]', 'value'))!;
    for (let i = 1; i <= 4; i++) {
      await enterPassword(quinn, `wrong-${i}`);
      await quinn.page.waitForSelector('#input-error-password');
    }
    // The fifth wrong answer is the last the key takes: the sign-in starts again from the sign-in form.
    await enterPassword(quinn, 'wrong-5');
    await quinn.page.waitForSelector('#kc-form-login input[name="username"]:visible');
    expect(await quinn.page.$('#kc-attempted-username')).toBeNull();
    expect(atCallback(quinn)).toBe(false);
    // The key in a new sign-in (another auth session): expired.
    await open(quinn, 'pwways', 'passkey-app');
    const csrf = (await quinn.page.getAttribute('input[name="session_code"]', 'value'))!;
    const stale = await quinn.page.request.post(`${base}/realms/pwways/login-actions/login-password`, { form: { session_code: csrf, key, password: PASSWORD }, maxRedirects: 0 });
    expect(stale.status()).toBe(400);
    expect(await stale.text()).toContain('expired');
  });
});
