import type { OutboundGuard } from '@realmgate/spi';
import { brokerEndpointOverrides, type ServerConfig } from '../../config/index.js';
import { outboundRequest } from '../../http/index.js';
import type { IdentityProvider } from '../../model/types.js';
import { appleClientSecret } from './apple-client-secret.js';
import { authorizationRequest, completeUpstreamLogin, exchangeCode, OIDC_PROVIDER_IDS, reloadUpstreamKeys, text, UpstreamError, type BrokeredIdentity, type OidcHooks, type UpstreamRequest } from './upstream-oidc.js';

/**
 * The social identity providers Keycloak 26 ships whose endpoints are fixed (Keycloak's `org.keycloak.social.*`):
 * one entry each, `oidc` (the OpenID Connect path of upstream-oidc.ts with the fixed URLs merged into the config and
 * the ID token's signature checked by the fixed JWKS) or `oauth2` (the code exchanged by the same function, then the
 * provider's profile request(s) mapped to the identity; no nonce, no ID token). The fixed URLs' scheme, host and port
 * can be replaced by the server option `brokerEndpointOverrides` (tests, GitHub Enterprise-like hosts); every request
 * still goes through the outbound guard.
 */

type Config = Record<string, string | undefined>;
type Identity = Pick<BrokeredIdentity, 'id' | 'username' | 'email' | 'firstName' | 'lastName' | 'emailVerified' | 'emailUnverified'>;

interface ProfileResult {
  identity: Identity;
  /** The profile JSON, for the mappers (Keycloak stores it for its `*-user-attribute-mapper`s). */
  profile: Record<string, unknown>;
}

/** Fetches JSON from the provider with the user's access token. */
type GetJson = (url: string) => Promise<unknown>;

interface SocialProvider {
  kind: 'oidc' | 'oauth2';
  /** Keycloak's factory name: the login page's label when the provider has no display name. */
  name: string;
  /** The scope when the provider's `defaultScope` is empty. */
  scope(config: Config): string;
  /** The fixed endpoints (and OpenID Connect settings) merged over the stored config; URLs before any override. */
  fixed(config: Config): Config;
  /** Parameters of the authorization request of this provider's own (Google's `hd`, `access_type`). */
  params?(config: Config): Record<string, string>;
  /** oidc: the provider's own checks and identity. */
  hooks?(config: Config): OidcHooks;
  /** oauth2: the user's profile by the access token. */
  profile?(getJson: GetJson, urls: Config, config: Config): Promise<ProfileResult>;
  /** A client secret made for each code exchange (Apple's JWT from the team's key), or null: the stored one is sent. */
  clientSecret?(config: Config): Promise<string | null>;
}

const trimSlash = (url: string) => url.replace(/\/+$/, '');
const orDefault = (value: string | undefined, fallback: string) => (value && value.trim() ? value.trim() : fallback);
const object = (value: unknown): Record<string, unknown> => (typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {});
/** A JSON property as Keycloak's getJsonProperty reads it: a string, or a number's text. */
const prop = (profile: Record<string, unknown>, name: string): string | null => {
  const value = profile[name];
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return text(value);
};
/** Keycloak's BrokeredIdentityContext.setName: split at the last space. */
const splitName = (name: string | null): { firstName: string | null; lastName: string | null } => {
  if (!name) return { firstName: null, lastName: null };
  const at = name.lastIndexOf(' ');
  return at === -1 ? { firstName: name, lastName: null } : { firstName: name.slice(0, at), lastName: name.slice(at + 1) };
};
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const needId = (id: string | null, who: string): string => {
  if (!id) throw new UpstreamError('invalid_token', `${who}'s profile has no id`);
  return id;
};

const GITHUB = { base: 'https://github.com', api: 'https://api.github.com' };

export const SOCIAL_PROVIDERS: Readonly<Record<string, SocialProvider>> = {
  github: {
    kind: 'oauth2',
    name: 'GitHub',
    scope: () => 'user:email',
    // GitHub Enterprise: `baseUrl` and `apiUrl` (Keycloak's config keys) replace github.com and api.github.com.
    fixed(config) {
      const base = trimSlash(orDefault(config.baseUrl, GITHUB.base));
      const api = trimSlash(orDefault(config.apiUrl, GITHUB.api));
      return { authorizationUrl: `${base}/login/oauth/authorize`, tokenUrl: `${base}/login/oauth/access_token`, userInfoUrl: `${api}/user`, emailUrl: `${api}/user/emails` };
    },
    async profile(getJson, urls) {
      const profile = object(await getJson(urls.userInfoUrl!));
      const id = needId(prop(profile, 'id'), 'GitHub');
      let email = prop(profile, 'email');
      let emailVerified = false;
      if (!email) {
        // Keycloak's searchEmail: the primary address of /user/emails. GitHub says whether it is verified.
        const emails = await getJson(urls.emailUrl!);
        const primary = Array.isArray(emails) ? emails.map(object).find((e) => e.primary === true) : undefined;
        if (!primary || !prop(primary, 'email')) throw new UpstreamError('identity_provider_error', 'GitHub has no primary e-mail for this user');
        email = prop(primary, 'email');
        emailVerified = primary.verified === true;
      }
      return { identity: { id, username: prop(profile, 'login') ?? id, email, emailVerified, emailUnverified: !emailVerified && email !== null && email !== prop(profile, 'email'), ...splitName(prop(profile, 'name')) }, profile };
    },
  },
  google: {
    kind: 'oidc',
    name: 'Google',
    scope: () => 'openid profile email',
    fixed: () => ({
      authorizationUrl: 'https://accounts.google.com/o/oauth2/v2/auth',
      tokenUrl: 'https://oauth2.googleapis.com/token',
      userInfoUrl: 'https://openidconnect.googleapis.com/v1/userinfo',
      jwksUrl: 'https://www.googleapis.com/oauth2/v3/certs',
      issuer: 'https://accounts.google.com',
      useJwksUrl: 'true',
      validateSignature: 'true',
    }),
    params(config) {
      const params: Record<string, string> = {};
      if (config.hostedDomain) params.hd = config.hostedDomain;
      if (config.offlineAccess === 'true') params.access_type = 'offline';
      return params;
    },
    hooks: (config) => ({
      checkIdToken(claims) {
        const hosted = config.hostedDomain;
        if (!hosted || hosted === '*') return;
        if (claims.hd === undefined) throw new UpstreamError('invalid_token', 'the ID token has no hosted domain (hd)');
        if (!hosted.split(',').includes(String(claims.hd))) throw new UpstreamError('invalid_token', 'the ID token’s hosted domain (hd) is not the configured one');
      },
    }),
  },
  microsoft: {
    kind: 'oauth2',
    name: 'Microsoft',
    scope: () => 'User.read',
    fixed(config) {
      const tenant = encodeURIComponent(orDefault(config.tenantId, 'common'));
      return {
        authorizationUrl: `https://login.microsoftonline.com/${tenant}/oauth2/v2.0/authorize`,
        tokenUrl: `https://login.microsoftonline.com/${tenant}/oauth2/v2.0/token`,
        userInfoUrl: 'https://graph.microsoft.com/v1.0/me/',
      };
    },
    async profile(getJson, urls) {
      const profile = object(await getJson(urls.userInfoUrl!));
      if (profile.error !== undefined && profile.error !== null) throw new UpstreamError('identity_provider_error', 'Microsoft Graph answered an error');
      const id = needId(prop(profile, 'id'), 'Microsoft');
      let email = prop(profile, 'mail');
      const principal = prop(profile, 'userPrincipalName');
      if (!email && principal && EMAIL.test(principal)) email = principal;
      return { identity: { id, username: email ?? id, email, emailVerified: false, firstName: prop(profile, 'givenName'), lastName: prop(profile, 'surname') }, profile };
    },
  },
  gitlab: {
    kind: 'oidc',
    name: 'GitLab',
    // Keycloak adds read_user to an `openid` scope (GitLab's user API needs it).
    scope: () => 'read_user openid',
    fixed: (config) => ({
      authorizationUrl: 'https://gitlab.com/oauth/authorize',
      tokenUrl: 'https://gitlab.com/oauth/token',
      userInfoUrl: 'https://gitlab.com/api/v4/user',
      jwksUrl: 'https://gitlab.com/oauth/discovery/keys',
      issuer: 'https://gitlab.com',
      useJwksUrl: 'true',
      validateSignature: 'true',
      ...((config.defaultScope ?? '').trim() === 'openid' ? { defaultScope: 'read_user openid' } : {}),
      disableUserInfo: 'false',
    }),
    hooks: () => ({
      identity(idClaims, info) {
        const id = needId(prop(info, 'id'), 'GitLab');
        // The user API must be about the ID token's user.
        if (String(idClaims.sub) !== id) throw new UpstreamError('invalid_token', 'the GitLab user is another than the ID token’s');
        const email = prop(info, 'email');
        return { id, username: prop(info, 'username') ?? email ?? id, email, emailVerified: false, ...splitName(prop(info, 'name')) };
      },
    }),
  },
  facebook: {
    kind: 'oauth2',
    name: 'Facebook',
    scope: () => 'email',
    fixed: (config) => ({
      authorizationUrl: 'https://graph.facebook.com/oauth/authorize',
      tokenUrl: 'https://graph.facebook.com/oauth/access_token',
      userInfoUrl: `https://graph.facebook.com/me?fields=${['id,name,email,first_name,last_name', config.fetchedFields?.trim()].filter(Boolean).join(',')}`,
    }),
    async profile(getJson, urls) {
      const profile = object(await getJson(urls.userInfoUrl!));
      const id = needId(prop(profile, 'id'), 'Facebook');
      const email = prop(profile, 'email');
      return { identity: { id, username: prop(profile, 'username') ?? email ?? id, email, emailVerified: false, firstName: prop(profile, 'first_name'), lastName: prop(profile, 'last_name') }, profile };
    },
  },
  // Not a provider of Keycloak 26.7.3 (the community's `apple` extension uses this providerId): Sign in with Apple. The
  // client secret is made for each code exchange from the team's key when `teamId`, `keyId` and `p8Content` are set
  // (apple-client-secret.ts); else the operator's `clientSecret` (a client secret JWT signed elsewhere, up to six
  // months) is sent. With any scope Apple answers by form_post (the POST route in pages/broker.ts). The identity is
  // the ID token's (`sub`, `email`, `email_verified`); no user info endpoint.
  apple: {
    kind: 'oidc',
    name: 'Apple',
    scope: () => 'openid name email',
    fixed: () => ({
      authorizationUrl: 'https://appleid.apple.com/auth/authorize',
      tokenUrl: 'https://appleid.apple.com/auth/token',
      jwksUrl: 'https://appleid.apple.com/auth/keys',
      issuer: 'https://appleid.apple.com',
      useJwksUrl: 'true',
      validateSignature: 'true',
      disableUserInfo: 'true',
    }),
    params: (config): Record<string, string> => (/(^|\s)(name|email)(\s|$)/.test(orDefault(config.defaultScope, 'openid name email')) ? { response_mode: 'form_post' } : {}),
    clientSecret: (config) => appleClientSecret(config),
  },
  'linkedin-openid-connect': {
    kind: 'oidc',
    name: 'LinkedIn',
    scope: () => 'openid profile email',
    // Keycloak reads these from LinkedIn's discovery document once; they are fixed here. LinkedIn's ID tokens carry no nonce.
    fixed: () => ({
      authorizationUrl: 'https://www.linkedin.com/oauth/v2/authorization',
      tokenUrl: 'https://www.linkedin.com/oauth/v2/accessToken',
      userInfoUrl: 'https://api.linkedin.com/v2/userinfo',
      jwksUrl: 'https://www.linkedin.com/oauth/openid/jwks',
      issuer: 'https://www.linkedin.com/oauth',
      useJwksUrl: 'true',
      validateSignature: 'true',
      disableNonce: 'true',
    }),
  },
  bitbucket: {
    kind: 'oauth2',
    name: 'BitBucket',
    scope: () => 'account email',
    fixed: () => ({
      authorizationUrl: 'https://bitbucket.org/site/oauth2/authorize',
      tokenUrl: 'https://bitbucket.org/site/oauth2/access_token',
      userInfoUrl: 'https://api.bitbucket.org/2.0/user',
      emailUrl: 'https://api.bitbucket.org/2.0/user/emails',
    }),
    async profile(getJson, urls) {
      const profile = object(await getJson(urls.userInfoUrl!));
      if (profile.type !== 'user') throw new UpstreamError('identity_provider_error', 'Bitbucket answered no user account');
      const id = needId(prop(profile, 'account_id'), 'Bitbucket');
      let email: string | null = null;
      let emailVerified = false;
      try {
        // As Keycloak: the first address listed, when it is one; no address is no failure.
        const values = object(await getJson(urls.emailUrl!)).values;
        const first = object(Array.isArray(values) ? values[0] : values);
        if (first.type === 'email') {
          email = prop(first, 'email');
          emailVerified = first.is_confirmed === true;
        }
      } catch {
        email = null;
      }
      return { identity: { id, username: prop(profile, 'username') ?? id, email, emailVerified, emailUnverified: email !== null && !emailVerified, ...splitName(prop(profile, 'display_name')) }, profile };
    },
  },
};

/** The name a provider is shown by (Keycloak's getIdentityProviderDisplayName): its display name, a social provider's name, its alias. */
export const providerDisplayName = (provider: Pick<IdentityProvider, 'displayName' | 'providerId' | 'alias'>): string =>
  provider.displayName || (Object.hasOwn(SOCIAL_PROVIDERS, provider.providerId) ? SOCIAL_PROVIDERS[provider.providerId].name : provider.alias);

/** The providers a browser may sign in through here: OpenID Connect and the social ones above. */
export const SIGN_IN_PROVIDER_IDS: ReadonlySet<string> = new Set([...OIDC_PROVIDER_IDS, ...Object.keys(SOCIAL_PROVIDERS)]);

const URL_KEYS = ['authorizationUrl', 'tokenUrl', 'userInfoUrl', 'jwksUrl', 'emailUrl'];

/** A URL with its scheme, host and port replaced when its host is overridden (`host` or `host:port`). */
export function overriddenUrl(url: string, overrides: ReadonlyMap<string, string>): string {
  if (!overrides.size) return url;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  const origin = overrides.get(parsed.host.toLowerCase()) ?? overrides.get(parsed.hostname.toLowerCase());
  return origin ? `${origin}${parsed.pathname}${parsed.search}` : url;
}

/** The provider as the upstream code sees it: a social provider's fixed endpoints (overridden) merged over its config. */
export function effectiveProvider(provider: IdentityProvider, config: Pick<ServerConfig, 'brokerEndpointOverrides'>): { provider: IdentityProvider; social: SocialProvider | null } {
  const social = Object.hasOwn(SOCIAL_PROVIDERS, provider.providerId) ? SOCIAL_PROVIDERS[provider.providerId] : null;
  if (!social) return { provider, social: null };
  const overrides = brokerEndpointOverrides(config);
  const merged: Config = { ...provider.config, ...social.fixed(provider.config) };
  if (!(merged.defaultScope ?? '').trim()) merged.defaultScope = social.scope(provider.config);
  for (const key of URL_KEYS) if (merged[key]) merged[key] = overriddenUrl(merged[key], overrides);
  return { provider: { ...provider, config: merged as Record<string, string> }, social };
}

/**
 * Keycloak's reload-keys for any provider: an OpenID Connect one (a social one of kind `oidc` with its fixed JWKS)
 * fetches its JWKS again; the others (OAuth 2 social providers, providers kept as data) have no keys: false.
 */
export async function reloadProviderKeys(guard: OutboundGuard, config: Pick<ServerConfig, 'brokerEndpointOverrides'>, stored: IdentityProvider): Promise<boolean> {
  const { provider, social } = effectiveProvider(stored, config);
  if (social ? social.kind !== 'oidc' : !OIDC_PROVIDER_IDS.has(stored.providerId)) return false;
  return reloadUpstreamKeys(guard, provider);
}

/** The authorization request of any provider this server signs in through. */
export function upstreamAuthorizationRequest(config: Pick<ServerConfig, 'brokerEndpointOverrides'>, stored: IdentityProvider, redirectUri: string, state: string, extra: { loginHint?: string; prompt?: string } = {}): UpstreamRequest {
  const { provider, social } = effectiveProvider(stored, config);
  return authorizationRequest(provider, redirectUri, state, { ...extra, oauth2: social?.kind === 'oauth2', params: social?.params?.(stored.config) });
}

/** The callback's work for any provider this server signs in through: code → tokens → identity. */
export async function completeBrokerLogin(
  guard: OutboundGuard,
  config: Pick<ServerConfig, 'brokerEndpointOverrides'>,
  stored: IdentityProvider,
  code: string,
  redirectUri: string,
  pending: { nonce: string; codeVerifier: string | null },
  clientIp: string | null,
): Promise<BrokeredIdentity> {
  const { provider, social } = effectiveProvider(stored, config);
  if (!social) return completeUpstreamLogin(guard, provider, code, redirectUri, pending);
  if (stored.providerId === 'google' && stored.config.userIp === 'true' && clientIp && provider.config.userInfoUrl) {
    const url = new URL(provider.config.userInfoUrl);
    url.searchParams.set('userIp', clientIp);
    provider.config.userInfoUrl = url.href;
  }
  const madeSecret = await social.clientSecret?.(stored.config);
  // Sent in the form, as Apple wants it (a made secret is never stored or logged).
  if (madeSecret) Object.assign(provider.config, { clientSecret: madeSecret, clientAuthMethod: 'client_secret_post' });
  if (social.kind === 'oidc') return completeUpstreamLogin(guard, provider, code, redirectUri, pending, social.hooks?.(stored.config));
  const tokens = await exchangeCode(guard, provider, code, redirectUri, pending.codeVerifier);
  const accessToken = text(tokens.access_token);
  if (!accessToken) throw new UpstreamError('identity_provider_error', 'the token response has no access token');
  const getJson: GetJson = async (url) => {
    let response;
    try {
      response = await outboundRequest(guard, url, { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' } });
    } catch (error) {
      throw new UpstreamError('identity_provider_error', `profile endpoint unreachable: ${(error as Error).message}`);
    }
    if (response.status < 200 || response.status > 299) throw new UpstreamError('identity_provider_error', `profile endpoint answered status ${response.status}`);
    try {
      return JSON.parse(response.body) as unknown;
    } catch {
      throw new UpstreamError('identity_provider_error', 'profile endpoint answered no JSON');
    }
  };
  const { identity, profile } = await social.profile!(getJson, provider.config, stored.config);
  return { ...identity, claims: profile, idToken: {}, accessTokenClaims: null, tokenResponse: tokens };
}
