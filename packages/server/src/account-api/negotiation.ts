import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance } from 'fastify';

/**
 * `/realms/{realm}/account` is the account page for a browser and the account REST API for a script, as in
 * Keycloak: a request that accepts `application/json` or sends it is the API's. Fastify routes the two by this
 * constraint; a route without it (the page) takes every other request.
 */
const STRATEGY = 'representation';

export const JSON_REPRESENTATION = { [STRATEGY]: 'json' } as const;

export function wantsJson(request: { headers: IncomingHttpHeaders }): boolean {
  const accept = request.headers.accept ?? '';
  const contentType = request.headers['content-type'] ?? '';
  return /(^|,)\s*application\/json\s*(;|,|$)/i.test(accept) || /^application\/json\s*(;|$)/i.test(contentType);
}

export function installRepresentationConstraint(app: FastifyInstance): void {
  app.addConstraintStrategy({
    name: STRATEGY,
    storage: () => {
      const routes = new Map<string, unknown>();
      return {
        get: (value: string) => (routes.get(value) ?? null) as never,
        set: (value: string, store: unknown) => void routes.set(value, store),
      };
    },
    deriveConstraint: (request: { headers: IncomingHttpHeaders }) => (wantsJson(request) ? 'json' : 'other'),
    mustMatchWhenDerived: false,
  });
}
