import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { notFound, unsupportedMediaType } from '../model/errors.js';
import { localizationKey, localizationText, parseLocalizationTexts } from '../representations/localization.js';
import { localeOf, targetRealm, type AdminRequest } from './routing.js';
import { realmLocales } from '../model/locales.js';

type Params = { realm: string; locale: string; key: string };

/** A text's body is at most 16384 characters; in UTF-8 that is at most four times as many bytes. */
const TEXT_BODY_LIMIT = 16384 * 4;

/**
 * Keycloak's realm localization texts (RealmLocalizationResource), the console's Realm settings → Localization →
 * Realm overrides: the locales that have texts, a locale's texts, one text (text/plain), adding or replacing one
 * (`PUT`, text/plain) or several (`POST`, a JSON object), deleting one or a whole locale (404 when there was
 * nothing). Reading needs any administrative role on the realm, changing manage-realm, as in Keycloak. The pages and
 * e-mails read them over their message bundles (pages/i18n.ts).
 */
export function localizationRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const base = '/realms/:realm/localization';
  const keyOf = (request: AdminRequest<Params>) => localizationKey(request.params.key, 'key');

  app.get(base, async (request: AdminRequest) => ctx.storage.localization.locales((await targetRealm(ctx, request)).id));

  // `useRealmDefaultLocaleFallback=true` adds the realm's default locale's texts under the locale's own.
  app.get(`${base}/:locale`, async (request: AdminRequest<Params>) => {
    const realm = await targetRealm(ctx, request);
    const locale = localeOf(request.params.locale);
    const own = await ctx.storage.localization.texts(realm.id, locale);
    const { defaultLocale } = realmLocales(realm);
    if (request.query?.useRealmDefaultLocaleFallback !== 'true' || defaultLocale === locale) return own;
    return { ...(await ctx.storage.localization.texts(realm.id, defaultLocale)), ...own };
  });

  app.get(`${base}/:locale/:key`, async (request: AdminRequest<Params>, reply) => {
    const realm = await targetRealm(ctx, request);
    const texts = await ctx.storage.localization.texts(realm.id, localeOf(request.params.locale));
    const key = keyOf(request);
    if (!Object.hasOwn(texts, key)) throw notFound('Localization text not found');
    return reply.type('text/plain; charset=utf-8').send(texts[key]);
  });

  app.post(`${base}/:locale`, async (request: AdminRequest<Params>, reply) => {
    const realm = await targetRealm(ctx, request);
    const locale = localeOf(request.params.locale);
    await ctx.storage.localization.save(realm.id, locale, parseLocalizationTexts(request.body, 'localization'));
    return reply.code(204).send();
  });

  app.delete(`${base}/:locale`, async (request: AdminRequest<Params>, reply) => {
    const realm = await targetRealm(ctx, request);
    const locale = localeOf(request.params.locale);
    if (!(await ctx.storage.localization.deleteLocale(realm.id, locale))) throw notFound(`No localization texts for locale ${locale} found.`);
    return reply.code(204).send();
  });

  app.delete(`${base}/:locale/:key`, async (request: AdminRequest<Params>, reply) => {
    const realm = await targetRealm(ctx, request);
    if (!(await ctx.storage.localization.deleteText(realm.id, localeOf(request.params.locale), keyOf(request)))) throw notFound('Localization text not found');
    return reply.code(204).send();
  });

  // One text, sent as a bare text/plain body (Keycloak's route consumes only that); its parser lives in this scope.
  app.register(async (scoped) => {
    scoped.addContentTypeParser('text/plain', { parseAs: 'string', bodyLimit: TEXT_BODY_LIMIT }, (_request, body, done) => done(null, body));
    scoped.put(`${base}/:locale/:key`, { config: { textPlainBody: true } }, async (request: AdminRequest<Params>, reply) => {
      const realm = await targetRealm(ctx, request);
      const locale = localeOf(request.params.locale);
      const key = keyOf(request);
      if (!/^text\/plain\b/i.test(request.headers['content-type'] ?? '') || typeof request.body !== 'string') throw unsupportedMediaType('The text is sent as a text/plain body');
      await ctx.storage.localization.save(realm.id, locale, { [key]: localizationText(request.body, 'text') });
      return reply.code(204).send();
    });
  });
}
