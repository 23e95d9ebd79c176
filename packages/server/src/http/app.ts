import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import formbody from '@fastify/formbody';
import { requestLoggerFactory, type ServerLogger } from '../observability/index.js';
import { installCors } from './cors.js';
import { installErrorHandling } from './errors.js';
import { installRequestTimeout } from './request-timeout.js';

import { FORM_BODY_LIMIT, JSON_BODY_LIMIT } from './limits.js';

export { FORM_BODY_LIMIT, JSON_BODY_LIMIT, REALM_FILE_LIMIT, REALM_IMPORT_BODY_LIMIT } from './limits.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route also takes a bare string body sent as application/json (what Keycloak's admin client sends). */
    rawJsonString?: boolean;
    /** An admin route whose body is text/plain (Keycloak's credential label): the admin API's JSON-only rule allows it. */
    textPlainBody?: boolean;
    /** An admin route that also takes a multipart/form-data body (a client's key file upload). */
    multipartBody?: boolean;
    /** An admin route that takes Keycloak's form parameters: application/x-www-form-urlencoded or multipart/form-data (an invitation). */
    formBody?: boolean;
  }
}

/** The Fastify instance with the server's limits, parsers and error mapping; routes are added by the caller. */
export async function createHttpApp(options: { logger: ServerLogger; trustedProxies: string[]; requestTimeoutMs?: number }): Promise<FastifyInstance> {
  // Fastify's instance type carries the logger's type; routes only need the base logger interface.
  const app = Fastify({
    loggerInstance: options.logger as FastifyBaseLogger,
    // Per-request lines are noise at this volume; request metrics are at /metrics instead.
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: (logger, bindings, options) => requestLoggerFactory(logger as ServerLogger, bindings, options) as FastifyBaseLogger,
    bodyLimit: JSON_BODY_LIMIT,
    trustProxy: options.trustedProxies.length ? options.trustedProxies : false,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    return503OnClosing: true,
    requestIdHeader: false,
  });
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: JSON_BODY_LIMIT }, (request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      if (request.routeOptions.config.rawJsonString) return done(null, text);
      const error = Object.assign(new Error('Request body is not valid JSON'), { statusCode: 400, code: 'FST_ERR_CTP_INVALID_JSON_BODY' });
      done(error, undefined);
    }
  });
  await app.register(formbody, { bodyLimit: FORM_BODY_LIMIT });
  installErrorHandling(app);
  installRequestTimeout(app, options.requestTimeoutMs ?? 0);
  installCors(app);
  return app;
}
