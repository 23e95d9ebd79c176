import type { FastifyRequest } from 'fastify';
import { readCookie } from '../http/index.js';
import type { Realm, User } from '../model/types.js';
import type { PagesContext } from './context.js';
import { matchLocale, realmLocales } from './i18n.js';
import { addLocaleHints, LOCALE_COOKIE } from './render.js';

/**
 * Once a sign-in knows its user: the language the browser chose in the menu (`kc_locale` now, or the
 * KEYCLOAK_LOCALE cookie it left) becomes the user's `locale` attribute (so e-mails and the ID token's `locale`
 * claim follow it), and the pages after this one read the user's locale.
 */
export async function userLocaleAtSignIn(ctx: Pick<PagesContext, 'storage'>, request: FastifyRequest, realm: Realm, user: User): Promise<User> {
  const { enabled, supported } = realmLocales(realm);
  if (!enabled) return user;
  const query = (request.query ?? {}) as Record<string, unknown>;
  const chosen = matchLocale(typeof query.kc_locale === 'string' ? query.kc_locale : (readCookie(request, LOCALE_COOKIE) ?? undefined), supported);
  let current = user;
  if (chosen && chosen !== user.attributes.locale?.[0]) {
    current = { ...user, attributes: { ...user.attributes, locale: [chosen] } };
    await ctx.storage.users.update(current);
  }
  const locale = current.attributes.locale?.[0];
  if (locale) addLocaleHints(request, { userLocale: locale });
  return current;
}

/** The pages this request shows after the user is known follow the user's `locale` attribute (nothing is written). */
export function userLocaleHint(request: FastifyRequest, user: Pick<User, 'attributes'>): void {
  const locale = user.attributes.locale?.[0];
  if (locale) addLocaleHints(request, { userLocale: locale });
}
