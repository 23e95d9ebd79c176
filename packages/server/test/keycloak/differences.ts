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

const ADMIN_ERROR_SHAPE =
  'Admin errors are always {errorMessage, field?} in Realmgate; Keycloak answers {error}, {error, error_description} or {field, errorMessage, params} by case (issue 41, part 3).';

const REFUSED_BAD_INPUT =
  'Issue 35 ("Bad input"): Realmgate answers 400 naming it and writes nothing; Keycloak 26.7.3 takes it (201) and stores something that never works.';

const CLIENT_AUTH_REFUSED =
  "Issue 39 (\"Bad input\", \"never saved as another method\"): Realmgate answers 400 naming the attribute and stores nothing; Keycloak 26.7.3 stores the client (201), which then never authenticates (an unknown authenticator, a certificate that does not parse) or has the server fetch a link-local address (the cloud metadata service) at its first authentication.";
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
  ...each('bad input: an execution with an unknown provider id', ['keys'], 'open', ADMIN_ERROR_SHAPE),
  ...each('bad input: a condition outside a conditional sub-flow', ['status', 'keys', 'written'], 'deliberate', REFUSED_BAD_INPUT),
  ...each('bad input: a config on a step that takes none', ['status', 'keys', 'written'], 'deliberate', REFUSED_BAD_INPUT),
  ...each('bad input: an unknown required-action alias', ['get.keys', 'put.keys', 'raise.keys'], 'open', ADMIN_ERROR_SHAPE),
  ...each('bad input: an unknown required-action alias', ['userWithIt'], 'deliberate', REFUSED_BAD_INPUT),
  ...each('bad input: an unknown clientAuthenticatorType', ['status', 'keys', 'stored'], 'deliberate', CLIENT_AUTH_REFUSED),
  ...each('bad input: a jwks.url at the link-local metadata address', ['status', 'keys', 'stored'], 'deliberate', CLIENT_AUTH_REFUSED),
  ...each('bad input: a jwt.credential.certificate that is not a certificate', ['status', 'keys', 'stored'], 'deliberate', CLIENT_AUTH_REFUSED),
  ...each('bad input: a jwks.url that is not a URL', ['keys'], 'open', ADMIN_ERROR_SHAPE),
  ...each(
    'bad input: a certificate upload that is not a certificate',
    ['status', 'keys'],
    'deliberate',
    "Keycloak 26.7.3 fails with 500 {error, error_description} on a certificate PEM that does not parse; Realmgate answers 400 {errorMessage, field} naming the file (never a 5xx for an administrator's input); neither changes the client's key.",
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
];
