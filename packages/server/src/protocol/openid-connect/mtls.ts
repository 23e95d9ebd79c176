import type { X509Certificate } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { certificateThumbprint, clientCertificateLookup } from '../../http/index.js';
import { X509_CA_SUBJECT_DN, X509_REGEX_COMPARISON, X509_SUBJECT_DN, certificateDn, normalizeDn, subjectDnPattern } from '../../keys/distinguished-name.js';
import { oauthError } from '../../model/errors.js';
import type { Client } from '../../model/types.js';
import type { ProtocolContext } from '../context.js';

/** Keycloak's client attribute for RFC 8705 certificate-bound access (and refresh) tokens. */
export const CERTIFICATE_BOUND_TOKENS = 'tls.client.certificate.bound.access.tokens';

/** Keycloak's answer when a certificate-bound token comes without its certificate (userinfo, refresh, revocation, logout). */
export const CERTIFICATE_MISMATCH = 'Client certificate missing, or its thumbprint and one in the token did NOT match';

/** The request's client certificate chain (the client's own first) as the configured lookup finds it; null when none. */
export function requestCertificateChain(ctx: Pick<ProtocolContext, 'config'>, request: FastifyRequest): X509Certificate[] | null {
  return clientCertificateLookup(ctx.config).chain(request);
}

/** Whether the client's tokens are bound to its certificate (`tls.client.certificate.bound.access.tokens`). */
export const certificateBound = (client: Client): boolean => client.attributes[CERTIFICATE_BOUND_TOKENS] === 'true';

const refused = () => oauthError.invalid_client('Invalid client or Invalid client credentials');

/**
 * Keycloak's `client-x509` authenticator: the request's certificate (a trusted proxy's header, http/client-certificate.ts)
 * whose subject DN is the client's `x509.subjectdn` — as a distinguished name, or a whole-string regular expression when
 * `x509.allow.regex.pattern.comparison` is true — and which is within its validity period. With `x509.casubjectdn`,
 * the chain the proxy forwarded must hold together (each certificate issued and signed by the next) and end at an
 * issuer of that DN. Every refusal is Keycloak's 401 `invalid_client`.
 */
export function verifyX509Client(ctx: Pick<ProtocolContext, 'config'>, client: Client, request: FastifyRequest): void {
  const chain = requestCertificateChain(ctx, request);
  if (!chain) throw refused();
  const expected = client.attributes[X509_SUBJECT_DN];
  if (!expected || expected.trim() === '') throw refused();
  const leaf = chain[0];
  let subject: string;
  try {
    subject = certificateDn(leaf);
  } catch {
    throw refused();
  }
  const matches = client.attributes[X509_REGEX_COMPARISON] === 'true' ? (subjectDnPattern(expected)?.test(subject) ?? false) : normalizeDn(expected) === subject;
  if (!matches) throw refused();
  const now = Date.now();
  if (Date.parse(leaf.validFrom) > now || Date.parse(leaf.validTo) < now) throw refused();
  const ca = client.attributes[X509_CA_SUBJECT_DN];
  if (ca && ca.trim() !== '' && !chainEndsAt(chain, normalizeDn(ca))) throw refused();
}

function chainEndsAt(chain: X509Certificate[], caDn: string | null): boolean {
  if (caDn === null) return false;
  for (let i = 0; i + 1 < chain.length; i++) {
    if (!chain[i].checkIssued(chain[i + 1]) || !chain[i].verify(chain[i + 1].publicKey)) return false;
  }
  try {
    return certificateDn(chain[chain.length - 1], 'issuer') === caDn;
  } catch {
    return false;
  }
}

/**
 * RFC 8705 3: the `cnf` a token issued to this client carries — its certificate's `x5t#S256` — when the client has
 * certificate-bound tokens; undefined when it has not. Without a certificate the request is refused as Keycloak's
 * token endpoint refuses it (400 `invalid_request`).
 */
export function certificateConfirmation(ctx: Pick<ProtocolContext, 'config'>, client: Client, request: FastifyRequest): string | undefined {
  if (!certificateBound(client)) return undefined;
  const chain = requestCertificateChain(ctx, request);
  if (!chain) throw oauthError.invalid_request('Client Certification missing for MTLS HoK Token Binding');
  return certificateThumbprint(chain[0]);
}

/** Whether a token's `cnf.x5t#S256` is the thumbprint of the request's certificate (false without either). */
export function presentedWithItsCertificate(ctx: Pick<ProtocolContext, 'config'>, claims: Record<string, unknown>, request: FastifyRequest): boolean {
  const bound = (claims.cnf as Record<string, unknown> | undefined)?.['x5t#S256'];
  if (typeof bound !== 'string') return false;
  const chain = requestCertificateChain(ctx, request);
  return chain !== null && certificateThumbprint(chain[0]) === bound;
}
