import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DEVICE_CODE_GRANT } from './device.js';
import { TOKEN_EXCHANGE_GRANT } from './token/token-exchange.js';
import type { ProtocolContext } from '../context.js';
import { allowCorsForAnyOrigin, baseUrl } from '../../http/index.js';
import { realmOrError } from './realm-lookup.js';
import { issuerOf } from './tokens.js';
import { ASYMMETRIC_ASSERTION_ALGS, SECRET_ASSERTION_ALGS } from './client-assertion.js';
import { TOKEN_SIGNATURE_ALGS } from '../../keys/index.js';
import { DPOP_ALGS } from './dpop.js';
import { REQUEST_OBJECT_ALGS, REQUEST_OBJECT_ENCRYPTION_ALGS, REQUEST_OBJECT_ENCRYPTION_ENCS } from './request-object.js';

/** Keycloak's order: private_key_jwt (client-jwt), the secret's two, tls_client_auth (client-x509), client_secret_jwt (client-secret-jwt). */
const CLIENT_AUTH_METHODS = ['private_key_jwt', 'client_secret_basic', 'client_secret_post', 'tls_client_auth', 'client_secret_jwt'];
const ASSERTION_ALGS = [...ASYMMETRIC_ASSERTION_ALGS, ...SECRET_ASSERTION_ALGS];

export function discoveryRoutes(app: FastifyInstance, ctx: ProtocolContext): void {
  const metadata = async (request: FastifyRequest<{ Params: { realm: string } }>) => {
    allowCorsForAnyOrigin(request);
    const realm = await realmOrError(ctx.storage, request.params.realm);
    const issuer = issuerOf(baseUrl(request, ctx.config.hostname), realm.name);
    const endpoint = (path: string) => `${issuer}/protocol/openid-connect/${path}`;
    return {
      issuer,
      authorization_endpoint: endpoint('auth'),
      token_endpoint: endpoint('token'),
      introspection_endpoint: endpoint('token/introspect'),
      userinfo_endpoint: endpoint('userinfo'),
      end_session_endpoint: endpoint('logout'),
      revocation_endpoint: endpoint('revoke'),
      jwks_uri: endpoint('certs'),
      // OIDC Session Management 1.0: the session-status frame (frames.ts), as Keycloak advertises it.
      check_session_iframe: endpoint('login-status-iframe.html'),
      // Only what works (test/discovery.test.ts exercises every advertised value). Dynamic client registration
      // (RFC 7591, registration.ts) at Keycloak's path.
      registration_endpoint: `${issuer}/clients-registrations/openid-connect`,
      // Front- and back-channel logout with `sid` (logout-notifications.ts, test/logout-notifications.test.ts).
      frontchannel_logout_session_supported: true,
      frontchannel_logout_supported: true,
      backchannel_logout_supported: true,
      backchannel_logout_session_supported: true,
      grant_types_supported: ['authorization_code', 'client_credentials', 'password', 'refresh_token', DEVICE_CODE_GRANT, TOKEN_EXCHANGE_GRANT],
      response_types_supported: ['code'],
      response_modes_supported: ['query', 'fragment', 'form_post'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: TOKEN_SIGNATURE_ALGS,
      userinfo_signing_alg_values_supported: [...TOKEN_SIGNATURE_ALGS, 'none'],
      // One client authentication for all three endpoints (client-auth.ts), so one list each.
      token_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
      token_endpoint_auth_signing_alg_values_supported: ASSERTION_ALGS,
      introspection_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
      introspection_endpoint_auth_signing_alg_values_supported: ASSERTION_ALGS,
      revocation_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
      revocation_endpoint_auth_signing_alg_values_supported: ASSERTION_ALGS,
      code_challenge_methods_supported: ['S256'],
      // RFC 9207: every authorization response, an error included, carries `iss`, so a client can tell which server
      // answered (openid-client then requires and checks it), as Keycloak advertises.
      authorization_response_iss_parameter_supported: true,
      scopes_supported: ['openid', 'profile', 'email', 'roles', 'web-origins', 'basic', 'acr', 'offline_access', 'phone', 'address', 'microprofile-jwt', 'organization'],
      claims_supported: ['aud', 'sub', 'iss', 'auth_time', 'name', 'given_name', 'family_name', 'preferred_username', 'email', 'email_verified', 'acr', 'azp', 'sid'],
      claims_parameter_supported: false,
      // Request objects (`request`, RFC 9101) at the authorization, PAR and device endpoints (request-object.ts, tested
      // in test/request-object.test.ts): signed with the client's key or secret, or unsigned (`none`), as Keycloak lists
      // them (each exercised in test/discovery.test.ts). `request_uri` by URL is not fetched, hence false below.
      request_parameter_supported: true,
      request_object_signing_alg_values_supported: REQUEST_OBJECT_ALGS,
      // Encrypted request objects (a JWE to one of the realm's `rsa-enc-generated` keys, request-object.ts).
      request_object_encryption_alg_values_supported: REQUEST_OBJECT_ENCRYPTION_ALGS,
      request_object_encryption_enc_values_supported: REQUEST_OBJECT_ENCRYPTION_ENCS,
      request_uri_parameter_supported: false,
      require_request_uri_registration: false,
      // RFC 8705: tokens bound to the client's certificate (a trusted proxy's, http/client-certificate.ts); the
      // aliases are the same endpoints, as Keycloak publishes them (one listener serves both).
      tls_client_certificate_bound_access_tokens: true,
      mtls_endpoint_aliases: {
        token_endpoint: endpoint('token'),
        revocation_endpoint: endpoint('revoke'),
        introspection_endpoint: endpoint('token/introspect'),
        device_authorization_endpoint: endpoint('auth/device'),
        registration_endpoint: `${issuer}/clients-registrations/openid-connect`,
        userinfo_endpoint: endpoint('userinfo'),
        pushed_authorization_request_endpoint: endpoint('ext/par/request'),
      },
      // RFC 8628 and RFC 9126 (device.ts, par.ts); PAR is required per client (`require.pushed.authorization.requests`).
      device_authorization_endpoint: endpoint('auth/device'),
      pushed_authorization_request_endpoint: endpoint('ext/par/request'),
      require_pushed_authorization_requests: false,
      // RFC 9449 5.1: DPoP proofs' algorithms (dpop.ts).
      dpop_signing_alg_values_supported: DPOP_ALGS,
    };
  };
  app.get('/realms/:realm/.well-known/openid-configuration', metadata);
  // RFC 8414 metadata: Keycloak 26 answers the same document at the realm's path and at the RFC's root path.
  app.get('/realms/:realm/.well-known/oauth-authorization-server', metadata);
  app.get('/.well-known/oauth-authorization-server/realms/:realm', metadata);

  app.get<{ Params: { realm: string } }>('/realms/:realm/protocol/openid-connect/certs', async (request, reply) => {
    allowCorsForAnyOrigin(request);
    const realm = await realmOrError(ctx.storage, request.params.realm);
    return reply.header('cache-control', 'no-cache').send(await ctx.keys.jwks(realm.id));
  });

  app.get<{ Params: { realm: string } }>('/realms/:realm', async (request) => {
    allowCorsForAnyOrigin(request);
    const realm = await realmOrError(ctx.storage, request.params.realm);
    const issuer = issuerOf(baseUrl(request, ctx.config.hostname), realm.name);
    // The key that signs the realm's default algorithm (what keycloak-connect verifies tokens with).
    const algorithm = realm.defaultSignatureAlgorithm ?? 'RS256';
    const active = (await ctx.keys.list(realm.id)).find((k) => k.active && k.enabled && k.use === 'sig' && k.algorithm === algorithm);
    // Keycloak's PublicRealmRepresentation: the active key as base64 SPKI DER, what keycloak-connect configs copy.
    return {
      realm: realm.name,
      public_key: active?.publicKey ?? null,
      'token-service': `${issuer}/protocol/openid-connect`,
      'account-service': `${issuer}/account`,
      'tokens-not-before': 0,
    };
  });
}
