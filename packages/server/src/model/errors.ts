/**
 * The server's error catalogue: every code the server answers with or records is defined here, once, and the
 * README's "Errors" table lists each (test/error-catalogue.test.ts holds the two together). Handlers throw
 * what is built here and one place (http/errors.ts) turns it into HTTP; call sites name a code from these
 * tables and TypeScript refuses one that is not in them.
 *
 * Four kinds: OAuth error codes (`error` of a protocol endpoint's answer, or of a redirect to the client), the
 * admin API's codes (Keycloak's ErrorRepresentation and JAX-RS answers), why a token failed verification (a typed `reason`),
 * and Keycloak's event error names recorded with `*_ERROR` events.
 */

// ---------------------------------------------------------------------------------------------------------
// OAuth 2.0 error responses (`error`, `error_description`)

/** The OAuth error codes protocol endpoints answer with, each with its usual HTTP status (RFC 6749 5.2, RFC 6750 3.1). */
export const OAUTH_ERRORS = {
  // RFC 6749 5.2, the token endpoint's (client authentication answers the same way at introspect, revoke, logout)
  invalid_request: 400, invalid_client: 401, invalid_grant: 400, unauthorized_client: 400, unsupported_grant_type: 400,
  // RFC 6750 3.1, a protected resource's (userinfo)
  invalid_token: 401,
  // RFC 6749 5.2: a scope the client has no client scope of (Keycloak: "Invalid scopes: …")
  invalid_scope: 400,
  // Keycloak's own: offline_access asked for by a user (or client scope) without the offline_access role
  not_allowed: 400,
  // RFC 8628 3.5, the device_code grant's while the user has not approved (or has refused, or too late)
  authorization_pending: 400, slow_down: 400, access_denied: 400, expired_token: 400,
  // RFC 9101 6.3: a request object (`request`) pushed to the PAR endpoint that cannot be read or verified
  invalid_request_object: 400,
  // RFC 9126 2.2 / 6749: a request_uri that names no pushed request (Keycloak's secure-par-content executor)
  invalid_request_uri: 400,
  // RFC 9449 5, 7.1: a DPoP proof missing where required, malformed, replayed, for another URL or key (401 at userinfo)
  invalid_dpop_proof: 400,
  // RFC 7591 3.2.2 / RFC 6750 3.1, dynamic client registration's (Keycloak's ErrorCodes): metadata or a redirect URI
  // refused; a caller (or a registration policy) not allowed to do what it asked (403)
  invalid_client_metadata: 400, invalid_redirect_uri: 400, insufficient_scope: 403,
  // Keycloak's client policy refusal of a client that enables full scope under a full-scope-disabled executor
  invalid_registration: 400,
} as const satisfies Record<string, number>;

export type OAuthErrorCode = keyof typeof OAUTH_ERRORS;

export interface OAuthErrorOptions {
  /** Where a call site answers with another status than the code's usual one (Keycloak's, kept as it is). */
  status?: number;
  headers?: Record<string, string>;
}

export class OAuthError extends Error {
  readonly status: number;
  readonly headers: Record<string, string>;

  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    options: OAuthErrorOptions = {},
  ) {
    super(description);
    this.name = 'OAuthError';
    this.status = options.status ?? OAUTH_ERRORS[error];
    this.headers = options.headers ?? {};
  }
}

/** One factory per OAuth code: `throw oauthError.invalid_grant('Code not valid')`. */
export const oauthError = Object.fromEntries(
  (Object.keys(OAUTH_ERRORS) as OAuthErrorCode[]).map((code) => [code, (description: string, options?: OAuthErrorOptions) => new OAuthError(code, description, options)]),
) as { readonly [C in OAuthErrorCode]: (description: string, options?: OAuthErrorOptions) => OAuthError };

/**
 * The codes the authorization endpoint sends back to the client's redirect URI (RFC 6749 4.1.2.1, OIDC Core
 * 3.1.2.6) once the client and redirect URI are known; no HTTP status of their own (the redirect carries them).
 */
export const AUTHORIZATION_ERRORS = ['invalid_request', 'unauthorized_client', 'unsupported_response_type', 'login_required', 'consent_required', 'invalid_scope', 'invalid_client'] as const;

export type AuthorizationErrorCode = (typeof AUTHORIZATION_ERRORS)[number];

/** An OAuth error a redirect to the client may carry (a client policy's refusal of an authorization request). */
export const isAuthorizationError = (code: string): code is AuthorizationErrorCode => (AUTHORIZATION_ERRORS as readonly string[]).includes(code);

// ---------------------------------------------------------------------------------------------------------
// The admin API and the other JSON endpoints (Keycloak's ErrorRepresentation and JAX-RS's error bodies)

/** The codes of `AppError`, each with its HTTP status. */
export const APP_ERRORS = {
  invalid_input: 400,
  bad_request: 400,
  unreadable_body: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  internal_error: 500,
} as const satisfies Record<string, number>;

export type AppErrorCode = keyof typeof APP_ERRORS;

/** Keycloak's `error` of a 401 from the admin API (`{"error": "HTTP 401 Unauthorized", "errorMessage": …}`). */
export const UNAUTHORIZED_ERROR = 'HTTP 401 Unauthorized';

/**
 * Keycloak's `error` of a body its JSON reader refuses (`error_description` says why): `invalid_request` for text
 * that is not JSON, `unknown_error` for JSON that is not the representation (a field of the wrong type or unknown).
 */
export const UNREADABLE_BODY_ERRORS = { not_json: 'invalid_request', not_the_representation: 'unknown_error' } as const;

export type UnreadableBodyKind = keyof typeof UNREADABLE_BODY_ERRORS;

export interface AppErrorDetail {
  /** Why an `unreadable_body` was refused. */
  unreadable?: UnreadableBodyKind;
  /** A 404 Keycloak answers with its ErrorResponse (`{"errorMessage"}`) rather than a NotFoundException. */
  asErrorResponse?: boolean;
  /** A user profile attribute refused: Keycloak's validation answer `{"field", "errorMessage": <message key>, "params"}`. */
  params?: string[];
}

export class AppError extends Error {
  readonly status: number;

  constructor(
    readonly code: AppErrorCode,
    message: string,
    /** The field at fault: for the caller's own use (dynamic registration maps it); sent only with `params`. */
    readonly field?: string,
    readonly detail: AppErrorDetail = {},
  ) {
    super(message);
    this.name = 'AppError';
    this.status = APP_ERRORS[code];
  }
}

/**
 * The body an `AppError` is answered with, as Keycloak 26.7.3 answers the same refusal (asked of it by
 * test/keycloak/admin-bad-input.keycloak.ts): its validation answer for a user profile attribute (`{"field",
 * "errorMessage", "params"}`), JAX-RS's NotFoundException for a 404 and its BadRequestException where
 * Keycloak's resource throws one (`{"error"}`), its JSON reader's
 * failure for a body that does not read (`{"error", "error_description"}`), 401's `{"error", "errorMessage"}`, and
 * its ErrorResponse (`{"errorMessage"}`) for every other refusal.
 */
export function appErrorBody(error: AppError): Record<string, string | string[]> {
  if (error.detail.params && error.field) return { field: error.field, errorMessage: error.message, params: error.detail.params };
  if (error.detail.asErrorResponse) return { errorMessage: error.message };
  switch (error.code) {
    case 'not_found':
    case 'bad_request':
      return { error: error.message };
    case 'unreadable_body':
      return { error: UNREADABLE_BODY_ERRORS[error.detail.unreadable ?? 'not_the_representation'], error_description: error.message };
    case 'unauthorized':
      return { error: UNAUTHORIZED_ERROR, errorMessage: error.message };
    default:
      return { errorMessage: error.message };
  }
}

/**
 * Keycloak's answer to a request from an `Origin` the client's web origins do not allow (Cors.checkAllowedOrigins,
 * 26.6.3 and later): JAX-RS's ForbiddenException, `403 {"error": "Invalid origin"}`, without CORS headers.
 */
export const INVALID_ORIGIN_ERROR = 'Invalid origin';

export class InvalidOriginError extends Error {
  readonly status = APP_ERRORS.forbidden;

  constructor() {
    super(INVALID_ORIGIN_ERROR);
    this.name = 'InvalidOriginError';
  }
}

export const badRequest = (message: string, field?: string) => new AppError('invalid_input', message, field);
/** Bad input Keycloak refuses with JAX-RS's BadRequestException (`{"error"}`) rather than its ErrorResponse. */
export const badRequestError = (message: string) => new AppError('bad_request', message);
/** A body that is not JSON, or JSON that does not read as the representation (a field of the wrong type or unknown). */
export const unreadableBody = (message: string, field?: string, why: UnreadableBodyKind = 'not_the_representation') => new AppError('unreadable_body', message, field, { unreadable: why });
/** A user profile attribute's value refused, as Keycloak's validation answers it: its message key and params. */
export const invalidAttribute = (field: string, messageKey: string, params: string[]) => new AppError('invalid_input', messageKey, field, { params });
export const unauthorized = (message: string) => new AppError('unauthorized', message);
export const forbidden = (message = 'Forbidden') => new AppError('forbidden', message);
export const notFound = (message: string) => new AppError('not_found', message);
/** A 404 Keycloak answers with its ErrorResponse (`{"errorMessage"}`), as its organization resource does. */
export const notFoundResponse = (message: string) => new AppError('not_found', message, undefined, { asErrorResponse: true });
export const conflict = (message: string, field?: string) => new AppError('conflict', message, field);
export const unsupportedMediaType = (message: string) => new AppError('unsupported_media_type', message);
/** A failure the caller cannot mend, with Keycloak's own message for it (`Failed to send invite email`); the cause is logged where it happened. */
export const serverFailure = (message: string) => new AppError('internal_error', message);

// ---------------------------------------------------------------------------------------------------------
// Password policy

/**
 * Keycloak's message keys for a password the realm's policy refuses (credentials/password-policy.ts): the
 * `error` of reset-password's 400, and what a page's field error says.
 */
export const PASSWORD_POLICY_ERRORS = [
  'invalidPasswordMinLengthMessage',
  'invalidPasswordMaxLengthMessage',
  'invalidPasswordMinUpperCaseCharsMessage',
  'invalidPasswordMinLowerCaseCharsMessage',
  'invalidPasswordMinDigitsMessage',
  'invalidPasswordMinSpecialCharsMessage',
  'invalidPasswordNotUsernameMessage',
  'invalidPasswordNotEmailMessage',
  'invalidPasswordHistoryMessage',
] as const;

export type PasswordPolicyErrorKey = (typeof PASSWORD_POLICY_ERRORS)[number];

/** A new password the realm's policy refuses; pages show `message` at the field, the admin API answers 400. */
export class PasswordPolicyError extends Error {
  override name = 'PasswordPolicyError';

  constructor(
    readonly key: PasswordPolicyErrorKey,
    readonly params: string[],
    message: string,
  ) {
    super(message);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Token verification

/** Why a token was refused, one per check of TokenService.verify, in the order it makes them. */
export const TOKEN_VERIFICATION_REASONS = [
  'malformed',
  'algorithm_not_accepted',
  'missing_key_id',
  'unknown_key',
  'expired',
  'bad_signature_or_claims',
  'wrong_issuer',
  'wrong_type',
  'revoked',
  'not_before',
  'session_ended',
  'user_disabled',
  'client_disabled',
  'dpop_binding',
] as const;

export type TokenVerificationReason = (typeof TOKEN_VERIFICATION_REASONS)[number];

/**
 * A token this server did not accept. Code branches on `reason`; the message is for people (it becomes the
 * `error_description` of an `invalid_token` answer and an admin 401's `errorMessage`).
 */
export class TokenVerificationError extends Error {
  override name = 'TokenVerificationError';

  constructor(
    readonly reason: TokenVerificationReason,
    message: string,
  ) {
    super(message);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Event error names

/** Keycloak's event error names (its `Errors` constants) that this server records with `*_ERROR` events. */
export const EVENT_ERRORS = [
  'user_not_found',
  'invalid_user_credentials',
  'user_disabled',
  'user_temporarily_disabled',
  'ip_temporarily_blocked',
  'resolve_required_actions',
  'invalid_client',
  'invalid_code',
  'invalid_client_credentials',
  'invalid_redirect_uri',
  'invalid_code_verifier',
  'invalid_token',
  'not_allowed',
  'invalid_request',
  'email_in_use',
  'username_in_use',
  'invalid_registration',
  'rejected_by_user',
  // The password grant of a consentRequired client (nobody could be asked for the consent).
  'consent_denied',
  // delete_account refused (the user lacks the account client's delete-account role, or the deletion failed).
  'user_delete_error',
  // The device authorization grant (Keycloak's Errors): a user or device code unknown or spent, expired, polled too soon, denied.
  'invalid_oauth2_user_code',
  'invalid_oauth2_device_code',
  'expired_oauth2_device_code',
  'slow_down',
  'access_denied',
  'user_session_not_found',
  // Brokering (Keycloak's Errors): the upstream refused or failed, the provider is unknown, disabled or link-only.
  'identity_provider_error',
  'identity_provider_not_found',
  // Token exchange (Keycloak's Errors): an `audience` naming no client of the realm, or a disabled one.
  'client_not_found',
  'client_disabled',
  // Client-initiated account linking: no SSO session in the browser; the upstream account is another user's.
  'not_logged_in',
  'federated_identity_account_exists',
  // An organization's invitation link (INVITE_ORG_ERROR): its organization gone or disabled, its user a member already.
  'org_not_found',
  'org_disabled',
  'user_org_member_already',
  // idp-email-verification: the link's mail was refused by SMTP; a link followed after the account was confirmed.
  'email_send_failed',
  'email_already_verified',
] as const;

export type EventError = (typeof EVENT_ERRORS)[number];

declare const fromProvider: unique symbol;

/** An event error name a provider gave (a form action's or protector's, e.g. `invalid_email_domain`): its own to define. */
export type ProviderEventError = string & { readonly [fromProvider]: true };

/** Marks a name that came from a provider through the SPI, so it may be recorded beside the server's own. */
export const providerEventError = (name: string) => name as ProviderEventError;

/** What a `*_ERROR` event records as its error: one of the server's names, or one a provider gave. */
export type RecordedEventError = EventError | ProviderEventError;

/**
 * A provider package, factory or realm resource the server cannot load, or a flow that names providers that
 * clash: refused at start-up (the operator's to fix), never answered to a request.
 */
export class ProviderLoadError extends Error {
  override name = 'ProviderLoadError';
}
