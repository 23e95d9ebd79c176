/**
 * The differences between Realmgate and Keycloak 26.7.3 that the differential suite (npm run test:keycloak) knows
 * of, each with its reason. `case` is the name of the compared case, `path` the observation path (a prefix covers
 * all paths below it). `kind`: 'deliberate' (Realmgate answers otherwise on purpose) or 'open' (a gap not yet
 * closed, with the issue that closes it). The suite fails on a difference not listed here, and on a listed one that
 * no longer occurs (remove it then).
 */

export interface ListedDifference {
  case: string;
  path: string;
  kind: 'deliberate' | 'open';
  reason: string;
}

/** The same reason for several paths of one case. */
const each = (caseName: string, paths: string[], kind: ListedDifference['kind'], reason: string): ListedDifference[] =>
  paths.map((path) => ({ case: caseName, path, kind, reason }));

const REFUSED_BAD_INPUT =
  'Issue 35 ("Bad input"): Realmgate answers 400 naming it and writes nothing; Keycloak 26.7.3 takes it (201) and stores something that never works.';

const CLIENT_AUTH_REFUSED =
  "Issue 39 (\"Bad input\", \"never saved as another method\"): Realmgate answers 400 naming the attribute and stores nothing; Keycloak 26.7.3 stores the client (201), which then never authenticates (an unknown authenticator, a certificate that does not parse) or has the server fetch a link-local address (the cloud metadata service) at its first authentication.";
/** The prefix of admin-bad-input.keycloak.ts's cases (`admin bad input: <resource>: <what>`). */
const ADMIN_BAD_INPUT = 'admin bad input: ';

const CORS_EXPOSED =
  "Realmgate's Access-Control-Expose-Headers also names Location and WWW-Authenticate (headers its answers may carry); Keycloak 26.7.3 exposes Access-Control-Allow-Methods only, and nothing at the account API or for public documents.";
const CORS_PREFLIGHT_HEADERS =
  "Preflight Access-Control-Allow-Headers: Keycloak 26.7.3 answers a fixed list (Origin, Accept, X-Requested-With, Content-Type, Access-Control-Request-Method/-Headers, Authorization, DPoP); Realmgate names the headers its endpoints read (Accept-Language and Content-Language among them, not the request-only Access-Control-Request-* names).";
const CORS_PREFLIGHT_METHODS =
  'Preflight Access-Control-Allow-Methods: Keycloak 26.7.3 adds HEAD (and OPTIONS, PUT at the account API; none beyond GET for certs and discovery); Realmgate names the methods the endpoint takes and OPTIONS.';
/** The case of admin-client.keycloak.ts (its BREADTH): `works.<resource>.<method>`, `keys.<resource>.<method>[.<key>]`. */
const BREADTH = 'admin-client breadth';

export const differences: ListedDifference[] = [
  {
    case: BREADTH,
    path: 'works.clients.downloadKey',
    kind: 'deliberate',
    reason:
      "Realmgate keeps no private key of a client: generate answers it once and keeps the certificate (admin/client-certificates.ts), so there is no key to download later; Keycloak 26.7.3 stores the private key in the client's attributes. generate-and-download gives a keystore.",
  },
  {
    case: BREADTH,
    path: 'keys.realms.find.displayNameHtml',
    kind: 'open',
    reason: "Keycloak's master realm is made with a displayNameHtml (its logo text); Realmgate's master has none (the field is kept and answered when set).",
  },
  {
    case: BREADTH,
    path: 'keys.clients.evaluateGenerateAccessToken.allowed-origins',
    kind: 'open',
    reason: "Keycloak's example access token of a client with redirect URIs and no web origins carries allowed-origins (its web-origins scope); Realmgate's leaves it out.",
  },
  {
    case: BREADTH,
    path: 'keys.clients.getInstallationProviders.verify-token-audience',
    kind: 'open',
    reason: "Keycloak's keycloak-oidc-keycloak-json file has verify-token-audience: true when the client has roles of its own (or a realm client scope's audience mapper adds it); Realmgate's has not. Adding it makes keycloak-connect refuse the client's own client-credentials token (no aud of itself; test/keycloak-connect.test.ts), so it needs the audience in such tokens first.",
  },
  {
    case: BREADTH,
    path: 'keys.identityProviders.findMapperTypes',
    kind: 'open',
    reason: 'Identity provider mapper types not implemented: hardcoded-user-session-attribute-idp-mapper, oidc-advanced-group-idp-mapper, oidc-user-session-note-idp-mapper (the mappers that run are in authentication/brokering/idp-mappers.ts).',
  },


  {
    case: 'the built-in browser and direct grant flows of a new realm',
    path: 'browser',
    kind: 'open',
    reason:
      "Keycloak 26.7.3's browser flow also has Kerberos (DISABLED), an Organization sub-flow, and a 'Conditional 2FA' sub-flow (condition credential; OTP ALTERNATIVE beside WebAuthn and recovery codes, DISABLED); its redirector is at priority 25 between Kerberos (20) and the forms (30), Realmgate's at 20 before the forms (30). Realmgate's built-in flow has no Kerberos, organizations, WebAuthn or recovery codes step (src/flows/builtin-flows.ts).",
  },
  ...each(
    'an ALTERNATIVE pair: password form or OTP form after the username',
    ['holder', 'bare'],
    'deliberate',
    'One sign-in page asks for name and password even when a flow splits them into auth-username-form and auth-password-form (server README, "Sign-in flows": the password step checks name and password together, so an unknown name is answered as a wrong password and timing tells neither).',
  ),
  ...each(
    'a direct-grant copy with OTP REQUIRED as one client’s override',
    ['webBareNoApp.status', 'webBareNoApp.error'],
    'deliberate',
    'A flow that requires OTP of a user with none: Keycloak 26.7.3 fails with 500 unknown_error; Realmgate answers 400 invalid_grant (never a 5xx for a client’s request).',
  ),
  ...each(
    'required actions shown in priority order',
    ['others'],
    'open',
    'Keycloak 26.7.3 also registers webauthn-register, webauthn-register-passwordless (passkeys issue), VERIFY_PROFILE, delete_credential and CONFIGURE_RECOVERY_AUTHN_CODES.',
  ),
  ...each('bad input: a condition outside a conditional sub-flow', ['status', 'keys', 'written'], 'deliberate', REFUSED_BAD_INPUT),
  ...each('bad input: a config on a step that takes none', ['status', 'keys', 'written'], 'deliberate', REFUSED_BAD_INPUT),
  ...each('bad input: an unknown required-action alias', ['userWithIt'], 'deliberate', REFUSED_BAD_INPUT),
  ...each('bad input: an unknown clientAuthenticatorType', ['status', 'keys', 'stored'], 'deliberate', CLIENT_AUTH_REFUSED),
  ...each('bad input: a jwks.url at the link-local metadata address', ['status', 'keys', 'stored'], 'deliberate', CLIENT_AUTH_REFUSED),
  ...each('bad input: a jwt.credential.certificate that is not a certificate', ['status', 'keys', 'stored'], 'deliberate', CLIENT_AUTH_REFUSED),
  ...each(
    'bad input: a jwks.url that is not a URL',
    ['keys'],
    'open',
    'Keycloak 26.7.3\'s client validation answers a URL that is not one (root, base, redirect, JWKS) with {error: "invalid_input", error_description}; Realmgate checks the key attributes together (keys/client-keys.ts, one 400 naming every problem) and answers {errorMessage}. Same status, nothing stored.',
  ),
  ...each(
    'bad input: a certificate upload that is not a certificate',
    ['status', 'keys'],
    'deliberate',
    "Keycloak 26.7.3 fails with 500 {error, error_description} on a certificate PEM that does not parse; Realmgate answers 400 {errorMessage} naming the file (never a 5xx for an administrator's input); neither changes the client's key.",
  ),
  ...each(
    'request.object.required at the PAR endpoint, and the pushed request at the authorization endpoint',
    ['anyWithout.error_description', 'requestOnlyWithout.error_description'],
    'deliberate',
    "Keycloak 26.7.3's PAR endpoint answers the error page's message key as the description (\"invalidRequestMessage\"); Realmgate says what is missing (\"Client is required to use 'request' parameter.\", Keycloak's own reason in its event). Same status and error.",
  ),
  ...each(
    'discovery: the fields of the device flow, token exchange, PAR and request objects',
    ['request_uri_parameter_supported', 'require_request_uri_registration'],
    'deliberate',
    'Realmgate never fetches a request object by URL (an outbound request chosen by the client), so it advertises request_uri_parameter_supported false; request_uri takes only pushed requests (PAR). server README, "Device flow, pushed authorization requests".',
  ),
  ...each(
    'discovery: the fields of the device flow, token exchange, PAR and request objects',
    ['request_object_encryption_alg_values_supported'],
    'deliberate',
    'Encrypted request objects to RSA-OAEP and RSA-OAEP-256 keys only: RSA1_5 is refused (PKCS#1 v1.5 decryption is open to padding oracles) and there are no ECDH-ES realm keys (no ecdh-generated key provider).',
  ),

  // admin-bad-input.keycloak.ts (issue 41 part 1, admin): the rows where Realmgate still answers otherwise
  ...each(`${ADMIN_BAD_INPUT}clients: a client without a clientId`, ['status', 'keys', 'written'], 'deliberate', REFUSED_BAD_INPUT),
  ...each(`${ADMIN_BAD_INPUT}authentication: a copy without a new name`, ['status', 'keys', 'written'], 'deliberate', REFUSED_BAD_INPUT),
  ...each(
    `${ADMIN_BAD_INPUT}client scopes: a client scope without a name`,
    ['status', 'keys'],
    'deliberate',
    'Keycloak 26.7.3 fails with 500 {error: "unknown_error", error_description} (its database refuses the null name); Realmgate answers 400 {errorMessage} naming clientScope.name (never a 5xx for an administrator\'s input).',
  ),
  ...each(
    `${ADMIN_BAD_INPUT}protocol mappers: a client mapper without a name`,
    ['status', 'keys'],
    'deliberate',
    'Keycloak 26.7.3 answers 409 {error: "unknown_error", error_description} (its database\'s refusal of the null name reported as a conflict); Realmgate answers 400 {errorMessage} naming mapper.name: nothing is taken, a field is missing.',
  ),
  ...each(
    `${ADMIN_BAD_INPUT}authentication: a flow without an alias`,
    ['status'],
    'deliberate',
    'Keycloak 26.7.3 answers 409 {errorMessage} to a flow without an alias, as if a null alias were taken; Realmgate answers 400 {errorMessage} naming flow.alias as missing. Same body shape.',
  ),
  ...each(
    `${ADMIN_BAD_INPUT}protocol mappers: a client mapper of an unknown type`,
    ['status', 'keys'],
    'deliberate',
    'Keycloak 26.7.3 answers 404 {error} (no mapper provider of that id, a NotFoundException); Realmgate answers 400 {errorMessage} naming mapper.protocolMapper: the client exists, the body is what is wrong, and the same check refuses it in a realm file.',
  ),
  ...each(
    `${ADMIN_BAD_INPUT}identity providers: a provider of an unknown type`,
    ['status', 'keys', 'written'],
    'open',
    "Realmgate keeps an identity provider of a kind it does not sign in with as data (SAML, OpenShift … from Keycloak exports round-trip; logged as not run), so it cannot tell a kind Keycloak has from none at all; Keycloak 26.7.3 refuses a providerId it has no factory for with 400 {errorMessage}. Closing it needs Keycloak's list of identity provider kinds.",
  ),

  // The account REST API (account-api.keycloak.ts)
  ...each(
    'account: the profile with bad input (POST)',
    ['noEmail.keys', 'otherName.keys', 'noEmail.field', 'noEmail.errorMessage', 'otherName.field', 'otherName.errorMessage'],
    'open',
    'Keycloak 26.7.3 reports an empty e-mail twice (missingEmailMessage and error-user-attribute-required) and a changed username three times (read-only, length, readOnlyUsernameMessage), so its single-error fields are absent; Realmgate reports each once, with the single error also at the top level. Same status, same `errors` list shape.',
  ),
  ...each(
    'account: the profile with bad input (POST)',
    ['numberName.status', 'numberName.keys'],
    'deliberate',
    'A number where the profile takes text (firstName: 5): Keycloak 26.7.3 coerces it to "5" and saves it (204); Realmgate answers 400 {errorMessage} naming firstName and saves nothing (issue 35\'s "Bad input": a value of the wrong type is refused, never silently converted).',
  ),
  ...each(
    'account: the profile with bad input (POST)',
    ['listName.keys'],
    'open',
    'A list where the profile takes text: Keycloak 26.7.3 answers its unreadable-body shape {error, error_description}; Realmgate {errorMessage} naming the field (the account API\'s own body reader, not the admin API\'s shared field parser). Same status 400. Issue 41 part 3.',
  ),
  ...each(
    'account: sessions and devices, one signed out',
    ['devices.count', 'devices.keys'],
    'open',
    "Keycloak 26.7.3 groups sessions by the device its user agent names (here both sessions on one 'Other' device) and leaves id, ipAddress and browser off the device; Realmgate records no user agent, so each session is its own device, described in full.",
  ),
  ...each(
    'account: refusals (no token, a token without account roles, a token of another realm, not a token)',
    ['noToken.profile.keys', 'noToken.sessions.keys', 'withoutRoles.profile.keys', 'withoutRoles.update.keys', 'withoutRoles.applications.keys', 'withoutRoles.credentials.keys', 'withoutRoles.revoke.keys', 'otherRealm.keys', 'notAToken.keys'],
    'open',
    'Keycloak 26.7.3 answers the account API\'s 401 as {error: "HTTP 401 Unauthorized"}; Realmgate adds errorMessage (why, for the caller). Same status. Issue 41 part 3 (error shapes).',
  ),

  // CORS (cors.keycloak.ts)
  ...['listing the origin', '"+"', '"*"'].flatMap((which) => [
    ...each(
      `CORS: a client with web origins ${which}`,
      ['token.own.exposeHeaders', 'userinfo.own.exposeHeaders', 'account.own.exposeHeaders', ...(which === '"*"' ? ['token.other.exposeHeaders', 'userinfo.other.exposeHeaders', 'account.other.exposeHeaders'] : [])],
      'open',
      CORS_EXPOSED,
    ),
    ...each(`CORS: a client with web origins ${which}`, ['token.preflight.allowHeaders', 'userinfo.preflight.allowHeaders', 'account.preflight.allowHeaders'], 'open', CORS_PREFLIGHT_HEADERS),
    ...each(`CORS: a client with web origins ${which}`, ['userinfo.preflight.allowMethods', 'account.preflight.allowMethods'], 'open', CORS_PREFLIGHT_METHODS),
    ...each(
      `CORS: a client with web origins ${which}`,
      ['userinfo.badToken.allowCredentials', 'userinfo.badToken.allowOrigin', 'userinfo.badToken.exposeHeaders'],
      'open',
      "userinfo's 401 for a token that cannot be read: Keycloak 26.7.3 grants the request's origin (with credentials) and exposes WWW-Authenticate; Realmgate grants nothing, as no client is known whose web origins could allow it.",
    ),
  ]),
  ...each('CORS: certs and discovery, from any origin', ['certs.get.exposeHeaders', 'discovery.get.exposeHeaders'], 'open', CORS_EXPOSED),
  ...each('CORS: certs and discovery, from any origin', ['certs.preflight.allowHeaders', 'discovery.preflight.allowHeaders'], 'open', CORS_PREFLIGHT_HEADERS),
  ...each('CORS: certs and discovery, from any origin', ['certs.preflight.allowMethods', 'discovery.preflight.allowMethods'], 'open', CORS_PREFLIGHT_METHODS),
  ...each(
    'CORS: the admin API, from an origin no admin console allows',
    ['get.status', 'preflight.allowCredentials', 'preflight.allowHeaders', 'preflight.allowMethods', 'preflight.allowOrigin', 'preflight.maxAge', 'preflight.status'],
    'open',
    "Keycloak 26.7.3's admin API answers any origin's preflight with a grant (200, its fixed headers and methods, max-age 3600) and refuses the actual request from an origin the token's client does not allow (403); Realmgate has no preflight route there (404) and answers the request (200) without CORS headers, so a browser on another origin reads nothing either way.",
  ),
];
