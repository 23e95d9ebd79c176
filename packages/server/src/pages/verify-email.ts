import type { FastifyRequest } from 'fastify';
import { ACTION_TOKEN_LIFETIME_S } from '../authentication/index.js';
import type { PagesContext } from './context.js';
import { baseUrl, requestInfo } from '../http/index.js';
import type { Realm, User } from '../model/types.js';
import { mailTranslator, sendInBackground, verifyEmailMail } from './emails.js';

export const actionTokenUrl = (request: FastifyRequest, ctx: PagesContext, realm: Realm, token: string) =>
  `${baseUrl(request, ctx.config.hostname)}/realms/${encodeURIComponent(realm.name)}/login-actions/action-token?key=${encodeURIComponent(token)}`;

/** Mails a single-use link that confirms `email` for the user (the current address, or a new one being set). */
export async function sendVerification(
  ctx: PagesContext,
  request: FastifyRequest,
  realm: Realm,
  user: User,
  email: string,
  clientId: string | null,
  lifetimeSeconds = realm.actionTokenGeneratedByUserLifespan ?? ACTION_TOKEN_LIFETIME_S,
  /** An administrator's `redirect_uri` (already checked against the client): where the page leads afterwards. */
  redirect: string | null = null,
): Promise<void> {
  const token = await ctx.actionTokens.issue(realm, 'verify-email', user.id, { email, ...(clientId ? { azp: clientId } : {}), ...(redirect ? { redirect } : {}) }, lifetimeSeconds);
  sendInBackground(ctx, realm, mailTranslator(ctx, realm, user, request).then((t) => verifyEmailMail(t, realm, email, actionTokenUrl(request, ctx, realm, token), lifetimeSeconds)));
  await ctx.events.user(realm, { type: 'SEND_VERIFY_EMAIL', clientId, userId: user.id, details: { email, username: user.username }, request: requestInfo(request) });
}
