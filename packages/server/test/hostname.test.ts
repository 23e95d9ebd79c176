import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/index.js';
import { inputValue } from './support/forms.js';
import { REPO_ROOT, adminToken, api, eventually, startServer, type TestServer } from './support/server.js';
import { linkIn, startSmtp } from './support/smtp.js';

/**
 * Issue 11, point 4, tried as an attacker would: with `hostname` set, neither Host nor X-Forwarded-* reach a
 * link, an issuer or discovery; production refuses to start without it; cookies are Secure when the public URL
 * is https.
 */

const PASSWORD = 'Correct-horse-7';
const PUBLIC = 'https://auth.example.test';

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A request with any Host header (fetch would not let a test forge it). */
function raw(url: string, method: string, path: string, headers: Record<string, string>, body?: string): Promise<RawResponse> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: target.hostname, port: target.port, method, path, headers: { ...headers, ...(body ? { 'content-length': String(Buffer.byteLength(body)) } : {}) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    if (body) req.write(body);
    req.end();
  });
}

const setCookies = (response: RawResponse) => (response.headers['set-cookie'] as string[] | undefined) ?? [];
const cookieHeader = (response: RawResponse) => setCookies(response).map((line) => line.split(';')[0]).join('; ');
const ATTACKER = { host: 'attacker.example', 'x-forwarded-host': 'attacker.example', 'x-forwarded-proto': 'http', forwarded: 'host=attacker.example;proto=http' };

async function setUpRealm(url: string, realm: string, smtpPort: number): Promise<void> {
  const token = await adminToken(url);
  const ok = (response: { status: number }) => expect(response.status).toBeLessThan(300);
  ok(await api(url, 'POST', '/admin/realms', token, { realm, enabled: true, resetPasswordAllowed: true, smtpServer: { host: '127.0.0.1', port: String(smtpPort), from: 'noreply@example.test' } }));
  ok(await api(url, 'POST', `/admin/realms/${realm}/clients`, token, { clientId: 'web', publicClient: true, directAccessGrantsEnabled: true, redirectUris: ['http://127.0.0.1/cb'] }));
  ok(await api(url, 'POST', `/admin/realms/${realm}/users`, token, { username: 'vic', email: 'vic@example.com', emailVerified: true, enabled: true, credentials: [{ type: 'password', value: PASSWORD }] }));
}

const authPath = (realm: string) =>
  `/realms/${realm}/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'web', redirect_uri: 'http://127.0.0.1/cb', response_type: 'code', code_challenge: 'a'.repeat(43), code_challenge_method: 'S256' })}`;

describe('with hostname set', () => {
  let t: TestServer;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  beforeAll(async () => {
    smtp = await startSmtp();
    // The proxy is trusted, so its X-Forwarded-* would count if anything still read them.
    t = await startServer({ config: { REALMGATE_MODE: 'production', REALMGATE_HOSTNAME: PUBLIC, REALMGATE_PROXY_TRUSTED_ADDRESSES: '127.0.0.1' } });
    await setUpRealm(t.url, 'host', smtp.port);
  });
  afterAll(async () => {
    await t?.close();
    await smtp?.close();
  });

  it('e-mails a reset link at the configured hostname to a request sent with Host: attacker.example', async () => {
    const login = await raw(t.url, 'GET', authPath('host'), ATTACKER);
    expect(login.status).toBe(200);
    const csrf = inputValue(login.body, 'session_code')!;
    const sent = await raw(t.url, 'POST', '/realms/host/login-actions/reset-credentials', { ...ATTACKER, cookie: cookieHeader(login), 'content-type': 'application/x-www-form-urlencoded' }, new URLSearchParams({ username: 'vic', session_code: csrf }).toString());
    expect(sent.status).toBe(200);
    const mail = await eventually(() => smtp.mails.find((m) => m.to.includes('vic@example.com')));
    const link = linkIn(mail);
    expect(link.startsWith(`${PUBLIC}/realms/host/login-actions/action-token?key=`)).toBe(true);
    expect(mail.raw).not.toContain('attacker.example');
  });

  it('answers discovery, the realm page and token issuers with the hostname whatever Host and X-Forwarded-* say', async () => {
    const variants: Record<string, string>[] = [ATTACKER, { host: 'attacker.example' }, { 'x-forwarded-host': 'attacker.example:8443', 'x-forwarded-proto': 'https' }, {}];
    for (const headers of variants) {
      const discovery = await raw(t.url, 'GET', '/realms/host/.well-known/openid-configuration', headers);
      const body = JSON.parse(discovery.body) as Record<string, string>;
      expect(body.issuer).toBe(`${PUBLIC}/realms/host`);
      expect(body.authorization_endpoint).toBe(`${PUBLIC}/realms/host/protocol/openid-connect/auth`);
      expect(body.jwks_uri).toBe(`${PUBLIC}/realms/host/protocol/openid-connect/certs`);
      expect(discovery.body).not.toContain('attacker.example');
      const realmPage = await raw(t.url, 'GET', '/realms/host', headers);
      expect(realmPage.body).not.toContain('attacker.example');
      const token = await raw(t.url, 'POST', '/realms/host/protocol/openid-connect/token', { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, new URLSearchParams({ grant_type: 'password', client_id: 'web', username: 'vic', password: PASSWORD }).toString());
      expect(token.status).toBe(200);
      const access = JSON.parse(token.body).access_token as string;
      expect(JSON.parse(Buffer.from(access.split('.')[1], 'base64url').toString()).iss).toBe(`${PUBLIC}/realms/host`);
    }
  });

  it('sets Secure cookies because the public URL is https, though the request reached it over plain http', async () => {
    const login = await raw(t.url, 'GET', authPath('host'), {});
    expect(setCookies(login).length).toBeGreaterThan(0);
    for (const line of setCookies(login)) expect(line).toMatch(/;\s*Secure/i);
  });
});

describe('production mode without hostname', () => {
  it('refuses the configuration, naming hostname and how to opt out', () => {
    const attempt = () => loadConfig({ env: { REALMGATE_MODE: 'production', REALMGATE_BOOTSTRAP_ADMIN_PASSWORD: 'x-Admin-pass-1' } });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(/hostname is not set/);
    expect(attempt).toThrow(/REALMGATE_HOSTNAME\b/);
    expect(attempt).toThrow(/hostname-strict/);
    // Development mode keeps working without it.
    expect(loadConfig({ env: {} }).hostname).toBeNull();
    // A hostname that is not an http(s) base URL is refused too.
    expect(() => loadConfig({ env: { REALMGATE_HOSTNAME: 'ftp://auth.example.test' } })).toThrow(/hostname must be an http/);
    expect(() => loadConfig({ env: { REALMGATE_HOSTNAME: 'https://auth.example.test/?x=1' } })).toThrow(/hostname must be an http/);
  });

  it('the CLI exits with status 2 and a message naming the option', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'packages/server/src/main.ts'], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', REALMGATE_MODE: 'production', REALMGATE_HTTP_PORT: '0', REALMGATE_HTTP_HOST: '127.0.0.1', REALMGATE_DB_URL: 'sqlite:/nonexistent-dir/never-opened.db' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toMatch(/configuration error: hostname is not set/);
    expect(stderr).toContain('--hostname');
  });

  it('starts with hostname-strict=false and then takes the URL from the request', async () => {
    const t = await startServer({ config: { REALMGATE_MODE: 'production', REALMGATE_HOSTNAME_STRICT: 'false' } });
    try {
      const discovery = await raw(t.url, 'GET', '/realms/master/.well-known/openid-configuration', { host: 'auth.example.test:9443' });
      expect(JSON.parse(discovery.body).issuer).toBe('http://auth.example.test:9443/realms/master');
    } finally {
      await t.close();
    }
  });
});

describe('development mode without hostname', () => {
  let direct: TestServer;
  let proxied: TestServer;
  beforeAll(async () => {
    direct = await startServer();
    proxied = await startServer({ config: { REALMGATE_PROXY_TRUSTED_ADDRESSES: '127.0.0.1' } });
    for (const server of [direct, proxied]) {
      const token = await adminToken(server.url);
      await api(server.url, 'POST', '/admin/realms', token, { realm: 'host', enabled: true });
      await api(server.url, 'POST', '/admin/realms/host/clients', token, { clientId: 'web', publicClient: true, redirectUris: ['http://127.0.0.1/cb'] });
    }
  });
  afterAll(async () => {
    await direct?.close();
    await proxied?.close();
  });

  it('uses the request, as before', async () => {
    const discovery = await raw(direct.url, 'GET', '/realms/host/.well-known/openid-configuration', { host: 'dev.example.test:8080' });
    expect(JSON.parse(discovery.body).issuer).toBe('http://dev.example.test:8080/realms/host');
  });

  it('behind a trusted TLS-terminating proxy: https issuer and Secure cookies', async () => {
    const headers = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'auth.example.test' };
    const discovery = await raw(proxied.url, 'GET', '/realms/host/.well-known/openid-configuration', headers);
    expect(JSON.parse(discovery.body).issuer).toBe('https://auth.example.test/realms/host');
    const login = await raw(proxied.url, 'GET', authPath('host'), headers);
    expect(login.status).toBe(200);
    expect(setCookies(login).length).toBeGreaterThan(0);
    for (const line of setCookies(login)) expect(line).toMatch(/;\s*Secure/i);
  });

  it('ignores X-Forwarded-* from an address that is not a trusted proxy: no https, no Secure, no forwarded host', async () => {
    const headers = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'attacker.example' };
    const discovery = await raw(direct.url, 'GET', '/realms/host/.well-known/openid-configuration', headers);
    expect(JSON.parse(discovery.body).issuer).toBe(`${direct.url}/realms/host`);
    const login = await raw(direct.url, 'GET', authPath('host'), headers);
    expect(login.status).toBe(200);
    expect(setCookies(login).length).toBeGreaterThan(0);
    for (const line of setCookies(login)) expect(line).not.toMatch(/Secure/i);
  });
});
