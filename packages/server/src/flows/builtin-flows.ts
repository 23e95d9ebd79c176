import type { FormProtectorFactory, ProtectedForm, Requirement } from '@realmgate/spi';
import { newId } from '../credentials/index.js';
import type { Db } from '../storage/index.js';
import type { AuthExecution, FlowBinding, FlowType } from './model.js';
import { byPriority, RealmFlows } from './realm-flows.js';
import type { FlowRepository } from './repository.js';

interface FlowSpec {
  alias: string;
  description: string;
  type: FlowType;
  executions: ExecutionSpec[];
}

interface ExecutionSpec {
  requirement: Requirement;
  /** The provider; for a form subflow, its form provider. */
  authenticator?: string;
  subflow?: FlowSpec;
  /** Keycloak's authenticatorConfig of a built-in step (`review profile config` …). */
  config?: { alias: string; config: Record<string, string> };
}

/** The flow each binding names in a new realm, as Keycloak's defaults. */
export const defaultBindings: Record<FlowBinding, string> = {
  browserFlow: 'browser',
  registrationFlow: 'registration',
  resetCredentialsFlow: 'reset credentials',
};

/** Where a protector of each form goes: the built-in (sub)flow, before the execution that reads the form. */
export const protectorPlacement: Record<ProtectedForm, { flow: string; before: string }> = {
  login: { flow: 'forms', before: 'auth-username-password-form' },
  registration: { flow: 'registration form', before: 'registration-user-creation' },
  'reset-credentials': { flow: 'reset credentials', before: 'reset-credentials-choose-user' },
};

/** A sub-flow that runs its one step for a user set up for it (`conditional-user-configured`). */
const whenConfigured = (alias: string, description: string, step: string): FlowSpec => ({
  alias,
  description,
  type: 'basic-flow',
  executions: [
    { authenticator: 'conditional-user-configured', requirement: 'REQUIRED' },
    { authenticator: step, requirement: 'REQUIRED' },
  ],
});

/**
 * Keycloak's "Conditional OTP" subflows: the OTP step runs for a user who has an OTP credential, in the browser
 * flow's forms, the direct grant, reset credentials and first broker login.
 */
const conditionalOtp = {
  browser: whenConfigured('Browser - Conditional OTP', 'Asks for a one-time code when the user has set up an authenticator app.', 'auth-otp-form'),
  directGrant: whenConfigured('Direct Grant - Conditional OTP', 'Asks for the totp parameter when the user has set up an authenticator app.', 'direct-grant-validate-otp'),
  /** Keycloak 26's reset credentials: a user with an OTP credential sets up the app again after the new password. */
  reset: whenConfigured('Reset - Conditional OTP', 'Flow to determine if the OTP should be reset or not. Set to REQUIRED to force.', 'reset-otp'),
  /**
   * The re-authentication of `first broker login`. Keycloak 26.3+ names it "First broker login - Conditional 2FA"
   * with a `conditional-credential` step Realmgate does not have; this is the earlier 26 shape, as the browser's.
   */
  firstBrokerLogin: whenConfigured('First broker login - Conditional OTP', 'Flow to determine if the OTP is required for the authentication', 'auth-otp-form'),
};

/** Where each conditional OTP subflow goes in a realm created before it existed: after the password step. */
const conditionalOtpPlacement = [
  { flow: 'forms', after: 'auth-username-password-form', spec: conditionalOtp.browser, provider: 'auth-otp-form' },
  { flow: 'direct grant', after: 'direct-grant-validate-password', spec: conditionalOtp.directGrant, provider: 'direct-grant-validate-otp' },
  { flow: 'reset credentials', after: 'reset-password', spec: conditionalOtp.reset, provider: 'reset-otp' },
];

/**
 * Keycloak 26's `first broker login`, in every realm (bound by Keycloak's `firstBrokerLoginFlow`). Its idp-* steps
 * are in the catalog (catalog.ts firstBrokerLoginProviders); identity brokering runs them.
 */
const firstBrokerLogin: FlowSpec = {
  alias: 'first broker login',
  description: 'Actions taken after first broker login with identity provider account, which is not yet linked to any Keycloak account',
  type: 'basic-flow',
  executions: [
    { authenticator: 'idp-review-profile', requirement: 'REQUIRED', config: { alias: 'review profile config', config: { 'update.profile.on.first.login': 'missing' } } },
    {
      requirement: 'REQUIRED',
      subflow: {
        alias: 'User creation or linking',
        description: 'Flow for the existing/non-existing user alternatives',
        type: 'basic-flow',
        executions: [
          { authenticator: 'idp-create-user-if-unique', requirement: 'ALTERNATIVE', config: { alias: 'create unique user config', config: { 'require.password.update.after.registration': 'false' } } },
          {
            requirement: 'ALTERNATIVE',
            subflow: {
              alias: 'Handle Existing Account',
              description: 'Handle what to do if there is existing account with same email/username like authenticated identity provider',
              type: 'basic-flow',
              executions: [
                { authenticator: 'idp-confirm-link', requirement: 'REQUIRED' },
                {
                  requirement: 'REQUIRED',
                  subflow: {
                    alias: 'Account verification options',
                    description: 'Method with which to verify the existing account',
                    type: 'basic-flow',
                    executions: [
                      { authenticator: 'idp-email-verification', requirement: 'ALTERNATIVE' },
                      {
                        requirement: 'ALTERNATIVE',
                        subflow: {
                          alias: 'Verify Existing Account by Re-authentication',
                          description: 'Reauthentication of existing account',
                          type: 'basic-flow',
                          executions: [
                            { authenticator: 'idp-username-password-form', requirement: 'REQUIRED' },
                            { requirement: 'CONDITIONAL', subflow: conditionalOtp.firstBrokerLogin },
                          ],
                        },
                      },
                    ],
                  },
                },
              ],
            },
          },
        ],
      },
    },
  ],
};

/** Keycloak's built-in top-level flows (the parts this server runs, under Keycloak's names). */
const builtInFlows: FlowSpec[] = [
  {
    alias: 'browser',
    description: 'Browser based authentication',
    type: 'basic-flow',
    executions: [
      { authenticator: 'auth-cookie', requirement: 'ALTERNATIVE' },
      // Keycloak 26's: kc_idp_hint, else its config's defaultProvider, sends the browser to that identity provider.
      // Realms created before it was here get it from storage migration 0030 (where the flow is still as built).
      { authenticator: 'identity-provider-redirector', requirement: 'ALTERNATIVE' },
      {
        requirement: 'ALTERNATIVE',
        subflow: {
          alias: 'forms',
          description: 'Username, password, otp and other auth forms.',
          type: 'basic-flow',
          executions: [
            { authenticator: 'auth-username-password-form', requirement: 'REQUIRED' },
            { requirement: 'CONDITIONAL', subflow: conditionalOtp.browser },
          ],
        },
      },
    ],
  },
  {
    alias: 'registration',
    description: 'Registration flow',
    type: 'basic-flow',
    executions: [
      {
        requirement: 'REQUIRED',
        authenticator: 'registration-page-form',
        subflow: {
          alias: 'registration form',
          description: 'Registration form',
          type: 'form-flow',
          executions: [
            { authenticator: 'registration-user-creation', requirement: 'REQUIRED' },
            { authenticator: 'registration-password-action', requirement: 'REQUIRED' },
            { authenticator: 'registration-recaptcha-action', requirement: 'DISABLED' },
            { authenticator: 'registration-terms-and-conditions', requirement: 'DISABLED' },
          ],
        },
      },
    ],
  },
  {
    alias: 'reset credentials',
    description: 'Reset credentials for a user if they forgot their password or something',
    type: 'basic-flow',
    executions: [
      { authenticator: 'reset-credentials-choose-user', requirement: 'REQUIRED' },
      { authenticator: 'reset-credential-email', requirement: 'REQUIRED' },
      { authenticator: 'reset-password', requirement: 'REQUIRED' },
      { requirement: 'CONDITIONAL', subflow: conditionalOtp.reset },
    ],
  },
  {
    alias: 'direct grant',
    description: 'OpenID Connect Resource Owner Grant',
    type: 'basic-flow',
    executions: [
      { authenticator: 'direct-grant-validate-username', requirement: 'REQUIRED' },
      { authenticator: 'direct-grant-validate-password', requirement: 'REQUIRED' },
      { requirement: 'CONDITIONAL', subflow: conditionalOtp.directGrant },
    ],
  },
  {
    alias: 'clients',
    description: 'Base authentication for clients',
    type: 'client-flow',
    executions: [{ authenticator: 'client-secret', requirement: 'ALTERNATIVE' }],
  },
  firstBrokerLogin,
];

/** The spec with each protector's execution placed in the flows of the forms it guards, in install order. */
function withProtectors(spec: FlowSpec, protectors: readonly FormProtectorFactory[]): FlowSpec {
  const executions = spec.executions.map((e) => (e.subflow ? { ...e, subflow: withProtectors(e.subflow, protectors) } : e));
  for (const protector of protectors) {
    for (const form of protector.installOn) {
      const { flow, before } = protectorPlacement[form];
      if (flow !== spec.alias) continue;
      const at = executions.findIndex((e) => e.authenticator === before);
      executions.splice(at < 0 ? executions.length : at, 0, { authenticator: protector.id, requirement: 'REQUIRED' });
    }
  }
  return { ...spec, executions };
}

/** Writes a flow and, depth-first, its subflows; returns its id. */
async function createFlow(repository: FlowRepository, realmId: string, spec: FlowSpec, topLevel: boolean, db: Db): Promise<string> {
  const create = async (spec: FlowSpec, topLevel: boolean): Promise<string> => {
    const flowId = newId();
    await repository.insertFlow({ id: flowId, realmId, alias: spec.alias, description: spec.description, providerId: spec.type, topLevel, builtIn: true }, db);
    for (const [i, e] of spec.executions.entries()) {
      let configId: string | null = null;
      if (e.config) {
        configId = newId();
        await repository.insertConfig({ id: configId, realmId, alias: e.config.alias, config: { ...e.config.config } }, db);
      }
      await repository.insertExecution(
        {
          id: newId(),
          realmId,
          parentFlowId: flowId,
          authenticator: e.authenticator ?? null,
          subFlowId: e.subflow ? await create(e.subflow, false) : null,
          requirement: e.requirement,
          priority: (i + 1) * 10,
          configId,
        },
        db,
      );
    }
    return flowId;
  };
  return create(spec, topLevel);
}

/** Creates a new realm's built-in flows, with the installed protectors in them. */
export async function provisionBuiltInFlows(repository: FlowRepository, realmId: string, protectors: readonly FormProtectorFactory[], db: Db): Promise<void> {
  for (const spec of builtInFlows) await createFlow(repository, realmId, withProtectors(spec, protectors), true, db);
}

/**
 * Gives the built-in `forms` and `direct grant` flows of realms created before OTP existed their conditional OTP
 * subflow, after the password step. A flow that already has the subflow (or any OTP execution, even DISABLED) is
 * left as it is. Returns how many were added.
 */
export async function addMissingConditionalOtp(repository: FlowRepository, db: Db): Promise<number> {
  let added = 0;
  for (const { flow: alias, after, spec, provider } of conditionalOtpPlacement) {
    for (const flow of await repository.builtInFlowsNamed(alias, db)) {
      const siblings = (await repository.executionsOf(flow.id, db)).sort(byPriority);
      const realmFlows = new RealmFlows(await repository.loadRealm(flow.realmId, db));
      const hasOtp = realmFlows.walk(flow.id).some(({ execution: e }) => e.authenticator === provider);
      if (hasOtp || realmFlows.flowByAlias(spec.alias)) continue;
      const subFlowId = await createFlow(repository, flow.realmId, spec, false, db);
      const execution: AuthExecution = { id: newId(), realmId: flow.realmId, parentFlowId: flow.id, authenticator: null, subFlowId, requirement: 'CONDITIONAL', priority: 0, configId: null };
      const at = siblings.findIndex((e) => e.authenticator === after);
      await insertAmong(repository, siblings, execution, at < 0 ? siblings.length : at + 1, db);
      added++;
    }
  }
  return added;
}

/**
 * Gives every realm created before it existed Keycloak's built-in `first broker login` flow (with its sub-flows and
 * configs), unless it has a flow of that alias already (a realm file's own, or an earlier start). Returns how many
 * realms got it.
 */
export async function addMissingFirstBrokerLogin(repository: FlowRepository, db: Db): Promise<number> {
  let added = 0;
  for (const realmId of await repository.realmsWithoutFlow(firstBrokerLogin.alias, db)) {
    const aliases = new Set((await repository.loadRealm(realmId, db)).flows.map((f) => f.alias));
    // A sub-flow alias already taken by an administrator's flow: left for them to sort out, logged by the caller's count.
    const names = (spec: FlowSpec): string[] => [spec.alias, ...spec.executions.flatMap((e) => (e.subflow ? names(e.subflow) : []))];
    if (names(firstBrokerLogin).some((alias) => aliases.has(alias))) continue;
    await createFlow(repository, realmId, firstBrokerLogin, true, db);
    added++;
  }
  return added;
}

/** Inserts `execution` at `index` among `siblings` (in priority order), renumbering them 10, 20, … as needed. */
async function insertAmong(repository: FlowRepository, siblings: AuthExecution[], execution: AuthExecution, index: number, db: Db): Promise<void> {
  siblings.splice(index, 0, execution);
  for (const [i, sibling] of siblings.entries()) {
    const priority = (i + 1) * 10;
    if (sibling === execution) await repository.insertExecution({ ...execution, priority }, db);
    else if (sibling.priority !== priority) await repository.setPriority(sibling.id, priority, db);
  }
}

/**
 * Gives every realm's built-in flows the executions of protectors installed after the realm was created,
 * before the execution that reads the form. Built-in flows cannot lose executions through the admin API, so
 * an execution found there (even DISABLED) is the admin's choice and stays as it is. Returns how many were added.
 */
export async function addMissingProtectors(repository: FlowRepository, protectors: readonly FormProtectorFactory[], db: Db): Promise<number> {
  let added = 0;
  for (const protector of protectors) {
    for (const form of protector.installOn) {
      const { flow: alias, before } = protectorPlacement[form];
      for (const flow of await repository.builtInFlowsNamed(alias, db)) {
        const siblings = (await repository.executionsOf(flow.id, db)).sort(byPriority);
        if (siblings.some((e) => e.authenticator === protector.id)) continue;
        const execution: AuthExecution = {
          id: newId(),
          realmId: flow.realmId,
          parentFlowId: flow.id,
          authenticator: protector.id,
          subFlowId: null,
          requirement: 'REQUIRED',
          priority: 0,
          configId: null,
        };
        const at = siblings.findIndex((e) => e.authenticator === before);
        await insertAmong(repository, siblings, execution, at < 0 ? 0 : at, db);
        added++;
      }
    }
  }
  return added;
}
