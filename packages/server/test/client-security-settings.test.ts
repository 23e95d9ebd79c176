import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, startServer, type TestServer, errorText } from './support/server.js';

/**
 * Issue 17, point 4, for clients: `consentRequired` is stored (the consent screen enforces it), and the
 * `pkce.code.challenge.method` attribute is enforced at the authorization endpoint or refused when it names a
 * method Realmgate does not support.
 */

const REDIRECT = 'http://127.0.0.1:1/cb';
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

describe('client security settings', () => {
  let s: TestServer;
  let token: string;

  beforeAll(async () => {
    s = await startServer();
    token = await adminToken(s.url);
    expect((await api(s.url, 'POST', '/admin/realms', token, { realm: 'cs', enabled: true })).status).toBe(201);
  });
  afterAll(() => s?.close());

  const create = (body: Record<string, unknown>) => api(s.url, 'POST', '/admin/realms/cs/clients', token, { redirectUris: [REDIRECT], ...body });
  const authorize = async (clientId: string, params: Record<string, string> = {}) => {
    const query = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, scope: 'openid', state: 's1', ...params });
    const response = await fetch(`${s.url}/realms/cs/protocol/openid-connect/auth?${query}`, { redirect: 'manual' });
    await response.body?.cancel();
    return { status: response.status, location: response.headers.get('location') };
  };

  it('stores consentRequired either way, on create and on update (the consent screen enforces it)', async () => {
    const consenting = await create({ clientId: 'consenting', consentRequired: true, secret: 'a-secret' });
    expect(consenting.status).toBe(201);
    const consentingId = consenting.headers.get('location')!.split('/').pop()!;
    expect((await api(s.url, 'GET', `/admin/realms/cs/clients/${consentingId}`, token)).body.consentRequired).toBe(true);
    const created = await create({ clientId: 'plain-app', consentRequired: false, secret: 'a-secret' });
    expect(created.status).toBe(201);
    const id = created.headers.get('location')!.split('/').pop()!;
    const rep = (await api(s.url, 'GET', `/admin/realms/cs/clients/${id}`, token)).body;
    expect(rep.consentRequired).toBe(false);
    expect((await api(s.url, 'PUT', `/admin/realms/cs/clients/${id}`, token, { ...rep, consentRequired: true })).status).toBe(204);
    expect((await api(s.url, 'GET', `/admin/realms/cs/clients/${id}`, token)).body.consentRequired).toBe(true);
    expect((await api(s.url, 'PUT', `/admin/realms/cs/clients/${id}`, token, rep)).status).toBe(204);
    expect((await api(s.url, 'GET', `/admin/realms/cs/clients/${id}`, token)).body.consentRequired).toBe(false);
  });

  it('refuses a pkce.code.challenge.method other than S256 or empty, naming the attribute', async () => {
    const refused = await create({ clientId: 'pkce-plain', attributes: { 'pkce.code.challenge.method': 'plain' } });
    expect(refused.status).toBe(400);
    expect(errorText(refused.body)).toContain('attributes');
    expect(refused.body.errorMessage).toContain('pkce.code.challenge.method');
    expect((await create({ clientId: 'pkce-empty', secret: 'a-secret', attributes: { 'pkce.code.challenge.method': '' } })).status).toBe(201);
  });

  it('enforces pkce.code.challenge.method S256 on a confidential client at the authorization endpoint', async () => {
    expect((await create({ clientId: 'pkce-conf', secret: 'a-secret', attributes: { 'pkce.code.challenge.method': 'S256' } })).status).toBe(201);
    const missing = await authorize('pkce-conf');
    expect(missing.status).toBe(302);
    const error = new URL(missing.location!);
    expect(`${error.origin}${error.pathname}`).toBe(REDIRECT);
    expect(error.searchParams.get('error')).toBe('invalid_request');
    expect(error.searchParams.get('error_description')).toContain('code_challenge_method');
    expect((await authorize('pkce-conf', { code_challenge: CHALLENGE, code_challenge_method: 'S256' })).status).toBe(200);
    // Without the attribute (and with it empty) a confidential client may leave PKCE out.
    expect((await authorize('plain-app')).status).toBe(200);
    expect((await authorize('pkce-empty')).status).toBe(200);
  });
});
