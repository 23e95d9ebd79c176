import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServerContext } from '../context.js';
import { baseUrl } from '../http/index.js';
import { rawPath, sendAsset, serveUi, type PageHead } from '../http/ui-bundle.js';
import { ACCOUNT_CONSOLE } from '../model/defaults.js';
import { badRequest, notFound } from '../model/errors.js';
import { absoluteClientUrl, redirectUriAllowed } from '../model/redirect-uri.js';
import type { Realm } from '../model/types.js';
import { sendResource } from '../pages/theme-resources.js';
import { RESOURCE_TYPES, themeMessages, themeProperties, type Theme } from '../pages/themes.js';
import { HTML_REPRESENTATION, OTHER_REPRESENTATION } from './negotiation.js';
import { localePattern } from '../representations/localization.js';
import { DELETE_ACCOUNT } from '../required-actions/index.js';
import { inPriorityOrder, updateEmailActionEnabled } from '../services/index.js';

/**
 * Keycloak's account console (the npm package @keycloak/keycloak-account-ui, built by packages/account-console into
 * its dist/ folder, never committed): the page at /realms/{realm}/account/ and every route of the console below it
 * (a browser's request; a script's, asking for JSON, is the account REST API's), with the environment Keycloak
 * injects as JSON; its hashed assets under /resources/account-console/; its messages at
 * /resources/{realm}/account/{locale}. A realm whose `accountTheme` is a theme of the theme directory gets what
 * Keycloak's account theme (one whose parent is keycloak.v3) may change: see accountTheme() below. The console signs in through the realm's public `account-console` client
 * (PKCE S256, redirects only below the realm's /account/) with keycloak-js and calls the account REST API with the
 * token.
 */

/** Vite's `base` in packages/account-console/build.ts. */
export const ACCOUNT_CONSOLE_RESOURCES = '/resources/account-console';
const DIST = fileURLToPath(new URL('../../../account-console/dist/', import.meta.url));

/** The console's pages that share their path with an API resource: the page for a browser's navigation only. */
const SHARED_PATHS = ['applications', 'groups', 'organizations'];

const accountPath = (realm: Realm) => `/realms/${encodeURIComponent(realm.name)}/account/`;

/**
 * Keycloak's `referrer` / `referrer_uri` (AccountConsole.getReferrer): a client of the realm (enabled or not, as
 * Keycloak) named by its name, else its clientId; the link is `referrer_uri` when the client may redirect there (no
 * other when it may not), else, without one, the client's base URL made absolute against its root URL. A URI that
 * would run script is never a link (Keycloak refuses such redirect URIs when a client is saved; a realm file may
 * still hold one here).
 */
async function referrerOf(ctx: ServerContext, realm: Realm, query: Record<string, unknown>, base: string): Promise<{ referrerName?: string; referrerUrl?: string }> {
  const clientId = typeof query.referrer === 'string' ? query.referrer.slice(0, 255) : '';
  const client = clientId ? await ctx.storage.clients.byClientId(realm.id, clientId) : null;
  if (!client) return {};
  const asked = typeof query.referrer_uri === 'string' ? query.referrer_uri.slice(0, 2048) : null;
  let url: string | null = null;
  if (asked !== null) url = redirectUriAllowed(client, asked, base) ? asked : null;
  else if (client.baseUrl) url = absoluteClientUrl(client, client.baseUrl, base);
  if (!url || /^\s*(javascript|data|vbscript):/i.test(url)) return {};
  return { referrerName: client.name?.trim() ? client.name : client.clientId, referrerUrl: url };
}

/**
 * Where a theme's resources are for the console: Keycloak's resourceUrl of the theme (`/resources/{version}/account/{theme}`),
 * here below the console's own resources. The console reads its logo, menu (`content.json`), favicon and passkey icons
 * there; what the theme lacks comes from the console's build, as a Keycloak theme inherits keycloak.v3's.
 */
const themeResourceUrl = (theme: Theme) => `${ACCOUNT_CONSOLE_RESOURCES}/themes/${encodeURIComponent(theme.name)}`;

/** A theme.properties list (`styles=css/a.css css/b.css`) as paths below the theme's resources. */
const listed = (value: string | undefined) => (value ?? '').split(/\s+/).filter(Boolean);

/**
 * The realm's account theme as Keycloak's account console applies it (its index.ftl): `styles` and `scripts` after
 * the console's own, `favIcon`/`favIconType`, `title`, `description`, `logo` and `logoUrl` from its theme.properties
 * (a parent's where it has none), its resources at its own resourceUrl, its messages over the console's. A name the
 * theme directory lacks (or a built-in name) is the built-in theme, as Keycloak falls back to keycloak.v3.
 */
function accountTheme(ctx: ServerContext, realm: Realm): { resourceUrl: string; logo: string; logoUrl: string; head?: PageHead } {
  const theme = ctx.pages.theme(realm, 'account');
  if (!theme) return { resourceUrl: ACCOUNT_CONSOLE_RESOURCES, logo: '', logoUrl: '' };
  const properties = themeProperties(theme);
  const resourceUrl = themeResourceUrl(theme);
  return {
    resourceUrl,
    logo: properties.logo ?? '',
    logoUrl: properties.logoUrl ?? '',
    head: {
      title: properties.title,
      description: properties.description,
      // Keycloak writes `${resourceUrl}${favIcon}`: the property begins with a slash.
      icon: { href: `${resourceUrl}${properties.favIcon ?? '/favicon.svg'}`, type: properties.favIconType ?? 'image/svg+xml' },
      styles: listed(properties.styles).map((style) => `${resourceUrl}/${style}`),
      scripts: listed(properties.scripts).map((script) => `${resourceUrl}/${script}`),
    },
  };
}

/** The environment Keycloak's account theme injects into the console's page (its index.ftl), for `realm`. */
export async function accountConsoleEnvironment(ctx: ServerContext, realm: Realm, serverBaseUrl: string, query: Record<string, unknown>): Promise<Record<string, unknown>> {
  const { resourceUrl, logo, logoUrl } = accountTheme(ctx, realm);
  const providers = (await ctx.storage.federation.cachedProviders(realm.id)).filter((p) => p.enabled);
  const locale = typeof query.kc_locale === 'string' && localePattern.test(query.kc_locale) ? query.kc_locale : 'en';
  return {
    serverBaseUrl,
    authUrl: serverBaseUrl,
    authServerUrl: serverBaseUrl,
    realm: realm.name,
    clientId: ACCOUNT_CONSOLE,
    resourceUrl,
    logo,
    logoUrl,
    darkMode: false,
    baseUrl: `${serverBaseUrl}${accountPath(realm)}`,
    locale,
    referrerName: '',
    referrerUrl: '',
    ...(await referrerOf(ctx, realm, query, serverBaseUrl)),
    features: {
      isRegistrationEmailAsUsername: false,
      isEditUserNameAllowed: false,
      isInternationalizationEnabled: false,
      isLinkedAccountsEnabled: providers.length > 0,
      isMyResourcesEnabled: false,
      isViewOrganizationsEnabled: realm.organizationsEnabled,
      // As Keycloak's: the realm's delete_account action is enabled (the user's delete-account role is checked by the action).
      deleteAccountAllowed: (await inPriorityOrder(ctx.storage, realm.id, [DELETE_ACCOUNT])).length > 0,
      // Keycloak 26.7's UPDATE_EMAIL feature is on by default; the action is the realm's (UpdateEmail.isEnabled).
      updateEmailFeatureEnabled: true,
      updateEmailActionEnabled: await updateEmailActionEnabled(ctx.storage, realm.id),
      isViewApplicationsEnabled: true,
      isViewGroupsEnabled: true,
      isOid4VciEnabled: false,
    },
    scope: '',
  };
}

export function accountConsoleRoutes(app: FastifyInstance, ctx: ServerContext, dir = DIST): void {
  const ui = serveUi(app, { dir, resources: ACCOUNT_CONSOLE_RESOURCES, label: 'account console', buildCommand: 'npm run build:account-console' });

  const page = async (request: FastifyRequest<{ Params: { realm: string } }>, reply: FastifyReply, exact: boolean) => {
    const realm = request.params.realm.length <= 255 ? await ctx.storage.realms.cachedByName(request.params.realm) : null;
    if (!realm || !realm.enabled) throw notFound('Realm not found.');
    // The console's router is rooted at .../account/: the address without the slash is sent there, query kept.
    if (exact && !rawPath(request).endsWith('/')) return reply.redirect(`${accountPath(realm)}${request.url.slice(rawPath(request).length)}`);
    const environment = await accountConsoleEnvironment(ctx, realm, baseUrl(request, ctx.config.hostname), request.query as Record<string, unknown>);
    return ui.sendPage(reply, () => environment, accountTheme(ctx, realm).head);
  };
  for (const constraints of [HTML_REPRESENTATION, OTHER_REPRESENTATION]) {
    app.get<{ Params: { realm: string } }>('/realms/:realm/account', { constraints }, (request, reply) => page(request, reply, true));
    app.get<{ Params: { realm: string } }>('/realms/:realm/account/*', { constraints }, (request, reply) => page(request, reply, false));
  }
  for (const path of SHARED_PATHS) app.get<{ Params: { realm: string } }>(`/realms/:realm/account/${path}`, { constraints: HTML_REPRESENTATION }, (request, reply) => page(request, reply, false));

  /** The console's messages as Keycloak answers them ([{ key, value }], sorted by key), as the admin console's. */
  app.get<{ Params: { realm: string; locale: string } }>('/resources/:realm/account/:locale', async (request, reply) => {
    const realm = request.params.realm.length <= 255 ? await ctx.storage.realms.cachedByName(request.params.realm) : null;
    if (!realm) throw notFound('Realm not found.');
    if (!localePattern.test(request.params.locale)) throw badRequest('Invalid locale', 'locale');
    const theme = ctx.pages.theme(realm, 'account');
    const locale = request.params.locale;
    const language = locale.split(/[-_]/)[0];
    const themeLocale = themeMessages(theme, locale) ? locale : language;
    const texts = themeMessages(theme, themeLocale);
    // The realm's overrides (Realm settings → Localization) over the theme's, as Keycloak's theme resource merges them:
    // the language's, then the exact locale's. Read from the config cache, so a change shows at once on every node.
    const overrides = await ctx.storage.localization.cachedAll(realm.id);
    const realmTexts = { ...(language !== locale ? overrides[language] : undefined), ...overrides[locale] };
    if (Object.keys(realmTexts).length) return ui.sendMessages(request, reply, locale, { texts: { ...texts, ...realmTexts } });
    return ui.sendMessages(request, reply, locale, theme && texts ? { name: `${theme.name}\0${themeLocale}`, texts } : undefined);
  });

  /**
   * A theme's resources for the console (its resourceUrl): the theme's file (its own, else a parent's), looked up by
   * path in the index the theme directory was read into (never joined to a folder), else the console's own file of
   * that path (logo, menu, icons), as a Keycloak theme inherits keycloak.v3's resources.
   */
  app.get<{ Params: { theme: string; '*': string } }>(`${ACCOUNT_CONSOLE_RESOURCES}/themes/:theme/*`, async (request, reply) => {
    const path = request.params['*'];
    const theme = path.length <= 1000 ? ctx.pages.themes.get('account', request.params.theme) : undefined;
    if (!theme) throw notFound('Resource not found');
    const resource = ctx.pages.themeResourceFile(theme, path);
    if (resource) return sendResource(request, reply, resource, RESOURCE_TYPES[extname(resource.file).toLowerCase()]);
    const asset = ui.current()?.assets.get(path);
    if (!asset) throw notFound('Resource not found');
    return sendAsset(request, reply, asset, path.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'public, max-age=3600');
  });
}
