import { SignJWT, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FormClient, inputValue } from './support/forms.js';
import { adminToken, api, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 41 item 2 and the FAPI profiles: the executors Keycloak 26.7.3's FAPI 1 baseline and FAPI 2.0 security profiles
 * name (secure-session, secure-signature-algorithm, secure-par-content, secure-client-uris,
 * secure-signature-algorithm-signed-jwt, secure-client-authentication-assertion) and the conditions its default
 * policies use (client-updater-context, client-updater-source-host), each with a request it accepts and one it refuses
 * as Keycloak does (statuses, `error` and `error_description` checked against a running Keycloak 26.7.3).
 */
const REALM = 'fapi';
const PASSWORD = 'Fapi-password-7';
const SECURE_CALLBACK = 'https://app.example/cb';
const insecure = { execute: [oidc.allowInsecureRequests] };

const profile = (name: string, executors: [string, Record<string, unknown>?][]) => ({ name, executors: executors.map(([executor, configuration = {}]) => ({ executor, configuration })) });
const policy = (name: string, profiles: string[], conditions: [string, Record<string, unknown>?][] = [['any-client']]) => ({
  name,
  enabled: true,
  conditions: conditions.map(([condition, configuration = {}]) => ({ condition, configuration })),
  profiles,
});

describe('client policies: the FAPI executors and the updater conditions', () => {
  let t: TestServer;
  let admin: string;
  let issuer: string;

  const put = (path: 'profiles' | 'policies', body: unknown) => api(t.url, 'PUT', `/admin/realms/${REALM}/client-policies/${path}`, admin, body);
  async function usePolicy(executors: [string, Record<string, unknown>?][], conditions?: [string, Record<string, unknown>?][]) {
    expect((await put('profiles', { profiles: [profile('under-test', executors)] })).status).toBe(204);
    const saved = await put('policies', { policies: [policy('under-test', ['under-test'], conditions)] });
    expect(saved.status, JSON.stringify(saved.body)).toBe(204);
  }
  const clearPolicies = async () => {
    expect((await put('policies', { policies: [] })).status).toBe(204);
  };
  const createClient = (rep: Record<string, unknown>) => api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, rep);
  const clientNamed = async (clientId: string) => {
    const list = await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=${clientId}`, admin);
    return list.body[0] as { id: string; attributes: Record<string, string>; redirectUris: string[] } & Record<string, unknown>;
  };
  /** The authorization endpoint's answer without a browser: the redirect's error, or the page's status. */
  async function authorize(query: Record<string, string>) {
    const answer = await fetch(`${issuer}/protocol/openid-connect/auth?${new URLSearchParams(query)}`, { redirect: 'manual' });
    const location = answer.headers.get('location');
    const params = location ? new URL(location).searchParams : null;
    return { status: answer.status, error: params?.get('error') ?? null, description: params?.get('error_description') ?? null, text: answer.status === 302 ? '' : await answer.text() };
  }
  async function push(form: Record<string, string>) {
    const response = await fetch(`${issuer}/protocol/openid-connect/ext/par/request`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) });
    return { status: response.status, body: (await response.json()) as Record<string, string> };
  }

  beforeAll(async () => {
    t = await startServer();
    admin = await adminToken(t.url);
    expect((await api(t.url, 'POST', '/admin/realms', admin, { realm: REALM, enabled: true })).status).toBe(201);
    issuer = `${t.url}/realms/${REALM}`;
    const user = await api(t.url, 'POST', `/admin/realms/${REALM}/users`, admin, { username: 'fay', email: 'fay@example.com', emailVerified: true, firstName: 'Fay', lastName: 'Pi', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] });
    expect(user.status).toBe(201);
    // Registered before any policy: a confidential client with an https and a loopback http redirect URI.
    expect((await createClient({ clientId: 'web', secret: 'web-secret', redirectUris: [SECURE_CALLBACK, 'http://127.0.0.1:9/cb', 'http://10.1.2.3/cb'] })).status).toBe(201);
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  it('secure-session: an OpenID request without nonce, or an OAuth one without state, goes back with invalid_request', async () => {
    await usePolicy([['secure-session']]);
    const base = { client_id: 'web', response_type: 'code', redirect_uri: SECURE_CALLBACK };
    expect(await authorize({ ...base, scope: 'openid', state: 's' })).toMatchObject({ status: 302, error: 'invalid_request', description: 'Missing parameter: nonce' });
    expect(await authorize({ ...base, scope: 'profile' })).toMatchObject({ status: 302, error: 'invalid_request', description: 'Missing parameter: state' });
    // Accepted: the login page shows.
    expect((await authorize({ ...base, scope: 'openid', nonce: 'n-1' })).status).toBe(200);
    expect((await authorize({ ...base, scope: 'profile', state: 's-1' })).status).toBe(200);
    await clearPolicies();
    expect((await authorize({ ...base, scope: 'openid' })).status).toBe(200);
  });

  it('secure-signature-algorithm: left-out algorithms take the default, one FAPI does not allow is refused', async () => {
    await usePolicy([['secure-signature-algorithm', { 'default-algorithm': 'ES256' }]]);
    const refused = await createClient({ clientId: 'rs', secret: 's', redirectUris: [SECURE_CALLBACK], attributes: { 'id.token.signed.response.alg': 'RS256' } });
    expect(refused).toMatchObject({ status: 400, body: { error: 'invalid_request', error_description: 'not allowed signature algorithm.' } });
    expect((await createClient({ clientId: 'es', secret: 's', redirectUris: [SECURE_CALLBACK], attributes: { 'token.endpoint.auth.signing.alg': 'PS256' } })).status).toBe(201);
    const es = await clientNamed('es');
    // Through the admin API the access token's algorithm is one of them (as Keycloak's).
    expect(es.attributes).toMatchObject({
      'id.token.signed.response.alg': 'ES256',
      'access.token.signed.response.alg': 'ES256',
      'user.info.response.signature.alg': 'ES256',
      'request.object.signature.alg': 'ES256',
      'token.endpoint.auth.signing.alg': 'PS256',
    });
    // An update to an algorithm FAPI does not allow is refused and nothing changes.
    const update = await api(t.url, 'PUT', `/admin/realms/${REALM}/clients/${es.id}`, admin, { ...es, attributes: { ...es.attributes, 'access.token.signed.response.alg': 'HS256' } });
    expect(update).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    expect((await clientNamed('es')).attributes['access.token.signed.response.alg']).toBe('ES256');
    // Dynamic registration: the four metadata algorithms, not the access token's.
    const initial = await api(t.url, 'POST', `/admin/realms/${REALM}/clients-initial-access`, admin, { count: 1, expiration: 600 });
    const registered = await api(t.url, 'POST', `/realms/${REALM}/clients-registrations/default`, initial.body.token, { clientId: 'dyn-es', redirectUris: [SECURE_CALLBACK] });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    expect(registered.body.attributes['id.token.signed.response.alg']).toBe('ES256');
    expect(registered.body.attributes['access.token.signed.response.alg']).toBeUndefined();
    // The default must be an algorithm FAPI allows (Keycloak would silently take PS256 instead).
    const badDefault = await put('profiles', { profiles: [profile('bad', [['secure-signature-algorithm', { 'default-algorithm': 'RS256' }]])] });
    expect(badDefault.status).toBe(400);
    expect(badDefault.body.errorMessage).toMatch(/default-algorithm/);
    await clearPolicies();
  });

  it('secure-client-uris: http or wildcard URIs refused at create and update, and at the authorization request unless allowed on localhost', async () => {
    await usePolicy([['secure-client-uris', { 'allow-http-on-localhost': true }]]);
    expect(await createClient({ clientId: 'plain', secret: 's', redirectUris: ['http://127.0.0.1:9/cb'] })).toMatchObject({ status: 400, body: { error: 'invalid_client_metadata', error_description: 'Invalid redirectUris' } });
    expect(await createClient({ clientId: 'wild', secret: 's', redirectUris: ['https://app.example/*'] })).toMatchObject({ status: 400, body: { error_description: 'Invalid redirectUris' } });
    expect(await createClient({ clientId: 'jwks', secret: 's', redirectUris: [SECURE_CALLBACK], attributes: { 'jwks.url': 'http://keys.example/jwks' } })).toMatchObject({ status: 400, body: { error_description: 'Invalid jwksUri' } });
    // A root URL and no redirect URI: the root URL is the redirect URI.
    expect((await createClient({ clientId: 'rooted', secret: 's', rootUrl: 'https://rooted.example/' })).status).toBe(201);
    expect((await clientNamed('rooted')).redirectUris).toEqual(['https://rooted.example/']);
    const base = { client_id: 'web', response_type: 'code', scope: 'openid' };
    expect((await authorize({ ...base, redirect_uri: SECURE_CALLBACK })).status).toBe(200);
    expect((await authorize({ ...base, redirect_uri: 'http://127.0.0.1:9/cb' })).status).toBe(200);
    expect(await authorize({ ...base, redirect_uri: 'http://10.1.2.3/cb' })).toMatchObject({ status: 302, error: 'invalid_request', description: 'Invalid redirect_uri' });
    // Without allow-http-on-localhost, loopback http is refused too.
    await usePolicy([['secure-client-uris']]);
    expect(await authorize({ ...base, redirect_uri: 'http://127.0.0.1:9/cb' })).toMatchObject({ status: 302, error: 'invalid_request', description: 'Invalid redirect_uri' });
    await clearPolicies();
  });

  it('secure-par-content: the push names a redirect URI, the authorization request only the pushed request', async () => {
    await usePolicy([['secure-par-content']]);
    const form = { client_id: 'web', client_secret: 'web-secret', response_type: 'code', scope: 'openid', state: 'st' };
    expect(await push(form)).toMatchObject({ status: 400, body: { error: 'invalid_request', error_description: "PAR is required to have a 'redirect_uri' parameter" } });
    // Not pushed: refused before the request is read (an error page).
    const direct = await authorize({ ...form, client_secret: '', redirect_uri: SECURE_CALLBACK });
    expect(direct.status).toBe(400);
    expect(direct.text).toContain('PAR request_uri not included.');
    const unknown = await authorize({ client_id: 'web', request_uri: 'urn:ietf:params:oauth:request_uri:00000000-0000-0000-0000-000000000000' });
    expect(unknown.status).toBe(400);
    expect(unknown.text).toContain('PAR not found, not issued or used multiple times.');
    // A query parameter the push did not have: refused, and the pushed request is spent.
    const first = await push({ ...form, redirect_uri: SECURE_CALLBACK });
    expect(first.status).toBe(201);
    const extra = await authorize({ client_id: 'web', request_uri: first.body.request_uri, prompt: 'login' });
    expect(extra.status).toBe(400);
    expect(extra.text).toContain('PAR request did not include query parameter');
    expect((await authorize({ client_id: 'web', request_uri: first.body.request_uri })).status).toBe(400);
    // The pushed request alone: the login page.
    const second = await push({ ...form, redirect_uri: SECURE_CALLBACK });
    expect((await authorize({ client_id: 'web', request_uri: second.body.request_uri })).status).toBe(200);
    await clearPolicies();
  });

  describe('signed client assertions', () => {
    let key: { privateKey: CryptoKey; publicKey: CryptoKey };
    let rsKey: { privateKey: CryptoKey; publicKey: CryptoKey };
    const assertion = (alg: string, signing: CryptoKey, aud: string | string[], kid: string) =>
      new SignJWT({ jti: crypto.randomUUID(), iss: 'signer', sub: 'signer', aud }).setProtectedHeader({ alg, kid }).setIssuedAt().setExpirationTime('1m').sign(signing);
    const grant = (jwt: string) =>
      tokenRequest(t.url, REALM, { grant_type: 'client_credentials', client_id: 'signer', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: jwt });

    beforeAll(async () => {
      key = (await generateKeyPair('PS256', { extractable: true })) as typeof key;
      rsKey = (await generateKeyPair('RS256', { extractable: true })) as typeof rsKey;
      const jwks = { keys: [{ ...(await exportJWK(key.publicKey)), kid: 'ps', alg: 'PS256', use: 'sig' }, { ...(await exportJWK(rsKey.publicKey)), kid: 'rs', alg: 'RS256', use: 'sig' }] };
      const created = await createClient({ clientId: 'signer', clientAuthenticatorType: 'client-jwt', serviceAccountsEnabled: true, standardFlowEnabled: false, attributes: { 'use.jwks.string': 'true', 'jwks.string': JSON.stringify(jwks) } });
      expect(created.status).toBe(201);
      expect((await createClient({ clientId: 'by-secret', secret: 'sa-secret', serviceAccountsEnabled: true, standardFlowEnabled: false })).status).toBe(201);
    });

    it('secure-signature-algorithm-signed-jwt: an assertion signed with RS256 is refused, PS256 accepted; require-client-assertion refuses a secret', async () => {
      await usePolicy([['secure-signature-algorithm-signed-jwt', { 'require-client-assertion': true }]]);
      expect(await grant(await assertion('RS256', rsKey.privateKey, issuer, 'rs'))).toMatchObject({ status: 400, body: { error: 'invalid_request', error_description: 'not allowed signature algorithm.' } });
      expect((await grant(await assertion('PS256', key.privateKey, issuer, 'ps'))).status).toBe(200);
      const bySecret = () => tokenRequest(t.url, REALM, { grant_type: 'client_credentials', client_id: 'by-secret', client_secret: 'sa-secret' });
      expect(await bySecret()).toMatchObject({ status: 400, body: { error: 'invalid_request', error_description: 'client assertion is required.' } });
      await clearPolicies();
      expect((await grant(await assertion('RS256', rsKey.privateKey, issuer, 'rs'))).status).toBe(200);
      expect((await bySecret()).status).toBe(200);
    });

    it('secure-client-authentication-assertion: the assertion’s one audience is the issuer, at the token endpoint, PAR, introspection and revocation', async () => {
      await usePolicy([['secure-client-authentication-assertion']]);
      const tokenUrl = `${issuer}/protocol/openid-connect/token`;
      // client_credentials is not among Keycloak's events for it: the token endpoint's URL is accepted there.
      const issued = await grant(await assertion('PS256', key.privateKey, tokenUrl, 'ps'));
      expect(issued.status).toBe(200);
      const introspect = async (aud: string | string[]) => {
        const response = await fetch(`${tokenUrl}/introspect`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ token: String(issued.body.access_token), client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: await assertion('PS256', key.privateKey, aud, 'ps') }),
        });
        return { status: response.status, body: (await response.json()) as Record<string, unknown> };
      };
      expect(await introspect(tokenUrl)).toMatchObject({ status: 400, body: { error: 'invalid_request', error_description: 'invalid audience in client assertion' } });
      // Several audiences are refused before any policy runs: client authentication itself refuses them, as Keycloak's does.
      expect(await introspect([issuer, tokenUrl])).toMatchObject({ status: 400, body: { error: 'invalid_client', error_description: expect.stringContaining('multiple audiences not allowed') } });
      expect((await introspect(issuer)).status).toBe(200);
      await clearPolicies();
      expect((await introspect(tokenUrl)).status).toBe(200);
    });
  });

  it('secure-logout: a client with front-channel logout is refused at create and update unless allowed', async () => {
    await usePolicy([['secure-logout']]);
    const refusal = { status: 400, body: { error: 'invalid_registration', error_description: 'Front-channel logout is not allowed for this client' } };
    expect(await createClient({ clientId: 'fc', secret: 's', frontchannelLogout: true })).toMatchObject(refusal);
    expect(await createClient({ clientId: 'fc', secret: 's', attributes: { 'frontchannel.logout.url': 'https://app.example/fc' } })).toMatchObject(refusal);
    expect((await createClient({ clientId: 'no-fc', secret: 's', frontchannelLogout: false })).status).toBe(201);
    const noFc = await clientNamed('no-fc');
    expect(await api(t.url, 'PUT', `/admin/realms/${REALM}/clients/${noFc.id}`, admin, { ...noFc, frontchannelLogout: true })).toMatchObject(refusal);
    await usePolicy([['secure-logout', { 'allow-front-channel-logout': true }]]);
    expect((await createClient({ clientId: 'fc', secret: 's', frontchannelLogout: true })).status).toBe(201);
    await clearPolicies();
  });

  it('client-updater-context: a policy for anonymous registration leaves the administrator’s create alone', async () => {
    await usePolicy([['secure-client-uris']], [['client-updater-context', { 'update-client-source': ['ByAnonymous'] }]]);
    expect((await createClient({ clientId: 'by-admin', secret: 's', redirectUris: ['http://127.0.0.1:9/cb'] })).status).toBe(201);
    const anonymous = await api(t.url, 'POST', `/realms/${REALM}/clients-registrations/openid-connect`, null, { redirect_uris: ['http://127.0.0.1:9/cb'] });
    // Keycloak's default anonymous registration policies would refuse too: what matters is which refusal comes.
    expect(anonymous.body).toMatchObject({ error: 'invalid_client_metadata', error_description: 'Invalid redirectUris' });
    await usePolicy([['secure-client-uris']], [['client-updater-context', { 'update-client-source': ['ByAuthenticatedUser'] }]]);
    expect(await createClient({ clientId: 'by-admin-2', secret: 's', redirectUris: ['http://127.0.0.1:9/cb'] })).toMatchObject({ status: 400, body: { error_description: 'Invalid redirectUris' } });
    const badSource = await put('policies', { policies: [policy('x', [], [['client-updater-context', { 'update-client-source': ['ByRobot'] }]])] });
    expect(badSource.status).toBe(400);
    await clearPolicies();
  });

  it('client-updater-source-host: a policy for trusted hosts runs for a sender from one of them only', async () => {
    await usePolicy([['secure-client-uris']], [['client-updater-source-host', { 'trusted-hosts': ['10.9.9.9'] }]]);
    expect((await createClient({ clientId: 'from-loopback', secret: 's', redirectUris: ['http://127.0.0.1:9/cb'] })).status).toBe(201);
    await usePolicy([['secure-client-uris']], [['client-updater-source-host', { 'trusted-hosts': ['localhost'] }]]);
    expect(await createClient({ clientId: 'from-loopback-2', secret: 's', redirectUris: ['http://127.0.0.1:9/cb'] })).toMatchObject({ status: 400, body: { error_description: 'Invalid redirectUris' } });
    await usePolicy([['secure-client-uris']], [['client-updater-source-host', { 'trusted-hosts': ['127.0.0.1'] }]]);
    expect((await createClient({ clientId: 'from-loopback-3', secret: 's', redirectUris: ['http://127.0.0.1:9/cb'] })).status).toBe(400);
    // A host name is refused when saved: it would have to be resolved for every client saved.
    const named = await put('policies', { policies: [policy('x', [], [['client-updater-source-host', { 'trusted-hosts': ['admin.example'] }]])] });
    expect(named.status).toBe(400);
    expect(named.body.errorMessage).toMatch(/trusted-hosts/);
    await clearPolicies();
  });

  it('the FAPI 2.0 security profile’s executors but consent-required: a FAPI 2.0 client (PAR, PKCE, private_key_jwt, DPoP) signs in, a plain request is refused', async () => {
    // Every executor of the global profile runs, consent-required too: a policy can name it. The sign-in below uses a
    // copy without consent-required (its consent page is consent-screen.test.ts's).
    const named = await put('policies', { policies: [policy('fapi2', ['fapi-2-dpop-security-profile'])] });
    expect(named.status).toBe(204);
    expect((await put('policies', { policies: [] })).status).toBe(204);
    const listed = await api(t.url, 'GET', `/admin/realms/${REALM}/client-policies/profiles?include-global-profiles=true`, admin);
    const fapi2 = (listed.body.globalProfiles as { name: string; executors: { executor: string; configuration: Record<string, unknown> }[] }[]).find((p) => p.name === 'fapi-2-dpop-security-profile')!;
    const executors = fapi2.executors.filter((x) => x.executor !== 'consent-required');
    expect(executors.length).toBe(fapi2.executors.length - 1);
    expect((await put('profiles', { profiles: [{ name: 'fapi2-here', executors }] })).status).toBe(204);
    expect((await put('policies', { policies: [policy('fapi2', ['fapi2-here'])] })).status).toBe(204);

    // The client, as a FAPI 2.0 client registers: its keys, private_key_jwt, https redirect URI; the policy does the rest.
    const key = (await generateKeyPair('PS256', { extractable: true })) as { privateKey: CryptoKey; publicKey: CryptoKey };
    const jwks = { keys: [{ ...(await exportJWK(key.publicKey)), kid: 'fapi-1', alg: 'PS256', use: 'sig' }] };
    const created = await createClient({ clientId: 'bank', clientAuthenticatorType: 'client-jwt', redirectUris: [SECURE_CALLBACK], attributes: { 'use.jwks.string': 'true', 'jwks.string': JSON.stringify(jwks) } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const bank = await clientNamed('bank');
    expect(bank.attributes).toMatchObject({ 'pkce.code.challenge.method': 'S256', 'dpop.bound.access.tokens': 'true', 'id.token.signed.response.alg': 'PS256', 'access.token.signed.response.alg': 'PS256' });
    expect(bank.fullScopeAllowed).toBe(false);
    // A client authenticating with a secret, or redirecting to plain http, is refused at create.
    expect(await createClient({ clientId: 'plain-bank', clientAuthenticatorType: 'client-secret', secret: 's', redirectUris: [SECURE_CALLBACK] })).toMatchObject({ status: 400, body: { error: 'invalid_client_metadata' } });
    expect(await createClient({ clientId: 'http-bank', clientAuthenticatorType: 'client-jwt', redirectUris: ['http://127.0.0.1:9/cb'] })).toMatchObject({ status: 400, body: { error_description: 'Invalid redirectUris' } });

    const config = await oidc.discovery(new URL(issuer), 'bank', undefined, oidc.PrivateKeyJwt({ key: key.privateKey, kid: 'fapi-1' }), insecure);
    const DPoP = oidc.getDPoPHandle(config, await oidc.randomDPoPKeyPair('ES256'));
    const verifier = oidc.randomPKCECodeVerifier();
    const nonce = oidc.randomNonce();
    const authUrl = await oidc.buildAuthorizationUrlWithPAR(
      config,
      { redirect_uri: SECURE_CALLBACK, scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', nonce },
      { DPoP },
    );
    const browser = new FormClient(t.url);
    const page = await browser.get(authUrl.href);
    expect(inputValue(page.text, 'session_code'), page.text.slice(0, 300)).not.toBeNull();
    const back = await browser.post(`/realms/${REALM}/login-actions/authenticate`, { username: 'fay', password: PASSWORD, session_code: inputValue(page.text, 'session_code')! });
    expect(back.status).toBe(302);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(back.location!), { pkceCodeVerifier: verifier, expectedNonce: nonce, idTokenExpected: true }, undefined, { DPoP });
    expect(tokens.token_type.toLowerCase()).toBe('dpop');
    expect(decodeProtectedHeader(tokens.access_token).alg).toBe('PS256');
    expect(decodeProtectedHeader(tokens.id_token!).alg).toBe('PS256');
    expect(decodeJwt(tokens.access_token).cnf).toHaveProperty('jkt');

    // A plain request of the same client: not pushed, so refused before it is read (Keycloak's error page).
    const plain = await authorize({ client_id: 'bank', response_type: 'code', scope: 'openid', redirect_uri: SECURE_CALLBACK, nonce: 'n' });
    expect(plain.status).toBe(400);
    expect(plain.text).toContain('PAR request_uri not included.');
    await clearPolicies();
  });
});
