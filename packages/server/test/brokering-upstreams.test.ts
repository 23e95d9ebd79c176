import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import Provider from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FormClient, pkce } from './support/forms.js';
import { adminToken, api, eventually, startServer, type TestServer } from './support/server.js';

/**
 * Issue 37 against upstreams that are not Realmgate: panva's oidc-provider (a certified OpenID provider) on
 * loopback for a whole first login with client_secret_basic and PKCE, and a scripted upstream on loopback whose
 * token endpoint answers ID tokens with a wrong nonce, a wrong audience, a foreign signature or an expired one:
 * each is refused (the login page with a message, an IDENTITY_PROVIDER_LOGIN_ERROR event), and nobody is created.
 */

const APP_REDIRECT = 'http://app.test/callback';
const { challenge } = pkce();
const authQuery = (extra: Record<string, string> = {}) =>
  new URLSearchParams({ client_id: 'app', redirect_uri: APP_REDIRECT, response_type: 'code', scope: 'openid', state: 'app-state', code_challenge: challenge, code_challenge_method: 'S256', ...extra }).toString();

const listen = (server: Server) => new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));

describe('signing in through identity providers that are not Realmgate', () => {
  let t: TestServer;
  let token: string;
  let panva: Server;
  let panvaUrl: string;
  let scripted: Server;
  let scriptedUrl: string;
  /** What the scripted upstream's next ID token gets wrong. */
  let next: { nonce: string; mistake: 'none' | 'nonce' | 'audience' | 'signature' | 'expired' } = { nonce: '', mistake: 'none' };
  const admin = (method: string, path: string, body?: unknown) => api(t.url, method, `/admin/realms/brokered${path}`, token, body);
  const users = async () => ((await admin('GET', '/users')).body as { username: string; email?: string; attributes?: Record<string, string[]> }[]);

  beforeAll(async () => {
    t = await startServer();
    token = await adminToken(t.url);

    // panva's oidc-provider, signing in `panva-user` at once (no pages: the interaction is answered by the test's middleware).
    panva = createServer();
    panvaUrl = await listen(panva);
    const provider = new Provider(panvaUrl, {
      clients: [{ client_id: 'realmgate', client_secret: 'panva-secret', redirect_uris: [`${t.url}/realms/brokered/broker/panva/endpoint`], token_endpoint_auth_method: 'client_secret_basic' }],
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['given_name', 'family_name', 'preferred_username'] },
      findAccount: async (_ctx: unknown, id: string) => ({
        accountId: id,
        claims: async () => ({ sub: id, email: 'panva@example.com', email_verified: true, given_name: 'Pan', family_name: 'Va', preferred_username: 'panva-user' }),
      }),
      features: { devInteractions: { enabled: false } },
      interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    });
    provider.use(async (ctx, nextMiddleware) => {
      if (!ctx.path.startsWith('/interaction/')) return nextMiddleware();
      const details = await provider.interactionDetails(ctx.req, ctx.res);
      if (details.prompt.name === 'login') return provider.interactionFinished(ctx.req, ctx.res, { login: { accountId: 'panva-account' } }, { mergeWithLastSubmission: false });
      const grant = new provider.Grant({ accountId: details.session!.accountId, clientId: details.params.client_id as string });
      grant.addOIDCScope(String(details.params.scope));
      return provider.interactionFinished(ctx.req, ctx.res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
    });
    panva.on('request', provider.callback());

    // The scripted upstream: its token endpoint signs what the test asks for.
    const good = await generateKeyPair('RS256');
    const foreign = await generateKeyPair('RS256');
    const jwk: JWK = { ...(await exportJWK(good.publicKey)), kid: 'good', alg: 'RS256', use: 'sig' };
    scripted = createServer(async (request, response) => {
      const path = new URL(request.url!, 'http://x').pathname;
      if (path === '/certs') return response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
      if (path === '/token') {
        const now = Math.floor(Date.now() / 1000);
        const idToken = await new SignJWT({ nonce: next.mistake === 'nonce' ? 'another-nonce' : next.nonce, email: 'scripted@example.com', given_name: 'Scrip', family_name: 'Ted' })
          .setProtectedHeader({ alg: 'RS256', kid: 'good' })
          .setIssuer(scriptedUrl)
          .setSubject('scripted-user')
          .setAudience(next.mistake === 'audience' ? 'someone-else' : 'realmgate')
          .setIssuedAt(now - 600)
          .setExpirationTime(next.mistake === 'expired' ? now - 300 : now + 300)
          .sign(next.mistake === 'signature' ? foreign.privateKey : good.privateKey);
        return response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: 'opaque', token_type: 'Bearer', id_token: idToken }));
      }
      response.writeHead(404).end();
    });
    scriptedUrl = await listen(scripted);

    const created = await api(t.url, 'POST', '/admin/realms', token, {
      realm: 'brokered',
      enabled: true,
      eventsEnabled: true,
      clients: [{ clientId: 'app', enabled: true, publicClient: true, redirectUris: [APP_REDIRECT], standardFlowEnabled: true }],
      identityProviders: [
        {
          alias: 'panva',
          providerId: 'oidc',
          enabled: true,
          config: {
            clientId: 'realmgate',
            clientSecret: 'panva-secret',
            clientAuthMethod: 'client_secret_basic',
            authorizationUrl: `${panvaUrl}/auth`,
            tokenUrl: `${panvaUrl}/token`,
            userInfoUrl: `${panvaUrl}/me`,
            jwksUrl: `${panvaUrl}/jwks`,
            issuer: panvaUrl,
            validateSignature: 'true',
            useJwksUrl: 'true',
            pkceEnabled: 'true',
            pkceMethod: 'S256',
            defaultScope: 'openid email profile',
          },
        },
        {
          alias: 'scripted',
          providerId: 'oidc',
          enabled: true,
          config: { clientId: 'realmgate', clientSecret: 'x', authorizationUrl: `${scriptedUrl}/authorize`, tokenUrl: `${scriptedUrl}/token`, jwksUrl: `${scriptedUrl}/certs`, issuer: scriptedUrl, validateSignature: 'true', useJwksUrl: 'true', disableUserInfo: 'true' },
        },
      ],
      identityProviderMappers: [
        { name: 'given', identityProviderAlias: 'panva', identityProviderMapper: 'oidc-user-attribute-idp-mapper', config: { claim: 'given_name', 'user.attribute': 'upstreamGiven', syncMode: 'INHERIT' } },
        { name: 'local name', identityProviderAlias: 'scripted', identityProviderMapper: 'oidc-username-idp-mapper', config: { template: 'scr.${CLAIM.given_name}', syncMode: 'INHERIT' } },
      ],
    });
    expect(created.status).toBe(201);
  });

  afterAll(async () => {
    await t?.close();
    panva?.close();
    scripted?.close();
  });

  /** The login page's button of `alias`: the upstream authorization URL our server sends the browser to. */
  async function upstreamUrl(browser: FormClient, alias: string) {
    const page = await browser.get(`/realms/brokered/protocol/openid-connect/auth?${authQuery()}`);
    expect(page.status).toBe(200);
    const href = new RegExp(`id="social-${alias}"[^>]*href="([^"]+)"`).exec(page.text)![1].replace(/&amp;/g, '&');
    // The built-in browser flow's redirector takes kc_idp_hint to the same place.
    const hinted = await new FormClient(t.url).get(`/realms/brokered/protocol/openid-connect/auth?${authQuery({ kc_idp_hint: alias })}`);
    expect(hinted.location?.split('?')[0]).toBe(href.split('?')[0]);
    const toUpstream = await browser.get(href);
    expect(toUpstream.status).toBe(302);
    return new URL(toUpstream.location!);
  }

  it('a first login through oidc-provider (client_secret_basic, PKCE, signed ID token, user info) creates the user with mapped claims', async () => {
    const browser = new FormClient(t.url);
    const upstream = new FormClient(panvaUrl);
    let location = (await upstreamUrl(browser, 'panva')).href;
    expect(location.startsWith(panvaUrl)).toBe(true);
    // Through the provider's redirects (its interaction answered at once) back to our callback.
    for (let hops = 0; location.startsWith(panvaUrl) && hops < 10; hops++) {
      const answer = await upstream.get(location);
      expect([302, 303]).toContain(answer.status);
      location = new URL(answer.location!, panvaUrl).href;
    }
    expect(location.startsWith(`${t.url}/realms/brokered/broker/panva/endpoint?`)).toBe(true);
    const done = await browser.get(location);
    expect(done.status).toBe(302);
    expect(done.location).toMatch(/^http:\/\/app\.test\/callback\?.*code=/);
    const created = (await users()).find((u) => u.username === 'panva-user');
    expect(created).toMatchObject({ email: 'panva@example.com', attributes: { upstreamGiven: ['Pan'] } });
  });

  for (const mistake of ['nonce', 'audience', 'signature', 'expired'] as const) {
    it(`refuses an ID token: ${mistake}`, async () => {
      const browser = new FormClient(t.url);
      const upstream = await upstreamUrl(browser, 'scripted');
      next = { nonce: upstream.searchParams.get('nonce')!, mistake };
      const answer = await browser.get(`/realms/brokered/broker/scripted/endpoint?code=any&state=${upstream.searchParams.get('state')}`);
      expect(answer.status).toBe(400);
      expect(answer.location).toBeNull();
      expect(answer.text).toContain('failed');
      expect((await users()).some((u) => u.username === 'scripted@example.com' || u.email === 'scripted@example.com')).toBe(false);
      const errors = await eventually(async () => ((await admin('GET', '/events?type=IDENTITY_PROVIDER_LOGIN_ERROR&max=100')).body as { error: string }[]).filter((e) => e.error === 'invalid_token'));
      expect(errors.length).toBeGreaterThan(0);
    });
  }

  it('takes the scripted upstream’s right ID token (the refusals above are the checks, not a broken upstream)', async () => {
    const browser = new FormClient(t.url);
    const upstream = await upstreamUrl(browser, 'scripted');
    next = { nonce: upstream.searchParams.get('nonce')!, mistake: 'none' };
    const answer = await browser.get(`/realms/brokered/broker/scripted/endpoint?code=any&state=${upstream.searchParams.get('state')}`);
    expect(answer.status).toBe(302);
    const user = (await users()).find((u) => u.email === 'scripted@example.com') as { id: string; username: string } | undefined;
    // The username mapper names the local user; the link keeps the upstream's own username, as Keycloak's does
    // (test:keycloak brokering.keycloak.ts observes it on Keycloak).
    expect(user?.username).toBe('scr.scrip');
    const links = (await admin('GET', `/users/${user!.id}/federated-identity`)).body as { userName: string; userId: string }[];
    expect(links).toEqual([expect.objectContaining({ identityProvider: 'scripted', userId: 'scripted-user', userName: 'scripted@example.com' })]);
    const link = await eventually(async () => ((await admin('GET', '/events?type=FEDERATED_IDENTITY_LINK&max=100')).body as { details: Record<string, string> }[]).find((e) => e.details.identity_provider === 'scripted'));
    expect(link.details).toMatchObject({ identity_provider_identity: 'scripted@example.com', username: 'scr.scrip' });
  });
});
