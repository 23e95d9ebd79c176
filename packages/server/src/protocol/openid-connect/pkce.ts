import type { Client } from '../../model/types.js';

/**
 * RFC 7636 4.3 at the endpoints that take a `code_challenge` (authorization, device authorization): only S256, a
 * challenge of 43 to 128 unreserved characters, and one required when `required`. Answers Keycloak's description of
 * the problem (an `invalid_request`), or null. The verifier is checked where the grant is redeemed
 * (authentication's pkceRefusal).
 */
export function pkceChallengeProblem(challenge: string | undefined, method: string | undefined, required: boolean): string | null {
  if (challenge !== undefined || method !== undefined) {
    if (method !== 'S256') return 'Invalid parameter: code challenge method is not supported (use S256)';
    if (!challenge || !/^[A-Za-z0-9\-._~]{43,128}$/.test(challenge)) return 'Invalid parameter: code_challenge';
    return null;
  }
  return required ? 'Missing parameter: code_challenge_method' : null;
}

/** Keycloak's per-client `pkce.code.challenge.method`: a request without a challenge is refused. */
export const pkceEnforced = (client: Client) => Boolean(client.attributes['pkce.code.challenge.method']);
