import { createPrivateKey, randomUUID, type KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import { UpstreamError } from './upstream-oidc.js';

/**
 * Sign in with Apple's client secret made from the team's key: Apple takes no static secret at its token endpoint,
 * only an ES256 JWT signed with a key from the developer account (the `.p8` file), naming the team (`iss`), the
 * Services ID (`sub`, the provider's clientId), Apple (`aud`) and the key (`kid`). The config fields are the ones the
 * community `apple` provider for Keycloak names: `teamId`, `keyId`, `p8Content` (the file's text, or only its base64
 * body as some of those extensions take it). Made afresh for every code exchange, living a few minutes: signing one
 * costs less than the exchange's round trip, and nothing long-lived that could be replayed is kept or sent.
 */

export const APPLE_AUDIENCE = 'https://appleid.apple.com';
/** How long a client secret made here is valid (Apple accepts up to six months; one exchange needs seconds). */
export const APPLE_SECRET_LIFETIME_SECONDS = 300;

const KEY_FIELDS = ['teamId', 'keyId', 'p8Content'] as const;

/** The private key of `p8Content`: PEM, or the base64 body alone; an EC P-256 key, else null. */
export function appleKeyOf(p8Content: string): KeyObject | null {
  const trimmed = p8Content.trim();
  const pem = trimmed.includes('-----BEGIN')
    ? trimmed
    : `-----BEGIN PRIVATE KEY-----\n${trimmed.replace(/\s+/g, '').replace(/(.{64})/g, '$1\n')}\n-----END PRIVATE KEY-----`;
  try {
    const key = createPrivateKey({ key: pem, format: 'pem' });
    return key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1' ? key : null;
  } catch {
    return null;
  }
}

/**
 * The client secret for this code exchange when the provider is configured with a key (all of teamId, keyId and
 * p8Content), null when it is not (the stored `clientSecret` is sent, as before). A key half configured or not an
 * EC P-256 private key is the operator's mistake: an UpstreamError (the sign-in fails with a page, never a 5xx).
 */
export async function appleClientSecret(config: Readonly<Record<string, string | undefined>>, now = Date.now()): Promise<string | null> {
  const given = KEY_FIELDS.filter((field) => (config[field] ?? '').trim() !== '');
  if (given.length === 0) return null;
  if (given.length < KEY_FIELDS.length) throw new UpstreamError('identity_provider_error', `Apple's key is half configured: teamId, keyId and p8Content go together (missing ${KEY_FIELDS.filter((f) => !given.includes(f)).join(', ')})`);
  const key = appleKeyOf(config.p8Content!);
  if (!key) throw new UpstreamError('identity_provider_error', "Apple's key (p8Content) is not an EC P-256 private key in PKCS#8");
  const issuedAt = Math.floor(now / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: config.keyId!.trim() })
    .setIssuer(config.teamId!.trim())
    .setSubject(config.clientId ?? '')
    .setAudience(APPLE_AUDIENCE)
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + APPLE_SECRET_LIFETIME_SECONDS)
    .setJti(randomUUID())
    .sign(key);
}
