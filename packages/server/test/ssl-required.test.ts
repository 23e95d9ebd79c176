import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpsRequired, isPrivateAddress } from '../src/http/index.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, adminToken, api, startServer, tokenRequest, type TestServer, errorText } from './support/server.js';

/**
 * Issue 17, point 4: the realm's `sslRequired` as Keycloak's. Every connection here is to 127.0.0.1; a "public"
 * client address is the X-Forwarded-For of a request from the trusted proxy 127.0.0.1 (documentation range
 * 203.0.113.0/24), never a connection to another address.
 */

const PUBLIC = '203.0.113.7';
const discovery = (realm: string) => `/realms/${realm}/.well-known/openid-configuration`;

describe('which client addresses sslRequired counts as external', () => {
  it('counts loopback, RFC 1918 and IPv6 unique-local as private, the rest as external', () => {
    for (const address of ['127.0.0.1', '::1', '::ffff:127.0.0.1', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', 'fd00::1']) {
      expect(isPrivateAddress(address), address).toBe(true);
    }
    for (const address of [PUBLIC, '172.32.0.1', '8.8.8.8', '2001:db8::1', '::ffff:203.0.113.7', 'not an address']) {
      expect(isPrivateAddress(address), address).toBe(false);
    }
  });

  it('gives the same verdicts when asked again, and after a flood of other addresses (the remembered verdicts are bounded)', () => {
    for (let i = 0; i < 10_000; i++) expect(isPrivateAddress(`203.0.${i >> 8}.${i & 255}`)).toBe(false);
    for (let round = 0; round < 2; round++) {
      for (const address of ['127.0.0.1', '10.1.2.3', 'fd00::1']) expect(isPrivateAddress(address), address).toBe(true);
      for (const address of [PUBLIC, '172.32.0.1', 'not an address']) expect(isPrivateAddress(address), address).toBe(false);
    }
  });

  it('external refuses external addresses only, all refuses every one, none refuses none', () => {
    expect([httpsRequired('external', '127.0.0.1'), httpsRequired('external', PUBLIC)]).toEqual([false, true]);
    expect([httpsRequired('all', '127.0.0.1'), httpsRequired('all', PUBLIC)]).toEqual([true, true]);
    expect([httpsRequired('none', '127.0.0.1'), httpsRequired('none', PUBLIC)]).toEqual([false, false]);
  });
});

describe('sslRequired on the realm endpoints', () => {
  let s: TestServer;
  let token: string;

  beforeAll(async () => {
    s = await startServer({ config: { REALMGATE_PROXY_TRUSTED_ADDRESSES: '127.0.0.1' } });
    token = await adminToken(s.url);
    for (const realm of ['ssl-ext', 'ssl-all', 'ssl-none']) {
      expect((await api(s.url, 'POST', '/admin/realms', token, { realm, enabled: true })).status).toBe(201);
    }
    expect((await api(s.url, 'PUT', '/admin/realms/ssl-all', token, { sslRequired: 'all' })).status).toBe(204);
    // Keycloak takes the value in any case (kcadm's `-s sslRequired=NONE`) and answers it in lower case.
    expect((await api(s.url, 'PUT', '/admin/realms/ssl-none', token, { sslRequired: 'NONE' })).status).toBe(204);
  });
  afterAll(() => s?.close());

  const from = (address: string, proto?: string) => ({ 'x-forwarded-for': address, ...(proto ? { 'x-forwarded-proto': proto } : {}) });

  it('defaults to external and answers the setting as stored', async () => {
    expect((await api(s.url, 'GET', '/admin/realms/ssl-ext', token)).body.sslRequired).toBe('external');
    expect((await api(s.url, 'GET', '/admin/realms/ssl-all', token)).body.sslRequired).toBe('all');
    expect((await api(s.url, 'GET', '/admin/realms/ssl-none', token)).body.sslRequired).toBe('none');
  });

  it('external: plain HTTP from an external address gets 403 "HTTPS required"; loopback and https pass', async () => {
    const refused = await api(s.url, 'GET', discovery('ssl-ext'), null, undefined, from(PUBLIC));
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ error: 'invalid_request', error_description: 'HTTPS required' });
    expect(refused.headers.get('cache-control')).toBe('no-store');
    expect((await api(s.url, 'GET', discovery('ssl-ext'), null)).status).toBe(200);
    expect((await api(s.url, 'GET', discovery('ssl-ext'), null, undefined, from('10.0.0.5'))).status).toBe(200);
    expect((await api(s.url, 'GET', discovery('ssl-ext'), null, undefined, from(PUBLIC, 'https'))).status).toBe(200);
  });

  it('external: the token endpoint and the login page are refused the same way', async () => {
    const grant = await tokenRequest(s.url, 'ssl-ext', { grant_type: 'password', client_id: 'admin-cli', username: 'x', password: 'y' }, from(PUBLIC));
    expect(grant).toEqual({ status: 403, body: { error: 'invalid_request', error_description: 'HTTPS required' } });
    const page = await api(s.url, 'GET', '/realms/ssl-ext/protocol/openid-connect/auth?client_id=account-console&response_type=code', null, undefined, from(PUBLIC));
    expect(page.status).toBe(403);
  });

  it('all: plain HTTP is refused even from loopback; https through the proxy passes', async () => {
    expect((await api(s.url, 'GET', discovery('ssl-all'), null)).status).toBe(403);
    expect((await api(s.url, 'GET', discovery('ssl-all'), null, undefined, from('127.0.0.1', 'https'))).status).toBe(200);
  });

  it('none: plain HTTP from an external address passes', async () => {
    expect((await api(s.url, 'GET', discovery('ssl-none'), null, undefined, from(PUBLIC))).status).toBe(200);
  });

  it('master keeps its default: the administrator still signs in over HTTP from loopback', async () => {
    const grant = await tokenRequest(s.url, 'master', { grant_type: 'password', client_id: 'admin-cli', username: ADMIN_USERNAME, password: ADMIN_PASSWORD });
    expect(grant.status).toBe(200);
    expect((await tokenRequest(s.url, 'master', { grant_type: 'password', client_id: 'admin-cli', username: ADMIN_USERNAME, password: ADMIN_PASSWORD }, from(PUBLIC))).status).toBe(403);
  });

  it('refuses a value Keycloak does not know, naming the field', async () => {
    const bad = await api(s.url, 'PUT', '/admin/realms/ssl-ext', token, { sslRequired: 'sometimes' });
    expect(bad.status).toBe(400);
    expect(errorText(bad.body)).toContain('sslRequired');
  });
});
