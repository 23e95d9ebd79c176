import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/index.js';
import { FormClient, firstForm, pkce } from './support/forms.js';
import { adminToken, api, eventually, startServer, type TestServer } from './support/server.js';

/**
 * Issue 37 item 1, the social providers: github, google, microsoft and facebook against one loopback mock that plays
 * each of them at their fixed paths (the server's `brokerEndpointOverrides` points github.com, accounts.google.com,
 * login.microsoftonline.com, graph.facebook.com, … at it). The mock's authorize answers at once with a code (no
 * pages); its token endpoint takes a code once, for the client and redirect URI it was given to; Google's ID tokens
 * are signed by a key the mock serves at Google's JWKS path.
 */

const APP_REDIRECT = 'http://app.test/callback';
const { challenge } = pkce();
const authQuery = () =>
  new URLSearchParams({ client_id: 'app', redirect_uri: APP_REDIRECT, response_type: 'code', scope: 'openid', state: 'app-state', code_challenge: challenge, code_challenge_method: 'S256' }).toString();

const listen = (server: Server) => new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
const body = (request: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString()));
    request.on('end', () => resolve(text));
  });

type Provider = 'github' | 'google' | 'microsoft' | 'facebook' | 'gitlab' | 'linkedin-openid-connect' | 'bitbucket' | 'apple';
/** Who the mock signs in next, per provider: the profile(s) its APIs answer. */
interface Upstream {
  github: { profile: Record<string, unknown>; emails: Record<string, unknown>[] };
  google: { claims: Record<string, unknown> };
  microsoft: { profile: Record<string, unknown> };
  facebook: { profile: Record<string, unknown> };
  gitlab: { claims: Record<string, unknown>; profile: Record<string, unknown> };
  'linkedin-openid-connect': { claims: Record<string, unknown> };
  bitbucket: { profile: Record<string, unknown>; emails: Record<string, unknown> };
  apple: { claims: Record<string, unknown> };
}
/** The issuer each OpenID Connect mock signs as (Keycloak's fixed one). */
const ISSUERS: Partial<Record<Provider, string>> = { google: 'https://accounts.google.com', gitlab: 'https://gitlab.com', 'linkedin-openid-connect': 'https://www.linkedin.com/oauth', apple: 'https://appleid.apple.com' };

describe('signing in through the social providers (loopback mocks at the fixed endpoints)', () => {
  let t: TestServer;
  let token: string;
  let mock: Server;
  let mockUrl: string;
  let gitlab: Server;
  const next: Upstream = {
    github: { profile: {}, emails: [] },
    google: { claims: {} },
    microsoft: { profile: {} },
    facebook: { profile: {} },
    gitlab: { claims: {}, profile: {} },
    'linkedin-openid-connect': { claims: {} },
    bitbucket: { profile: {}, emails: {} },
    apple: { claims: {} },
  };
  /** Codes handed out: what the token endpoint checks, once. */
  const codes = new Map<string, { provider: Provider; clientId: string; redirectUri: string; nonce: string | null; user: unknown; used: boolean }>();
  /** Access tokens: whose profile the APIs answer. */
  const accessTokens = new Map<string, { provider: Provider; user: unknown }>();
  /** Every request the mock saw (method, path with query). */
  const seen: string[] = [];
  const admin = (method: string, path: string, payload?: unknown) => api(t.url, method, `/admin/realms/social${path}`, token, payload);
  const users = async () =>
    (await admin('GET', '/users?max=100')).body as { id: string; username: string; email?: string; emailVerified?: boolean; firstName?: string; lastName?: string; attributes?: Record<string, string[]> }[];
  const links = async (userId: string) => (await admin('GET', `/users/${userId}/federated-identity`)).body as { identityProvider: string; userId: string; userName: string }[];

  beforeAll(async () => {
    const key = await generateKeyPair('RS256');
    const jwk: JWK = { ...(await exportJWK(key.publicKey)), kid: 'google-key', alg: 'RS256', use: 'sig' };
    const authorizePaths: Record<string, Provider> = {
      '/login/oauth/authorize': 'github',
      '/o/oauth2/v2/auth': 'google',
      '/contoso/oauth2/v2.0/authorize': 'microsoft',
      '/oauth/authorize': 'facebook',
      '/gitlab/oauth/authorize': 'gitlab',
      '/oauth/v2/authorization': 'linkedin-openid-connect',
      '/site/oauth2/authorize': 'bitbucket',
      '/auth/authorize': 'apple',
    };
    const tokenPaths = new Set(['/login/oauth/access_token', '/token', '/contoso/oauth2/v2.0/token', '/oauth/access_token', '/gitlab/oauth/token', '/oauth/v2/accessToken', '/site/oauth2/access_token', '/auth/token']);
    /** One handler for both mocks; GitLab's (gitlab.com's paths collide with Facebook's) sees its paths under /gitlab. */
    const handler = (prefix: string) => async (request: IncomingMessage, response: ServerResponse) => {
      // A GitHub Enterprise's API lives under /api/v3 of its host.
      const url = new URL(`${prefix}${request.url!.replace(/^\/api\/v3\//, '/')}`, 'http://mock');
      seen.push(`${request.method} ${prefix}${request.url!}`);
      const json = (status: number, value: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      const provider = authorizePaths[url.pathname];
      if (provider) {
        const redirect = new URL(url.searchParams.get('redirect_uri')!);
        const code = `code-${provider}-${codes.size}`;
        codes.set(code, { provider, clientId: url.searchParams.get('client_id')!, redirectUri: redirect.href, nonce: url.searchParams.get('nonce'), user: structuredClone(next[provider]), used: false });
        redirect.searchParams.set('code', code);
        redirect.searchParams.set('state', url.searchParams.get('state')!);
        return response.writeHead(302, { location: redirect.href }).end();
      }
      if (request.method === 'POST' && tokenPaths.has(url.pathname)) {
        const form = new URLSearchParams(await body(request));
        const grant = codes.get(form.get('code') ?? '');
        if (!grant || grant.used || grant.clientId !== form.get('client_id') || form.get('client_secret') !== `${grant.provider}-secret` || grant.redirectUri !== form.get('redirect_uri')) {
          // GitHub answers a bad code with 200 and an error field.
          return url.pathname === '/login/oauth/access_token' ? json(200, { error: 'bad_verification_code' }) : json(400, { error: 'invalid_grant' });
        }
        grant.used = true;
        const accessToken = `at-${form.get('code')}`;
        accessTokens.set(accessToken, { provider: grant.provider, user: grant.user });
        const issuer = ISSUERS[grant.provider];
        if (!issuer) return json(200, { access_token: accessToken, token_type: 'bearer', scope: 'x' });
        const now = Math.floor(Date.now() / 1000);
        const claims = (grant.user as Upstream['google']).claims;
        const idToken = await new SignJWT({ ...claims, ...(grant.nonce ? { nonce: grant.nonce } : {}) })
          .setProtectedHeader({ alg: 'RS256', kid: 'google-key' })
          .setIssuer(issuer)
          .setAudience(grant.clientId)
          .setIssuedAt(now)
          .setExpirationTime(now + 300)
          .sign(key.privateKey);
        return json(200, { access_token: accessToken, token_type: 'Bearer', expires_in: 3599, id_token: idToken });
      }
      if (['/oauth2/v3/certs', '/gitlab/oauth/discovery/keys', '/oauth/openid/jwks', '/auth/keys'].includes(url.pathname)) return json(200, { keys: [jwk] });
      const bearer = accessTokens.get((request.headers.authorization ?? '').replace(/^Bearer /i, ''));
      if (!bearer) return json(401, { message: 'Bad credentials' });
      const user = bearer.user as Upstream[Provider];
      if (url.pathname === '/user' && bearer.provider === 'github') return json(200, (user as Upstream['github']).profile);
      if (url.pathname === '/user/emails' && bearer.provider === 'github') return json(200, (user as Upstream['github']).emails);
      if (url.pathname === '/v1/userinfo' && bearer.provider === 'google') {
        const { sub, email, email_verified, given_name, family_name } = (user as Upstream['google']).claims;
        return json(200, { sub, email, email_verified, given_name, family_name });
      }
      if (url.pathname === '/v1.0/me/' && bearer.provider === 'microsoft') return json(200, (user as Upstream['microsoft']).profile);
      if (url.pathname === '/me' && bearer.provider === 'facebook') return json(200, (user as Upstream['facebook']).profile);
      if (url.pathname === '/gitlab/api/v4/user' && bearer.provider === 'gitlab') return json(200, (user as Upstream['gitlab']).profile);
      if (url.pathname === '/v2/userinfo' && bearer.provider === 'linkedin-openid-connect') return json(200, (user as Upstream['linkedin-openid-connect']).claims);
      if (url.pathname === '/2.0/user' && bearer.provider === 'bitbucket') return json(200, (user as Upstream['bitbucket']).profile);
      if (url.pathname === '/2.0/user/emails' && bearer.provider === 'bitbucket') return json(200, (user as Upstream['bitbucket']).emails);
      json(404, { error: 'not found' });
    };
    mock = createServer(handler(''));
    mockUrl = await listen(mock);
    gitlab = createServer(handler('/gitlab'));
    const gitlabMock = await listen(gitlab);
    const hosts = ['ghe.example.test', 'github.com', 'api.github.com', 'accounts.google.com', 'oauth2.googleapis.com', 'openidconnect.googleapis.com', 'www.googleapis.com', 'login.microsoftonline.com', 'graph.microsoft.com', 'graph.facebook.com', 'www.linkedin.com', 'api.linkedin.com', 'bitbucket.org', 'api.bitbucket.org', 'appleid.apple.com'];
    t = await startServer({ config: { REALMGATE_BROKER_ENDPOINT_OVERRIDES: [...hosts.map((host) => `${host}=${mockUrl}`), `gitlab.com=${gitlabMock}`].join(',') } });
    token = await adminToken(t.url);
    const provider = (alias: string, providerId: string, config: Record<string, string> = {}, rest: Record<string, unknown> = {}) => ({
      alias,
      providerId,
      enabled: true,
      ...rest,
      config: { clientId: `${providerId}-client`, clientSecret: `${providerId}-secret`, syncMode: 'LEGACY', ...config },
    });
    const created = await api(t.url, 'POST', '/admin/realms', token, {
      realm: 'social',
      enabled: true,
      eventsEnabled: true,
      clients: [{ clientId: 'app', enabled: true, publicClient: true, redirectUris: [APP_REDIRECT], standardFlowEnabled: true }],
      identityProviders: [
        provider('github', 'github'),
        provider('github-trusted', 'github', {}, { trustEmail: true }),
        provider('github-enterprise', 'github', { baseUrl: 'https://ghe.example.test/', apiUrl: 'https://ghe.example.test/api/v3' }),
        provider('google', 'google', { hostedDomain: 'example.com', offlineAccess: 'true', userIp: 'true' }),
        provider('microsoft', 'microsoft', { tenantId: 'contoso' }),
        provider('facebook', 'facebook', { fetchedFields: 'birthday' }),
        provider('gitlab', 'gitlab'),
        provider('linkedin', 'linkedin-openid-connect'),
        provider('bitbucket', 'bitbucket'),
        provider('apple', 'apple'),
      ],
      identityProviderMappers: [
        { name: 'plan', identityProviderAlias: 'github', identityProviderMapper: 'github-user-attribute-mapper', config: { jsonField: 'plan.name', userAttribute: 'githubPlan', syncMode: 'INHERIT' } },
        { name: 'company', identityProviderAlias: 'github', identityProviderMapper: 'github-user-attribute-mapper', config: { jsonField: 'company', userAttribute: 'company', syncMode: 'FORCE' } },
        { name: 'first org', identityProviderAlias: 'github', identityProviderMapper: 'github-user-attribute-mapper', config: { jsonField: 'orgs[0].login', userAttribute: 'firstOrg', syncMode: 'INHERIT' } },
        { name: 'not github', identityProviderAlias: 'github', identityProviderMapper: 'google-user-attribute-mapper', config: { jsonField: 'login', userAttribute: 'notMapped', syncMode: 'INHERIT' } },
      ],
    });
    expect(created.status).toBe(201);
  });

  afterAll(async () => {
    await t?.close();
    mock?.close();
    gitlab?.close();
  });

  /** The login page's button for `alias`, then the mock's redirect to it (the authorization request it was sent). */
  async function toUpstream(browser: FormClient, alias: string) {
    const page = await browser.get(`/realms/social/protocol/openid-connect/auth?${authQuery()}`);
    expect(page.status).toBe(200);
    const href = new RegExp(`id="social-${alias}"[^>]*href="([^"]+)"`).exec(page.text);
    expect(href).not.toBeNull();
    const redirect = await browser.get(href![1].replace(/&amp;/g, '&'));
    expect(redirect.status).toBe(302);
    return new URL(redirect.location!);
  }

  /** The upstream's answer (a code for our callback) as the browser would carry it back. */
  async function viaMock(authorize: URL) {
    expect(authorize.hostname).toBe('127.0.0.1');
    const answer = await fetch(authorize, { redirect: 'manual' });
    expect(answer.status).toBe(302);
    return new URL(answer.headers.get('location')!);
  }

  async function signIn(alias: string) {
    const browser = new FormClient(t.url);
    const authorize = await toUpstream(browser, alias);
    const callback = await viaMock(authorize);
    expect(callback.href.startsWith(`${t.url}/realms/social/broker/${alias}/endpoint?`)).toBe(true);
    const done = await browser.get(callback.href);
    return { authorize, callback, done, browser };
  }

  it('GitHub (OAuth 2): scope user:email, no nonce; first login creates the user from /user and the primary of /user/emails, the second links to them', async () => {
    next.github = {
      profile: { id: 4001, login: 'octocat', name: 'Mona Lisa Octocat', email: null, plan: { name: 'pro' }, company: 'GitHub', orgs: [{ login: 'octo-org' }, { login: 'other' }] },
      emails: [
        { email: 'other@example.com', primary: false, verified: true },
        { email: 'mona@example.com', primary: true, verified: true },
      ],
    };
    const first = await signIn('github');
    expect(first.authorize.pathname).toBe('/login/oauth/authorize');
    expect(Object.fromEntries(first.authorize.searchParams)).toMatchObject({ client_id: 'github-client', scope: 'user:email', response_type: 'code' });
    expect(first.authorize.searchParams.has('nonce')).toBe(false);
    expect(first.done.status).toBe(302);
    expect(first.done.location).toMatch(/^http:\/\/app\.test\/callback\?.*code=/);
    const user = (await users()).find((u) => u.username === 'octocat')!;
    expect(user).toMatchObject({ email: 'mona@example.com', firstName: 'Mona Lisa', lastName: 'Octocat', emailVerified: false });
    expect(await links(user.id)).toEqual([expect.objectContaining({ identityProvider: 'github', userId: '4001', userName: 'octocat' })]);
    expect(seen).toContain('GET /user/emails');
    // github-user-attribute-mapper: JSON paths of the profile; another provider's importer does nothing here.
    expect(user.attributes).toEqual({ githubPlan: ['pro'], company: ['GitHub'], firstOrg: ['octo-org'] });

    const count = (await users()).length;
    next.github.profile = { ...next.github.profile, plan: { name: 'free' }, company: 'Acme' };
    const second = await signIn('github');
    expect(second.done.status).toBe(302);
    expect((await users()).length).toBe(count);
    // A later login: only the FORCE importer writes again (Keycloak's: LEGACY does not update from a social profile).
    expect((await users()).find((u) => u.id === user.id)!.attributes).toEqual({ githubPlan: ['pro'], company: ['Acme'], firstOrg: ['octo-org'] });
    const logins = await eventually(async () => ((await admin('GET', '/events?type=IDENTITY_PROVIDER_LOGIN&max=100')).body as { userId: string; details: Record<string, string> }[]).filter((e) => e.details.identity_provider === 'github'));
    expect(logins.map((e) => e.userId)).toEqual([user.id]);
  });

  it('GitHub: a primary e-mail GitHub has not verified is not taken as verified, even from a trusted provider; a verified one is', async () => {
    next.github = { profile: { id: 4002, login: 'unverified-cat', name: 'Un Verified', email: null }, emails: [{ email: 'unverified@example.com', primary: true, verified: false }] };
    expect((await signIn('github-trusted')).done.status).toBe(302);
    next.github = { profile: { id: 4003, login: 'verified-cat', name: 'Is Verified', email: null }, emails: [{ email: 'verified@example.com', primary: true, verified: true }] };
    expect((await signIn('github-trusted')).done.status).toBe(302);
    const all = await users();
    expect(all.find((u) => u.username === 'unverified-cat')).toMatchObject({ email: 'unverified@example.com', emailVerified: false });
    expect(all.find((u) => u.username === 'verified-cat')).toMatchObject({ email: 'verified@example.com', emailVerified: true });
  });

  it('GitHub Enterprise: baseUrl and apiUrl (Keycloak’s keys) replace github.com and api.github.com', async () => {
    next.github = { profile: { id: 5001, login: 'enterprise-cat', name: 'Enter Prise', email: 'ent@corp.example' }, emails: [] };
    const before = seen.length;
    const { authorize, done } = await signIn('github-enterprise');
    expect(authorize.pathname).toBe('/login/oauth/authorize');
    expect(done.status).toBe(302);
    expect(seen.slice(before).map((line) => line.split('?')[0])).toEqual(['GET /login/oauth/authorize', 'POST /login/oauth/access_token', 'GET /api/v3/user']);
    // The profile's own address: no /user/emails call.
    expect((await users()).find((u) => u.username === 'enterprise-cat')).toMatchObject({ email: 'ent@corp.example', firstName: 'Enter', lastName: 'Prise' });
  });

  it('Google (OpenID Connect): hd and access_type sent, the ID token checked by the key at the JWKS URL, fields from the claims; the second login links', async () => {
    next.google = { claims: { sub: 'g-1', email: 'ada@example.com', email_verified: true, given_name: 'Ada', family_name: 'Lovelace', hd: 'example.com' } };
    const first = await signIn('google');
    expect(first.authorize.pathname).toBe('/o/oauth2/v2/auth');
    expect(Object.fromEntries(first.authorize.searchParams)).toMatchObject({ scope: 'openid profile email', hd: 'example.com', access_type: 'offline', client_id: 'google-client' });
    expect(first.authorize.searchParams.get('nonce')).toBeTruthy();
    expect(first.done.status).toBe(302);
    expect(seen).toContain('GET /oauth2/v3/certs');
    // userIp: the browser's address rides on the user info request.
    expect(seen).toContain('GET /v1/userinfo?userIp=127.0.0.1');
    const user = (await users()).find((u) => u.email === 'ada@example.com')!;
    expect(user).toMatchObject({ username: 'ada@example.com', firstName: 'Ada', lastName: 'Lovelace' });
    expect(await links(user.id)).toEqual([expect.objectContaining({ identityProvider: 'google', userId: 'g-1' })]);
    const count = (await users()).length;
    expect((await signIn('google')).done.status).toBe(302);
    expect((await users()).length).toBe(count);
  });

  it('Google: an ID token of another hosted domain is refused (a page, no user)', async () => {
    next.google = { claims: { sub: 'g-2', email: 'eve@elsewhere.test', email_verified: true, given_name: 'Eve', family_name: 'Else', hd: 'elsewhere.test' } };
    const { done } = await signIn('google');
    expect(done.status).toBe(400);
    expect(done.text).toContain('Sign-in with Google failed');
    expect((await users()).some((u) => u.email === 'eve@elsewhere.test')).toBe(false);
  });

  it('Microsoft (OAuth 2): the tenant in the endpoints, scope User.read, the e-mail from userPrincipalName when mail is empty', async () => {
    next.microsoft = { profile: { id: 'ms-1', mail: null, userPrincipalName: 'grace@contoso.example', givenName: 'Grace', surname: 'Hopper' } };
    const { authorize, done } = await signIn('microsoft');
    expect(authorize.pathname).toBe('/contoso/oauth2/v2.0/authorize');
    expect(authorize.searchParams.get('scope')).toBe('User.read');
    expect(done.status).toBe(302);
    expect((await users()).find((u) => u.username === 'grace@contoso.example')).toMatchObject({ email: 'grace@contoso.example', firstName: 'Grace', lastName: 'Hopper' });
  });

  it('Facebook (OAuth 2): fetchedFields added to the profile request; username from the e-mail', async () => {
    next.facebook = { profile: { id: 'fb-1', email: 'alan@example.org', first_name: 'Alan', last_name: 'Turing', birthday: '06/23/1912' } };
    const { done } = await signIn('facebook');
    expect(done.status).toBe(302);
    expect(seen).toContain('GET /me?fields=id,name,email,first_name,last_name,birthday');
    expect((await users()).find((u) => u.username === 'alan@example.org')).toMatchObject({ firstName: 'Alan', lastName: 'Turing' });
  });

  it('GitLab (OpenID Connect): scope read_user openid, the identity from /api/v4/user, which must be the ID token’s sub', async () => {
    next.gitlab = { claims: { sub: '77' }, profile: { id: 77, username: 'tanuki', email: 'tanuki@example.com', name: 'Tan Uki' } };
    const { authorize, done } = await signIn('gitlab');
    expect(authorize.pathname).toBe('/oauth/authorize');
    expect(authorize.searchParams.get('scope')).toBe('read_user openid');
    expect(authorize.searchParams.get('nonce')).toBeTruthy();
    expect(done.status).toBe(302);
    const user = (await users()).find((u) => u.username === 'tanuki')!;
    expect(user).toMatchObject({ email: 'tanuki@example.com', firstName: 'Tan', lastName: 'Uki' });
    expect(await links(user.id)).toEqual([expect.objectContaining({ identityProvider: 'gitlab', userId: '77' })]);

    next.gitlab = { claims: { sub: '78' }, profile: { id: 79, username: 'swapped', email: 'swapped@example.com', name: 'Swap Ped' } };
    const swapped = await signIn('gitlab');
    expect(swapped.done.status).toBe(400);
    expect((await users()).some((u) => u.username === 'swapped')).toBe(false);
  });

  it('LinkedIn (OpenID Connect): no nonce asked or required, the ID token checked by the fixed JWKS', async () => {
    next['linkedin-openid-connect'] = { claims: { sub: 'li-1', email: 'lin@example.com', email_verified: true, given_name: 'Lin', family_name: 'Ked' } };
    const { authorize, done } = await signIn('linkedin');
    expect(authorize.pathname).toBe('/oauth/v2/authorization');
    expect(authorize.searchParams.get('scope')).toBe('openid profile email');
    expect(authorize.searchParams.has('nonce')).toBe(false);
    expect(done.status).toBe(302);
    expect((await users()).find((u) => u.email === 'lin@example.com')).toMatchObject({ username: 'lin@example.com', firstName: 'Lin', lastName: 'Ked' });
  });

  it('Apple (a client secret given, form_post): scope name email, the answer posted without cookies is sent on as a GET, the ID token checked by the fixed JWKS', async () => {
    next.apple = { claims: { sub: '001234.apple.5678', email: 'ann@privaterelay.appleid.com', email_verified: 'true', is_private_email: 'true' } };
    const browser = new FormClient(t.url);
    const authorize = await toUpstream(browser, 'apple');
    expect(authorize.pathname).toBe('/auth/authorize');
    expect(Object.fromEntries(authorize.searchParams)).toMatchObject({ scope: 'openid name email', response_mode: 'form_post', client_id: 'apple-client', response_type: 'code' });
    expect(authorize.searchParams.get('nonce')).toBeTruthy();
    // Apple's page posts the code and state from its own site: no cookie of ours comes with it (SameSite=Lax).
    const answer = new URL((await viaMock(authorize)).href);
    const posted = await fetch(`${t.url}/realms/social/broker/apple/endpoint`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ code: answer.searchParams.get('code')!, state: answer.searchParams.get('state')!, user: '{"name":{"firstName":"Ann"}}' }),
      redirect: 'manual',
    });
    expect(posted.status).toBe(303);
    expect(posted.headers.get('set-cookie')).toBeNull();
    const location = posted.headers.get('location')!;
    expect(location.startsWith('/realms/social/broker/apple/endpoint?')).toBe(true);
    expect(Object.fromEntries(new URL(location, t.url).searchParams)).toEqual({ code: answer.searchParams.get('code'), state: answer.searchParams.get('state') });
    // The browser follows it with its cookies: the sign-in completes; no user info endpoint was asked.
    const before = seen.length;
    const review = await browser.get(location);
    expect(seen.slice(before).map((line) => line.split('?')[0])).toEqual(['POST /auth/token', 'GET /auth/keys']);
    // The names Apple posts once in `user` are not read (not signed): the review page asks for them.
    expect(review.status).toBe(200);
    expect(review.text).toContain('Update Account Information');
    const form = firstForm(review.text);
    const done = await browser.post(form.action, { ...form.hidden, username: 'ann@privaterelay.appleid.com', email: 'ann@privaterelay.appleid.com', firstName: 'Ann', lastName: 'Apple' });
    expect(done.status, done.text.slice(0, 300)).toBe(302);
    expect(done.location).toMatch(/^http:\/\/app\.test\/callback\?.*code=/);
    const user = (await users()).find((u) => u.email === 'ann@privaterelay.appleid.com');
    expect(user).toMatchObject({ username: 'ann@privaterelay.appleid.com', firstName: 'Ann', lastName: 'Apple', emailVerified: false });
    expect(await links(user!.id)).toEqual([expect.objectContaining({ identityProvider: 'apple', userId: '001234.apple.5678' })]);
    // The same answer posted again: the state is spent, a page, no sign-in.
    const replay = await browser.get(location);
    expect(replay.status).toBe(400);
    expect(replay.location).toBeNull();
  });

  it('Bitbucket (OAuth 2): scope account email, id account_id, the address from /2.0/user/emails', async () => {
    next.bitbucket = {
      profile: { type: 'user', account_id: 'bb-1', username: 'bucketeer', display_name: 'Bucket Eer' },
      emails: { values: [{ type: 'email', email: 'bucket@example.com', is_primary: true, is_confirmed: true }] },
    };
    const { authorize, done } = await signIn('bitbucket');
    expect(authorize.searchParams.get('scope')).toBe('account email');
    expect(done.status).toBe(302);
    const user = (await users()).find((u) => u.username === 'bucketeer')!;
    expect(user).toMatchObject({ email: 'bucket@example.com', firstName: 'Bucket', lastName: 'Eer' });
    expect(await links(user.id)).toEqual([expect.objectContaining({ identityProvider: 'bitbucket', userId: 'bb-1' })]);
  });

  it('an upstream error, a tampered state and a replayed code answer a clear page, never a 5xx', async () => {
    next.github = { profile: { id: 4999, login: 'nobody-cat', name: 'No Body', email: 'nobody@example.com' }, emails: [] };
    const browser = new FormClient(t.url);
    const authorize = await toUpstream(browser, 'github');
    const state = authorize.searchParams.get('state')!;
    const cancelled = await browser.get(`/realms/social/broker/github/endpoint?error=access_denied&state=${encodeURIComponent(state)}`);
    expect(cancelled.status).toBe(400);
    expect(cancelled.text).toContain('Sign-in with GitHub was cancelled.');

    const again = await toUpstream(browser, 'github');
    const callback = await viaMock(again);
    const tampered = new URL(callback);
    tampered.searchParams.set('state', `${callback.searchParams.get('state')}x`);
    const refused = await browser.get(tampered.href);
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('no longer valid');

    // The code of the sign-in above (spent by nobody yet) used once; then fed again with a fresh state: the upstream refuses it.
    const ok = await browser.get(callback.href);
    expect(ok.status).toBe(302);
    const other = new FormClient(t.url);
    const third = await toUpstream(other, 'github');
    const replay = await other.get(`/realms/social/broker/github/endpoint?code=${callback.searchParams.get('code')}&state=${third.searchParams.get('state')}`);
    expect(replay.status).toBe(400);
    expect(replay.text).toContain('Sign-in with GitHub failed');
    const errors = await eventually(async () => ((await admin('GET', '/events?type=IDENTITY_PROVIDER_LOGIN_ERROR&max=100')).body as { error: string; details: Record<string, string> }[]).filter((e) => /refused the code/.test(e.details.reason ?? '')));
    expect(errors.length).toBeGreaterThan(0);
  });

  it('the admin API takes and answers each provider’s Keycloak config, the client secret masked', async () => {
    const configs: Record<string, Record<string, string>> = {
      github: { baseUrl: 'https://github.example.com', apiUrl: 'https://github.example.com/api/v3', githubJsonFormat: 'true' },
      google: { hostedDomain: 'example.com', userIp: 'true', offlineAccess: 'true' },
      microsoft: { tenantId: 'contoso' },
      gitlab: { defaultScope: 'openid' },
      facebook: { fetchedFields: 'birthday,gender' },
      'linkedin-openid-connect': {},
      bitbucket: {},
      apple: {},
    };
    for (const [providerId, extra] of Object.entries(configs)) {
      const alias = `admin-${providerId}`;
      const config = { clientId: 'cid', clientSecret: 'top-secret', guiOrder: '3', ...extra };
      expect((await admin('POST', '/identity-provider/instances', { alias, providerId, enabled: true, config })).status).toBe(201);
      const read = await admin('GET', `/identity-provider/instances/${alias}`);
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({ alias, providerId, config: { ...config, clientSecret: '**********' } });
      // The fixed endpoints are not stored: Keycloak computes them too.
      expect((read.body as { config: Record<string, string> }).config.authorizationUrl).toBeUndefined();
      expect(JSON.stringify(read.body)).not.toContain('top-secret');
    }
    // Each can sign in: the login page has a button for it, labelled by Keycloak's name of the provider (no display name given).
    const page = await new FormClient(t.url).get(`/realms/social/protocol/openid-connect/auth?${authQuery()}`);
    const names: Record<string, string> = { github: 'GitHub', google: 'Google', microsoft: 'Microsoft', gitlab: 'GitLab', facebook: 'Facebook', 'linkedin-openid-connect': 'LinkedIn', bitbucket: 'BitBucket', apple: 'Apple' };
    for (const providerId of Object.keys(configs)) expect(page.text).toMatch(new RegExp(`id="social-admin-${providerId}"[^>]*>${names[providerId]}</a>`));
  });

  it('the override option refuses a malformed value at start', () => {
    const load = (value: string) => loadConfig({ env: { REALMGATE_BROKER_ENDPOINT_OVERRIDES: value } });
    for (const bad of ['github.com', '=http://127.0.0.1:1', 'github.com=127.0.0.1:4010', 'github.com=ftp://127.0.0.1', 'github.com=http://127.0.0.1:1/path', 'github.com=http://u:p@127.0.0.1', 'git hub.com=http://127.0.0.1', 'a.com=http://127.0.0.1,a.com=http://127.0.0.2']) {
      expect(() => load(bad), bad).toThrow(ConfigError);
    }
    expect(() => load('github.com')).toThrow(/brokerEndpointOverrides: "github.com" is not of the form host=origin/);
    expect(load('github.com=http://127.0.0.1:4010,api.github.com=http://127.0.0.1:4010/').brokerEndpointOverrides).toEqual(['github.com=http://127.0.0.1:4010', 'api.github.com=http://127.0.0.1:4010/']);
  });
});
