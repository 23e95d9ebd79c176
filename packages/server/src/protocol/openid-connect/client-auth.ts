import type { FastifyRequest } from 'fastify';
import { secretsEqual } from '../../credentials/index.js';
import { oauthError } from '../../model/errors.js';
import type { Client, Realm } from '../../model/types.js';
import type { ProtocolContext } from '../context.js';
import { JWT_BEARER_ASSERTION_TYPE, assertionSubject, parseAssertion, verifyClientAssertion } from './client-assertion.js';
import { verifyX509Client } from './mtls.js';

export type FormBody = Record<string, string | undefined>;

/** Reads a form body field; a repeated parameter is a malformed request (RFC 6749 3.1). */
export function formField(body: unknown, name: string): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const value = (body as Record<string, unknown>)[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw oauthError.invalid_request(`parameter ${name} must be given once`);
  return value;
}

/** Whether the request's body is a form (what the token, device and PAR endpoints read; a JSON body is no form). */
export function isFormRequest(request: FastifyRequest): boolean {
  return /^application\/x-www-form-urlencoded\b/i.test(request.headers['content-type'] ?? '');
}

/** Every form parameter of the request, each given once (formField's rule for each). */
export function formFields(body: unknown): Record<string, string> {
  if (typeof body !== 'object' || body === null) return {};
  const fields: Record<string, string> = {};
  for (const name of Object.keys(body)) fields[name] = formField(body, name)!;
  return fields;
}

function basicCredentials(request: FastifyRequest): { id: string; secret: string } | null {
  const header = request.headers.authorization;
  if (!header || !/^basic /i.test(header)) return null;
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw oauthError.invalid_client('Malformed Basic credentials', { headers: { 'www-authenticate': 'Basic realm="realmgate"' } });
  try {
    // RFC 6749 2.3.1: both parts are form-urlencoded before base64.
    return { id: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')), secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')) };
  } catch {
    throw oauthError.invalid_client('Malformed Basic credentials');
  }
}

/**
 * The one client authentication of every endpoint that takes a client (token, introspection, revocation, logout):
 * a public client naming itself, or a confidential client by its `clientAuthenticatorType` only, as Keycloak runs
 * the one authenticator a client is configured for — `client-secret` (client_secret_basic or client_secret_post),
 * `client-jwt` (private_key_jwt), `client-secret-jwt` (client_secret_jwt) or `client-x509` (tls_client_auth: the
 * certificate a trusted proxy forwards, mtls.ts). A client set up for an assertion or a certificate is never let in
 * by its secret.
 */
export async function authenticateClient(ctx: ProtocolContext, realm: Realm, request: FastifyRequest): Promise<Client> {
  const basic = basicCredentials(request);
  const assertion = formField(request.body, 'client_assertion');
  const assertionType = formField(request.body, 'client_assertion_type');
  const named = formField(request.body, 'client_id');
  const parsed = assertion ? parseAssertion(assertion) : null;
  // Keycloak 26.7.3's answers, measured (test/keycloak/client-auth.keycloak.ts): an assertion of another type names no
  // client; one whose `iss` is not its `sub` identifies none (401, as an unknown client); a client named twice,
  // differently, by a good one is a refused assertion (400).
  const subject = assertionType === JWT_BEARER_ASSERTION_TYPE ? assertionSubject(parsed) : undefined;
  if (named !== undefined && subject !== undefined && named !== subject) {
    if (parsed?.payload.iss !== subject) throw oauthError.invalid_client('Invalid client or Invalid client credentials');
    throw oauthError.invalid_client('client_id parameter does not match sub claim', { status: 400 });
  }
  const clientId = basic?.id ?? named ?? subject;
  const secret = basic?.secret ?? formField(request.body, 'client_secret');
  if (!clientId) throw oauthError.invalid_client('Missing client_id');
  const client = await ctx.storage.clients.cachedByClientId(realm.id, clientId);
  if (!client) throw oauthError.invalid_client('Invalid client or Invalid client credentials');
  if (!client.enabled) throw oauthError.invalid_client('Client disabled');
  if (client.bearerOnly) throw oauthError.unauthorized_client('Bearer-only clients cannot request tokens');
  if (client.publicClient) return client;
  if (client.clientAuthenticatorType === 'client-x509') {
    verifyX509Client(ctx, client, request);
    return client;
  }
  if (client.clientAuthenticatorType !== 'client-secret') {
    await verifyClientAssertion(ctx, realm, client, request, { type: assertionType, assertion, parsed });
    return client;
  }
  // Keycloak's ClientIdAndSecretAuthenticator: a known client with a missing or wrong secret is 401
  // `unauthorized_client` (an unknown client stays `invalid_client`); a client named only by an assertion's `sub` was
  // never named to it, so its answer is the unknown client's (measured on Keycloak 26.7.3).
  if (basic === null && named === undefined) throw oauthError.invalid_client('Invalid client or Invalid client credentials');
  if (secret === undefined || client.secret === null || !secretsEqual(secret, client.secret)) {
    throw oauthError.unauthorized_client('Invalid client or Invalid client credentials', { status: 401 });
  }
  return client;
}
