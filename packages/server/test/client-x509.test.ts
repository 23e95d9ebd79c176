import { X509Certificate, createHash, generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import forge from 'node-forge';
import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { certificateFrom, clientCertificateLookup } from '../src/http/client-certificate.js';
import type { ServerConfig } from '../src/config/index.js';
import { certificateDn, normalizeDn } from '../src/keys/distinguished-name.js';
import { adminToken, api, startServer, type TestServer } from './support/server.js';

/**
 * Issue 39's `client-x509` and issue 41's holder-of-key: a TLS-terminating proxy made here (node:https with
 * requestCert, a CA made here with node-forge) forwards the client's certificate to the server as nginx does
 * (URL-encoded PEM in `ssl-client-cert`), from 127.0.0.2, the only address the server trusts as a proxy. Direct
 * requests come from 127.0.0.1: their header must be ignored.
 */

const REALM = 'mtls';
const PROXY_ADDRESS = '127.0.0.2';

type Issued = { pem: string; key: string; der: Buffer };

function keyPair(): { forgePublic: forge.pki.PublicKey; forgePrivate: forge.pki.rsa.PrivateKey; pem: string } {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  return { forgePublic: forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString()), forgePrivate: forge.pki.privateKeyFromPem(pem) as forge.pki.rsa.PrivateKey, pem };
}

let serial = 1;
function certificate(subject: forge.pki.CertificateField[], issuer: { subject: forge.pki.CertificateField[]; key: forge.pki.rsa.PrivateKey } | null, extensions: object[] = []): Issued & { forgeKey: forge.pki.rsa.PrivateKey; subject: forge.pki.CertificateField[] } {
  const keys = keyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.forgePublic;
  cert.serialNumber = (serial++).toString(16).padStart(2, '0');
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 24 * 3600_000);
  cert.setSubject(subject);
  cert.setIssuer(issuer?.subject ?? subject);
  cert.setExtensions(extensions);
  cert.sign(issuer?.key ?? keys.forgePrivate, forge.md.sha256.create());
  const pem = forge.pki.certificateToPem(cert);
  return { pem, key: keys.pem, der: Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(cert)).getBytes(), 'binary'), forgeKey: keys.forgePrivate, subject };
}

const ca = certificate([{ shortName: 'CN', value: 'Test Client CA' }, { shortName: 'O', value: 'Realmgate Tests' }], null, [{ name: 'basicConstraints', cA: true }, { name: 'keyUsage', keyCertSign: true, digitalSignature: true }]);
const caIssuer = { subject: ca.subject, key: ca.forgeKey };
const serverCert = certificate([{ shortName: 'CN', value: 'localhost' }], caIssuer, [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }]);
const clientExt = [{ name: 'extKeyUsage', clientAuth: true }];
const partner = certificate([{ shortName: 'C', value: 'DE' }, { shortName: 'O', value: 'Partner, Inc.' }, { shortName: 'OU', value: 'Payments' }, { shortName: 'CN', value: 'partner-app' }], caIssuer, clientExt);
const intruder = certificate([{ shortName: 'C', value: 'DE' }, { shortName: 'O', value: 'Partner, Inc.' }, { shortName: 'OU', value: 'Payments' }, { shortName: 'CN', value: 'partner-app-2' }], caIssuer, clientExt);
const other = certificate([{ shortName: 'CN', value: 'bound-client' }], caIssuer, clientExt);
const PARTNER_DN = 'CN=partner-app, OU=Payments, O="Partner, Inc.", C=DE';
const thumbprint = (cert: Issued) => createHash('sha256').update(cert.der).digest('base64url');

/**
 * The proxy: TLS with client certificates asked for and checked against the test CA; the verified certificate (or
 * nothing) put in `ssl-client-cert` as nginx's $ssl_client_escaped_cert, whatever the client sent in that header.
 */
async function startProxy(upstream: string): Promise<{ url: string; close(): Promise<void> }> {
  const target = new URL(upstream);
  const server = https.createServer({ key: serverCert.key, cert: serverCert.pem, ca: [ca.pem], requestCert: true, rejectUnauthorized: false }, (req, res) => {
    const socket = req.socket as TLSSocket;
    const headers = { ...req.headers };
    delete headers['ssl-client-cert'];
    if (socket.authorized) {
      const raw = socket.getPeerCertificate().raw;
      headers['ssl-client-cert'] = encodeURIComponent(new X509Certificate(raw).toString());
    }
    headers['x-forwarded-proto'] = 'https';
    headers['x-forwarded-host'] = req.headers.host;
    headers['x-forwarded-for'] = socket.remoteAddress;
    const forwarded = http.request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers, localAddress: PROXY_ADDRESS }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forwarded.on('error', () => res.writeHead(502).end());
    req.pipe(forwarded);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((done) => server.close(() => done())) };
}

/** A fetch over TLS to the proxy, presenting `cert` (or none): what openid-client and the raw calls use. */
function tlsFetch(cert: Issued | null): typeof fetch {
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => (headers[name] = value));
    const body = init.body === undefined || init.body === null ? undefined : String(init.body);
    return await new Promise<Response>((done, fail) => {
      const request = https.request(
        { host: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, method: init.method ?? 'GET', headers, ca: [ca.pem], ...(cert ? { cert: cert.pem, key: cert.key } : {}), agent: false },
        (answer) => {
          const chunks: Buffer[] = [];
          answer.on('data', (c: Buffer) => chunks.push(c));
          answer.on('end', () => {
            const responseHeaders = new Headers();
            for (const [name, value] of Object.entries(answer.headers)) if (value !== undefined) responseHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
            const status = answer.statusCode ?? 500;
            done(new Response([204, 304].includes(status) ? null : Buffer.concat(chunks), { status, headers: responseHeaders }));
          });
        },
      );
      request.on('error', fail);
      request.end(body);
    });
  }) as typeof fetch;
}

async function call(fetcher: typeof fetch, url: string, form: Record<string, string> | null, headers: Record<string, string> = {}) {
  const response = await fetcher(url, form ? { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(form).toString() } : { headers });
  const text = await response.text();
  let body: Record<string, unknown> | null = null;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON
  }
  return { status: response.status, body, challenge: response.headers.get('www-authenticate') };
}

/** A plain HTTP request to the server from a chosen loopback address, with headers an attacker picks. */
function direct(t: TestServer, path: string, form: Record<string, string> | null, headers: Record<string, string>, localAddress = '127.0.0.1') {
  const url = new URL(`${t.url}${path}`);
  const body = form ? new URLSearchParams(form).toString() : undefined;
  return new Promise<{ status: number; body: Record<string, unknown> | null }>((done, fail) => {
    const request = http.request(
      { host: url.hostname, port: url.port, path: url.pathname, method: form ? 'POST' : 'GET', localAddress, headers: { ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}), ...headers } },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (c: Buffer) => chunks.push(c));
        answer.on('end', () => {
          let parsed: Record<string, unknown> | null = null;
          try {
            parsed = JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>;
          } catch {
            // not JSON
          }
          done({ status: answer.statusCode ?? 0, body: parsed });
        });
      },
    );
    request.on('error', fail);
    request.end(body);
  });
}

const nginxHeader = (cert: Issued) => ({ 'ssl-client-cert': encodeURIComponent(cert.pem) });

describe('client-x509 and certificate-bound tokens behind a TLS-terminating proxy', () => {
  let t: TestServer;
  let proxy: { url: string; close(): Promise<void> };
  let admin: string;
  const tokenPath = `/realms/${REALM}/protocol/openid-connect/token`;
  const endpoint = (path: string) => `${proxy.url}/realms/${REALM}/protocol/openid-connect/${path}`;

  beforeAll(async () => {
    t = await startServer({ config: { REALMGATE_X509CERT_LOOKUP_PROVIDER: 'nginx', REALMGATE_PROXY_TRUSTED_ADDRESSES: PROXY_ADDRESS } });
    proxy = await startProxy(t.url);
    admin = await adminToken(t.url);
    const ok = (r: { status: number; body: unknown }) => expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
    ok(await api(t.url, 'POST', '/admin/realms', admin, { realm: REALM, enabled: true }));
    ok(await api(t.url, 'POST', `/admin/realms/${REALM}/users`, admin, { username: 'mia', enabled: true, email: 'mia@example.com', emailVerified: true, firstName: 'Mia', lastName: 'Tls', credentials: [{ type: 'password', value: 'Mia-password-1' }] }));
    ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, {
      clientId: 'partner',
      publicClient: false,
      clientAuthenticatorType: 'client-x509',
      serviceAccountsEnabled: true,
      directAccessGrantsEnabled: true,
      attributes: { 'x509.subjectdn': PARTNER_DN, 'tls.client.certificate.bound.access.tokens': 'true' },
    }));
    ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, {
      clientId: 'partner-regex',
      publicClient: false,
      clientAuthenticatorType: 'client-x509',
      serviceAccountsEnabled: true,
      attributes: { 'x509.subjectdn': 'CN=partner-app,OU=Payments,.*', 'x509.allow.regex.pattern.comparison': 'true' },
    }));
    ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, {
      clientId: 'bound',
      publicClient: false,
      secret: 'bound-secret-1',
      directAccessGrantsEnabled: true,
      serviceAccountsEnabled: true,
      attributes: { 'tls.client.certificate.bound.access.tokens': 'true', 'standard.token.exchange.enabled': 'true' },
    }));
    ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { clientId: 'resource', publicClient: false, secret: 'resource-secret-1', attributes: { 'allow.token.introspection.without.audience.check': 'true' } }));
  }, 60_000);

  afterAll(async () => {
    await proxy?.close();
    await t?.close();
  });

  it('discovery lists tls_client_auth, certificate-bound tokens and the mTLS endpoint aliases', async () => {
    const { body } = await call(tlsFetch(null), `${proxy.url}/realms/${REALM}/.well-known/openid-configuration`, null);
    expect(body!.token_endpoint_auth_methods_supported).toContain('tls_client_auth');
    expect(body!.tls_client_certificate_bound_access_tokens).toBe(true);
    expect(body!.issuer).toBe(`${proxy.url}/realms/${REALM}`);
    expect(body!.mtls_endpoint_aliases).toMatchObject({ token_endpoint: endpoint('token'), userinfo_endpoint: endpoint('userinfo'), introspection_endpoint: endpoint('token/introspect') });
  });

  it('openid-client authenticates with tls_client_auth and gets an access token bound to its certificate', async () => {
    const config = await oidc.discovery(new URL(`${proxy.url}/realms/${REALM}`), 'partner', { use_mtls_endpoint_aliases: true }, oidc.TlsClientAuth(), { [oidc.customFetch]: tlsFetch(partner) as unknown as oidc.CustomFetch });
    config[oidc.customFetch] = tlsFetch(partner) as unknown as oidc.CustomFetch;
    const tokens = await oidc.clientCredentialsGrant(config);
    expect(decodeJwt(tokens.access_token).cnf).toEqual({ 'x5t#S256': thumbprint(partner) });
    // The regex comparison, as Keycloak's x509.allow.regex.pattern.comparison.
    const regex = await call(tlsFetch(partner), endpoint('token'), { grant_type: 'client_credentials', client_id: 'partner-regex' });
    expect(regex.status, JSON.stringify(regex.body)).toBe(200);
  });

  it('refuses a certificate of another subject DN, and a request without a certificate', async () => {
    for (const cert of [intruder, other, null]) {
      const answer = await call(tlsFetch(cert), endpoint('token'), { grant_type: 'client_credentials', client_id: 'partner' });
      expect(answer.status).toBe(401);
      expect(answer.body).toEqual({ error: 'invalid_client', error_description: 'Invalid client or Invalid client credentials' });
    }
  });

  it('a client registered dynamically with tls_client_auth and tls_client_auth_subject_dn authenticates with its certificate, and only with it', async () => {
    const initial = await api(t.url, 'POST', `/admin/realms/${REALM}/clients-initial-access`, admin, { count: 1, expiration: 600 });
    expect(initial.status).toBe(201);
    // Registered at the server's own address: the initial access token's issuer is the address it was made at.
    const created = await fetch(`${t.url}/realms/${REALM}/clients-registrations/openid-connect`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${initial.body.token}` },
      body: JSON.stringify({ grant_types: ['client_credentials'], token_endpoint_auth_method: 'tls_client_auth', tls_client_auth_subject_dn: PARTNER_DN, tls_client_certificate_bound_access_tokens: true }),
    });
    const metadata = (await created.json()) as Record<string, unknown>;
    expect(created.status, JSON.stringify(metadata)).toBe(201);
    expect(metadata).toMatchObject({ token_endpoint_auth_method: 'tls_client_auth', tls_client_auth_subject_dn: PARTNER_DN, tls_client_certificate_bound_access_tokens: true });
    const clientId = metadata.client_id as string;

    const config = await oidc.discovery(new URL(`${proxy.url}/realms/${REALM}`), clientId, { use_mtls_endpoint_aliases: true }, oidc.TlsClientAuth(), { [oidc.customFetch]: tlsFetch(partner) as unknown as oidc.CustomFetch });
    config[oidc.customFetch] = tlsFetch(partner) as unknown as oidc.CustomFetch;
    const tokens = await oidc.clientCredentialsGrant(config);
    expect(decodeJwt(tokens.access_token)).toMatchObject({ azp: clientId, cnf: { 'x5t#S256': thumbprint(partner) } });
    for (const cert of [intruder, null]) {
      const refused = await call(tlsFetch(cert), endpoint('token'), { grant_type: 'client_credentials', client_id: clientId });
      expect(refused.status).toBe(401);
      expect(refused.body?.error).toBe('invalid_client');
    }
  });

  it('ignores the certificate header when it does not come from the trusted proxy', async () => {
    const answer = await direct(t, tokenPath, { grant_type: 'client_credentials', client_id: 'partner' }, nginxHeader(partner));
    expect(answer.status).toBe(401);
    expect(answer.body?.error).toBe('invalid_client');
    // The same header from the trusted address is believed: the refusal above is the address's doing.
    const trusted = await direct(t, tokenPath, { grant_type: 'client_credentials', client_id: 'partner' }, nginxHeader(partner), PROXY_ADDRESS);
    expect(trusted.status, JSON.stringify(trusted.body)).toBe(200);
  });

  it('a forged header value that is not a certificate is a refused client authentication, never a 5xx', async () => {
    for (const value of ['garbage', '%E0%A4%A', '-----BEGIN CERTIFICATE----- AAAA -----END CERTIFICATE-----', 'x'.repeat(9000), encodeURIComponent(partner.pem).slice(0, 200)]) {
      const answer = await direct(t, tokenPath, { grant_type: 'client_credentials', client_id: 'partner' }, { 'ssl-client-cert': value }, PROXY_ADDRESS);
      expect(answer.status, value.slice(0, 30)).toBe(401);
      expect(answer.body?.error).toBe('invalid_client');
    }
  });

  it('userinfo answers a certificate-bound token only with its certificate', async () => {
    const issued = await call(tlsFetch(partner), endpoint('token'), { grant_type: 'password', client_id: 'partner', username: 'mia', password: 'Mia-password-1', scope: 'openid' });
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    const token = issued.body!.access_token as string;
    const bearer = { authorization: `Bearer ${token}` };
    expect((await call(tlsFetch(partner), endpoint('userinfo'), null, bearer)).status).toBe(200);
    for (const cert of [null, intruder]) {
      const refused = await call(tlsFetch(cert), endpoint('userinfo'), null, bearer);
      expect(refused.status).toBe(401);
      expect(refused.body).toEqual({ error: 'invalid_token', error_description: 'Client certificate missing, or its thumbprint and one in the token did NOT match' });
      expect(refused.challenge).toContain('invalid_token');
    }
    // A stolen token with the certificate's header sent straight to the server: the header is not believed.
    expect((await direct(t, `/realms/${REALM}/protocol/openid-connect/userinfo`, null, { ...bearer, ...nginxHeader(partner) })).status).toBe(401);
    // Introspection tells the resource server what the token is bound to (RFC 8705 3.2), as Keycloak's.
    const introspected = await call(tlsFetch(null), endpoint('token/introspect'), { token, client_id: 'resource', client_secret: 'resource-secret-1' });
    expect(introspected.body).toMatchObject({ active: true, cnf: { 'x5t#S256': thumbprint(partner) } });
  });

  it('a certificate-bound client needs a certificate for its tokens, and refreshes only with the same one', async () => {
    const form = { grant_type: 'password', client_id: 'bound', client_secret: 'bound-secret-1', username: 'mia', password: 'Mia-password-1' };
    const missing = await call(tlsFetch(null), endpoint('token'), form);
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({ error: 'invalid_request', error_description: 'Client Certification missing for MTLS HoK Token Binding' });
    const issued = await call(tlsFetch(other), endpoint('token'), form);
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    expect(decodeJwt(issued.body!.refresh_token as string).cnf).toEqual({ 'x5t#S256': thumbprint(other) });
    const refresh = { grant_type: 'refresh_token', client_id: 'bound', client_secret: 'bound-secret-1', refresh_token: issued.body!.refresh_token as string };
    for (const cert of [null, partner]) {
      const refused = await call(tlsFetch(cert), endpoint('token'), refresh);
      expect(refused.status).toBe(400);
      expect(refused.body).toEqual({ error: 'unauthorized_client', error_description: 'Client certificate missing, or its thumbprint and one in the token did NOT match' });
    }
    const refreshed = await call(tlsFetch(other), endpoint('token'), refresh);
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    expect(decodeJwt(refreshed.body!.access_token as string).cnf).toEqual({ 'x5t#S256': thumbprint(other) });
  });

  it('token exchange takes a certificate-bound subject token only over a connection with its certificate (Keycloak 26.7.3)', async () => {
    const issued = await call(tlsFetch(other), endpoint('token'), { grant_type: 'password', client_id: 'bound', client_secret: 'bound-secret-1', username: 'mia', password: 'Mia-password-1' });
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    const exchange = {
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      client_id: 'bound',
      client_secret: 'bound-secret-1',
      subject_token: issued.body!.access_token as string,
      subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    };
    const stolen = await call(tlsFetch(partner), endpoint('token'), exchange);
    expect(stolen).toMatchObject({ status: 400, body: { error: 'invalid_request', error_description: 'Client certificate missing, or its thumbprint and one in the token did NOT match' } });
    const own = await call(tlsFetch(other), endpoint('token'), exchange);
    expect(own.status, JSON.stringify(own.body)).toBe(200);
    expect(decodeJwt(own.body!.access_token as string).cnf).toEqual({ 'x5t#S256': thumbprint(other) });
  });

  it('the admin API stores client-x509 and refuses an x509.subjectdn its comparison cannot use', async () => {
    const clients = await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=partner`, admin);
    expect(clients.body[0].clientAuthenticatorType).toBe('client-x509');
    const badRegex = await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { clientId: 'bad-1', clientAuthenticatorType: 'client-x509', attributes: { 'x509.subjectdn': 'CN=(', 'x509.allow.regex.pattern.comparison': 'true' } });
    expect(badRegex.status).toBe(400);
    expect(JSON.stringify(badRegex.body)).toContain('x509.subjectdn');
    const badDn = await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { clientId: 'bad-2', clientAuthenticatorType: 'client-x509', attributes: { 'x509.subjectdn': 'not a dn' } });
    expect(badDn.status).toBe(400);
    const providers = await api(t.url, 'GET', `/admin/realms/${REALM}/authentication/client-authenticator-providers`, admin);
    expect(providers.body.map((p: { id: string }) => p.id)).toEqual(expect.arrayContaining(['client-secret', 'client-jwt', 'client-secret-jwt', 'client-x509']));
  });

  it('holder-of-key-enforcer: auto-configure binds new clients, otherwise a client without binding is refused, and a token request needs a certificate', async () => {
    const put = (path: string, body: unknown) => api(t.url, 'PUT', `/admin/realms/${REALM}/client-policies/${path}`, admin, body);
    expect((await put('profiles', { profiles: [{ name: 'hok', executors: [{ executor: 'holder-of-key-enforcer', configuration: { 'auto-configure': 'true' } }] }] })).status).toBe(204);
    expect((await put('policies', { policies: [{ name: 'hok', enabled: true, conditions: [{ condition: 'client-attributes', configuration: { attributes: JSON.stringify([{ key: 'hok', value: 'yes' }]) } }], profiles: ['hok'] }] })).status).toBe(204);
    const created = await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { clientId: 'auto', secret: 'auto-secret-1', serviceAccountsEnabled: true, attributes: { hok: 'yes' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const auto = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=auto`, admin)).body[0];
    expect(auto.attributes['tls.client.certificate.bound.access.tokens']).toBe('true');
    const without = await call(tlsFetch(null), endpoint('token'), { grant_type: 'client_credentials', client_id: 'auto', client_secret: 'auto-secret-1' });
    expect(without.status).toBe(400);
    expect(without.body?.error_description).toBe('Client Certification missing for MTLS HoK Token Binding');
    expect((await call(tlsFetch(other), endpoint('token'), { grant_type: 'client_credentials', client_id: 'auto', client_secret: 'auto-secret-1' })).status).toBe(200);

    expect((await put('profiles', { profiles: [{ name: 'hok', executors: [{ executor: 'holder-of-key-enforcer', configuration: { 'auto-configure': 'false' } }] }] })).status).toBe(204);
    const refused = await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { clientId: 'unbound', secret: 'unbound-secret-1', attributes: { hok: 'yes' } });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('MTLS token in disabled');
    expect((await put('policies', { policies: [] })).status).toBe(204);
  });
});

describe('certificate header formats and distinguished names', () => {
  it('reads PEM, URL-encoded PEM, PEM with spaces for newlines (Apache) and base64 DER (HAProxy)', () => {
    const fingerprint = new X509Certificate(partner.der).fingerprint256;
    const body = partner.der.toString('base64');
    for (const value of [partner.pem, encodeURIComponent(partner.pem), partner.pem.replace(/\n/g, ' '), body]) {
      expect(certificateFrom(value)?.fingerprint256).toBe(fingerprint);
    }
    for (const value of ['', '(null)', 'abc%', 'not base64!', Buffer.from('hello').toString('base64')]) expect(certificateFrom(value)).toBeNull();
  });

  it('each proxy provider reads its own header, and only from a trusted proxy', () => {
    const request = (remoteAddress: string, headers: Record<string, string>) => ({ raw: { socket: { remoteAddress } }, headers }) as never;
    const lookup = (provider: string, extra: Partial<ServerConfig> = {}) =>
      clientCertificateLookup({ proxyTrustedAddresses: ['10.1.0.0/16', 'loopback'], x509certLookupProvider: provider, x509certLookupSslClientCert: null, x509certLookupSslCertChainPrefix: null, x509certLookupCertificateChainLength: 10, ...extra } as ServerConfig);
    const leaf = (chain: X509Certificate[] | null) => chain?.map((c) => c.subject.split('\n').at(-1));
    const envoy = lookup('envoy');
    const xfcc = `By=spiffe://a;Cert="${encodeURIComponent(intruder.pem)}",By=spiffe://b;Hash=ab;Cert="${encodeURIComponent(partner.pem)}";Chain="${encodeURIComponent(partner.pem + ca.pem)}";Subject="CN=x,O=y"`;
    expect(leaf(envoy.chain(request('10.1.2.3', { 'x-forwarded-client-cert': xfcc })))).toEqual(['CN=partner-app', 'O=Realmgate Tests']);
    expect(envoy.chain(request('10.2.2.3', { 'x-forwarded-client-cert': xfcc }))).toBeNull();
    expect(envoy.chain(request('::ffff:127.0.0.1', { 'x-forwarded-client-cert': 'Cert="%zz"' }))).toBeNull();
    const haproxy = lookup('haproxy', { x509certLookupSslCertChainPrefix: 'CERT_CHAIN' });
    expect(leaf(haproxy.chain(request('127.0.0.1', { ssl_client_cert: partner.der.toString('base64'), cert_chain_0: ca.der.toString('base64') })))).toEqual(['CN=partner-app', 'O=Realmgate Tests']);
    const apache = lookup('apache', { x509certLookupSslClientCert: 'X-Client-Cert' });
    expect(leaf(apache.chain(request('::1', { 'x-client-cert': partner.pem.replace(/\n/g, ' ') })))).toEqual(['CN=partner-app']);
    expect(apache.chain(request('::1', { ssl_client_cert: partner.pem.replace(/\n/g, ' ') }))).toBeNull();
    // Without trusted proxies no header is ever read; the default provider reads the TLS connection only.
    expect(lookup('nginx', { proxyTrustedAddresses: [] }).chain(request('127.0.0.1', nginxHeader(partner)))).toBeNull();
    expect(lookup('default').chain(request('127.0.0.1', nginxHeader(partner)))).toBeNull();
    expect(() => lookup('nginx', { proxyTrustedAddresses: ['proxy.internal'] })).toThrow(/proxy\.internal/);
  });

  it('writes subject DNs as Keycloak compares them and reads hand-written ones alike', () => {
    expect(certificateDn(new X509Certificate(partner.der))).toBe('CN=partner-app,OU=Payments,O=Partner\\, Inc.,C=DE');
    expect(normalizeDn(PARTNER_DN)).toBe('CN=partner-app,OU=Payments,O=Partner\\, Inc.,C=DE');
    expect(normalizeDn('cn=partner-app;ou=Payments, o=Partner\\, Inc.,c=DE')).toBe('CN=partner-app,OU=Payments,O=Partner\\, Inc.,C=DE');
    expect(normalizeDn('CN=a+E=a@example.com')).toBe('CN=a+emailAddress=a@example.com');
    expect(normalizeDn('nonsense')).toBeNull();
  });
});
