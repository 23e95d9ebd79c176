import type { AuthenticationContext } from '../authentication/context.js';
import type { PageRenderer } from './render.js';

/** The server's context as pages/ reads it: what authentication/ reads, and the renderer. */
export interface PagesContext extends AuthenticationContext {
  pages: PageRenderer;
}
