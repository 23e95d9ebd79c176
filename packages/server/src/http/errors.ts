import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { DependencyUnavailableError, RequestAbandonedError } from '../store/index.js';
import { JSON_BODY_LIMIT, REALM_FILE_LIMIT, REALM_IMPORT_BODY_LIMIT, sizeInWords } from './limits.js';
import { APP_ERRORS, AppError, appErrorBody, InvalidOriginError, OAUTH_ERRORS, OAuthError, PasswordPolicyError, TokenVerificationError, unreadableBody, type AppErrorCode, type OAuthErrorCode } from '../model/errors.js';

/** Fastify's own errors a request can cause, as the catalogue's codes. */
const fastifyErrors: Record<string, { code: AppErrorCode; message: string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { code: 'unreadable_body', message: 'Request body is not valid JSON' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { code: 'invalid_input', message: 'Request body is empty' },
  FST_ERR_CTP_BODY_TOO_LARGE: { code: 'payload_too_large', message: 'Request body is too large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { code: 'unsupported_media_type', message: 'Unsupported content type' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { code: 'invalid_input', message: 'Content-Length does not match the body' },
  FST_ERR_BAD_URL: { code: 'invalid_input', message: 'Malformed URL' },
  FST_ERR_ASYNC_CONSTRAINT: { code: 'invalid_input', message: 'Malformed request' },
};

/**
 * A body over the route's limit, saying the limit; a realm file over the admin API's also says where a larger one
 * goes (the 413 of `POST /admin/realms` used to leave an operator guessing).
 */
function tooLarge(limit: number | undefined): string {
  const bytes = limit ?? JSON_BODY_LIMIT;
  const base = `Request body is too large: at most ${sizeInWords(bytes)} here`;
  if (bytes !== REALM_IMPORT_BODY_LIMIT) return base;
  return `${base}. A larger realm file is imported at start-up with --import-realm (REALMGATE_IMPORT_REALM), up to ${sizeInWords(REALM_FILE_LIMIT)} a file`;
}

/** A token that reaches this handler unverified is answered as RFC 6750 says: 401 `invalid_token`. */
const TOKEN_REFUSED: OAuthErrorCode = 'invalid_token';

/** One place turns every thrown error into HTTP; nothing unexpected leaks a stack or message. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof DependencyUnavailableError) return unavailable(error, request.headers.accept, reply);
    // The client is gone or was answered 503 already (http/request-timeout.ts): nothing to say, nothing to log.
    if (error instanceof RequestAbandonedError) return reply.sent ? undefined : unavailable(new DependencyUnavailableError('database', error.message), request.headers.accept, reply);
    if (error instanceof OAuthError) {
      return reply
        .code(error.status)
        .headers({ 'cache-control': 'no-store', ...error.headers })
        .send({ error: error.error, error_description: error.description });
    }
    if (error instanceof InvalidOriginError) return reply.code(error.status).header('cache-control', 'no-store').send({ error: error.message });
    if (error instanceof TokenVerificationError) {
      return reply.code(OAUTH_ERRORS[TOKEN_REFUSED]).send({ error: TOKEN_REFUSED, error_description: error.message });
    }
    if (error instanceof PasswordPolicyError) {
      // Keycloak's reset-password answer ({"error": <message key>, "error_description"}), with the errorMessage
      // its user creation answers, so a client reading either shape finds the refusal.
      return reply.code(APP_ERRORS.invalid_input).send({ error: error.key, error_description: error.message, errorMessage: 'Password policy not met', params: error.params });
    }
    if (error instanceof AppError && error.status >= 500 && prefersHtml(request.headers.accept)) {
      // A page a person opened cannot be served (a sign-in flow whose step is not installed, say): say so on a page.
      return reply.code(error.status).type('text/html; charset=utf-8').send(htmlPage('Sign-in unavailable', error.message));
    }
    if (error instanceof AppError) return reply.code(error.status).send(appErrorBody(error));
    const fastifyError = error.code ? fastifyErrors[error.code] : undefined;
    const message = error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? tooLarge(request.routeOptions.bodyLimit) : fastifyError?.message;
    const known = fastifyError && { status: APP_ERRORS[fastifyError.code], message: message! };
    if (known && isBrowserForm(request.headers['content-type'], request.headers.accept)) {
      // A person submitted a page's form: answer with a page, not JSON.
      return reply.code(known.status).type('text/html; charset=utf-8').send(htmlPage('Request refused', `${known.message}. Please go back and try again with less text.`));
    }
    if (known && fastifyError.code === 'unreadable_body') return reply.code(known.status).send(appErrorBody(unreadableBody(known.message, undefined, 'not_json')));
    if (known) return reply.code(known.status).send({ errorMessage: known.message });
    if (error.validation) {
      return reply.code(APP_ERRORS.invalid_input).send({ errorMessage: error.message });
    }
    if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
      return reply.code(error.statusCode).send({ errorMessage: error.message });
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply.code(APP_ERRORS.internal_error).send({ errorMessage: 'Internal server error' });
  });
  app.setNotFoundHandler((request, reply) => {
    reply.code(APP_ERRORS.not_found).send({ error: `No resource at ${request.method} ${request.url.split('?')[0]}` });
  });
}

/**
 * The database or the shared store cannot answer now: 503 with Retry-After, in both error shapes (OAuth's
 * `error`/`error_description` for the protocol endpoints, the admin API's `errorMessage`), or a page for a person.
 * Not logged here: the dependency logs its outage once, not once per request.
 */
function unavailable(error: DependencyUnavailableError, accept: string | undefined, reply: FastifyReply) {
  const description = error.dependency === 'database' ? 'The database is unavailable; try again shortly' : 'The shared store is unavailable; try again shortly';
  reply.code(503).headers({ 'retry-after': String(error.retryAfterSeconds), 'cache-control': 'no-store' });
  if (prefersHtml(accept)) return reply.type('text/html; charset=utf-8').send(htmlPage('Temporarily unavailable', description));
  return reply.send({ error: 'temporarily_unavailable', error_description: description, errorMessage: description });
}

const isBrowserForm = (contentType: string | undefined, accept: string | undefined) =>
  (contentType ?? '').startsWith('application/x-www-form-urlencoded') && (accept ?? '').includes('text/html');

/** A browser's navigation (its Accept names HTML before JSON), not a script's call. */
const prefersHtml = (accept: string | undefined) => /^\s*text\/html\b/.test(accept ?? '');

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const htmlPage = (title: string, text: string) =>
  `<!doctype html><html lang="en"><meta charset="utf-8"><title>${escapeHtml(title)}</title><p>${escapeHtml(text)}</p></html>`;
