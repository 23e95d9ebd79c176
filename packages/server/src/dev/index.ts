import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { demoClientRoutes, type DemoLinks } from './welcome.js';
import { webhookInboxRoutes } from './webhook-inbox.js';

export type { DemoLinks } from './welcome.js';

export interface DevTools {
  /** The links the console prints for the demo realm; null when there is no demo realm. */
  demoLinks(base: string): Promise<DemoLinks | null>;
}

/**
 * Development mode only (the composition root mounts nothing of this in production): `/dev/webhooks`, a
 * webhook inbox the demo client's `api.url` points at, and `/dev/welcome`, where the demo client lands.
 */
export function devRoutes(app: FastifyInstance, ctx: ServerContext): DevTools {
  webhookInboxRoutes(app);
  return { demoLinks: demoClientRoutes(app, ctx) };
}
