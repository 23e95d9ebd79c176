import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance } from 'fastify';

/**
 * `/realms/{realm}/account` and the paths below it are the account console for a browser and the account REST API
 * for a script, as in Keycloak: a request that accepts `application/json` or sends it is the API's (`json`), a
 * browser's navigation (accepting `text/html`) the console's (`html`), anything else `other`. Fastify routes by
 * this constraint; a route without it takes the requests no constrained route of its path takes (the API's routes
 * answer a script that names no type, as before the console; where the console has a page of the same path,
 * /account/applications, a browser gets the page).
 */
const STRATEGY = 'representation';

export const JSON_REPRESENTATION = { [STRATEGY]: 'json' } as const;
export const HTML_REPRESENTATION = { [STRATEGY]: 'html' } as const;
export const OTHER_REPRESENTATION = { [STRATEGY]: 'other' } as const;

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
    deriveConstraint: (request: { headers: IncomingHttpHeaders }) => (wantsJson(request) ? 'json' : /(^|,)\s*text\/html\s*(;|,|$)/i.test(request.headers.accept ?? '') ? 'html' : 'other'),
    mustMatchWhenDerived: false,
  });
}
