import type { FastifyError, FastifyInstance } from 'fastify';
import { AppError, OAuthError } from '../model/errors.js';
import { TokenVerificationError } from '../protocol/openid-connect/tokens.js';

const fastifyErrors: Record<string, { status: number; message: string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, message: 'Request body is not valid JSON' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, message: 'Request body is empty' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, message: 'Request body is too large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, message: 'Unsupported content type' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, message: 'Content-Length does not match the body' },
  FST_ERR_BAD_URL: { status: 400, message: 'Malformed URL' },
  FST_ERR_ASYNC_CONSTRAINT: { status: 400, message: 'Malformed request' },
};

/** One place turns every thrown error into HTTP; nothing unexpected leaks a stack or message. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof OAuthError) {
      return reply
        .code(error.status)
        .headers({ 'cache-control': 'no-store', ...error.headers })
        .send({ error: error.error, error_description: error.description });
    }
    if (error instanceof TokenVerificationError) {
      return reply.code(401).send({ error: 'invalid_token', error_description: error.message });
    }
    if (error instanceof AppError) {
      // Keycloak's ErrorRepresentation; 401s keep its {"error": "HTTP 401 Unauthorized"} form.
      if (error.status === 401) return reply.code(401).send({ error: error.code, errorMessage: error.message });
      return reply.code(error.status).send({ errorMessage: error.message, ...(error.field ? { field: error.field } : {}) });
    }
    const known = error.code ? fastifyErrors[error.code] : undefined;
    if (known && isBrowserForm(request.headers['content-type'], request.headers.accept)) {
      // A person submitted a page's form: answer with a page, not JSON.
      return reply
        .code(known.status)
        .type('text/html; charset=utf-8')
        .send(`<!doctype html><html lang="en"><meta charset="utf-8"><title>Request refused</title><p>${known.message}. Please go back and try again with less text.</p></html>`);
    }
    if (known) return reply.code(known.status).send({ errorMessage: known.message });
    if (error.validation) {
      return reply.code(400).send({ errorMessage: error.message });
    }
    if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
      return reply.code(error.statusCode).send({ errorMessage: error.message });
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply.code(500).send({ errorMessage: 'Internal server error' });
  });
  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send({ errorMessage: `No resource at ${request.method} ${request.url.split('?')[0]}` });
  });
}

const isBrowserForm = (contentType: string | undefined, accept: string | undefined) =>
  (contentType ?? '').startsWith('application/x-www-form-urlencoded') && (accept ?? '').includes('text/html');
