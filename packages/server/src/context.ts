import type { PagesContext } from './pages/context.js';
import type { ProtocolContext } from './protocol/context.js';

/**
 * The services the composition root builds once and hands to every route module. Each layer below names the part it
 * reads (services/, authentication/, protocol/, pages/ context.ts); this is all of them, as admin/ and server.ts see it.
 */
export interface ServerContext extends ProtocolContext, PagesContext {
  pages: PagesContext['pages'];
}
