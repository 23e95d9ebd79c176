import KcAdminClient from '@keycloak/keycloak-admin-client';
import { createVerify, verify } from 'node:crypto';
import { createRequire } from 'node:module';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, tokenRequest, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

/**
 * Issue 39: keycloak-connect (26, unchanged from npm) and a realm that signs ES256. keycloak-connect finds the key by
 * the token's kid in the realm's JWKS (jwk-to-pem reads the EC key), but checks every signature with
 * `crypto.createVerify('RSA-SHA256')` on the JWS signature as it is: an ES256 signature is R||S (RFC 7518 3.4),
 * which OpenSSL's ECDSA verify does not take (it wants DER), and the hash is SHA-256 whatever the algorithm. So it
 * refuses every ES256 token, ours as Keycloak's; the token itself is sound (jose verifies it, and so does the same
 * key with the R||S encoding named). What a user configures: the client keycloak-connect uses signs RS256
 * (`access.token.signed.response.alg` and `id.token.signed.response.alg`), while the realm's default stays ES256.
 */
const require = createRequire(import.meta.url);
const Config = require('keycloak-connect/middleware/auth-utils/config.js');
const GrantManager = require('keycloak-connect/middleware/auth-utils/grant-manager.js');
const Rotation = require('keycloak-connect/middleware/auth-utils/rotation.js');

describe('keycloak-connect with a realm signing ES256', () => {
  let t: TestServer;
  let kc: KcAdminClient;
  let webId: string;
  const installation = () => kc.clients.getInstallationProviders({ id: webId, providerId: 'keycloak-oidc-keycloak-json' }) as unknown as Promise<Record<string, unknown>>;

  beforeAll(async () => {
    t = await startServer();
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'es-app', enabled: true, sslRequired: 'none', defaultSignatureAlgorithm: 'ES256' });
    kc.setConfig({ realmName: 'es-app' });
    webId = (await kc.clients.create({ clientId: 'es-web', publicClient: true, directAccessGrantsEnabled: true })).id;
    await kc.users.create({ username: 'esme', enabled: true, email: 'esme@example.test', credentials: [{ type: 'password', value: 'Esme-pass-1', temporary: false }] });
  });
  afterAll(() => t?.close());

  const passwordGrant = async () => {
    const res = await tokenRequest(t.url, 'es-app', { grant_type: 'password', client_id: 'es-web', username: 'esme', password: 'Esme-pass-1', scope: 'openid' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as Record<string, string>;
  };

  it('refuses our ES256 token by its signature, though it finds the key by kid and the token is sound', async () => {
    const manager = new GrantManager(new Config(await installation()));
    await expect(manager.obtainDirectly('esme', 'Esme-pass-1', undefined, 'openid')).rejects.toThrow('Grant validation failed. Reason: invalid token (public key signature)');

    const { access_token: token } = await passwordGrant();
    const header = decodeProtectedHeader(token);
    expect(header.alg).toBe('ES256');
    // Sound: jose verifies it through the realm's JWKS.
    await jwtVerify(token, createRemoteJWKSet(new URL(`${t.url}/realms/es-app/protocol/openid-connect/certs`)), { issuer: `${t.url}/realms/es-app` });
    // keycloak-connect's own key lookup finds the EC key by kid; its check (RSA-SHA256 over the R||S signature) fails,
    // and the same key verifies once the signature's encoding is named.
    const pem = await new Rotation(new Config(await installation())).getJWK(header.kid);
    expect(pem).toContain('BEGIN PUBLIC KEY');
    const [head, payload, signature] = token.split('.');
    const signed = Buffer.from(`${head}.${payload}`);
    const raw = Buffer.from(signature, 'base64url');
    expect(raw).toHaveLength(64);
    expect(createVerify('RSA-SHA256').update(signed).verify(pem, raw)).toBe(false);
    expect(verify('sha256', signed, { key: pem, dsaEncoding: 'ieee-p1363' }, raw)).toBe(true);
  });

  it('validates the grant once the client signs RS256 (the override a user configures); the realm still signs ES256 for others', async () => {
    const rep = (await kc.clients.findOne({ id: webId }))!;
    await kc.clients.update({ id: webId }, { ...rep, attributes: { ...rep.attributes, 'access.token.signed.response.alg': 'RS256', 'id.token.signed.response.alg': 'RS256' } });
    const manager = new GrantManager(new Config(await installation()));
    const grant = await manager.obtainDirectly('esme', 'Esme-pass-1', undefined, 'openid');
    expect(grant.access_token.content.preferred_username).toBe('esme');
    expect(decodeProtectedHeader(grant.access_token.token).alg).toBe('RS256');
    expect(decodeProtectedHeader(grant.id_token.token).alg).toBe('RS256');
    expect(await manager.validateGrant(grant)).toBe(grant);
    // Another client of the realm still gets ES256 tokens.
    await kc.clients.create({ clientId: 'es-other', publicClient: true, directAccessGrantsEnabled: true });
    const other = await tokenRequest(t.url, 'es-app', { grant_type: 'password', client_id: 'es-other', username: 'esme', password: 'Esme-pass-1' });
    expect(other.status).toBe(200);
    expect(decodeProtectedHeader((other.body as Record<string, string>).access_token).alg).toBe('ES256');
  });
});
