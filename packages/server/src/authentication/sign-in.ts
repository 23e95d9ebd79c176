import type { RequestInfo } from '@realmgate/spi';
import type { AuthenticationContext } from './context.js';
import { realmInfo } from '../events/index.js';
import type { Authenticator, Condition, ExecutionStatus, FlowResult, StepOutcome } from '../flows/index.js';
import { providerEventError, type ProviderEventError } from '../model/errors.js';
import type { Realm, User } from '../model/types.js';
import { CONFIGURE_TOTP } from '../required-actions/index.js';
import { effectiveRoles, realmRequiredActions } from '../services/index.js';
import { loginLockout } from './brute-force.js';
import { hasOtpCredential, verifyOtp } from './otp.js';
import { authenticatePassword, findLoginUser, type PasswordResult } from './password.js';
import type { SecondFactorError } from './second-factor.js';
import { identityProviderRedirector, type RedirectChallenge } from './brokering/redirector.js';
import { hasWebAuthnCredential, verifyAssertion, type WebAuthnKind } from './webauthn.js';
import { CONFIGURE_RECOVERY_AUTHN_CODES, WEBAUTHN_REGISTER, WEBAUTHN_REGISTER_PASSWORDLESS } from '../required-actions/index.js';
import { hasRecoveryCodes, verifyRecoveryCode } from './recovery-codes.js';

/**
 * Every step of a sign-in as an authenticator registered under Keycloak's provider id, run by the one flow runner
 * (flows/engine.ts) for the browser and the direct grant; each entry point is an adapter that maps the outcome to
 * a page (pages/) or an OAuth error (protocol/). Nothing here decides what comes after a step: the flow does.
 *
 * Deliberate difference: the username steps (`auth-username-form`, `direct-grant-validate-username`) only name the
 * user; the password steps check the name and the password together (authenticatePassword: one hash even for an
 * unknown or locked-out user), so an unknown name is answered as a wrong password and timing tells neither.
 * Keycloak's password steps require a user; these take the name from the step before (or from their own field).
 */

type SignInContext = Pick<AuthenticationContext, 'storage' | 'events' | 'hostStore' | 'config' | 'providers'>;

/** What a password or code step refused; the adapter answers it (its event is already recorded). */
export type SignInFailure =
  | { kind: 'password'; result: Extract<PasswordResult, { ok: false }> }
  | { kind: 'otp'; error: SecondFactorError }
  | { kind: 'webauthn'; error: SecondFactorError; reason: string }
  | { kind: 'recovery-code'; error: SecondFactorError }
  | { kind: 'protector'; provider: string; reason: string; error: ProviderEventError; status?: number; retryAfterSeconds?: number };

/** The page a browser step asks to show. */
export type BrowserChallenge = 'username-password' | 'username' | 'password' | 'otp' | 'webauthn' | 'webauthn-passwordless' | 'recovery-code' | RedirectChallenge;

export interface SignInEnv {
  ctx: SignInContext;
  realm: Realm;
  clientId: string;
  details: Record<string, string>;
  request: RequestInfo;
  /** The login name a username step read, for the password step after it. */
  login?: string;
  /** Set once a password step has checked the user (lockout, disabled): the end of the flow need not again. */
  passwordChecked?: boolean;
}

export interface BrowserEnv extends SignInEnv {
  /**
   * The fields the page just posted, each taken once by the first step that reads it: the sign-in page posts the
   * name and the password (read by auth-username-password-form, or by auth-username-form and auth-password-form
   * in turn), the code page the code.
   */
  submitted: Record<string, string> | null;
  /** The user of a valid SSO session, for auth-cookie (the authorization endpoint's run only). */
  sso?: User;
  /** The authorization request's own walk (identity-provider-redirector acts only then), and its kc_idp_hint. */
  start?: boolean;
  idpHint?: string;
}

export interface GrantEnv extends SignInEnv {
  /** The token request's form parameters. */
  params: Record<string, string>;
}

type Step<Env> = Authenticator<Env, BrowserChallenge, SignInFailure>;
type Outcome = StepOutcome<BrowserChallenge, SignInFailure>;

const passwordStep = async (env: SignInEnv, username: string, password: string): Promise<Outcome> => {
  const result = await authenticatePassword(env.ctx, env.realm, { username, password, clientId: env.clientId, details: env.details, request: env.request });
  if (!result.ok) return { status: 'failure', failure: { kind: 'password', result } };
  env.passwordChecked = true;
  return { status: 'success', user: result.user };
};

/** A username step: names the user when the name is known, never refuses an unknown one (the password step does, at the same cost). */
const usernameStep = async (env: SignInEnv, username: string): Promise<Outcome> => {
  env.login = username;
  const user = await findLoginUser(env.ctx, env.realm, username);
  return user ? { status: 'success', user } : { status: 'success' };
};

type OtpFailure = Extract<SignInFailure, { kind: 'otp' }>;

const otpStep = async (env: SignInEnv, user: User | null, code: string): Promise<StepOutcome<never, OtpFailure>> => {
  const result = await verifyOtp(env.ctx, env.realm, user!, code, { clientId: env.clientId, details: env.details, request: env.request });
  return result.ok ? { status: 'success' } : { status: 'failure', failure: { kind: 'otp', error: result.error } };
};

/**
 * The WebAuthn steps (authentication/webauthn.ts): the page's ceremony result, with the origin and the auth session
 * the page handler (not the browser) adds, checked for the user the flow named (or, passwordless without one, the
 * user the credential's user handle names).
 */
export const WEBAUTHN_FIELDS = ['webauthn.response', 'webauthn.origin', 'webauthn.session'] as const;

const webauthnStep = async (env: BrowserEnv, user: User | null, kind: WebAuthnKind): Promise<Outcome> => {
  const fields = take(env, WEBAUTHN_FIELDS);
  if (!fields) return { status: 'challenge', challenge: kind === 'passwordless' ? 'webauthn-passwordless' : 'webauthn' };
  return assertionOutcome(env, user, kind, fields);
};

/**
 * Keycloak 26's passkeys on the username form (`webAuthnPolicyPasswordlessPasskeysEnabled`): the form's autofill
 * (conditional mediation) posts a passkey's assertion instead of the name; the passkey names its owner, who is then
 * signed in without a password. Null when the realm has passkeys off or the page posted a name instead.
 */
const passkeyOnUsernameForm = async (env: BrowserEnv): Promise<Outcome | null> => {
  if (!env.realm.webAuthnPolicies.passwordless.passkeysEnabled) return null;
  const fields = take(env, WEBAUTHN_FIELDS);
  return fields && assertionOutcome(env, null, 'passwordless', fields);
};

const assertionOutcome = async (env: BrowserEnv, user: User | null, kind: WebAuthnKind, fields: Record<string, string>): Promise<Outcome> => {
  const ceremony = { origin: fields['webauthn.origin'] ?? '', session: fields['webauthn.session'] ?? '' };
  const result = await verifyAssertion(env.ctx, env.realm, user, kind, ceremony, fields['webauthn.response'] ?? '', { clientId: env.clientId, details: env.details, request: env.request });
  return result.ok ? { status: 'success', user: result.user } : { status: 'failure', failure: { kind: 'webauthn', error: result.error, reason: result.reason } };
};

/** The posted fields a step reads, when the page posted them all (taken: no later step reads them again). */
export function take(env: { submitted: Record<string, string> | null }, names: readonly string[]): Record<string, string> | null {
  const posted = env.submitted;
  if (!posted || !names.every((name) => name in posted)) return null;
  const fields = Object.fromEntries(names.map((name) => [name, posted[name]]));
  for (const name of names) delete posted[name];
  return fields;
}

/** auth-otp-form, written once for every flow that asks for a code on a page (the browser's, the first broker login's). */
export const otpForm: Authenticator<SignInEnv & { submitted: Record<string, string> | null }, 'otp', OtpFailure> = {
  id: 'auth-otp-form',
  requiresUser: true,
  setupAction: CONFIGURE_TOTP,
  selectable: true,
  configuredFor: (user, env) => hasOtpCredential(env.ctx, user),
  async authenticate({ env, user }) {
    const fields = take(env, ['otp']);
    if (!fields) return { status: 'challenge', challenge: 'otp' };
    return otpStep(env, user, (fields.otp ?? '').trim());
  },
};

/** The browser's authenticators (Keycloak's browser-flow providers), by provider id. */
const browserSteps: Record<string, Step<BrowserEnv>> = {
  // Brokering (authentication/brokering/redirector.ts).
  'identity-provider-redirector': identityProviderRedirector,
  // The SSO session the authorization endpoint found (a page's post has none): its user, signed in already.
  'auth-cookie': { id: 'auth-cookie', requiresUser: false, authenticate: async ({ env }) => (env.sso ? { status: 'success', user: env.sso } : { status: 'attempted' }) },
  'auth-username-password-form': {
    id: 'auth-username-password-form',
    requiresUser: false,
    async authenticate({ env }) {
      const passkey = await passkeyOnUsernameForm(env);
      if (passkey) return passkey;
      const fields = take(env, ['username', 'password']);
      if (!fields) return { status: 'challenge', challenge: 'username-password' };
      return passwordStep(env, fields.username ?? '', fields.password ?? '');
    },
  },
  'auth-username-form': {
    id: 'auth-username-form',
    requiresUser: false,
    async authenticate({ env }) {
      const passkey = await passkeyOnUsernameForm(env);
      if (passkey) return passkey;
      const fields = take(env, ['username']);
      if (!fields) return { status: 'challenge', challenge: 'username' };
      return usernameStep(env, fields.username ?? '');
    },
  },
  'auth-password-form': {
    id: 'auth-password-form',
    requiresUser: false,
    // "Try another way" offers it (its own page, pages/password-page.ts) to a known user who has a password, as
    // Keycloak's password form is configured for a user with a password credential.
    selectable: true,
    configuredFor: async (user) => user.passwordHash !== null,
    async authenticate({ env, user }) {
      const fields = take(env, ['password']);
      if (!fields) return { status: 'challenge', challenge: 'password' };
      return passwordStep(env, env.login ?? user?.username ?? '', fields.password ?? '');
    },
  },
  'auth-otp-form': otpForm,
  'webauthn-authenticator': {
    id: 'webauthn-authenticator',
    requiresUser: true,
    setupAction: WEBAUTHN_REGISTER,
    selectable: true,
    configuredFor: (user, env) => hasWebAuthnCredential(env.ctx, user, 'two-factor'),
    authenticate: ({ env, user }) => webauthnStep(env, user, 'two-factor'),
  },
  'auth-recovery-authn-code-form': {
    id: 'auth-recovery-authn-code-form',
    requiresUser: true,
    setupAction: CONFIGURE_RECOVERY_AUTHN_CODES,
    selectable: true,
    configuredFor: (user, env) => hasRecoveryCodes(env.ctx, user),
    async authenticate({ env, user }) {
      const fields = take(env, ['recoveryCodeInput']);
      if (!fields) return { status: 'challenge', challenge: 'recovery-code' };
      const result = await verifyRecoveryCode(env.ctx, env.realm, user!, fields.recoveryCodeInput ?? '', { clientId: env.clientId, details: env.details, request: env.request });
      return result.ok ? { status: 'success' } : { status: 'failure', failure: { kind: 'recovery-code', error: result.error } };
    },
  },
  'webauthn-authenticator-passwordless': {
    id: 'webauthn-authenticator-passwordless',
    requiresUser: false,
    setupAction: WEBAUTHN_REGISTER_PASSWORDLESS,
    selectable: true,
    configuredFor: (user, env) => hasWebAuthnCredential(env.ctx, user, 'passwordless'),
    authenticate: ({ env, user }) => webauthnStep(env, user, 'passwordless'),
  },
};

/**
 * The browser's steps that ask something of a user already known, each with its own page: what a post broker login
 * flow may hold (Keycloak runs it with the brokered user set). The others (a username, a passkey without a page
 * here, the SSO cookie, the redirector) are not given to it, so a flow that requires one is refused, never passed.
 */
const KNOWN_USER_STEPS = new Set(['auth-otp-form', 'auth-password-form']);
export const knownUserStep = (id: string): Step<BrowserEnv> | undefined => (KNOWN_USER_STEPS.has(id) ? browserSteps[id] : undefined);

/** The direct grant's authenticators (Keycloak's direct-grant providers), by provider id. */
const grantSteps: Record<string, Step<GrantEnv>> = {
  'direct-grant-validate-username': {
    id: 'direct-grant-validate-username',
    requiresUser: false,
    authenticate: async ({ env }) => usernameStep(env, env.params.username ?? ''),
  },
  'direct-grant-validate-password': {
    id: 'direct-grant-validate-password',
    requiresUser: false,
    authenticate: async ({ env, user }) => passwordStep(env, env.login ?? user?.username ?? env.params.username ?? '', env.params.password ?? ''),
  },
  'direct-grant-validate-otp': {
    id: 'direct-grant-validate-otp',
    requiresUser: true,
    configuredFor: (user, env) => hasOtpCredential(env.ctx, user),
    // As Keycloak still reads it, `totp` when `otp` is absent; a missing code is a wrong one, counted alike.
    authenticate: async ({ env, user }) => otpStep(env, user, env.params.otp ?? env.params.totp ?? ''),
  },
};

/**
 * A form protector (the proof of work …) as a step. On the pages it ran before anything read the form
 * (protectedPost), so there it has passed; in a direct-grant flow it checks the grant's own parameters (the
 * solution sent as form parameters, as the protector's fields are named), as the login form's.
 */
function protectorStep<Env extends SignInEnv>(id: string, submitted: (env: Env) => Record<string, string> | null): Step<Env> | undefined {
  return {
    id,
    requiresUser: false,
    async authenticate({ env, config }) {
      const fields = submitted(env);
      if (!fields) return { status: 'success' };
      const protector = env.ctx.providers.formProtectors.get(id);
      if (!protector) return { status: 'attempted' };
      const decision = await protector.instance.verify({
        realm: realmInfo(env.realm),
        form: 'login',
        config,
        request: env.request,
        resourceBaseUrl: `/realms/${encodeURIComponent(env.realm.name)}/${id}`,
        submitted: fields,
      });
      if (decision.ok) return { status: 'success' };
      const { reason, status, retryAfterSeconds } = decision;
      return { status: 'failure', failure: { kind: 'protector', provider: id, reason, error: providerEventError(decision.error), status, retryAfterSeconds } };
    },
  };
}

/** What a condition reads: the realm and its storage. */
interface ConditionEnv {
  ctx: Pick<AuthenticationContext, 'storage'>;
  realm: Realm;
}

/** The user holds the role (realm role `name`, client role `clientId.name`: Keycloak's getRoleFromString), composites and groups included. */
async function holdsRole(ctx: Pick<AuthenticationContext, 'storage'>, realm: Realm, user: User, role: string): Promise<boolean> {
  const held = await effectiveRoles(ctx.storage, realm.id, user.id);
  for (let dot = role.indexOf('.'); dot > 0; dot = role.indexOf('.', dot + 1)) {
    const clientId = role.slice(0, dot);
    if (await ctx.storage.clients.cachedByClientId(realm.id, clientId)) return (held.clientRoles[clientId] ?? []).includes(role.slice(dot + 1));
  }
  return held.realmRoles.includes(role);
}

/**
 * The values of an attribute on the user's groups and the groups above them (Keycloak's `include_group_attributes`:
 * an attribute a group carries holds for its members, and a parent group's for the members of its sub-groups).
 */
async function groupAttributeValues(ctx: Pick<AuthenticationContext, 'storage'>, realm: Realm, user: User, name: string): Promise<string[]> {
  const values: string[] = [];
  const seen = new Set<string>();
  for (let pending = await ctx.storage.groups.userGroupIds(user.id); pending.length > 0; ) {
    const id = pending.pop()!;
    if (seen.has(id)) continue;
    seen.add(id);
    const group = await ctx.storage.groups.byId(realm.id, id);
    if (!group) continue;
    values.push(...(group.attributes[name] ?? []));
    if (group.parentId) pending.push(group.parentId);
  }
  return values;
}

/** Keycloak's flow conditions: they decide whether the conditional subflow they sit in runs. */
const conditions: Record<string, Condition<ConditionEnv>> = {
  'conditional-user-configured': {
    id: 'conditional-user-configured',
    matches: async ({ execution, user, userConfiguredFor }) => user !== null && userConfiguredFor(execution.parentFlowId),
  },
  'conditional-user-role': {
    id: 'conditional-user-role',
    async matches({ config, user, env }) {
      if (!user || !config.condUserRole) return false;
      const holds = await holdsRole(env.ctx, env.realm, user, config.condUserRole);
      return config.negate === 'true' ? !holds : holds;
    },
  },
  'conditional-user-attribute': {
    id: 'conditional-user-attribute',
    async matches({ config, user, env }) {
      if (!user || !config.attribute_name) return false;
      const expected = config.attribute_expected_value ?? '';
      const values = [...(user.attributes[config.attribute_name] ?? [])];
      if (config.include_group_attributes === 'true') values.push(...(await groupAttributeValues(env.ctx, env.realm, user, config.attribute_name)));
      let pattern: RegExp | null = null;
      if (config.regex === 'true') {
        try {
          pattern = new RegExp(`^(?:${expected})$`, 'u');
        } catch {
          return false;
        }
      }
      const found = values.some((value) => (pattern ? pattern.test(value) : value === expected));
      return config.not === 'true' ? !found : found;
    },
  },
};

/** A flow condition by provider id, for any flow whose env names the realm and its storage (sign-in, reset). */
export const signInCondition = <Env extends ConditionEnv>(id: string): Condition<Env> | undefined => conditions[id];

const find = <Env extends SignInEnv>(steps: Record<string, Step<Env>>, ctx: SignInContext, submitted: (env: Env) => Record<string, string> | null) => (id: string) =>
  steps[id] ?? (ctx.providers.formProtectors.has(id) ? protectorStep<Env>(id, submitted) : undefined);

/** Where a browser sign-in stands between pages: carried, sealed, by the page that asks for the next step. */
export interface BrowserProgress {
  user: User | null;
  done: Record<string, ExecutionStatus>;
  requiredActions: string[];
  login?: string;
  passwordChecked?: boolean;
  /** "Try another way": the alternative execution the user chose (flows/engine.ts). */
  selected?: string;
}

/**
 * The browser adapter's run: the client's browser flow (or the realm's) from the top, with what earlier pages of
 * this sign-in settled, and the page just posted given to the step whose page it is.
 */
export function runBrowserSignIn(
  ctx: SignInContext & Pick<AuthenticationContext, 'flows'>,
  realm: Realm,
  clientId: string,
  request: RequestInfo,
  progress: BrowserProgress | null,
  submitted: BrowserEnv['submitted'],
  sso?: User,
  start?: { idpHint?: string },
): Promise<FlowResult<BrowserChallenge, SignInFailure> & { env: BrowserEnv }> {
  const env: BrowserEnv = { ctx, realm, clientId, details: { auth_method: 'openid-connect' }, request, submitted: submitted && { ...submitted }, login: progress?.login, passwordChecked: progress?.passwordChecked, sso, start: start !== undefined, idpHint: start?.idpHint };
  return ctx.flows
    .runSignIn<BrowserEnv, BrowserChallenge, SignInFailure>(realm, 'browser', clientId, {
      env,
      authenticator: find(browserSteps, ctx, () => null),
      condition: (id) => signInCondition(id),
      done: progress?.done,
      user: progress?.user ?? null,
      requiredActions: progress?.requiredActions,
      selected: progress?.selected,
      actionEnabled: async (alias) => (await realmRequiredActions(ctx.storage, realm.id)).some((action) => action.alias === alias && action.enabled),
    })
    .then((result) => ({ ...result, env }));
}

/** The direct grant adapter's run: the client's direct grant flow (or the realm's) in one request. */
export function runGrantSignIn(
  ctx: SignInContext & Pick<AuthenticationContext, 'flows'>,
  realm: Realm,
  clientId: string,
  request: RequestInfo,
  details: Record<string, string>,
  params: Record<string, string>,
): Promise<FlowResult<BrowserChallenge, SignInFailure> & { env: GrantEnv }> {
  const env: GrantEnv = { ctx, realm, clientId, details, request, params };
  return ctx.flows
    .runSignIn<GrantEnv, BrowserChallenge, SignInFailure>(realm, 'direct_grant', clientId, {
      env,
      authenticator: find(grantSteps, ctx, (e) => e.params),
      condition: (id) => signInCondition(id),
    })
    .then((result) => ({ ...result, env }));
}

/**
 * A user a flow signed in without a password step (a copy that names the user and checks something else):
 * Keycloak's final validateUser, enabled and not locked out. Null when the user may go on.
 */
export async function refusedUser(ctx: SignInContext, realm: Realm, user: User, env: SignInEnv): Promise<'user_disabled' | 'user_temporarily_disabled' | null> {
  if (env.passwordChecked) return null;
  if (!user.enabled) return 'user_disabled';
  const lockout = await loginLockout(ctx, realm, user);
  return lockout === 'temporary' ? 'user_temporarily_disabled' : lockout === 'permanent' ? 'user_disabled' : null;
}
