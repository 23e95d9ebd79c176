import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, httpDatabases, startServer, startServerPair, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 40, item 7: dynamic client registration as Keycloak 26.7.3 answers it (SQLite: HTTP behaviour; the storage
 * and its migration on both databases in storage-client-registration.test.ts). openid-client registers with an
 * initial access token; the registration access token reads, changes (and is replaced) and deletes; the policies
 * refuse an anonymous caller unless its address is trusted; tokens of other realms, spent, expired or a user's
 * without manage-clients are refused; hostile metadata is refused before anything is stored or fetched.
 */

const REALM = 'dcr';
const OTHER = 'dcr-other';
const PASSWORD = 'Registration-pass-7';
const POLICY_TYPE = 'org.keycloak.services.clientregistration.policy.ClientRegistrationPolicy';
const insecure = { execute: [oidc.allowInsecureRequests] };

describe.each(httpDatabases)('dynamic client registration (%s)', (database) => {
  let t: TestServer;
  let admin: string;
  const oidcPath = `/realms/${REALM}/clients-registrations/openid-connect`;
  const defaultPath = `/realms/${REALM}/clients-registrations/default`;

  const ok = (response: { status: number; body: unknown }) => expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
  const initialToken = async (realm: string, body: Record<string, unknown>) => {
    const created = await api(t.url, 'POST', `/admin/realms/${realm}/clients-initial-access`, admin, body);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body as { id: string; token: string; count: number; remainingCount: number; expiration: number; timestamp: number };
  };
  const userToken = async (username: string) => (await tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'admin-cli', username, password: PASSWORD })).body.access_token as string;
  const clientCount = async () => ((await api(t.url, 'GET', `/admin/realms/${REALM}/clients`, admin)).body as unknown[]).length;
  const policies = async () => (await api(t.url, 'GET', `/admin/realms/${REALM}/components?type=${POLICY_TYPE}`, admin)).body as { id: string; name: string; subType: string; providerId: string; config: Record<string, string[]> }[];
  const events = async (type: string) => ((await api(t.url, 'GET', `/admin/realms/${REALM}/events?type=${type}`, admin)).body as { type: string; clientId: string; error?: string; details?: Record<string, string> }[]);

  beforeAll(async () => {
    t = await startServer({ database });
    admin = await adminToken(t.url);
    ok(await api(t.url, 'POST', '/admin/realms', admin, { realm: REALM, enabled: true, eventsEnabled: true }));
    ok(await api(t.url, 'POST', '/admin/realms', admin, { realm: OTHER, enabled: true }));
    for (const username of ['plain', 'manager']) {
      ok(await api(t.url, 'POST', `/admin/realms/${REALM}/users`, admin, { username, email: `${username}@example.com`, emailVerified: true, firstName: 'A', lastName: 'B', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] }));
    }
    const [management] = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=realm-management`, admin)).body as { id: string }[];
    const manageClients = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients/${management.id}/roles/manage-clients`, admin)).body;
    const [manager] = (await api(t.url, 'GET', `/admin/realms/${REALM}/users?username=manager&exact=true`, admin)).body as { id: string }[];
    ok(await api(t.url, 'POST', `/admin/realms/${REALM}/users/${manager.id}/role-mappings/clients/${management.id}`, admin, [manageClients]));
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it("gives a new realm Keycloak's default policies, and lists the policy providers for the console", async () => {
    const names = (await policies()).map((p) => `${p.subType}/${p.name}`).sort();
    expect(names).toEqual([
      'anonymous/Allowed Client Scopes',
      'anonymous/Allowed Protocol Mapper Types',
      'anonymous/Consent Required',
      'anonymous/Full Scope Disabled',
      'anonymous/Max Clients Limit',
      'anonymous/Trusted Hosts',
      'authenticated/Allowed Client Scopes',
      'authenticated/Allowed Protocol Mapper Types',
    ]);
    const trusted = (await policies()).find((p) => p.name === 'Trusted Hosts')!;
    expect(trusted.config).toEqual({ 'trusted-hosts': [], 'host-sending-registration-request-must-match': ['true'], 'client-uris-must-match': ['true'] });
    const providers = await api(t.url, 'GET', `/admin/realms/${REALM}/client-registration-policy/providers`, admin);
    expect(providers.status).toBe(200);
    expect((providers.body as { id: string }[]).map((p) => p.id).sort()).toEqual(['allowed-client-templates', 'allowed-protocol-mappers', 'consent-required', 'max-clients', 'scope', 'trusted-hosts']);
    const discovery = await api(t.url, 'GET', `/realms/${REALM}/.well-known/openid-configuration`, null);
    expect(discovery.body.registration_endpoint).toBe(`${t.url}${oidcPath}`);
  });

  it('openid-client registers with an initial access token; the registration access token reads, updates (replaced: the old one refused) and deletes', async () => {
    const initial = await initialToken(REALM, { count: 2, expiration: 600 });
    expect(initial.token.split('.')).toHaveLength(3);
    const config = await oidc.dynamicClientRegistration(
      new URL(`${t.url}/realms/${REALM}`),
      { redirect_uris: ['http://127.0.0.1:9/cb'], grant_types: ['authorization_code', 'client_credentials', 'refresh_token'], client_name: 'Registered', token_endpoint_auth_method: 'client_secret_basic' },
      undefined,
      { ...insecure, initialAccessToken: initial.token },
    );
    const metadata = config.clientMetadata();
    expect(metadata.client_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(metadata).toMatchObject({ client_name: 'Registered', token_endpoint_auth_method: 'client_secret_basic', client_secret_expires_at: 0, redirect_uris: ['http://127.0.0.1:9/cb'] });
    expect(metadata.grant_types).toEqual(['authorization_code', 'client_credentials', 'refresh_token']);
    expect(typeof metadata.client_secret).toBe('string');
    expect(metadata.registration_client_uri).toBe(`${t.url}${oidcPath}/${metadata.client_id}`);
    expect(typeof metadata.client_id_issued_at).toBe('number');
    const firstToken = metadata.registration_access_token as string;

    // The registered client works: its service account gets a token with the secret it was given.
    const registered = new oidc.Configuration(config.serverMetadata(), metadata.client_id, metadata.client_secret as string, oidc.ClientSecretBasic(metadata.client_secret as string));
    oidc.allowInsecureRequests(registered);
    const granted = await oidc.clientCredentialsGrant(registered);
    expect(granted.access_token).toBeTruthy();

    // One use of the initial access token taken; the list never shows a token.
    const listed = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients-initial-access`, admin)).body as Record<string, unknown>[];
    expect(listed.find((m) => m.id === initial.id)).toEqual({ id: initial.id, timestamp: initial.timestamp, expiration: 600, count: 2, remainingCount: 1 });
    expect(JSON.stringify(listed)).not.toContain(initial.token);

    const uri = `${oidcPath}/${metadata.client_id}`;
    const read = await api(t.url, 'GET', uri, firstToken);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ client_id: metadata.client_id, client_secret: metadata.client_secret, registration_access_token: firstToken });

    const updated = await api(t.url, 'PUT', uri, firstToken, { client_id: metadata.client_id, client_name: 'Renamed', redirect_uris: ['http://127.0.0.1:9/other'], grant_types: ['authorization_code'] });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(updated.body).toMatchObject({ client_name: 'Renamed', redirect_uris: ['http://127.0.0.1:9/other'], grant_types: ['authorization_code'], client_secret: metadata.client_secret });
    const secondToken = updated.body.registration_access_token as string;
    expect(secondToken).toBeTruthy();
    expect(secondToken).not.toBe(firstToken);

    // The replaced token is refused for everything; the new one works.
    for (const [method, body] of [['GET', undefined], ['PUT', { client_id: metadata.client_id }], ['DELETE', undefined]] as const) {
      const refused = await api(t.url, method, uri, firstToken, body);
      expect(refused.status, method).toBe(401);
      expect(refused.body.error).toBe('invalid_token');
    }
    expect((await api(t.url, 'GET', uri, secondToken)).status).toBe(200);
    // Another client's path with this token: refused.
    expect((await api(t.url, 'GET', `${oidcPath}/admin-cli`, secondToken)).status).toBe(401);
    // Changing the client id is refused.
    const renamed = await api(t.url, 'PUT', uri, secondToken, { client_id: 'something-else' });
    expect(renamed.status).toBe(400);
    expect(renamed.body).toEqual({ error: 'invalid_client_metadata', error_description: 'Client Identifier modified' });

    const deleted = await api(t.url, 'DELETE', uri, secondToken);
    expect(deleted.status).toBe(204);
    expect((await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=${metadata.client_id}`, admin)).body).toEqual([]);
    expect((await api(t.url, 'GET', uri, secondToken)).status).toBe(401);

    // Keycloak's events, the client named, no token in them.
    for (const type of ['CLIENT_REGISTER', 'CLIENT_INFO', 'CLIENT_UPDATE', 'CLIENT_DELETE']) {
      expect((await events(type)).some((e) => e.clientId === metadata.client_id), type).toBe(true);
    }
    const updateErrors = await events('CLIENT_UPDATE_ERROR');
    expect(updateErrors.find((e) => e.clientId === metadata.client_id)).toMatchObject({ error: 'invalid_token' });
    const allEvents = JSON.stringify((await api(t.url, 'GET', `/admin/realms/${REALM}/events?max=500`, admin)).body);
    expect(allEvents).not.toContain(firstToken.split('.')[2]);
    expect(allEvents).not.toContain(initial.token.split('.')[2]);
    // Nor in the server's log.
    const logged = JSON.stringify(t.logs);
    for (const token of [initial.token, firstToken, secondToken]) expect(logged).not.toContain(token.split('.')[2]);
    // The database keeps hashes only: no token's secret `jti` is stored.
    const jti = (token: string) => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).jti as string;
    const stored = JSON.stringify([...(await t.server.context.storage.db.selectFrom('client_initial_access').selectAll().execute()), ...(await t.server.context.storage.db.selectFrom('client_registration_token').selectAll().execute())]);
    for (const token of [initial.token, secondToken]) expect(stored).not.toContain(jti(token));
  });

  it('refuses a spent, expired, deleted or foreign initial access token, and a registration with none when the anonymous policies refuse', async () => {
    const register = (token: string | null, body: Record<string, unknown> = { redirect_uris: ['http://127.0.0.1:9/cb'] }) => api(t.url, 'POST', oidcPath, token, body);
    const before = await clientCount();

    const once = await initialToken(REALM, { count: 1 });
    expect((await register(once.token)).status).toBe(201);
    const spent = await register(once.token);
    expect(spent.status).toBe(401);
    expect(spent.body).toEqual({ error: 'invalid_token', error_description: 'No remaining count on initial access token' });

    // Expired: made with an expiration already behind it (`exp` in the past).
    const expired = await api(t.url, 'POST', `/admin/realms/${REALM}/clients-initial-access`, admin, { count: 5, expiration: 1 });
    const payload = JSON.parse(Buffer.from((expired.body.token as string).split('.')[1], 'base64url').toString());
    expect(payload).toMatchObject({ typ: 'InitialAccessToken', exp: expired.body.timestamp + 1 });
    const storage = t.server.context.storage;
    await storage.db.updateTable('client_initial_access').set({ created_at: Math.floor(Date.now() / 1000) - 3600 }).where('id', '=', expired.body.id).execute();
    const late = await register(expired.body.token);
    expect(late.status).toBe(401);
    expect(late.body.error).toBe('invalid_token');

    const removed = await initialToken(REALM, { count: 5 });
    expect((await api(t.url, 'DELETE', `/admin/realms/${REALM}/clients-initial-access/${removed.id}`, admin)).status).toBe(204);
    expect((await register(removed.token)).body).toEqual({ error: 'invalid_token', error_description: 'Initial Access Token not found' });

    const foreign = await initialToken(OTHER, { count: 5 });
    const fromOther = await register(foreign.token);
    expect(fromOther.status).toBe(401);
    expect(fromOther.body.error).toBe('invalid_token');

    // Anonymous, from 127.0.0.1, with no trusted host: the Trusted Hosts policy refuses.
    const anonymous = await register(null);
    expect(anonymous.status).toBe(403);
    expect(anonymous.body).toEqual({ error: 'insufficient_scope', error_description: "Policy 'Trusted Hosts' rejected request to client-registration service. Details: Host not trusted." });
    // A token that is not one (garbage): 401.
    expect((await register('not.a.token')).status).toBe(401);
    expect(await clientCount()).toBe(before + 1);
    expect((await events('CLIENT_REGISTER_ERROR')).map((e) => e.error)).toEqual(expect.arrayContaining(['invalid_token', 'not_allowed']));
  });

  it('an anonymous registration passes once 127.0.0.1 is trusted (and consent is not required); its URIs must be on trusted hosts; max clients', async () => {
    const all = await policies();
    const trusted = all.find((p) => p.name === 'Trusted Hosts')!;
    // A forwarded address is not the sender's unless it came through a trusted proxy (none here); no DNS is asked.
    ok(await api(t.url, 'PUT', `/admin/realms/${REALM}/components/${trusted.id}`, admin, { ...trusted, config: { ...trusted.config, 'trusted-hosts': ['10.9.9.9', 'registrar.example'] } }));
    const spoofed = await api(t.url, 'POST', oidcPath, null, { redirect_uris: ['http://127.0.0.1:9/cb'] }, { 'x-forwarded-for': '10.9.9.9', 'x-real-ip': '10.9.9.9' });
    expect(spoofed.status).toBe(403);
    expect(spoofed.body.error_description).toContain('Host not trusted.');
    ok(await api(t.url, 'PUT', `/admin/realms/${REALM}/components/${trusted.id}`, admin, { ...trusted, config: { ...trusted.config, 'trusted-hosts': ['127.0.0.1'] } }));
    const register = (body: Record<string, unknown>) => api(t.url, 'POST', oidcPath, null, body);

    // As Keycloak's: the Consent Required policy makes the client ask the user's consent, and keeps it so.
    const consent = await register({ redirect_uris: ['http://127.0.0.1:9/cb'] });
    expect(consent.status, JSON.stringify(consent.body)).toBe(201);
    const [consenting] = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=${consent.body.client_id}`, admin)).body as { consentRequired: boolean }[];
    expect(consenting.consentRequired).toBe(true);
    const unset = await api(t.url, 'PUT', `${defaultPath}/${consent.body.client_id}`, consent.body.registration_access_token, { clientId: consent.body.client_id, consentRequired: false });
    expect(unset.status).toBe(403);
    expect(unset.body.error_description).toBe("Policy 'Consent Required' rejected request to client-registration service. Details: Not permitted to update consentRequired to false");
    ok(await api(t.url, 'DELETE', `/admin/realms/${REALM}/components/${all.find((p) => p.name === 'Consent Required')!.id}`, admin));

    const created = await register({ redirect_uris: ['http://127.0.0.1:9/cb'], client_name: 'Anonymous app' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    // Full Scope Disabled applied; Consent Required, removed, no longer.
    const [stored] = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=${created.body.client_id}`, admin)).body as { fullScopeAllowed: boolean; consentRequired: boolean }[];
    expect(stored.fullScopeAllowed).toBe(false);
    expect(stored.consentRequired).toBe(false);
    // Its registration access token is an anonymous one: the anonymous policies still apply to it.
    const read = await api(t.url, 'GET', `${oidcPath}/${created.body.client_id}`, created.body.registration_access_token);
    expect(read.status).toBe(200);

    const elsewhere = await register({ redirect_uris: ['https://evil.example/cb'] });
    expect(elsewhere.status).toBe(403);
    expect(elsewhere.body.error_description).toBe("Policy 'Trusted Hosts' rejected request to client-registration service. Details: URI doesn't match any trusted host or trusted domain");
    const viaRoot = await api(t.url, 'POST', defaultPath, null, { clientId: 'rooted', rootUrl: 'https://evil.example', redirectUris: ['/cb'] });
    expect(viaRoot.status).toBe(403);

    const max = all.find((p) => p.name === 'Max Clients Limit')!;
    const count = await clientCount();
    ok(await api(t.url, 'PUT', `/admin/realms/${REALM}/components/${max.id}`, admin, { ...max, config: { 'max-clients': [String(count)] } }));
    const full = await register({ redirect_uris: ['http://127.0.0.1:9/cb'] });
    expect(full.status).toBe(403);
    expect(full.body.error_description).toBe(`Policy 'Max Clients Limit' rejected request to client-registration service. Details: It's allowed to have max ${count} clients per realm`);
    ok(await api(t.url, 'PUT', `/admin/realms/${REALM}/components/${trusted.id}`, admin, trusted));
    expect(await clientCount()).toBe(count);
  });

  it("a user's token registers with manage-clients (authenticated policies), and is refused without it", async () => {
    const plain = await api(t.url, 'POST', oidcPath, await userToken('plain'), { redirect_uris: ['http://127.0.0.1:9/cb'] });
    expect(plain.status).toBe(403);
    expect(plain.body).toEqual({ error: 'insufficient_scope', error_description: 'Forbidden' });
    const manager = await userToken('manager');
    const created = await api(t.url, 'POST', defaultPath, manager, { clientId: 'by-manager', redirectUris: ['https://app.example/cb'], protocolMappers: [] });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ clientId: 'by-manager', redirectUris: ['https://app.example/cb'] });
    expect(typeof created.body.secret).toBe('string');
    expect(typeof created.body.registrationAccessToken).toBe('string');
    // The manager reads it back; another realm's administrator token (master) is not this realm's.
    expect((await api(t.url, 'GET', `${defaultPath}/by-manager`, manager)).status).toBe(200);
    expect((await api(t.url, 'GET', `${defaultPath}/by-manager`, admin)).status).toBe(401);
    // A client not registered here is out of reach of a user's token: the admin API's rules apply to it.
    expect((await api(t.url, 'GET', `${defaultPath}/admin-cli`, manager)).status).toBe(403);
    expect((await api(t.url, 'GET', `${defaultPath}/nobody`, manager)).status).toBe(404);
    // Authenticated policies: a mapper type or client scope not allowed.
    const mapper = await api(t.url, 'POST', defaultPath, manager, { clientId: 'with-mapper', protocolMappers: [{ name: 'x', protocol: 'openid-connect', protocolMapper: 'oidc-hardcoded-claim-mapper', config: { 'claim.name': 'x', 'claim.value': 'y', 'access.token.claim': 'true' } }] });
    expect(mapper.status).toBe(403);
    expect(mapper.body.error_description).toBe("Policy 'Allowed Protocol Mapper Types' rejected request to client-registration service. Details: ProtocolMapper type not allowed");
    const scope = await api(t.url, 'POST', oidcPath, manager, { redirect_uris: ['https://app.example/cb'], scope: 'no-such-scope' });
    expect(scope.status).toBe(403);
    expect(scope.body.error_description).toBe("Policy 'Allowed Client Scopes' rejected request to client-registration service. Details: Not permitted to use specified clientScope");
  });

  it('refuses hostile metadata before anything is stored or fetched', async () => {
    const initial = await initialToken(REALM, { count: 20 });
    const register = (body: unknown) => api(t.url, 'POST', oidcPath, initial.token, body);
    const before = await clientCount();

    const script = await register({ redirect_uris: ['javascript:alert(1)'] });
    expect(script.status).toBe(400);
    expect(script.body.error).toBe('invalid_redirect_uri');
    expect((await api(t.url, 'POST', defaultPath, initial.token, { clientId: 'scripted', redirectUris: ['javascript:alert(document.cookie)'] })).body.error).toBe('invalid_redirect_uri');

    const method = await register({ redirect_uris: ['http://127.0.0.1:9/cb'], token_endpoint_auth_method: 'tls_client_auth_of_doom' });
    expect(method.status).toBe(400);
    expect(method.body.error).toBe('invalid_client_metadata');
    expect(method.body.error_description).toContain('token_endpoint_auth_method');

    // A JWKS URL at the cloud metadata address is refused at registration; nothing is fetched (nothing listens there
    // for this test, and the refusal is the guard's static judgement of the URL).
    const metadataAddress = await register({ redirect_uris: ['http://127.0.0.1:9/cb'], token_endpoint_auth_method: 'private_key_jwt', jwks_uri: 'http://169.254.169.254/latest/jwks' });
    expect(metadataAddress.status).toBe(400);
    expect(metadataAddress.body.error).toBe('invalid_client_metadata');
    expect(metadataAddress.body.error_description).toContain('jwks.url');
    // A JWKS URL the guard lets through is kept, not fetched at registration: a loopback listener sees no connection.
    let connections = 0;
    const listener = createServer((_req, res) => res.end('{"keys":[]}'));
    listener.on('connection', () => (connections += 1));
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    try {
      const jwksUri = `http://127.0.0.1:${(listener.address() as AddressInfo).port}/jwks`;
      const kept = await api(t.url, 'POST', oidcPath, (await initialToken(REALM, { count: 1 })).token, { redirect_uris: ['http://127.0.0.1:9/cb'], token_endpoint_auth_method: 'private_key_jwt', jwks_uri: jwksUri });
      expect(kept.status, JSON.stringify(kept.body)).toBe(201);
      expect(kept.body).toMatchObject({ token_endpoint_auth_method: 'private_key_jwt', jwks_uri: jwksUri });
      expect(kept.body.client_secret).toBeUndefined();
      expect(connections).toBe(0);
      expect((await api(t.url, 'DELETE', `${oidcPath}/${kept.body.client_id}`, kept.body.registration_access_token)).status).toBe(204);
    } finally {
      await new Promise((resolve) => listener.close(resolve));
    }
    const both = await register({ redirect_uris: ['http://127.0.0.1:9/cb'], jwks_uri: 'http://127.0.0.1:9/jwks', jwks: { keys: [] } });
    expect(both.body).toEqual({ error: 'invalid_client_metadata', error_description: 'Client metadata invalid: Illegal to use both jwks_uri and jwks' });
    const keyless = await register({ redirect_uris: ['http://127.0.0.1:9/cb'], token_endpoint_auth_method: 'private_key_jwt' });
    expect(keyless.body.error).toBe('invalid_client_metadata');
    const included = await register({ client_id: 'chosen', redirect_uris: ['http://127.0.0.1:9/cb'] });
    expect(included.body).toEqual({ error: 'invalid_client_metadata', error_description: 'Client Identifier included' });
    const wrongTypes = await register({ redirect_uris: 'http://127.0.0.1:9/cb' });
    expect(wrongTypes.body.error).toBe('invalid_client_metadata');
    expect(wrongTypes.body.error_description).toContain('redirect_uris');
    const many = await register({ redirect_uris: Array.from({ length: 5000 }, (_, i) => `http://127.0.0.1:9/cb${i}`) });
    expect(many.status).toBe(400);
    expect(many.body.error).toBe('invalid_client_metadata');
    // A body over the JSON limit: 413 before it is read as metadata.
    const huge = await register({ redirect_uris: ['http://127.0.0.1:9/cb'], client_name: 'x'.repeat(2 * 1024 * 1024) });
    expect(huge.status).toBe(413);
    // A default-provider body that names an administration client's id, or the master realm's administration ids.
    expect((await api(t.url, 'POST', defaultPath, initial.token, { clientId: 'admin-cli' })).body.error).toBe('invalid_client_metadata');
    const masterInitial = await initialToken('master', { count: 1 });
    const masterRegistration = await api(t.url, 'POST', '/realms/master/clients-registrations/default', masterInitial.token, { clientId: 'future-realm' });
    expect(masterRegistration.body.error).toBe('invalid_client_metadata');

    // Flow overrides decide how users sign in: not set by an initial access token's holder.
    const flows = (await api(t.url, 'GET', `/admin/realms/${REALM}/authentication/flows`, admin)).body as { id: string; alias: string }[];
    const overridden = await api(t.url, 'POST', defaultPath, initial.token, { clientId: 'weak-flow', authenticationFlowBindingOverrides: { browser: flows.find((f) => f.alias === 'direct grant')!.id } });
    expect(overridden.status).toBe(400);
    expect(overridden.body.error_description).toContain('authenticationFlowBindingOverrides are set by an administrator');

    expect(await clientCount()).toBe(before);
    const left = ((await api(t.url, 'GET', `/admin/realms/${REALM}/clients-initial-access`, admin)).body as { id: string; remainingCount: number }[]).find((m) => m.id === initial.id);
    expect(left?.remainingCount).toBe(20);
  });

  it('tls_client_auth with tls_client_auth_subject_dn registers a client-x509 client (x509.subjectdn, compared as a DN); without a subject DN, or with a SAN match, it is refused', async () => {
    const initial = await initialToken(REALM, { count: 10 });
    const register = (body: Record<string, unknown>) => api(t.url, 'POST', oidcPath, initial.token, body);
    const dn = 'CN=registered-app, OU=Payments, O="Partner, Inc.", C=DE';
    const created = await register({ redirect_uris: ['http://127.0.0.1:9/cb'], grant_types: ['client_credentials'], token_endpoint_auth_method: 'tls_client_auth', tls_client_auth_subject_dn: dn, tls_client_certificate_bound_access_tokens: true });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ token_endpoint_auth_method: 'tls_client_auth', tls_client_auth_subject_dn: dn, tls_client_certificate_bound_access_tokens: true });
    // No secret: the certificate is the credential.
    expect(created.body.client_secret).toBeUndefined();
    const [stored] = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=${created.body.client_id}`, admin)).body as { clientAuthenticatorType: string; publicClient: boolean; serviceAccountsEnabled: boolean; attributes: Record<string, string> }[];
    expect(stored).toMatchObject({ clientAuthenticatorType: 'client-x509', publicClient: false, serviceAccountsEnabled: true });
    expect(stored.attributes).toMatchObject({ 'x509.subjectdn': dn, 'x509.allow.regex.pattern.comparison': 'false', 'tls.client.certificate.bound.access.tokens': 'true' });
    // Its secret (it has one, as every confidential client) does not let it in instead of a certificate.
    const secret = ((await api(t.url, 'GET', `/admin/realms/${REALM}/clients/${(await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=${created.body.client_id}`, admin)).body[0].id}/client-secret`, admin)).body as { value?: string }).value;
    const bySecret = await tokenRequest(t.url, REALM, { grant_type: 'client_credentials', client_id: created.body.client_id, client_secret: secret ?? 'none' });
    expect(bySecret.status).toBe(401);
    expect(bySecret.body.error).toBe('invalid_client');

    // An update keeps the subject DN unless it names another; a read answers it.
    const uri = `${oidcPath}/${created.body.client_id}`;
    const updated = await api(t.url, 'PUT', uri, created.body.registration_access_token, { client_id: created.body.client_id, redirect_uris: ['http://127.0.0.1:9/cb'], grant_types: ['client_credentials'], token_endpoint_auth_method: 'tls_client_auth', tls_client_auth_subject_dn: 'CN=renamed-app' });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(updated.body).toMatchObject({ tls_client_auth_subject_dn: 'CN=renamed-app', tls_client_certificate_bound_access_tokens: true });

    const before = await clientCount();
    for (const [body, field] of [
      [{ token_endpoint_auth_method: 'tls_client_auth' }, 'tls_client_auth_subject_dn'],
      [{ token_endpoint_auth_method: 'tls_client_auth', tls_client_auth_san_dns: 'app.example' }, 'tls_client_auth_san_dns'],
      [{ token_endpoint_auth_method: 'tls_client_auth', tls_client_auth_subject_dn: 'CN=a', tls_client_auth_san_uri: 'https://app.example' }, 'tls_client_auth_san_uri'],
      [{ token_endpoint_auth_method: 'tls_client_auth', tls_client_auth_subject_dn: 'not a distinguished name' }, 'x509.subjectdn'],
      [{ token_endpoint_auth_method: 'tls_client_auth', tls_client_auth_subject_dn: 42 }, 'tls_client_auth_subject_dn'],
      [{ token_endpoint_auth_method: 'tls_client_auth', tls_client_auth_subject_dn: 'CN=a', tls_client_certificate_bound_access_tokens: 'yes' }, 'tls_client_certificate_bound_access_tokens'],
    ] as const) {
      const refused = await register({ redirect_uris: ['http://127.0.0.1:9/cb'], ...body });
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.body.error).toBe('invalid_client_metadata');
      expect(refused.body.error_description, JSON.stringify(body)).toContain(field);
    }
    expect(await clientCount()).toBe(before);
    // A client_secret_basic client keeps its metadata free of a subject DN.
    const plain = await register({ redirect_uris: ['http://127.0.0.1:9/cb'] });
    expect(plain.status).toBe(201);
    expect(plain.body.tls_client_auth_subject_dn).toBeUndefined();
    expect(plain.body.tls_client_certificate_bound_access_tokens).toBe(false);
  });

  it("an administrator's registration access token for a client (generate-registration-access-token) replaces the previous one", async () => {
    ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { clientId: 'managed', redirectUris: ['https://app.example/cb'] }));
    const [managed] = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=managed`, admin)).body as { id: string }[];
    const first = await api(t.url, 'POST', `/admin/realms/${REALM}/clients/${managed.id}/registration-access-token`, admin);
    expect(first.status).toBe(200);
    expect(first.body.clientId).toBe('managed');
    const second = await api(t.url, 'POST', `/admin/realms/${REALM}/clients/${managed.id}/registration-access-token`, admin);
    expect((await api(t.url, 'GET', `${defaultPath}/managed`, first.body.registrationAccessToken)).status).toBe(401);
    const read = await api(t.url, 'GET', `${defaultPath}/managed`, second.body.registrationAccessToken);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ clientId: 'managed', registrationAccessToken: second.body.registrationAccessToken });
    // Not for a user without manage-clients.
    expect((await api(t.url, 'POST', `/admin/realms/${REALM}/clients/${managed.id}/registration-access-token`, await userToken('plain'))).status).toBe(403);
    // A path that names no storable client id (NUL, over-long): refused like an unknown client, never a 5xx.
    for (const raw of ['%00', 'a'.repeat(300), '..%2F..%2Fadmin']) {
      expect((await api(t.url, 'GET', `${defaultPath}/${raw}`, second.body.registrationAccessToken)).status, raw).toBe(401);
      expect((await api(t.url, 'GET', `${defaultPath}/${raw}`, await userToken('manager'))).status, raw).toBe(404);
    }
    // No provider beyond Keycloak's two.
    expect((await api(t.url, 'GET', `/realms/${REALM}/clients-registrations/install/managed`, second.body.registrationAccessToken)).status).toBe(404);
  });
});

describe('dynamic client registration on two nodes', () => {
  let pair: Awaited<ReturnType<typeof startServerPair>>;
  let admin: string;
  beforeAll(async () => {
    // One public base URL for both nodes, as behind a load balancer: tokens of one node are the other's too.
    pair = await startServerPair({ REALMGATE_HOSTNAME: 'http://auth.dcr.localhost' });
    admin = await adminToken(pair.a.url);
    expect((await api(pair.a.url, 'POST', '/admin/realms', admin, { realm: REALM, enabled: true })).status).toBe(201);
  }, 60_000);
  afterAll(async () => {
    await pair?.close();
  });

  it('the last use of an initial access token and a registration access token are each taken once across nodes', async () => {
    const path = `/realms/${REALM}/clients-registrations/openid-connect`;
    const initial = await api(pair.a.url, 'POST', `/admin/realms/${REALM}/clients-initial-access`, admin, { count: 1 });
    const registrations = await Promise.all([pair.a, pair.b, pair.a, pair.b].map((node) => api(node.url, 'POST', path, initial.body.token, { redirect_uris: ['http://127.0.0.1:9/cb'] })));
    expect(registrations.map((r) => r.status).sort()).toEqual([201, 401, 401, 401]);
    const created = registrations.find((r) => r.status === 201)!.body;
    expect(registrations.filter((r) => r.status === 401).map((r) => r.body.error_description)).toEqual(Array(3).fill('No remaining count on initial access token'));
    expect(created.registration_client_uri).toBe(`http://auth.dcr.localhost${path}/${created.client_id}`);
    const uri = `${path}/${created.client_id}`;
    const updates = await Promise.all([pair.a, pair.b, pair.a, pair.b].map((n) => api(n.url, 'PUT', uri, created.registration_access_token, { client_id: created.client_id, redirect_uris: ['http://127.0.0.1:9/cb'] })));
    expect(updates.map((u) => u.status).sort()).toEqual([200, 401, 401, 401]);
    // Both nodes refuse the old token and take the new one.
    const next = updates.find((u) => u.status === 200)!.body.registration_access_token;
    for (const n of [pair.a, pair.b]) {
      expect((await api(n.url, 'GET', uri, created.registration_access_token)).status).toBe(401);
      expect((await api(n.url, 'GET', uri, next)).status).toBe(200);
    }
  });
});
