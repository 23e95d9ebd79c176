import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 39: a client's `clientAuthenticatorType` is what it is stored as, or refused with 400 naming it — never
 * saved as another (weaker) method, so a client configured for signed assertions never takes a plain secret.
 */
describe('clientAuthenticatorType is kept or refused, never stored as another method', () => {
  let t: TestServer;
  let admin: string;
  beforeAll(async () => {
    t = await startServer();
    admin = await adminToken(t.url);
    expect((await api(t.url, 'POST', '/admin/realms', admin, { realm: 'auth-type', enabled: true })).status).toBe(201);
  });
  afterAll(() => t?.close());

  it('an unknown or unsupported authenticator is a 400 naming it; nothing is stored', async () => {
    for (const type of ['client-x509-tls', 'no-such-authenticator']) {
      const response = await api(t.url, 'POST', '/admin/realms/auth-type/clients', admin, { clientId: `c-${type}`, secret: 'plain-secret-1', clientAuthenticatorType: type, serviceAccountsEnabled: true });
      expect(response.status).toBe(400);
      expect(Object.keys(response.body)).toEqual(['errorMessage']);
      expect(response.body.errorMessage).toContain('clientAuthenticatorType');
      expect(response.body.errorMessage).toContain(type);
      const listed = await api(t.url, 'GET', `/admin/realms/auth-type/clients?clientId=c-${type}`, admin);
      expect(listed.body).toEqual([]);
      const token = await tokenRequest(t.url, 'auth-type', { grant_type: 'client_credentials', client_id: `c-${type}`, client_secret: 'plain-secret-1' });
      expect(token.status).toBe(401);
    }
  });

  it('an update to an unknown authenticator is refused and the client keeps its own', async () => {
    const created = await api(t.url, 'POST', '/admin/realms/auth-type/clients', admin, { clientId: 'kept', secret: 'plain-secret-2' });
    expect(created.status).toBe(201);
    const id = created.headers.get('location')!.split('/').pop()!;
    const refused = await api(t.url, 'PUT', `/admin/realms/auth-type/clients/${id}`, admin, { clientId: 'kept', clientAuthenticatorType: 'client-tls' });
    expect(refused.status).toBe(400);
    expect((await api(t.url, 'GET', `/admin/realms/auth-type/clients/${id}`, admin)).body.clientAuthenticatorType).toBe('client-secret');
  });

  it('client-x509 is stored as itself and never takes the client secret instead of a certificate', async () => {
    const created = await api(t.url, 'POST', '/admin/realms/auth-type/clients', admin, { clientId: 'tls', secret: 'plain-secret-3', clientAuthenticatorType: 'client-x509', serviceAccountsEnabled: true, attributes: { 'x509.subjectdn': 'CN=tls' } });
    expect(created.status).toBe(201);
    expect((await api(t.url, 'GET', '/admin/realms/auth-type/clients?clientId=tls', admin)).body[0].clientAuthenticatorType).toBe('client-x509');
    const token = await tokenRequest(t.url, 'auth-type', { grant_type: 'client_credentials', client_id: 'tls', client_secret: 'plain-secret-3' });
    expect(token.status).toBe(401);
    expect(token.body.error).toBe('invalid_client');
  });
});
