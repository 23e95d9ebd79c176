import type { FastifyReply } from 'fastify';
import type { AuthSession } from '../authentication/index.js';
import type { PagesContext } from './context.js';
import type { Alternative, ExecutionStatus } from '../flows/index.js';
import { anotherWay } from './another-way.js';
import type { Realm, User } from '../model/types.js';
import { actionUrl } from './pages.js';
import type { FieldErrors } from './render.js';
import { authBinding, stepState, type StepClaims } from './step-pages.js';

/**
 * The page of `auth-password-form` for a user the flow knows already (Keycloak's login-password page): the password
 * alone, under the name the user signed in with. It is what "try another way" leads to when the password is one of
 * a level's alternatives (a passkey or the password after the username form); its sealed key carries where the
 * sign-in stands, as the code page's does, so the post answers the password step of the same run. A password step
 * the sign-in form answers (name and password together) never shows it.
 */

export const PASSWORD_PURPOSE = 'login-password';

/** Where a browser sign-in stands at a step page: the claims its key carries (the OTP and password pages). */
export const stepProgress = (
  auth: AuthSession,
  signIn: { user: User; done: Record<string, ExecutionStatus>; requiredActions: string[]; alternatives?: Alternative[]; env: { login?: string; passwordChecked?: boolean } },
): StepClaims => ({
  sub: signIn.user.id,
  azp: auth.clientId,
  auth: authBinding(auth),
  pending: null,
  done: signIn.done,
  setup: signIn.requiredActions,
  login: signIn.env.login,
  checked: signIn.env.passwordChecked,
  ways: signIn.alternatives,
});

/** The password page; `key`: the page shown again (its attempts go on counting), else a new one for `claims`. */
export async function passwordPage(
  ctx: PagesContext,
  reply: FastifyReply,
  realm: Realm,
  auth: AuthSession,
  user: User,
  claims: StepClaims,
  state: { key?: string; errors?: FieldErrors; status?: number; message?: { type: string; text: string } } = {},
): Promise<FastifyReply> {
  const key = state.key ?? (await stepState(ctx).seal(realm, PASSWORD_PURPOSE, claims));
  return ctx.pages.send(
    reply,
    realm,
    PASSWORD_PURPOSE,
    {
      action: actionUrl(realm, PASSWORD_PURPOSE),
      csrf: auth.csrf,
      key,
      username: claims.login ?? user.username,
      resetUrl: realm.resetPasswordAllowed ? actionUrl(realm, 'reset-credentials') : null,
      errors: state.errors ?? {},
      message: state.message,
      anotherWay: await anotherWay(ctx, realm, auth, claims),
    },
    state.status ?? 200,
  );
}
