import type { FastifyInstance } from 'fastify';
import type { PagesContext } from './context.js';
import { accountRoutes } from './account.js';
import { loginRoutes } from './login.js';
import { registrationRoutes } from './registration.js';
import { resetRoutes } from './reset.js';
import { messagesRoute } from './messages-route.js';
import { themeResourceRoutes } from './theme-resources.js';

export { pageForms, showPage } from './pages.js';
export { firstPage } from './broker.js';
export { PageRenderer } from './render.js';
export { Themes, ThemeError } from './themes.js';

export function pageRoutes(app: FastifyInstance, ctx: PagesContext): void {
  const followLinkMail = loginRoutes(app, ctx);
  registrationRoutes(app, ctx);
  resetRoutes(app, ctx, followLinkMail);
  messagesRoute(app, ctx);
  themeResourceRoutes(app, ctx);
  accountRoutes(app, ctx);
}
