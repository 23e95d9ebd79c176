import type { FastifyInstance } from 'fastify';
import type { PagesContext } from './context.js';
import { effectiveMessages, LOCALE_TAG } from './i18n.js';
import { showPage } from './pages.js';

/**
 * Keycloak's theme messages resource for the login theme (`/resources/{realm}/login/{locale}`, what the console's
 * Localization tab reads as the effective message bundle): the bundles' texts for the locale with the realm's login
 * theme's and then the realm's overrides over them, `[{ key, value }]` sorted by key. A locale that is not one is a 400; a locale without a
 * bundle answers English (the fallback every page uses).
 */
export function messagesRoute(app: FastifyInstance, ctx: PagesContext): void {
  app.get<{ Params: { realm: string; locale: string } }>('/resources/:realm/login/:locale', async (request, reply) => {
    const realm = request.params.realm.length <= 255 ? await ctx.storage.realms.cachedByName(request.params.realm) : null;
    if (!realm) return showPage.error(ctx, reply, null, 'Realm does not exist.', 404);
    const { locale } = request.params;
    if (!LOCALE_TAG.test(locale)) return reply.code(400).send({ error: 'invalid_request', error_description: 'Invalid locale' });
    const texts = await ctx.storage.localization.cachedAll(realm.id);
    return reply.header('cache-control', 'no-cache').send(effectiveMessages(locale, texts, ctx.pages.themeTexts(realm, 'login')));
  });
}
