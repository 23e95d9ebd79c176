import type { FastifyInstance, FastifyReply } from 'fastify';
import { requestScope, type RequestScope } from '../store/index.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Aborted when the client has gone or the request ran past requestTimeoutMs (store/request-scope.ts). */
    scope?: RequestScope;
  }
}

/**
 * Bounds every request: past `timeoutMs` it is answered 503 with Retry-After (whatever it still waits on), and
 * its scope aborts, as it does when the client closes the connection before the answer. Work under an aborted
 * scope gets no database connection and commits nothing (storage/availability.ts). 0: no time limit, the
 * client's departure still counts.
 */
export function installRequestTimeout(app: FastifyInstance, timeoutMs: number): void {
  const enter = (request: { scope?: RequestScope }, done: () => void) => (request.scope ? requestScope.run(request.scope, done) : done());
  app.addHook('onRequest', (request, reply, done) => {
    const controller = new AbortController();
    request.scope = { signal: controller.signal };
    const timer = timeoutMs > 0 ? setTimeout(() => timedOut(controller, reply, timeoutMs), timeoutMs) : undefined;
    timer?.unref();
    reply.raw.once('close', () => {
      clearTimeout(timer);
      if (!reply.raw.writableFinished) controller.abort('client gone');
    });
    enter(request, done);
  });
  // Body parsing runs outside the scope entered at onRequest (the stream's events): enter it again for the handler.
  app.addHook('preHandler', (request, _reply, done) => enter(request, done));
}

function timedOut(controller: AbortController, reply: FastifyReply, timeoutMs: number): void {
  controller.abort('timed out');
  if (reply.sent) return;
  const description = `The request took longer than ${timeoutMs} ms; try again shortly`;
  void reply
    .code(503)
    .headers({ 'retry-after': '1', 'cache-control': 'no-store', connection: 'close' })
    .send({ error: 'temporarily_unavailable', error_description: description, errorMessage: description });
}
