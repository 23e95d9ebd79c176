import type { FastifyInstance } from 'fastify';
import { metricsAnswer, type MetricsAccess } from './metrics-endpoint.js';
import type { MetricsRegistry } from './metrics.js';

/** Named checks behind /health/ready; each throws when its dependency cannot serve. */
export type ReadinessChecks = Record<string, () => Promise<unknown>>;

/** Liveness, readiness and Prometheus metrics: what an orchestrator and a scraper call. */
export function operationsRoutes(app: FastifyInstance, metrics: MetricsRegistry, readiness: ReadinessChecks, metricsAccess: MetricsAccess = { onMainPort: true, authorized: () => true }): void {
  app.addHook('onResponse', async (request, reply) => {
    // The route pattern, never the raw URL: a scanner must not be able to grow the label set.
    metrics.httpRequests.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });
  app.get('/health/live', async () => ({ status: 'UP' }));
  app.get('/health/ready', async (_request, reply) => {
    const checks = await Promise.all(
      Object.entries(readiness).map(async ([name, check]) => {
        try {
          await check();
          return { name, status: 'UP' };
        } catch {
          return { name, status: 'DOWN' };
        }
      }),
    );
    const up = checks.every((c) => c.status === 'UP');
    return reply.code(up ? 200 : 503).send({ status: up ? 'UP' : 'DOWN', checks });
  });
  // Not routed at all when metrics have a port of their own: the public port answers 404.
  if (metricsAccess.onMainPort) {
    app.get('/metrics', async (request, reply) => {
      const { status, contentType, body } = await metricsAnswer(metrics, metricsAccess, request.headers.authorization);
      if (status === 401) reply.header('www-authenticate', 'Bearer');
      return reply.code(status).type(contentType).send(body);
    });
  }
}
