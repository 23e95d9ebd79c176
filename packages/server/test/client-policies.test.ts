import type KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient, rejects, tokenOfUserWithRoles } from './support/admin-client.js';
import { api, eventually, startServer, startServerPair, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 41, point 2: Keycloak's client policies and profiles. The endpoints answer as Keycloak 26.7.3's (checked
 * against it: shapes, the global profiles, `{errorMessage}` refusals), every executor is run or refused by name, the
 * policies act at client create/update and at the authorization and token endpoints, travel in realm files, and
 * reach every node through the configuration cache.
 */
const REALM = 'policies';
const CALLBACK = 'http://127.0.0.1:9/cb';
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

const profile = (name: string, executors: [string, Record<string, unknown>?][]) => ({ name, executors: executors.map(([executor, configuration = {}]) => ({ executor, configuration })) });
const policy = (name: string, profiles: string[], conditions: [string, Record<string, unknown>?][] = [['any-client']]) => ({
  name,
  enabled: true,
  conditions: conditions.map(([condition, configuration = {}]) => ({ condition, configuration })),
  profiles,
});

/** The authorization endpoint's redirect back to the client: its error parameters (none when the login page shows). */
async function authorize(url: string, clientId: string, extra: Record<string, string> = {}): Promise<{ error: string | null; description: string | null; status: number }> {
  const query = new URLSearchParams({ client_id: clientId, redirect_uri: CALLBACK, response_type: 'code', scope: 'openid', ...extra });
  const answer = await fetch(`${url}/realms/${REALM}/protocol/openid-connect/auth?${query}`, { redirect: 'manual' });
  const location = answer.headers.get('location');
  const params = location?.startsWith(CALLBACK) ? new URL(location).searchParams : null;
  return { status: answer.status, error: params?.get('error') ?? null, description: params?.get('error_description') ?? null };
}

describe('client policies and profiles', () => {
  let t: TestServer;
  let kc: KcAdminClient;

  beforeAll(async () => {
    t = await startServer();
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: REALM, enabled: true });
    kc.setConfig({ realmName: REALM });
  }, 60_000);

  afterAll(async () => {
    await kc.clientPolicies.createProfiles({ profiles: [] }).catch(() => {});
    await t?.close();
  });

  it('lists the realm profiles and Keycloak’s global ones through the admin client', async () => {
    expect(await kc.clientPolicies.listProfiles({ includeGlobalProfiles: false })).toEqual({ profiles: [] });
    const all = await kc.clientPolicies.listProfiles({ includeGlobalProfiles: true });
    const names = all.globalProfiles!.map((p) => p.name);
    for (const name of ['fapi-1-baseline', 'fapi-1-advanced', 'fapi-ciba', 'fapi-2-security-profile', 'fapi-2-message-signing', 'oauth-2-1-for-confidential-client', 'oauth-2-1-for-public-client']) {
      expect(names).toContain(name);
    }
    const baseline = all.globalProfiles!.find((p) => p.name === 'fapi-1-baseline')!;
    expect(baseline.executors!.map((x) => x.executor)).toEqual(['secure-session', 'pkce-enforcer', 'secure-client-authenticator', 'secure-client-uris', 'consent-required', 'full-scope-disabled']);
    expect(await kc.clientPolicies.listPolicies({ includeGlobalPolicies: true })).toEqual({ policies: [], globalPolicies: [] });

    await kc.clientPolicies.createProfiles({ profiles: [profile('strict', [['pkce-enforcer', { 'auto-configure': true }]])] });
    await kc.clientPolicies.updatePolicy({ policies: [policy('all', ['strict'])] });
    expect((await kc.clientPolicies.listProfiles({ includeGlobalProfiles: false })).profiles).toEqual([profile('strict', [['pkce-enforcer', { 'auto-configure': true }]])]);
    expect((await kc.clientPolicies.listPolicies({ includeGlobalPolicies: false })).policies).toEqual([policy('all', ['strict'])]);
    // As Keycloak's realm representation, the realm carries them.
    const realm = (await kc.realms.findOne({ realm: REALM })) as Record<string, unknown>;
    expect(realm.clientPolicies).toEqual({ policies: [policy('all', ['strict'])] });
    await kc.clientPolicies.updatePolicy({ policies: [] });
  });

  it('refuses, naming it, an executor or condition it does not run, and a global profile holding one', async () => {
    const put = (path: string, body: unknown) => api(t.url, 'PUT', `/admin/realms/${REALM}/client-policies/${path}`, kc.accessToken!, body);
    const rotation = await put('profiles', { profiles: [profile('p', [['client-secret-rotation', {}]])] });
    expect(rotation.status).toBe(400);
    expect(rotation.body.errorMessage).toMatch(/client-secret-rotation/);
    const unknown = await put('profiles', { profiles: [profile('p', [['no-such-executor']])] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errorMessage).toMatch(/no-such-executor/);
    const duplicated = await put('profiles', { profiles: [profile('fapi-1-baseline', [])] });
    expect(duplicated.status).toBe(400);
    const condition = await put('policies', { policies: [policy('x', [], [['client-updater-source-roles']])] });
    expect(condition.status).toBe(400);
    expect(condition.body.errorMessage).toMatch(/client-updater-source-roles/);
    const fapi = await put('policies', { policies: [policy('x', ['fapi-1-advanced'])] });
    expect(fapi.status).toBe(400);
    expect(fapi.body.errorMessage).toMatch(/secure-request-object/);
    const missing = await put('policies', { policies: [policy('x', ['nowhere'])] });
    expect(missing.status).toBe(400);
    expect(missing.body.errorMessage).toMatch(/nowhere/);
    // Nothing of them was stored.
    expect((await kc.clientPolicies.listProfiles({})).profiles).toEqual([profile('strict', [['pkce-enforcer', { 'auto-configure': true }]])]);
    // Disabled or not, a policy naming a global profile with an executor not run here is refused, naming it.
    const message = await put('policies', { policies: [{ ...policy('fapi2', ['fapi-2-message-signing']), enabled: false }] });
    expect(message.status).toBe(400);
    expect(message.body.errorMessage).toMatch(/secure-request-object/);
    expect((await kc.clientPolicies.listPolicies({})).policies).toEqual([]);
    // consent-required runs (the consent screen): a policy naming the FAPI 2.0 security profile is saved.
    const fapi2 = await put('policies', { policies: [{ ...policy('fapi2', ['fapi-2-security-profile']), enabled: false }] });
    expect(fapi2.status).toBe(204);
    expect((await kc.clientPolicies.listPolicies({})).policies?.map((p) => p.name)).toEqual(['fapi2']);
    expect((await put('policies', { policies: [] })).status).toBe(204);
  });

  it('refuses an authorization request without PKCE under pkce-enforcer, a public client and a confidential one', async () => {
    await kc.clients.create({ clientId: 'spa', publicClient: true, redirectUris: [CALLBACK] });
    await kc.clients.create({ clientId: 'web', publicClient: false, secret: 'web-secret', redirectUris: [CALLBACK] });
    // Without a policy the confidential client needs no PKCE.
    expect((await authorize(t.url, 'web')).error).toBeNull();
    await kc.clientPolicies.createProfiles({ profiles: [profile('pkce', [['pkce-enforcer', { 'auto-configure': false }]])] });
    await kc.clientPolicies.updatePolicy({ policies: [policy('pkce-everywhere', ['pkce'], [['client-access-type', { type: ['public', 'confidential'] }]])] });
    for (const clientId of ['spa', 'web']) {
      expect(await authorize(t.url, clientId)).toMatchObject({ error: 'invalid_request', description: 'Missing parameter: code_challenge_method' });
      expect((await authorize(t.url, clientId, { code_challenge: CHALLENGE, code_challenge_method: 'S256' })).error).toBeNull();
    }
    // The condition decides: a policy for public clients only leaves the confidential one alone.
    await kc.clientPolicies.updatePolicy({ policies: [policy('pkce-public', ['pkce'], [['client-access-type', { type: ['public'] }]])] });
    expect((await authorize(t.url, 'web')).error).toBeNull();
    // A disabled policy does nothing.
    await kc.clientPolicies.updatePolicy({ policies: [{ ...policy('pkce-everywhere', ['pkce']), enabled: false }] });
    expect((await authorize(t.url, 'web')).error).toBeNull();
    await kc.clientPolicies.updatePolicy({ policies: [] });
  });

  it('refuses a public client at the authorization endpoint under confidential-client', async () => {
    await kc.clientPolicies.createProfiles({ profiles: [profile('confidential', [['confidential-client']])] });
    await kc.clientPolicies.updatePolicy({ policies: [policy('confidential-only', ['confidential'])] });
    expect(await authorize(t.url, 'spa', { code_challenge: CHALLENGE, code_challenge_method: 'S256' })).toMatchObject({ error: 'invalid_client', description: 'invalid client access type: public' });
    expect((await authorize(t.url, 'web')).error).toBeNull();
    await kc.clientPolicies.updatePolicy({ policies: [] });
  });

  it('auto-configures a client created under a policy, and refuses an update that violates one', async () => {
    await kc.clientPolicies.createProfiles({
      profiles: [
        profile('auto', [['pkce-enforcer', { 'auto-configure': true }], ['full-scope-disabled', { 'auto-configure': true }]]),
        profile('strict', [['full-scope-disabled', { 'auto-configure': false }], ['reject-ropc-grant', { 'auto-configure': false }]]),
      ],
    });
    await kc.clientPolicies.updatePolicy({ policies: [policy('auto-new', ['auto'], [['client-attributes', { attributes: JSON.stringify([{ key: 'tier', value: 'auto' }]) }]])] });
    const { id } = await kc.clients.create({ clientId: 'auto-app', publicClient: true, redirectUris: [CALLBACK], attributes: { tier: 'auto' } });
    const made = (await kc.clients.findOne({ id }))!;
    expect(made.attributes?.['pkce.code.challenge.method']).toBe('S256');
    expect(made.fullScopeAllowed).toBe(false);
    // A client the condition does not pick is made as asked.
    const { id: other } = await kc.clients.create({ clientId: 'plain-app', publicClient: true, redirectUris: [CALLBACK] });
    expect((await kc.clients.findOne({ id: other }))!.fullScopeAllowed).toBe(true);

    await kc.clientPolicies.updatePolicy({ policies: [policy('strict-all', ['strict'])] });
    const client = (await kc.clients.findOne({ id: other }))!;
    const fullScope = await api(t.url, 'PUT', `/admin/realms/${REALM}/clients/${other}`, kc.accessToken!, { ...client, fullScopeAllowed: true, directAccessGrantsEnabled: false });
    expect(fullScope.status).toBe(400);
    expect(fullScope.body).toEqual({ error: 'invalid_registration', error_description: 'Not permitted to enable fullScopeAllowed' });
    const ropc = await api(t.url, 'PUT', `/admin/realms/${REALM}/clients/${other}`, kc.accessToken!, { ...client, fullScopeAllowed: false, directAccessGrantsEnabled: true });
    expect(ropc.status).toBe(400);
    expect(ropc.body).toEqual({ error: 'invalid_client_metadata', error_description: 'Invalid client metadata: resource owner password credentials grant enabled' });
    // Unchanged by the refused updates; a conforming one goes through.
    expect((await kc.clients.findOne({ id: other }))!.fullScopeAllowed).toBe(true);
    await kc.clients.update({ id: other }, { ...client, fullScopeAllowed: false, directAccessGrantsEnabled: false });
    expect((await kc.clients.findOne({ id: other }))!.fullScopeAllowed).toBe(false);
    // Creating one that violates it is refused as well.
    await rejects(kc.clients.create({ clientId: 'wide-app', fullScopeAllowed: true, directAccessGrantsEnabled: false }), 400);
    expect(await kc.clients.find({ clientId: 'wide-app' })).toEqual([]);
    await kc.clientPolicies.updatePolicy({ policies: [] });
  });

  it('refuses the password grant under reject-ropc-grant, for the grant-type condition', async () => {
    await kc.clients.create({ clientId: 'ropc', publicClient: false, secret: 'ropc-secret', directAccessGrantsEnabled: true, serviceAccountsEnabled: true });
    await kc.clientPolicies.createProfiles({ profiles: [profile('no-ropc', [['reject-ropc-grant', { 'auto-configure': false }]])] });
    await kc.clientPolicies.updatePolicy({ policies: [policy('no-ropc', ['no-ropc'], [['grant-type', { grant_types: ['password'] }]])] });
    const password = await tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'ropc', client_secret: 'ropc-secret', username: 'nobody', password: 'x' });
    expect(password.status).toBe(400);
    expect(password.body).toEqual({ error: 'invalid_grant', error_description: 'resource owner password credentials grant is prohibited.' });
    // Another grant type is not picked by the condition.
    expect((await tokenRequest(t.url, REALM, { grant_type: 'client_credentials', client_id: 'ropc', client_secret: 'ropc-secret' })).status).toBe(200);
    await kc.clientPolicies.updatePolicy({ policies: [] });
  });

  it('runs at dynamic client registration: auto-configured when registered, a violating update refused', async () => {
    await kc.clientPolicies.createProfiles({
      profiles: [profile('dcr', [['pkce-enforcer', { 'auto-configure': true }], ['full-scope-disabled', { 'auto-configure': false }]]), profile('authenticator', [['secure-client-authenticator', { 'allowed-client-authenticators': ['client-jwt', 'client-secret'], 'default-client-authenticator': 'client-secret' }]])],
    });
    await kc.clientPolicies.updatePolicy({ policies: [policy('dcr', ['dcr', 'authenticator'])] });
    const initial = await api(t.url, 'POST', `/admin/realms/${REALM}/clients-initial-access`, kc.accessToken!, { count: 3, expiration: 600 });
    const register = (body: Record<string, unknown>) => api(t.url, 'POST', `/realms/${REALM}/clients-registrations/default`, initial.body.token, body);
    const wide = await register({ clientId: 'dcr-wide', redirectUris: [CALLBACK] });
    // Keycloak's default for a new client is full scope: the executor (not auto-configuring) refuses it.
    expect(wide.status).toBe(400);
    expect(wide.body).toEqual({ error: 'invalid_registration', error_description: 'Not permitted to enable fullScopeAllowed' });
    const jwtSecret = await register({ clientId: 'dcr-secret-jwt', redirectUris: [CALLBACK], fullScopeAllowed: false, clientAuthenticatorType: 'client-secret-jwt' });
    expect(jwtSecret.status).toBe(400);
    expect(jwtSecret.body).toEqual({ error: 'invalid_client_metadata', error_description: 'Invalid client metadata: token_endpoint_auth_method' });
    const made = await register({ clientId: 'dcr-narrow', redirectUris: [CALLBACK], fullScopeAllowed: false });
    expect(made.status).toBe(201);
    expect(made.body.attributes['pkce.code.challenge.method']).toBe('S256');
    expect(made.body.clientAuthenticatorType).toBe('client-secret');
    const update = await api(t.url, 'PUT', `/realms/${REALM}/clients-registrations/default/dcr-narrow`, made.body.registrationAccessToken, { ...made.body, fullScopeAllowed: true });
    expect(update.status).toBe(400);
    expect(update.body.error).toBe('invalid_registration');
    expect((await kc.clients.find({ clientId: 'dcr-narrow' }))[0].fullScopeAllowed).toBe(false);
    await kc.clientPolicies.updatePolicy({ policies: [] });
  });

  it('dynamic registration (openid-connect metadata): secure-client-authenticator refuses or defaults, pkce-enforcer and secure-redirect-uris-enforcer apply, an update is checked again', async () => {
    await kc.clientPolicies.createProfiles({
      profiles: [
        profile('oidc-dcr', [
          ['pkce-enforcer', { 'auto-configure': true }],
          ['secure-client-authenticator', { 'allowed-client-authenticators': ['client-secret', 'client-secret-jwt'], 'default-client-authenticator': 'client-secret-jwt' }],
          ['secure-redirect-uris-enforcer', { 'allow-ipv4-loopback-address': 'true', 'allow-http-scheme': 'true' }],
        ]),
      ],
    });
    await kc.clientPolicies.updatePolicy({ policies: [policy('oidc-dcr', ['oidc-dcr'])] });
    const initial = await api(t.url, 'POST', `/admin/realms/${REALM}/clients-initial-access`, kc.accessToken!, { count: 5, expiration: 600 });
    const oidc = (body: Record<string, unknown>) => api(t.url, 'POST', `/realms/${REALM}/clients-registrations/openid-connect`, initial.body.token, body);
    // An authentication method the executor does not allow: refused, nothing registered.
    const keyJwt = await oidc({ client_name: 'dcr-key-jwt', redirect_uris: [CALLBACK], token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [] } });
    expect(keyJwt.status).toBe(400);
    expect(keyJwt.body).toEqual({ error: 'invalid_client_metadata', error_description: 'Invalid client metadata: token_endpoint_auth_method' });
    // A redirect URI the executor refuses (a wildcard).
    const wildcard = await oidc({ client_name: 'dcr-wild', redirect_uris: ['https://app.example/*'] });
    expect(wildcard.status).toBe(400);
    expect(wildcard.body).toEqual({ error: 'invalid_request', error_description: 'Invalid Redirect Uri: invalid uri' });
    // Without token_endpoint_auth_method the metadata means client_secret_basic (allowed, as Keycloak's converter):
    // registered, with PKCE S256 auto-configured.
    const made = await oidc({ client_name: 'dcr-basic', redirect_uris: [CALLBACK] });
    expect(made.status).toBe(201);
    expect(made.body.token_endpoint_auth_method).toBe('client_secret_basic');
    const [stored] = await kc.clients.find({ clientId: made.body.client_id });
    expect(stored.attributes!['pkce.code.challenge.method']).toBe('S256');
    expect(stored.clientAuthenticatorType).toBe('client-secret');
    // The update is checked again: a disallowed method is refused and nothing changes (the token is not spent).
    const put = (body: Record<string, unknown>) => api(t.url, 'PUT', `/realms/${REALM}/clients-registrations/openid-connect/${made.body.client_id}`, made.body.registration_access_token, body);
    const refused = await put({ ...made.body, token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [] } });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('invalid_client_metadata');
    expect((await kc.clients.findOne({ id: stored.id! }))!.clientAuthenticatorType).toBe('client-secret');
    const allowed = await put({ ...made.body, token_endpoint_auth_method: 'client_secret_jwt' });
    expect(allowed.status).toBe(200);
    expect((await kc.clients.findOne({ id: stored.id! }))!.clientAuthenticatorType).toBe('client-secret-jwt');
    // Keycloak's representation without clientAuthenticatorType (the default provider) takes the executor's default,
    // even where the built-in one (client-secret) would be allowed.
    const rep = await api(t.url, 'POST', `/realms/${REALM}/clients-registrations/default`, initial.body.token, { clientId: 'dcr-default-auth', redirectUris: [CALLBACK] });
    expect(rep.status).toBe(201);
    expect(rep.body.clientAuthenticatorType).toBe('client-secret-jwt');
    await kc.clientPolicies.updatePolicy({ policies: [] });
  });

  it('secure-client-authenticator at the token endpoint: a client whose configured method is no longer allowed is refused', async () => {
    await kc.clients.create({ clientId: 'legacy-secret', publicClient: false, secret: 'legacy-secret-1', serviceAccountsEnabled: true, clientAuthenticatorType: 'client-secret' });
    const grant = () => tokenRequest(t.url, REALM, { grant_type: 'client_credentials', client_id: 'legacy-secret', client_secret: 'legacy-secret-1' });
    expect((await grant()).status).toBe(200);
    await kc.clientPolicies.createProfiles({ profiles: [profile('jwt-only', [['secure-client-authenticator', { 'allowed-client-authenticators': ['client-jwt'] }]])] });
    await kc.clientPolicies.updatePolicy({ policies: [policy('jwt-only', ['jwt-only'])] });
    const refused = await grant();
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ error: 'invalid_request', error_description: 'Configured client authentication method not allowed for client' });
    // So are its introspection and revocation (Keycloak's TOKEN_INTROSPECT and TOKEN_REVOKE).
    for (const path of ['token/introspect', 'revoke']) {
      const response = await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ client_id: 'legacy-secret', client_secret: 'legacy-secret-1', token: 'x' }),
      });
      expect(response.status, path).toBe(400);
      expect(await response.json()).toEqual({ error: 'invalid_request', error_description: 'Configured client authentication method not allowed for client' });
    }
    // A public client is not held to it.
    await kc.clients.create({ clientId: 'public-ropc', publicClient: true, directAccessGrantsEnabled: true });
    expect((await tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'public-ropc', username: 'nobody', password: 'x' })).body.error).toBe('invalid_grant');
    await kc.clientPolicies.updatePolicy({ policies: [] });
    expect((await grant()).status).toBe(200);
  });

  it('requires a DPoP proof at the token endpoint under dpop-bind-enforcer', async () => {
    await kc.clients.create({ clientId: 'dpop-svc', publicClient: false, secret: 'dpop-secret', serviceAccountsEnabled: true });
    await kc.clientPolicies.createProfiles({ profiles: [profile('dpop', [['dpop-bind-enforcer', { 'auto-configure': false }]])] });
    const grant = () => tokenRequest(t.url, REALM, { grant_type: 'client_credentials', client_id: 'dpop-svc', client_secret: 'dpop-secret' });
    expect((await grant()).status).toBe(200);
    await kc.clientPolicies.updatePolicy({ policies: [policy('dpop', ['dpop'], [['client-roles', { roles: ['dpop-bound'] }]])] });
    // The client-roles condition: not yet a client with that role.
    expect((await grant()).status).toBe(200);
    const [client] = await kc.clients.find({ clientId: 'dpop-svc' });
    await kc.clients.createRole({ id: client.id!, name: 'dpop-bound' });
    const refused = await grant();
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('invalid_dpop_proof');
    await kc.clientPolicies.updatePolicy({ policies: [] });
  });

  it('secure-redirect-uris-enforcer: redirect URIs refused or accepted by its configuration at create, update and registration', async () => {
    await kc.clientPolicies.createProfiles({ profiles: [profile('uris', [['secure-redirect-uris-enforcer', { 'allow-ipv4-loopback-address': 'true', 'allow-http-scheme': 'true' }]])] });
    await kc.clientPolicies.updatePolicy({ policies: [policy('uris', ['uris'])] });
    const create = (clientId: string, redirectUris: string[], extra: Record<string, unknown> = {}) => api(t.url, 'POST', `/admin/realms/${REALM}/clients`, kc.accessToken!, { clientId, redirectUris, ...extra });
    const wildcard = await create('uris-wild', ['https://app.example/*']);
    expect(wildcard.status).toBe(400);
    expect(wildcard.body).toEqual({ error: 'invalid_request', error_description: 'Invalid Redirect Uri: invalid uri' });
    const v6 = await create('uris-v6', ['http://[::1]:9/cb']);
    expect(v6.body).toEqual({ error: 'invalid_request', error_description: 'Invalid Redirect Uri: invalid loopback address' });
    const scheme = await create('uris-app', ['com.example.app:/cb']);
    expect(scheme.body).toEqual({ error: 'invalid_request', error_description: 'Invalid Redirect Uri: invalid private use scheme' });
    // None at all, with the standard flow on: refused; a post-logout URI is checked as well.
    expect((await create('uris-none', [])).body.error_description).toBe('Invalid Redirect Uri: invalid uri');
    expect((await create('uris-logout', ['http://127.0.0.1:9/cb'], { attributes: { 'post.logout.redirect.uris': 'https://*' } })).status).toBe(400);
    expect(await kc.clients.find({ clientId: 'uris-wild' })).toEqual([]);
    // Loopback over http, as configured, and an http URI (allow-http-scheme): accepted.
    expect((await create('uris-loopback', ['http://127.0.0.1:9/cb', 'http://app.example/cb'])).status).toBe(201);
    const [made] = await kc.clients.find({ clientId: 'uris-loopback' });
    const update = await api(t.url, 'PUT', `/admin/realms/${REALM}/clients/${made.id}`, kc.accessToken!, { ...made, redirectUris: ['http://127.0.0.1:9/cb', '/*'] });
    expect(update.status).toBe(400);
    expect(update.body.error).toBe('invalid_request');
    // Without a redirecting flow there is nothing to check.
    expect((await create('uris-service', [], { standardFlowEnabled: false, serviceAccountsEnabled: true, publicClient: false })).status).toBe(201);
    // Dynamic client registration, under the same executor.
    const initial = await api(t.url, 'POST', `/admin/realms/${REALM}/clients-initial-access`, kc.accessToken!, { count: 1, expiration: 600 });
    const dcr = await api(t.url, 'POST', `/realms/${REALM}/clients-registrations/openid-connect`, initial.body.token, { client_name: 'dcr-uris', redirect_uris: ['http://[::1]:9/cb'] });
    expect(dcr.status).toBe(400);
    expect(dcr.body).toEqual({ error: 'invalid_request', error_description: 'Invalid Redirect Uri: invalid loopback address' });
    // A permitted-domain pattern that is no regular expression is refused when saved.
    const badPattern = await api(t.url, 'PUT', `/admin/realms/${REALM}/client-policies/profiles`, kc.accessToken!, { profiles: [profile('p', [['secure-redirect-uris-enforcer', { 'allow-permitted-domains': ['(unclosed'] }]])] });
    expect(badPattern.status).toBe(400);
    expect(badPattern.body.errorMessage).toMatch(/allow-permitted-domains/);
    await kc.clientPolicies.updatePolicy({ policies: [] });
  });

  it('oauth-2-1-for-public-client can be named: OAuth 2.1 redirect URIs at create, the authorization request refused with an error page', async () => {
    await kc.clientPolicies.updatePolicy({ policies: [policy('oauth21', ['oauth-2-1-for-public-client'])] });
    const create = (clientId: string, redirectUris: string[]) => api(t.url, 'POST', `/admin/realms/${REALM}/clients`, kc.accessToken!, { clientId, publicClient: true, redirectUris });
    // OAuth 2.1: a loopback URI over https, registered without a port; http, a port, localhost, a one-word scheme refused.
    for (const uri of ['http://127.0.0.1/cb', 'https://127.0.0.1:8443/cb', 'https://localhost/cb', 'myapp:/cb']) {
      expect((await create('oauth21-bad', [uri])).status, uri).toBe(400);
    }
    expect((await create('oauth21-native', ['https://127.0.0.1/cb', 'https://[::1]/cb', 'com.example.app:/cb', 'https://app.example/cb'])).status).toBe(201);
    // The authorization request's redirect_uri (here http, which the profile does not allow): Keycloak's error page,
    // 400 with the executor's description, and no redirect to the client.
    const query = new URLSearchParams({ client_id: 'spa', redirect_uri: CALLBACK, response_type: 'code', scope: 'openid', code_challenge: CHALLENGE, code_challenge_method: 'S256' });
    const refused = await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/auth?${query}`, { redirect: 'manual' });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('location')).toBeNull();
    expect(await refused.text()).toContain('Invalid Redirect Uri: invalid loopback address');
    // As Keycloak's, client-access-type does not vote on that first look at the request (it abstains): a policy for
    // public clients only leaves the authorization request to the other executors.
    await kc.clientPolicies.updatePolicy({ policies: [policy('oauth21-public', ['oauth-2-1-for-public-client'], [['client-access-type', { type: ['public'] }]])] });
    expect(await authorize(t.url, 'spa', { code_challenge: CHALLENGE, code_challenge_method: 'S256' })).toMatchObject({ status: 200, error: null });
    await kc.clientPolicies.updatePolicy({ policies: [] });
  });

  it('reads and writes only with view-realm and manage-realm', async () => {
    const viewer = await tokenOfUserWithRoles(kc, t.url, 'policy-viewer', ['view-realm']);
    expect((await api(t.url, 'GET', `/admin/realms/${REALM}/client-policies/profiles?include-global-profiles=true`, viewer)).status).toBe(200);
    expect((await api(t.url, 'GET', `/admin/realms/${REALM}/client-policies/policies`, viewer)).status).toBe(200);
    expect((await api(t.url, 'PUT', `/admin/realms/${REALM}/client-policies/profiles`, viewer, { profiles: [] })).status).toBe(403);
    expect((await api(t.url, 'PUT', `/admin/realms/${REALM}/client-policies/policies`, viewer, { policies: [] })).status).toBe(403);
    const clients = await tokenOfUserWithRoles(kc, t.url, 'policy-clients', ['view-clients']);
    expect((await api(t.url, 'GET', `/admin/realms/${REALM}/client-policies/policies`, clients)).status).toBe(403);
  });

  it('round-trips through a realm file, and refuses a file naming an executor it does not run', async () => {
    const file = {
      realm: 'policies-file',
      enabled: true,
      clientProfiles: { profiles: [profile('file-profile', [['reject-ropc-grant', { 'auto-configure': 'true' }], ['dpop-bind-enforcer', { 'auto-configure': 'true' }]])] },
      clientPolicies: { policies: [policy('file-policy', ['file-profile'], [['client-access-type', { type: ['public'] }]])] },
    };
    await kc.realms.create(file);
    const exported = (await kc.realms.export({ realm: 'policies-file', exportClients: false, exportGroupsAndRoles: false })) as Record<string, unknown>;
    expect(exported.clientProfiles).toEqual(file.clientProfiles);
    expect(exported.clientPolicies).toEqual(file.clientPolicies);
    await kc.realms.del({ realm: 'policies-file' });
    await kc.realms.create(exported as Parameters<typeof kc.realms.create>[0]);
    expect((await kc.clientPolicies.listPolicies({ realm: 'policies-file' })).policies).toEqual(file.clientPolicies.policies);
    const refused = await api(t.url, 'POST', '/admin/realms', kc.accessToken!, { realm: 'policies-bad', clientProfiles: { profiles: [profile('x', [['client-secret-rotation']])] } });
    expect(refused.status).toBe(400);
    expect(refused.body.errorMessage).toMatch(/client-secret-rotation/);
    expect((await api(t.url, 'GET', '/admin/realms/policies-bad', kc.accessToken!)).status).toBe(404);
  });
});

describe('client policies on every node', () => {
  let nodes: { a: TestServer; b: TestServer; close(): Promise<void> };
  let kc: KcAdminClient;

  beforeAll(async () => {
    nodes = await startServerPair();
    kc = await masterAdminClient(nodes.a.url);
    await kc.realms.create({ realm: REALM, enabled: true });
    kc.setConfig({ realmName: REALM });
    await kc.clients.create({ clientId: 'web', publicClient: false, secret: 'web-secret', redirectUris: [CALLBACK] });
  }, 60_000);

  afterAll(async () => {
    await nodes?.close();
  });

  it('a policy saved on one node is enforced by the other', async () => {
    // Node b reads (and caches) the realm first.
    expect((await authorize(nodes.b.url, 'web')).error).toBeNull();
    await kc.clientPolicies.createProfiles({ profiles: [profile('pkce', [['pkce-enforcer']])] });
    await kc.clientPolicies.updatePolicy({ policies: [policy('pkce', ['pkce'])] });
    await eventually(async () => (await authorize(nodes.b.url, 'web')).error === 'invalid_request');
    await kc.clientPolicies.updatePolicy({ policies: [] });
    await eventually(async () => (await authorize(nodes.b.url, 'web')).error === null);
  });
});
