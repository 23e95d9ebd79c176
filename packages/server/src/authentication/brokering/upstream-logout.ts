import { decodeJwt } from 'jose';
import type { AuthenticationContext } from '../context.js';
import type { Realm, UserSession } from '../../model/types.js';
import { OIDC_PROVIDER_IDS, UpstreamError, verifyUpstreamJwt } from './upstream-oidc.js';

/**
 * An upstream's OpenID Connect back-channel logout (Keycloak's LogoutEndpoint.backchannelLogout, for a realm that is
 * an upstream's client): the `logout_token` names the upstream session (`sid`) or user (`sub`) whose brokered
 * sessions here end. The token is the provider's own: its `iss` is the `issuer` of an enabled `oidc` /
 * `keycloak-oidc` provider of the realm, its audience that provider's `clientId`, its signature checked by the
 * provider's JWKS URL or key; it carries the back-channel logout event and no nonce (OpenID Connect Back-Channel
 * Logout 1.0, 2.6). Unlike Keycloak, a provider whose signature validation is off takes no logout token: an unsigned
 * token would let anyone end anyone's sessions.
 */

const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

type LogoutContext = Pick<AuthenticationContext, 'storage' | 'outbound'>;

export type UpstreamLogout = { ok: true; alias: string; sessions: UserSession[] } | { ok: false; reason: string };

export async function upstreamLogoutSessions(ctx: LogoutContext, realm: Realm, logoutToken: string): Promise<UpstreamLogout> {
  let issuer: unknown;
  try {
    issuer = decodeJwt(logoutToken).iss;
  } catch {
    return { ok: false, reason: 'not a JWT' };
  }
  if (typeof issuer !== 'string' || !issuer) return { ok: false, reason: 'no issuer' };
  const providers = (await ctx.storage.federation.cachedProviders(realm.id)).filter((p) => p.enabled && OIDC_PROVIDER_IDS.has(p.providerId) && p.config.issuer === issuer);
  if (!providers.length) return { ok: false, reason: 'no identity provider of this issuer' };
  let reason = 'signature validation is off for this identity provider';
  const found: { alias: string; sessions: UserSession[] } = { alias: '', sessions: [] };
  let verified = false;
  // Each provider of that issuer the token is valid for (several may share an upstream): its brokered sessions.
  for (const provider of providers) {
    if (provider.config.validateSignature !== 'true') continue;
    let claims;
    try {
      claims = await verifyUpstreamJwt(ctx.outbound, provider, logoutToken, 'logout token', ['iat']);
    } catch (error) {
      if (!(error instanceof UpstreamError)) throw error;
      reason = error.message;
      continue;
    }
    const events = claims.events;
    if (!events || typeof events !== 'object' || !(BACKCHANNEL_LOGOUT_EVENT in events)) return { ok: false, reason: 'no back-channel logout event' };
    if (claims.nonce !== undefined) return { ok: false, reason: 'a logout token carries no nonce' };
    const sid = typeof claims.sid === 'string' && claims.sid ? claims.sid : null;
    const sub = typeof claims.sub === 'string' && claims.sub ? claims.sub : null;
    if (!sid && !sub) return { ok: false, reason: 'neither sid nor sub' };
    verified = true;
    const sessions = sid ? await ctx.storage.sessions.byBroker(realm.id, { sessionId: `${provider.alias}.${sid}` }) : await ctx.storage.sessions.byBroker(realm.id, { userId: `${provider.alias}.${sub}` });
    // With both, the session must be that user's (the spec: the session of that subject).
    const named = sid && sub ? sessions.filter((s) => s.brokerUserId === `${provider.alias}.${sub}`) : sessions;
    if (named.length) {
      found.alias = found.alias || provider.alias;
      found.sessions.push(...named);
    }
  }
  if (verified) return { ok: true, alias: found.alias, sessions: found.sessions };
  return { ok: false, reason };
}
