import type { RequestInfo } from '@realmgate/spi';
import type { AuthenticationContext } from './context.js';
import { realmInfo } from '../events/index.js';
import type { Authenticator, FlowResult } from '../flows/index.js';
import { PasswordPolicyError, providerEventError, type RecordedEventError } from '../model/errors.js';
import type { Realm, User } from '../model/types.js';
import { createUser, setPassword, userSnapshot } from '../services/index.js';
import { isUniqueViolation } from '../storage/index.js';
import { signInCondition } from './sign-in.js';

/**
 * Keycloak's registration flow run by the one flow runner (flows/engine.ts) from the realm's bound
 * `registrationFlow`: `registration-page-form` is the form, one step whose form sub-flow (`registration form`)
 * holds the form actions (`registration-user-creation`, `registration-password-action`, a package's) and the
 * protectors (ext-pow). As Keycloak's FormAuthenticationFlow: the one post goes to every enabled form action's
 * validate (protectors first, whatever their place, as the pages always ran them), the errors of all of them are
 * shown together, and only when none refused is the user created, then each action's success() called in order.
 * A DISABLED action is not asked (an operator's copy may leave the password out: the user is created without
 * one, as Keycloak does). pages/registration.ts only shows the page and maps the result.
 */

type RegistrationContext = Pick<AuthenticationContext, 'storage' | 'events' | 'config' | 'providers' | 'flows'>;

export const REGISTRATION_FIELDS = ['firstName', 'lastName', 'email', 'username', 'password', 'password-confirm'] as const;
const MAX_PASSWORD = 1024;

export type RegistrationFailure =
  | { kind: 'protector'; status?: number; retryAfterSeconds?: number }
  /** Field errors (`status` 400), or a username taken between the check and the insert (409). */
  | { kind: 'fields'; errors: Record<string, string>; status: 400 | 409 };

export interface RegistrationEnv {
  ctx: RegistrationContext;
  realm: Realm;
  clientId: string;
  request: RequestInfo;
  /** The registration form's post; null when the page is only to be shown. */
  submitted: Record<string, string> | null;
  /** The REGISTER / REGISTER_ERROR event's details (what was typed, the redirect URI). */
  details: Record<string, string>;
}

type RegistrationStep = Authenticator<RegistrationEnv, 'registration', RegistrationFailure>;

/** A protector's verdict on the registration post; its refusal is recorded (REGISTER_ERROR) and returned. Null: passed, or not a protector. */
async function protectorRefusal(env: RegistrationEnv, id: string, config: Readonly<Record<string, string>>, form: Record<string, string>) {
  const protector = env.ctx.providers.formProtectors.get(id);
  if (!protector) return null;
  const { realm } = env;
  const decision = await protector.instance.verify({ realm: realmInfo(realm), form: 'registration', config, request: env.request, resourceBaseUrl: `/realms/${encodeURIComponent(realm.name)}/${id}`, submitted: form });
  if (decision.ok) return null;
  await env.ctx.events.user(realm, { type: 'REGISTER_ERROR', clientId: env.clientId, error: providerEventError(decision.error), details: { ...env.details, reason: decision.reason, protector: id }, request: env.request });
  return { status: 'failure' as const, failure: { kind: 'protector' as const, status: decision.status, retryAfterSeconds: decision.retryAfterSeconds } };
}

/** A protector an operator put beside the form (not inside it): it checks the same post before the form reads it. */
const besideTheForm = (id: string): RegistrationStep => ({
  id,
  requiresUser: false,
  authenticate: async ({ env, config }) => (env.submitted && (await protectorRefusal(env, id, config, env.submitted))) || { status: 'success' },
});

const registrationForm: RegistrationStep = {
  id: 'registration-page-form',
  requiresUser: false,
  async authenticate({ env, formSteps = [] }) {
    const form = env.submitted;
    if (!form) return { status: 'challenge', challenge: 'registration' };
    env.submitted = null;
    const { ctx, realm } = env;
    const registerError = (error: RecordedEventError) => ctx.events.user(realm, { type: 'REGISTER_ERROR', clientId: env.clientId, error, details: env.details, request: env.request });

    for (const { execution, config } of formSteps) {
      const refused = await protectorRefusal(env, execution.authenticator ?? '', config, form);
      if (refused) return refused;
    }

    const actions = formSteps.flatMap(({ execution, config }) => {
      const instance = ctx.flows.formAction(realm, execution.authenticator ?? '');
      return instance ? [{ instance, config }] : [];
    });
    const errors: Record<string, string> = {};
    let firstError: RecordedEventError | null = null;
    const actionContext = { realm: realmInfo(realm), clientId: env.clientId, form, request: env.request };
    for (const action of actions) {
      const result = await action.instance.validate({ ...actionContext, config: action.config });
      if (result.ok) continue;
      firstError ??= providerEventError(result.error);
      for (const fieldError of result.fieldErrors) errors[fieldError.field] ??= fieldError.message;
    }
    // What the page keeps of each field (its first 255 characters), as the user is created with it.
    const value = (field: string) => (form[field] ?? '').slice(0, 255);
    const username = value('username');
    if (!username && !errors.username) {
      errors.username = 'Please specify username.';
      firstError ??= 'invalid_registration';
    }
    // Login refuses longer passwords, so an account created with one could never be used.
    const password = form.password ?? '';
    if (password.length > MAX_PASSWORD && !errors.password) {
      errors.password = 'Password is too long.';
      firstError ??= 'invalid_registration';
    }
    if (firstError) {
      await registerError(firstError);
      return { status: 'failure', failure: { kind: 'fields', errors, status: 400 } };
    }

    let user: User;
    try {
      user = await ctx.storage.transaction(async (trx) => {
        const created = await createUser(ctx.storage, realm, { username, email: value('email') || null, firstName: value('firstName') || null, lastName: value('lastName') || null }, trx);
        // A flow copy without the password action registers the user without a password, as Keycloak's does.
        return password ? setPassword(ctx, realm, created, password, trx) : created;
      });
    } catch (error) {
      if (error instanceof PasswordPolicyError) {
        await registerError('invalid_registration');
        return { status: 'failure', failure: { kind: 'fields', errors: { password: error.message }, status: 400 } };
      }
      if (!isUniqueViolation(error)) throw error;
      await registerError('username_in_use');
      return { status: 'failure', failure: { kind: 'fields', errors: { username: 'Username already exists.' }, status: 409 } };
    }
    for (const action of actions) await action.instance.success?.({ ...actionContext, config: action.config, userId: user.id });
    await ctx.events.user(realm, { type: 'REGISTER', clientId: env.clientId, userId: user.id, details: env.details, request: env.request, user: () => userSnapshot(ctx.storage, user) });
    return { status: 'success', user };
  },
};

/** The registration adapter's run: the realm's bound registration flow, with the form's post (or none, to show it). */
export async function runRegistration(ctx: RegistrationContext, realm: Realm, env: Omit<RegistrationEnv, 'ctx' | 'realm'>): Promise<FlowResult<'registration', RegistrationFailure>> {
  const run: RegistrationEnv = { ...env, ctx, realm };
  return ctx.flows.runBound<RegistrationEnv, 'registration', RegistrationFailure>(realm, 'registrationFlow', {
    env: run,
    authenticator: (id) => (id === registrationForm.id ? registrationForm : ctx.providers.formProtectors.has(id) ? besideTheForm(id) : undefined),
    condition: (id) => signInCondition<RegistrationEnv>(id),
  });
}
