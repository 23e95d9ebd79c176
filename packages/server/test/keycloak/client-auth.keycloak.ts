import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { SignJWT, exportJWK, exportSPKI, type JWK } from 'jose';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { selfSignedCertificate } from '../../src/keys/certificate.js';
import { startBoth, type Both, type Side } from './both.js';
import { compareOnBoth, errorShape, type DiffCase } from './compare.js';

/**
 * Issue 39's "Compare statuses and errors with a running Keycloak 26.7.3": client authentication by signed JWT
 * (private_key_jwt: `client-jwt`; client_secret_jwt: `client-secret-jwt`) on Keycloak and on Realmgate, each client
 * configured alike on both through the official admin client. What is compared: the status, the `error` code and
 * whether an `error_description` came — at the token endpoint, and at introspection and revocation for a few; then
 * the admin API's answers to bad client-authentication settings.
 *
 * Clients (the same on both): `by-url` reads its keys from a JWKS URL this test serves on loopback (an RS256 and an
 * ES256 key); `by-cert` has an uploaded certificate (RS256), `by-jwk` an uploaded JWK set (ES256); `by-hmac` is
 * client_secret_jwt; `by-secret` is client-secret; `pinned` reads the same JWKS URL and allows ES256 only
 * (`token.endpoint.auth.signing.alg`); `long-lived` reads it too and takes assertions up to 600 s after their `iat`
 * (`token.endpoint.auth.signing.max.exp`).
 */

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const HMAC_SECRET = 'a-shared-secret-long-enough-for-hs512-0123456789abcdef0123456789';
const PLAIN_SECRET = 'plain-secret-for-diff-7';

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const certKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwkKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });

let jwksServer: Server;
let jwksUrl = '';

const now = () => Math.floor(Date.now() / 1000);
const issuerOf = (side: Side) => `${side.url}/realms/${side.realm}`;
const endpointOf = (side: Side, path: string) => `${issuerOf(side)}/protocol/openid-connect/${path}`;

interface Signing {
  key: KeyObject | Uint8Array;
  alg: string;
  kid?: string;
}
const BY_URL_RS256: Signing = { key: rsa.privateKey, alg: 'RS256', kid: 'rsa-1' };
const BY_URL_ES256: Signing = { key: ec.privateKey, alg: 'ES256', kid: 'ec-1' };
const BY_CERT: Signing = { key: certKey.privateKey, alg: 'RS256' };
const BY_JWK: Signing = { key: jwkKey.privateKey, alg: 'ES256', kid: 'jwk-1' };
const BY_HMAC: Signing = { key: new TextEncoder().encode(HMAC_SECRET), alg: 'HS256' };

/** An assertion for `clientId` at `side`: iss = sub = the client, aud = the realm's issuer, a fresh jti, 60 s. */
function assertion(side: Side, clientId: string, signing: Signing, claims: Record<string, unknown> = {}): Promise<string> {
  const t = now();
  return new SignJWT({ iss: clientId, sub: clientId, aud: issuerOf(side), jti: randomUUID(), iat: t, exp: t + 60, ...claims })
    .setProtectedHeader({ alg: signing.alg, ...(signing.kid ? { kid: signing.kid } : {}) })
    .sign(signing.key);
}

/** An unsigned JWS (`alg: none`) with the claims a good assertion has. */
function unsecured(side: Side, clientId: string): string {
  const t = now();
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part({ iss: clientId, sub: clientId, aud: issuerOf(side), jti: randomUUID(), iat: t, exp: t + 60 })}.`;
}

async function post(side: Side, path: string, form: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(endpointOf(side, path), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) });
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    body = { text: typeof text };
  }
  return { status: response.status, body };
}

/** What is compared of an answer: status, the `error` code and whether a description came (never its text). */
function outcome(response: { status: number; body: Record<string, unknown> }): Record<string, unknown> {
  const { status, body } = response;
  if (status === 200) return { status, ...(typeof body.active === 'boolean' ? { active: body.active } : {}) };
  return { status, error: body.error ?? '(none)', description: typeof body.error_description === 'string' };
}

const withAssertion = (jwt: string, extra: Record<string, string> = {}) => ({ client_assertion_type: ASSERTION_TYPE, client_assertion: jwt, ...extra });
const CLIENT_CREDENTIALS = { grant_type: 'client_credentials' };

/** A client_credentials grant authenticated by this assertion: its outcome. */
const grant = async (side: Side, jwt: string, extra: Record<string, string> = {}) => outcome(await post(side, 'token', { ...CLIENT_CREDENTIALS, ...withAssertion(jwt, extra) }));

/** An access token of `by-url` (to introspect or revoke). */
async function tokenOfByUrl(side: Side): Promise<string> {
  const answer = await post(side, 'token', { ...CLIENT_CREDENTIALS, ...withAssertion(await assertion(side, 'by-url', BY_URL_RS256)) });
  if (answer.status !== 200) throw new Error(`${side.name}: by-url got no token (${answer.status} ${JSON.stringify(answer.body)})`);
  return answer.body.access_token as string;
}

type Row = DiffCase<void>;

const tokenRows: Row[] = [
  { name: 'private_key_jwt RS256, the key from a JWKS URL', observe: async (side) => grant(side, await assertion(side, 'by-url', BY_URL_RS256)) },
  { name: 'private_key_jwt ES256, the key from a JWKS URL', observe: async (side) => grant(side, await assertion(side, 'by-url', BY_URL_ES256)) },
  { name: 'private_key_jwt RS256, an uploaded certificate', observe: async (side) => grant(side, await assertion(side, 'by-cert', BY_CERT)) },
  { name: 'private_key_jwt ES256, an uploaded JWK set', observe: async (side) => grant(side, await assertion(side, 'by-jwk', BY_JWK)) },
  { name: 'client_secret_jwt HS256', observe: async (side) => grant(side, await assertion(side, 'by-hmac', BY_HMAC)) },
  {
    name: 'client_secret_jwt HS512, and the client_id named beside the assertion',
    observe: async (side) => grant(side, await assertion(side, 'by-hmac', { ...BY_HMAC, alg: 'HS512' }), { client_id: 'by-hmac' }),
  },
  {
    name: 'the audience is the token endpoint',
    observe: async (side) => grant(side, await assertion(side, 'by-url', BY_URL_RS256, { aud: endpointOf(side, 'token') })),
  },
  {
    name: 'the audience is the introspection endpoint, at the token endpoint',
    observe: async (side) => grant(side, await assertion(side, 'by-url', BY_URL_RS256, { aud: endpointOf(side, 'token/introspect') })),
  },
  {
    name: 'refused: a replayed assertion (the same jti)',
    async observe(side) {
      const jwt = await assertion(side, 'by-url', BY_URL_RS256);
      return { first: await grant(side, jwt), again: await grant(side, jwt) };
    },
  },
  {
    name: 'refused: the same jti in a new assertion',
    async observe(side) {
      const jti = randomUUID();
      return { first: await grant(side, await assertion(side, 'by-url', BY_URL_RS256, { jti })), again: await grant(side, await assertion(side, 'by-url', BY_URL_RS256, { jti })) };
    },
  },
  {
    name: 'refused: a wrong audience',
    observe: async (side) => grant(side, await assertion(side, 'by-url', BY_URL_RS256, { aud: 'https://elsewhere.example/realms/other' })),
  },
  {
    name: 'refused: an expired assertion',
    observe: async (side) => grant(side, await assertion(side, 'by-url', BY_URL_RS256, { iat: now() - 600, exp: now() - 300 })),
  },
  {
    name: 'refused: iat in the future',
    observe: async (side) => grant(side, await assertion(side, 'by-url', BY_URL_RS256, { iat: now() + 600, exp: now() + 660 })),
  },
  { name: 'refused: no exp', observe: async (side) => grant(side, await assertion(side, 'by-url', BY_URL_RS256, { exp: undefined })) },
  { name: 'refused: no jti', observe: async (side) => grant(side, await assertion(side, 'by-url', BY_URL_RS256, { jti: undefined })) },
  {
    name: "refused: another client's key (by-url's key naming by-cert)",
    observe: async (side) => grant(side, await assertion(side, 'by-cert', { ...BY_URL_RS256, kid: undefined })),
  },
  {
    name: "refused: another client's key with its kid (by-url's key naming by-jwk)",
    observe: async (side) => grant(side, await assertion(side, 'by-jwk', BY_URL_ES256)),
  },
  { name: 'refused: alg none', observe: async (side) => grant(side, unsecured(side, 'by-url')) },
  {
    name: 'refused: HS256 keyed with the public key',
    observe: async (side) => grant(side, await assertion(side, 'by-url', { key: new TextEncoder().encode(await exportSPKI(rsa.publicKey)), alg: 'HS256', kid: 'rsa-1' })),
  },
  {
    name: 'refused: issued more than 60 s ago (token.endpoint.auth.signing.max.exp unset), though not expired',
    observe: async (side) => grant(side, await assertion(side, 'by-url', BY_URL_RS256, { iat: now() - 300, exp: now() + 60 })),
  },
  {
    name: 'refused: no iat and an exp an hour ahead',
    observe: async (side) => grant(side, await assertion(side, 'by-url', BY_URL_RS256, { iat: undefined, exp: now() + 3600 })),
  },
  {
    name: 'no iat and an exp within 60 s',
    observe: async (side) => grant(side, await assertion(side, 'by-url', BY_URL_RS256, { iat: undefined, exp: now() + 30 })),
  },
  {
    name: 'token.endpoint.auth.signing.max.exp 600: an assertion issued 300 s ago passes, one issued 900 s ago is refused',
    async observe(side) {
      return {
        recent: await grant(side, await assertion(side, 'long-lived', BY_URL_RS256, { iat: now() - 300, exp: now() + 60 })),
        old: await grant(side, await assertion(side, 'long-lived', BY_URL_RS256, { iat: now() - 900, exp: now() + 60 })),
      };
    },
  },
  {
    name: 'refused: two audiences, one of them the issuer',
    observe: async (side) => grant(side, await assertion(side, 'by-url', BY_URL_RS256, { aud: [issuerOf(side), 'https://elsewhere.example/'] })),
  },
  {
    name: 'one audience in a list',
    observe: async (side) => grant(side, await assertion(side, 'by-url', BY_URL_RS256, { aud: [issuerOf(side)] })),
  },
  {
    name: 'refused: client_secret_jwt keyed with another secret',
    observe: async (side) => grant(side, await assertion(side, 'by-hmac', { ...BY_HMAC, key: new TextEncoder().encode(`${HMAC_SECRET}-other`) })),
  },
  {
    name: 'refused: client_secret_jwt with a wrong audience, expired, replayed',
    async observe(side) {
      const once = await assertion(side, 'by-hmac', BY_HMAC);
      return {
        audience: await grant(side, await assertion(side, 'by-hmac', BY_HMAC, { aud: 'https://elsewhere.example/' })),
        expired: await grant(side, await assertion(side, 'by-hmac', BY_HMAC, { iat: now() - 600, exp: now() - 300 })),
        first: await grant(side, once),
        replayed: await grant(side, once),
      };
    },
  },
  {
    name: 'refused: the client_id names another client than iss and sub',
    observe: async (side) => grant(side, await assertion(side, 'by-url', BY_URL_RS256), { client_id: 'by-cert' }),
  },
  {
    name: 'refused: a client-secret client sending an assertion, its client_id named',
    observe: async (side) => grant(side, await assertion(side, 'by-secret', BY_URL_RS256), { client_id: 'by-secret' }),
  },
  {
    name: 'refused: iss is not the client',
    observe: async (side) => grant(side, await assertion(side, 'by-url', BY_URL_RS256, { iss: 'by-cert' })),
  },
  {
    name: 'refused: sub is another client, the client_id names the signer',
    observe: async (side) => grant(side, await assertion(side, 'by-url', BY_URL_RS256, { sub: 'by-cert' }), { client_id: 'by-url' }),
  },
  {
    name: 'refused: sub is a client that does not exist',
    observe: async (side) => grant(side, await assertion(side, 'by-url', BY_URL_RS256, { sub: 'no-such-client' })),
  },
  {
    name: 'refused: a client-jwt client sending its secret',
    async observe(side) {
      return outcome(await post(side, 'token', { ...CLIENT_CREDENTIALS, client_id: 'by-url', client_secret: PLAIN_SECRET }));
    },
  },
  {
    name: 'refused: a client-jwt client sending nothing',
    observe: async (side) => outcome(await post(side, 'token', { ...CLIENT_CREDENTIALS, client_id: 'by-url' })),
  },
  {
    name: 'refused: a client_secret_jwt client sending its plain secret',
    observe: async (side) => outcome(await post(side, 'token', { ...CLIENT_CREDENTIALS, client_id: 'by-hmac', client_secret: HMAC_SECRET })),
  },
  {
    name: 'refused: a client_secret_jwt client sending an RS256 assertion',
    observe: async (side) => grant(side, await assertion(side, 'by-hmac', BY_URL_RS256)),
  },
  {
    name: 'refused: a client-secret client sending an assertion',
    observe: async (side) => grant(side, await assertion(side, 'by-secret', BY_URL_RS256)),
  },
  {
    name: 'a client-secret client sending its secret (the baseline)',
    observe: async (side) => outcome(await post(side, 'token', { ...CLIENT_CREDENTIALS, client_id: 'by-secret', client_secret: PLAIN_SECRET })),
  },
  {
    name: 'token.endpoint.auth.signing.alg ES256: an ES256 assertion passes, an RS256 one is refused',
    async observe(side) {
      return { es256: await grant(side, await assertion(side, 'pinned', BY_URL_ES256)), rs256: await grant(side, await assertion(side, 'pinned', BY_URL_RS256)) };
    },
  },
  {
    name: 'refused: a wrong client_assertion_type',
    observe: async (side) => outcome(await post(side, 'token', { ...CLIENT_CREDENTIALS, client_assertion_type: 'urn:example:other', client_assertion: await assertion(side, 'by-url', BY_URL_RS256) })),
  },
  {
    name: 'refused: an assertion that is not a JWT, the client named',
    observe: async (side) => grant(side, 'not-a-jwt', { client_id: 'by-url' }),
  },
];

/** Introspection and revocation: the same client authentication, a few cases each. */
const otherEndpointRows: Row[] = [
  {
    name: 'introspection: private_key_jwt RS256',
    async observe(side) {
      const token = await tokenOfByUrl(side);
      return outcome(await post(side, 'token/introspect', withAssertion(await assertion(side, 'by-url', BY_URL_RS256), { token })));
    },
  },
  {
    name: 'introspection: the audience is the introspection endpoint',
    async observe(side) {
      const token = await tokenOfByUrl(side);
      return outcome(await post(side, 'token/introspect', withAssertion(await assertion(side, 'by-url', BY_URL_RS256, { aud: endpointOf(side, 'token/introspect') }), { token })));
    },
  },
  {
    name: 'introspection refused: a replayed assertion, a wrong audience, alg none, a client-jwt client sending its secret',
    async observe(side) {
      const token = await tokenOfByUrl(side);
      const jwt = await assertion(side, 'by-url', BY_URL_RS256);
      const first = outcome(await post(side, 'token/introspect', withAssertion(jwt, { token })));
      return {
        first,
        replayed: outcome(await post(side, 'token/introspect', withAssertion(jwt, { token }))),
        audience: outcome(await post(side, 'token/introspect', withAssertion(await assertion(side, 'by-url', BY_URL_RS256, { aud: 'https://elsewhere.example/' }), { token }))),
        none: outcome(await post(side, 'token/introspect', withAssertion(unsecured(side, 'by-url'), { token }))),
        secret: outcome(await post(side, 'token/introspect', { token, client_id: 'by-url', client_secret: PLAIN_SECRET })),
        // The client-secret baseline beside them: a wrong secret, and an assertion naming that client.
        wrongSecret: outcome(await post(side, 'token/introspect', { token, client_id: 'by-secret', client_secret: 'not-the-secret' })),
        secretClientAssertion: outcome(await post(side, 'token/introspect', withAssertion(await assertion(side, 'by-secret', BY_URL_RS256), { token }))),
      };
    },
  },
  {
    name: 'revocation: private_key_jwt ES256',
    async observe(side) {
      const token = await tokenOfByUrl(side);
      return outcome(await post(side, 'revoke', withAssertion(await assertion(side, 'by-url', BY_URL_ES256), { token })));
    },
  },
  {
    name: 'revocation: the audience is the revocation endpoint',
    async observe(side) {
      const token = await tokenOfByUrl(side);
      return outcome(await post(side, 'revoke', withAssertion(await assertion(side, 'by-url', BY_URL_RS256, { aud: endpointOf(side, 'revoke') }), { token })));
    },
  },
  {
    name: 'revocation refused: an expired assertion, another client’s key, a client-secret client sending an assertion',
    async observe(side) {
      const token = await tokenOfByUrl(side);
      return {
        expired: outcome(await post(side, 'revoke', withAssertion(await assertion(side, 'by-url', BY_URL_RS256, { iat: now() - 600, exp: now() - 300 }), { token }))),
        foreign: outcome(await post(side, 'revoke', withAssertion(await assertion(side, 'by-cert', { ...BY_URL_RS256, kid: undefined }), { token }))),
        secretClient: outcome(await post(side, 'revoke', withAssertion(await assertion(side, 'by-secret', BY_URL_RS256), { token }))),
      };
    },
  },
];

/** Whether a client of this clientId exists now. */
async function exists(side: Side, clientId: string): Promise<boolean> {
  return (await (await side.admin()).clients.find({ clientId })).length > 0;
}

/** Bad client-authentication settings at the admin API: status, the error's field names, whether it was stored. */
const adminRows: Row[] = [
  {
    name: 'bad input: an unknown clientAuthenticatorType',
    async observe(side) {
      const answer = await side.call('POST', '/clients', { clientId: 'unknown-authenticator', clientAuthenticatorType: 'no-such-authenticator', serviceAccountsEnabled: true, secret: PLAIN_SECRET });
      const stored = await exists(side, 'unknown-authenticator');
      // What such a client, if stored, answers to its secret.
      const token = outcome(await post(side, 'token', { ...CLIENT_CREDENTIALS, client_id: 'unknown-authenticator', client_secret: PLAIN_SECRET }));
      return { ...errorShape(answer), stored, token };
    },
  },
  {
    name: 'bad input: a jwks.url that is not a URL',
    async observe(side) {
      const answer = await side.call('POST', '/clients', { clientId: 'bad-jwks-url', clientAuthenticatorType: 'client-jwt', serviceAccountsEnabled: true, attributes: { 'use.jwks.url': 'true', 'jwks.url': 'not a url' } });
      return { ...errorShape(answer), stored: await exists(side, 'bad-jwks-url') };
    },
  },
  {
    name: 'bad input: a jwks.url at the link-local metadata address',
    async observe(side) {
      const answer = await side.call('POST', '/clients', { clientId: 'metadata-jwks-url', clientAuthenticatorType: 'client-jwt', attributes: { 'use.jwks.url': 'true', 'jwks.url': 'http://169.254.169.254/latest/jwks' } });
      return { ...errorShape(answer), stored: await exists(side, 'metadata-jwks-url') };
    },
  },
  {
    name: 'bad input: a jwt.credential.certificate that is not a certificate',
    async observe(side) {
      const answer = await side.call('POST', '/clients', { clientId: 'bad-certificate', clientAuthenticatorType: 'client-jwt', attributes: { 'jwt.credential.certificate': Buffer.from('not a certificate').toString('base64') } });
      return { ...errorShape(answer), stored: await exists(side, 'bad-certificate') };
    },
  },
  {
    name: 'bad input: a certificate upload that is not a certificate',
    async observe(side) {
      const kc = await side.admin();
      const id = (await kc.clients.find({ clientId: 'by-cert' }))[0].id!;
      const before = (await kc.clients.getKeyInfo({ id, attr: 'jwt.credential' })).certificate;
      const token = (await kc.getAccessToken())!;
      const form = new FormData();
      form.append('keystoreFormat', 'Certificate PEM');
      form.append('file', new Blob(['-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n']), 'cert.pem');
      const response = await fetch(`${side.url}/admin/realms/${side.realm}/clients/${id}/certificates/jwt.credential/upload-certificate`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
      const text = await response.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON
      }
      const after = (await kc.clients.getKeyInfo({ id, attr: 'jwt.credential' })).certificate;
      return { ...errorShape({ status: response.status, body }), changed: after !== before };
    },
  },
  {
    name: 'bad input: a certificate whose key is not the key of its JWK set',
    async observe(side) {
      // A certificate of one key pair beside a JWK set of another: which one authenticates is what is compared.
      const certificate = selfSignedCertificate(certKey.privateKey, certKey.publicKey, 'mismatched').toString('base64');
      const answer = await side.call('POST', '/clients', {
        clientId: 'mismatched',
        clientAuthenticatorType: 'client-jwt',
        serviceAccountsEnabled: true,
        attributes: { 'jwt.credential.certificate': certificate, 'use.jwks.string': 'true', 'jwks.string': JSON.stringify({ keys: [await publicJwk(jwkKey.publicKey, 'other-1', 'ES256')] }) },
      });
      const stored = await exists(side, 'mismatched');
      return {
        ...errorShape(answer),
        stored,
        byCertificate: stored ? await grant(side, await assertion(side, 'mismatched', BY_CERT)) : null,
        byJwk: stored ? await grant(side, await assertion(side, 'mismatched', { ...BY_JWK, kid: 'other-1' })) : null,
      };
    },
  },
];

async function publicJwk(key: KeyObject, kid: string, alg: string): Promise<JWK> {
  return { ...(await exportJWK(key)), kid, alg, use: 'sig' };
}

/** Uploads a file to the client's jwt.credential as the console's Keys tab does. */
async function upload(side: Side, id: string, keystoreFormat: string, file: string): Promise<void> {
  const form = new FormData();
  form.append('keystoreFormat', keystoreFormat);
  form.append('file', new Blob([file]), 'key-file');
  await (await side.admin()).clients.uploadCertificate({ id, attr: 'jwt.credential' }, form);
}

async function setUpClients(side: Side): Promise<void> {
  const kc = await side.admin();
  const base = { serviceAccountsEnabled: true, standardFlowEnabled: false, publicClient: false };
  // Introspects its own tokens: Keycloak 26.6.2+ checks the caller is in the token's audience unless this is set.
  await kc.clients.create({ ...base, clientId: 'by-url', clientAuthenticatorType: 'client-jwt', secret: PLAIN_SECRET, attributes: { 'use.jwks.url': 'true', 'jwks.url': jwksUrl, 'allow.token.introspection.without.audience.check': 'true' } });
  const cert = await kc.clients.create({ ...base, clientId: 'by-cert', clientAuthenticatorType: 'client-jwt', attributes: { 'use.jwks.url': 'false' } });
  const der = selfSignedCertificate(certKey.privateKey, certKey.publicKey, 'by-cert').toString('base64');
  await upload(side, cert.id, 'Certificate PEM', `-----BEGIN CERTIFICATE-----\n${der.replace(/.{64}/g, '$&\n')}\n-----END CERTIFICATE-----\n`);
  const jwk = await kc.clients.create({ ...base, clientId: 'by-jwk', clientAuthenticatorType: 'client-jwt', attributes: { 'use.jwks.url': 'false' } });
  await upload(side, jwk.id, 'JSON Web Key Set', JSON.stringify({ keys: [await publicJwk(jwkKey.publicKey, 'jwk-1', 'ES256')] }));
  await kc.clients.create({ ...base, clientId: 'by-hmac', clientAuthenticatorType: 'client-secret-jwt', secret: HMAC_SECRET });
  await kc.clients.create({ ...base, clientId: 'by-secret', clientAuthenticatorType: 'client-secret', secret: PLAIN_SECRET });
  await kc.clients.create({ ...base, clientId: 'long-lived', clientAuthenticatorType: 'client-jwt', attributes: { 'use.jwks.url': 'true', 'jwks.url': jwksUrl, 'token.endpoint.auth.signing.max.exp': '600' } });
  await kc.clients.create({ ...base, clientId: 'pinned', clientAuthenticatorType: 'client-jwt', attributes: { 'use.jwks.url': 'true', 'jwks.url': jwksUrl, 'token.endpoint.auth.signing.alg': 'ES256' } });
}

describe('client authentication by keys against Keycloak 26.7.3 (issue 39, compared)', () => {
  let both: Both;

  beforeAll(async () => {
    const keys = { keys: [await publicJwk(rsa.publicKey, 'rsa-1', 'RS256'), await publicJwk(ec.publicKey, 'ec-1', 'ES256')] };
    jwksServer = createServer((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(keys)));
    await new Promise<void>((done) => jwksServer.listen(0, '127.0.0.1', done));
    jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks`;
    both = await startBoth(setUpClients);
  });

  afterAll(async () => {
    await both?.close();
    await new Promise((done) => jwksServer?.close(done));
  });

  for (const row of [...tokenRows, ...otherEndpointRows, ...adminRows]) it(row.name, () => compareOnBoth(both, row, undefined).then(() => {}));
});
