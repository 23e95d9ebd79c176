import { generateKeyPairSync } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeProtectedHeader, exportJWK, generateKeyPair, jwtVerify, SignJWT, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appleClientSecret, appleKeyOf, APPLE_AUDIENCE, APPLE_SECRET_LIFETIME_SECONDS } from '../src/authentication/brokering/apple-client-secret.js';
import { UpstreamError } from '../src/authentication/brokering/upstream-oidc.js';
import { FormClient, pkce } from './support/forms.js';
import { adminToken, api, startServer, type TestServer } from './support/server.js';

/**
 * Sign in with Apple with the client secret made from the team's `.p8` key (teamId, keyId, p8Content, as the
 * community Apple provider names them), against a loopback fake of Apple (appleid.apple.com overridden to it): its
 * token endpoint takes a code only with a client secret that verifies with the key's public half and names the team,
 * the Services ID, Apple and the key; a secret made with another key, or none, is refused. The key is a secret of
 * the admin API (masked), and a key that is no EC P-256 key fails the sign-in with a page, never a 5xx.
 */

const TEAM_ID = 'TEAM123456';
const KEY_ID = 'KEY987654';
const CLIENT_ID = 'com.example.web';
const APP_REDIRECT = 'http://app.test/callback';

const teamKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const otherKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const pemOf = (pair: typeof teamKey) => pair.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();

const body = (request: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString()));
    request.on('end', () => resolve(text));
  });

describe('Apple: the client secret made from the team key', () => {
  let t: TestServer;
  let token: string;
  let fake: Server;
  /** The client secrets Apple's fake token endpoint was sent, and whether each verified. */
  const secrets: { jwt: string; verified: boolean }[] = [];
  const codes = new Map<string, { nonce: string; used: boolean }>();

  beforeAll(async () => {
    const idKey = await generateKeyPair('RS256');
    const jwk: JWK = { ...(await exportJWK(idKey.publicKey)), kid: 'apple-id', alg: 'RS256', use: 'sig' };
    fake = createServer(async (request, response) => {
      const url = new URL(request.url!, 'http://apple.test');
      const json = (status: number, value: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      if (url.pathname === '/auth/authorize') {
        const code = `code-${codes.size}`;
        codes.set(code, { nonce: url.searchParams.get('nonce')!, used: false });
        const back = new URL(url.searchParams.get('redirect_uri')!);
        back.searchParams.set('code', code);
        back.searchParams.set('state', url.searchParams.get('state')!);
        return response.writeHead(302, { location: back.href }).end();
      }
      if (url.pathname === '/auth/keys') return json(200, { keys: [jwk] });
      if (url.pathname === '/auth/token' && request.method === 'POST') {
        const form = new URLSearchParams(await body(request));
        const jwt = form.get('client_secret') ?? '';
        let verified = false;
        try {
          // What Apple checks: ES256 by the key named, the team as issuer, the Services ID as subject, Apple as audience.
          const { payload, protectedHeader } = await jwtVerify(jwt, teamKey.publicKey, { algorithms: ['ES256'], issuer: TEAM_ID, audience: APPLE_AUDIENCE, subject: form.get('client_id') ?? '' });
          verified = protectedHeader.kid === KEY_ID && typeof payload.exp === 'number' && typeof payload.iat === 'number';
        } catch {
          verified = false;
        }
        secrets.push({ jwt, verified });
        const grant = codes.get(form.get('code') ?? '');
        if (!verified) return json(400, { error: 'invalid_client' });
        if (!grant || grant.used || form.get('client_id') !== CLIENT_ID) return json(400, { error: 'invalid_grant' });
        grant.used = true;
        const now = Math.floor(Date.now() / 1000);
        const idToken = await new SignJWT({ email: 'ann@privaterelay.appleid.com', email_verified: 'true', nonce: grant.nonce, given_name: 'Ann', family_name: 'Apple' })
          .setProtectedHeader({ alg: 'RS256', kid: 'apple-id' })
          .setIssuer('https://appleid.apple.com')
          .setSubject('001234.apple.5678')
          .setAudience(CLIENT_ID)
          .setIssuedAt(now)
          .setExpirationTime(now + 300)
          .sign(idKey.privateKey);
        return json(200, { access_token: 'apple-at', token_type: 'Bearer', expires_in: 3600, id_token: idToken });
      }
      json(404, { error: 'not_found' });
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    const fakeUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
    t = await startServer({ config: { REALMGATE_BROKER_ENDPOINT_OVERRIDES: `appleid.apple.com=${fakeUrl}` } });
    token = await adminToken(t.url);
    const created = await api(t.url, 'POST', '/admin/realms', token, {
      realm: 'fruit',
      enabled: true,
      eventsEnabled: true,
      clients: [{ clientId: 'app', enabled: true, publicClient: true, redirectUris: [APP_REDIRECT], standardFlowEnabled: true }],
      identityProviders: [{ alias: 'apple', providerId: 'apple', enabled: true, config: { clientId: CLIENT_ID, teamId: TEAM_ID, keyId: KEY_ID, p8Content: pemOf(teamKey), defaultScope: 'openid' } }],
    });
    expect(created.status).toBe(201);
  });

  afterAll(async () => {
    await t?.close();
    fake?.close();
  });

  const admin = (method: string, path: string, payload?: unknown) => api(t.url, method, `/admin/realms/fruit${path}`, token, payload);

  /** A sign-in through Apple (kc_idp_hint) in a new browser: the answer of Realmgate's callback. */
  async function signIn() {
    const browser = new FormClient(t.url);
    const query = new URLSearchParams({ client_id: 'app', redirect_uri: APP_REDIRECT, response_type: 'code', scope: 'openid', state: 's', code_challenge: pkce().challenge, code_challenge_method: 'S256', kc_idp_hint: 'apple' });
    let answer = await browser.get(`/realms/fruit/protocol/openid-connect/auth?${query}`);
    for (let hops = 0; answer.status === 302 && !answer.location!.startsWith(APP_REDIRECT) && hops < 6; hops++) {
      const next = new URL(answer.location!, t.url);
      // The fake's redirect is followed by plain fetch (another host); Realmgate's with the browser's cookies.
      answer = next.href.startsWith(t.url) ? await browser.get(next.href) : { ...answer, status: 302, location: (await fetch(next, { redirect: 'manual' })).headers.get('location') };
    }
    return answer;
  }

  it('each code exchange sends a fresh ES256 secret that verifies with the team key: the user signs in', async () => {
    const first = await signIn();
    expect(first.status, first.text?.slice(0, 300)).toBe(302);
    expect(first.location).toMatch(/^http:\/\/app\.test\/callback\?.*code=/);
    const second = await signIn();
    expect(second.location).toMatch(/^http:\/\/app\.test\/callback\?.*code=/);
    expect(secrets.map((s) => s.verified)).toEqual([true, true]);
    // Made for each exchange: not the same token twice, each short-lived and naming its key.
    expect(secrets[0].jwt).not.toBe(secrets[1].jwt);
    for (const { jwt } of secrets) {
      expect(decodeProtectedHeader(jwt)).toEqual({ alg: 'ES256', kid: KEY_ID });
      const { payload } = await jwtVerify(jwt, teamKey.publicKey, { currentDate: new Date(), clockTolerance: 0 });
      expect(payload.exp! - payload.iat!).toBe(APPLE_SECRET_LIFETIME_SECONDS);
    }
    const users = (await admin('GET', '/users')).body as { username: string }[];
    expect(users.map((u) => u.username)).toEqual(['ann@privaterelay.appleid.com']);
  });

  it('the key is a secret of the admin API: answered masked, kept when the mask is sent back', async () => {
    const answered = (await admin('GET', '/identity-provider/instances/apple')).body as { config: Record<string, string> };
    expect(answered.config.p8Content).toBe('**********');
    expect(answered.config.teamId).toBe(TEAM_ID);
    expect(JSON.stringify(answered)).not.toContain('PRIVATE KEY');
    expect((await admin('PUT', '/identity-provider/instances/apple', answered)).status).toBe(204);
    const before = secrets.length;
    expect((await signIn()).location).toMatch(/code=/);
    expect(secrets.slice(before).map((s) => s.verified)).toEqual([true]);
  });

  it("another team's key: Apple refuses the secret, the login page says the sign-in failed (400, never a 5xx)", async () => {
    const current = (await admin('GET', '/identity-provider/instances/apple')).body as { config: Record<string, string> };
    expect((await admin('PUT', '/identity-provider/instances/apple', { ...current, config: { ...current.config, p8Content: pemOf(otherKey) } })).status).toBe(204);
    try {
      const before = secrets.length;
      const answer = await signIn();
      expect(answer.status).toBe(400);
      expect(answer.text).toContain('Sign-in with Apple failed');
      expect(secrets.slice(before).map((s) => s.verified)).toEqual([false]);
      // Not a key at all: the admin API refuses it (400 naming the field), the stored key unchanged.
      const refused = await admin('PUT', '/identity-provider/instances/apple', { ...current, config: { ...current.config, p8Content: 'not a key' } });
      expect(refused.status).toBe(400);
      expect(JSON.stringify(refused.body)).toContain('p8Content');
      const created = await admin('POST', '/identity-provider/instances', { alias: 'apple-2', providerId: 'apple', config: { clientId: CLIENT_ID, teamId: TEAM_ID, keyId: KEY_ID, p8Content: pemOf(otherKey).replace('MI', 'XX') } });
      expect(created.status).toBe(400);
      expect((await admin('GET', '/identity-provider/instances/apple-2')).status).toBe(404);
      expect(secrets.length).toBe(before + 1);
    } finally {
      expect((await admin('PUT', '/identity-provider/instances/apple', { ...current, config: { ...current.config, p8Content: pemOf(teamKey) } })).status).toBe(204);
    }
  });
});

describe('appleClientSecret', () => {
  const config = { clientId: CLIENT_ID, teamId: TEAM_ID, keyId: KEY_ID, p8Content: pemOf(teamKey) };

  it('names the team, the Services ID, Apple and the key, and lives a few minutes from now', async () => {
    const now = Date.UTC(2030, 0, 1);
    const jwt = (await appleClientSecret(config, now))!;
    const { payload, protectedHeader } = await jwtVerify(jwt, teamKey.publicKey, { currentDate: new Date(now), issuer: TEAM_ID, subject: CLIENT_ID, audience: APPLE_AUDIENCE });
    expect(protectedHeader).toEqual({ alg: 'ES256', kid: KEY_ID });
    expect(payload.iat).toBe(now / 1000);
    expect(payload.exp).toBe(now / 1000 + APPLE_SECRET_LIFETIME_SECONDS);
    await expect(jwtVerify(jwt, otherKey.publicKey)).rejects.toThrow();
  });

  it('takes the .p8 file as given, or its base64 body alone; no key configured: null (the stored clientSecret is sent)', async () => {
    const bare = pemOf(teamKey).replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '');
    expect(appleKeyOf(bare)).not.toBeNull();
    expect(appleKeyOf(pemOf(teamKey))).not.toBeNull();
    const jwt = (await appleClientSecret({ ...config, p8Content: bare }))!;
    await expect(jwtVerify(jwt, teamKey.publicKey, { issuer: TEAM_ID })).resolves.toBeTruthy();
    expect(await appleClientSecret({ clientId: CLIENT_ID, clientSecret: 'static' })).toBeNull();
  });

  it('refuses a half-configured key, and a key that is not EC P-256 (an RSA key, a P-384 key, text)', async () => {
    await expect(appleClientSecret({ clientId: CLIENT_ID, teamId: TEAM_ID, p8Content: pemOf(teamKey) })).rejects.toThrow(/keyId/);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    for (const p8Content of [rsa, p384, 'not a key']) {
      expect(appleKeyOf(p8Content)).toBeNull();
      await expect(appleClientSecret({ ...config, p8Content })).rejects.toBeInstanceOf(UpstreamError);
    }
  });
});
