import type { PagesContext } from './context.js';
import type { Realm, User } from '../model/types.js';
import type { Mail } from '../mail/index.js';
import type { FastifyRequest } from 'fastify';
import { readCookie } from '../http/index.js';
import { selectLocale, type LocaleHints, type Translator } from './i18n.js';
import { LOCALE_COOKIE, type MailTemplates } from './render.js';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A link's lifetime in the largest whole unit that states it: "12 hours", "5 minutes", "1 second" (in the mail's language). */
export function lifetimeText(t: Translator, seconds: number): string {
  const units: [string, number][] = [['days', 86_400], ['hours', 3_600], ['minutes', 60], ['seconds', 1]];
  const [unit, size] = units.find(([, size]) => seconds >= size && seconds % size === 0) ?? units.find(([, size]) => seconds >= size) ?? units[3];
  const count = Math.max(1, Math.floor(seconds / size));
  return t.msg(`linkExpirationFormatter.timePeriodUnit.${unit}`, count);
}

/** The texts of an e-mail's locale, with the realm's e-mail theme's bodies when it has any. */
export type MailTranslator = Translator & { templates?: MailTemplates };

/** One e-mail: its template name (an e-mail theme's `templates/html/<name>.eta`, `templates/text/<name>.eta`) and what those templates read. */
interface MailTemplate {
  name: string;
  data: Record<string, unknown>;
}

/**
 * Subject, introduction and link label are message keys; the texts come from the mail's locale (realm overrides
 * first). The realm's e-mail theme may give the HTML and text bodies (each on its own); the subject is always the
 * message's, so a theme changes it through its messages as Keycloak's do.
 */
function mail(t: MailTranslator, realm: Realm, to: string, subject: string, intro: string, link: string, linkLabel: string, lifetimeSeconds: number, template: MailTemplate): Mail {
  const title = realm.displayName || realm.name;
  const lifetime = lifetimeText(t, lifetimeSeconds);
  const expiry = t.msg('linkExpiration', lifetime);
  const dir = t.dir === 'rtl' ? ' dir="rtl"' : '';
  const data = {
    ...template.data,
    msg: t.msg,
    locale: t.locale,
    dir: t.dir,
    realmName: realm.name,
    realmTitle: title,
    subject,
    intro,
    link,
    linkLabel,
    linkExpiration: expiry,
    linkExpirationText: lifetime,
    linkExpirationSeconds: lifetimeSeconds,
  };
  return {
    to,
    subject: `${subject} · ${title}`,
    text: t.templates?.render('text', template.name, data) ?? `${intro}\n\n${link}\n\n${expiry}\n`,
    html:
      t.templates?.render('html', template.name, data) ??
      `<div lang="${escapeHtml(t.locale)}"${dir}><p>${escapeHtml(intro)}</p><p><a href="${escapeHtml(link)}">${escapeHtml(linkLabel)}</a></p><p>${escapeHtml(expiry)}</p></div>`,
  };
}

/** What an e-mail template may read of the user it goes to. */
const userData = (user: Pick<User, 'username' | 'email' | 'firstName' | 'lastName'>) => ({ username: user.username, email: user.email, firstName: user.firstName, lastName: user.lastName });

/**
 * The texts of an e-mail to this user: in their `locale`; without one, in the language the request's page would be
 * in (the locale cookie, Accept-Language) when the user asked for the mail on a page; else the realm default.
 */
export async function mailTranslator(ctx: Pick<PagesContext, 'pages'>, realm: Realm, user: Pick<User, 'attributes'>, request?: FastifyRequest): Promise<MailTranslator> {
  const hints: LocaleHints = { userLocale: user.attributes.locale?.[0] };
  if (request) Object.assign(hints, { cookie: readCookie(request, LOCALE_COOKIE) ?? undefined, acceptLanguage: request.headers['accept-language'] });
  const t = await ctx.pages.translator(realm, selectLocale(realm, hints), 'email');
  return { ...t, templates: ctx.pages.mailTemplates(realm) };
}

/**
 * Sends in the background: SMTP is slow and may fail, and neither may hold up or fail the page.
 * A failure is logged and counted; the promise (never rejected) says whether SMTP took the mail.
 */
export function sendInBackground(ctx: PagesContext, realm: Realm, message: Mail | Promise<Mail>): Promise<boolean> {
  return Promise.resolve(message)
    .then((m) => ctx.mailer.send(realm, m))
    .then(
      () => true,
      (error: unknown) => {
        ctx.mailFailures.inc({ realm: realm.name });
        ctx.logger.error({ err: error, realm: realm.name }, 'sending e-mail failed');
        return false;
      },
    );
}

export const resetPasswordMail = (t: MailTranslator, realm: Realm, user: User, link: string, lifetimeSeconds = realm.actionTokenGeneratedByUserLifespan) =>
  mail(t, realm, user.email!, t.msg('passwordResetSubject'), t.msg('passwordResetBody', user.username), link, t.msg('passwordResetLink'), lifetimeSeconds, { name: 'password-reset', data: { user: userData(user) } });

export const verifyEmailMail = (t: MailTranslator, realm: Realm, to: string, link: string, lifetimeSeconds = 300) =>
  mail(t, realm, to, t.msg('emailVerificationSubject'), t.msg('emailVerificationBody'), link, t.msg('emailVerificationLink'), lifetimeSeconds, { name: 'email-verification', data: { email: to } });

/** Keycloak's names of the required actions, as the e-mail lists them (`requiredAction.{alias}` keys). */
const actionName = (t: Translator, alias: string) => {
  const text = t.msg(`requiredAction.${alias}`);
  return text === `requiredAction.${alias}` ? alias : text;
};

export const executeActionsMail = (t: MailTranslator, realm: Realm, user: User, link: string, actions: readonly string[], lifetimeSeconds: number) =>
  mail(
    t,
    realm,
    user.email!,
    t.msg('executeActionsSubject'),
    t.msg('executeActionsBody', user.username, actions.map((a) => actionName(t, a)).join(', ')),
    link,
    t.msg('executeActionsLink'),
    lifetimeSeconds,
    { name: 'execute-actions', data: { user: userData(user), requiredActions: actions.map((a) => actionName(t, a)) } },
  );

/** An organization's invitation (Keycloak's orgInvite e-mail): addressed by name when the administrator gave one. */
export const orgInviteMail = (t: MailTranslator, realm: Realm, to: string, names: { firstName: string | null; lastName: string | null }, organization: string, link: string, lifetimeSeconds: number) =>
  mail(
    t,
    realm,
    to,
    t.msg('orgInviteSubject', organization),
    names.firstName && names.lastName ? t.msg('orgInviteBodyPersonalized', names.firstName, names.lastName, organization) : t.msg('orgInviteBody', organization),
    link,
    t.msg('orgInviteLink', organization),
    lifetimeSeconds,
    { name: 'org-invite', data: { email: to, firstName: names.firstName, lastName: names.lastName, organization } },
  );
/** idp-email-verification's mail to the existing account: link the upstream account `identity` of `provider` to it. */
export const identityProviderLinkMail = (t: MailTranslator, realm: Realm, user: User, provider: string, identity: string, link: string, lifetimeSeconds: number) =>
  mail(
    t,
    realm,
    user.email!,
    t.msg('identityProviderLinkSubject', provider),
    t.msg('identityProviderLinkBody', provider, realm.displayName || realm.name, identity),
    link,
    t.msg('identityProviderLinkLink'),
    lifetimeSeconds,
    { name: 'identity-provider-link', data: { user: userData(user), identityProvider: provider, identityUsername: identity } },
  );
