import type { PagesContext } from './context.js';
import type { Realm, User } from '../model/types.js';
import type { Mail } from '../mail/index.js';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A link's lifetime in the largest whole unit that states it: "12 hours", "5 minutes", "1 second". */
export function lifetimeText(seconds: number): string {
  const units: [string, number][] = [['day', 86_400], ['hour', 3_600], ['minute', 60], ['second', 1]];
  const [unit, size] = units.find(([, size]) => seconds >= size && seconds % size === 0) ?? units.find(([, size]) => seconds >= size) ?? units[3];
  const count = Math.max(1, Math.floor(seconds / size));
  return `${count} ${unit}${count === 1 ? '' : 's'}`;
}

function mail(realm: Realm, to: string, subject: string, intro: string, link: string, linkLabel: string, lifetimeSeconds = 300): Mail {
  const title = realm.displayName || realm.name;
  const expiry = `This link expires in ${lifetimeText(lifetimeSeconds)} and works once. If you did not ask for this, ignore this message.`;
  return {
    to,
    subject: `${subject} · ${title}`,
    text: `${intro}\n\n${link}\n\n${expiry}\n`,
    html: `<p>${escapeHtml(intro)}</p><p><a href="${escapeHtml(link)}">${escapeHtml(linkLabel)}</a></p><p>${expiry}</p>`,
  };
}

/**
 * Sends in the background: SMTP is slow and may fail, and neither may hold up or fail the page.
 * A failure is logged and counted.
 */
export function sendInBackground(ctx: PagesContext, realm: Realm, message: Mail): void {
  ctx.mailer.send(realm, message).catch((error: unknown) => {
    ctx.mailFailures.inc({ realm: realm.name });
    ctx.logger.error({ err: error, realm: realm.name }, 'sending e-mail failed');
  });
}

export const resetPasswordMail = (realm: Realm, user: User, link: string) =>
  mail(realm, user.email!, 'Reset your password', `Someone asked to reset the password of your account ${user.username}. Choose a new one here:`, link, 'Choose a new password');

export const verifyEmailMail = (realm: Realm, to: string, link: string, lifetimeSeconds = 300) =>
  mail(realm, to, 'Verify your e-mail address', 'Please confirm that this is your e-mail address:', link, 'Verify e-mail address', lifetimeSeconds);

/** Keycloak's names of the required actions, as the e-mail lists them. */
const ACTION_NAMES: Record<string, string> = { UPDATE_PASSWORD: 'Update password', VERIFY_EMAIL: 'Verify e-mail address', CONFIGURE_TOTP: 'Set up an authenticator app' };

export const executeActionsMail = (realm: Realm, user: User, link: string, actions: readonly string[], lifetimeSeconds: number) =>
  mail(
    realm,
    user.email!,
    'Update your account',
    `An administrator asks you to update your account ${user.username}: ${actions.map((a) => ACTION_NAMES[a] ?? a).join(', ')}.`,
    link,
    'Update your account',
    lifetimeSeconds,
  );
