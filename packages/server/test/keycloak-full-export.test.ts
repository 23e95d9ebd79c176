import KcAdminClient from '@keycloak/keycloak-admin-client';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as oidc from 'openid-client';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpDatabases, startServer, tokenRequest, type TestServer } from './support/server.js';
import { FormClient, inputValue, pkce } from './support/forms.js';
import { CodeSource, fromBase32 } from './support/totp.js';
import { masterAdminClient } from './support/admin-client.js';

/**
 * A whole `kc.sh export` of real Keycloak 26.7.3 (fixtures/keycloak-exports/keycloak-26.7.3-full-export.json; how
 * it was made is in SOURCES.md): imported through the admin API, its users sign in with the passwords they had in
 * Keycloak (Argon2id hashes as Keycloak stored them) and the authenticator app they set up there, its service
 * account gets its client roles, and the tokens carry what the file's groups, composite roles and mappers define.
 */

const FILE = join(import.meta.dirname, 'fixtures/keycloak-exports/keycloak-26.7.3-full-export.json');
const REALM = 'kc26-full';
const BOB_TOTP_KEY = 'OJLW K3BX JB4W 633X JZ5E ESST HFWH ASJU';
const insecure = { execute: [oidc.allowInsecureRequests] };

describe.each(httpDatabases)('a full Keycloak 26.7.3 export (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  // Each code is taken once (the realm's otpPolicyCodeReusable is off), so the tests share one source.
  const codes = new CodeSource(fromBase32(BOB_TOTP_KEY), { window: 1 });
  const grant = (form: Record<string, string>) => tokenRequest(t.url, REALM, form);
  const password = (username: string, secret: string, extra: Record<string, string> = {}) => grant({ grant_type: 'password', client_id: 'web-app', username, password: secret, ...extra });

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    await kc.realms.create(JSON.parse(readFileSync(FILE, 'utf8')));
  }, 120_000);
  afterAll(() => t?.close());

  it("a user signs in with the password Keycloak hashed, and the token carries the file's groups, composite roles and client mappers", async () => {
    const response = await password('alice', 'Alice-pass-1');
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    const claims = decodeJwt(response.body.access_token as string) as Record<string, any>;
    expect(claims.realm_access.roles).toEqual(expect.arrayContaining(['editor', 'viewer', 'default-roles-kc26-full']));
    expect(claims.groups).toEqual(['/staff/admins']);
    // The user-attribute mapper finds nothing: Keycloak 26 kept no `department` for alice (an attribute outside its
    // user profile is dropped when the user is created), so the file has none, and neither server issues the claim.
    expect(claims).not.toHaveProperty('department');
    expect(claims.tenant).toEqual({ id: 'acme' });
    expect((await password('alice', 'Alice-pass-2')).status).toBe(400);
  });

  it('the optional scope of the file adds its audience and its role scope mapping', async () => {
    // carol's UPDATE_PROFILE from the file: the password grant refuses until it is done (Keycloak's answer).
    const pending = await password('carol', 'Carol-pass-3', { scope: 'openid orders-api' });
    expect(pending.status).toBe(400);
    expect(pending.body).toMatchObject({ error: 'invalid_grant', error_description: 'Account is not fully set up' });
    kc.setConfig({ realmName: REALM });
    try {
      const [carol] = await kc.users.find({ username: 'carol', exact: true });
      expect(carol.requiredActions).toEqual(['UPDATE_PROFILE']);
      await kc.users.update({ id: carol.id! }, { requiredActions: [] });
    } finally {
      kc.setConfig({ realmName: 'master' });
    }
    const response = await password('carol', 'Carol-pass-3', { scope: 'openid orders-api' });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    const claims = decodeJwt(response.body.access_token as string) as Record<string, any>;
    expect(claims.scope.split(' ')).toContain('orders-api');
    expect([claims.aud].flat()).toContain('backend');
    expect(claims.resource_access?.backend?.roles).toEqual(['orders.read']);
  });

  it('the authenticator app set up in Keycloak keeps working: no code, no token', async () => {
    expect((await password('bob', 'Bob-pass-22')).status).toBe(400);
    const response = await password('bob', 'Bob-pass-22', { totp: codes.next() });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    const claims = decodeJwt(response.body.access_token as string) as Record<string, any>;
    expect(claims.groups).toEqual(['/staff']);
    expect(claims.realm_access.roles).toContain('viewer');
    expect(claims.realm_access.roles).not.toContain('editor');
  });

  it('signs in in the browser through web-app (rootUrl and a relative redirect URI, PKCE), with the OTP page for bob', async () => {
    const config = await oidc.discovery(new URL(`${t.url}/realms/${REALM}`), 'web-app', undefined, oidc.None(), insecure);
    const callback = 'http://localhost:3000/callback';
    const browser = new FormClient(t.url);
    const { verifier, challenge } = pkce();
    const query = new URLSearchParams({ client_id: 'web-app', redirect_uri: callback, response_type: 'code', scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256', state: 'k1' });
    const page = await browser.get(`/realms/${REALM}/protocol/openid-connect/auth?${query}`);
    expect(page.status).toBe(200);
    const otpPage = await browser.post(`/realms/${REALM}/login-actions/authenticate`, { username: 'bob', password: 'Bob-pass-22', session_code: inputValue(page.text, 'session_code')! });
    expect(otpPage.status).toBe(200);
    const signedIn = await browser.post(`/realms/${REALM}/login-actions/login-otp`, { otp: codes.next(), key: inputValue(otpPage.text, 'key')!, session_code: inputValue(otpPage.text, 'session_code')! });
    expect(signedIn.status, signedIn.text).toBe(302);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(signedIn.location!), { pkceCodeVerifier: verifier, expectedState: 'k1' });
    expect(decodeJwt(tokens.id_token!)).toMatchObject({ preferred_username: 'bob', email: 'bob@kc26.example', groups: ['/staff'] });
  });

  it("the service account gets its client roles with the file's secret, through openid-client", async () => {
    const config = await oidc.discovery(new URL(`${t.url}/realms/${REALM}`), 'backend', 'backend-secret-1', undefined, insecure);
    const tokens = await oidc.clientCredentialsGrant(config);
    const claims = decodeJwt(tokens.access_token) as Record<string, any>;
    expect(claims.resource_access.backend.roles).toEqual(['orders.read']);
    expect(claims.realm_access.roles).toContain('viewer');
    expect(claims.azp).toBe('backend');
  });

  it('keeps the realm settings of the file', async () => {
    const realm = (await kc.realms.findOne({ realm: REALM }))!;
    expect(realm).toMatchObject({ displayName: 'KC 26 full export', passwordPolicy: 'length(8) and digits(1)', bruteForceProtected: true, failureFactor: 5, accessTokenLifespan: 600, registrationAllowed: true });
  });
});
