import type { AuthExecution, AuthFlow, AuthenticatorConfig } from './model.js';
import { RealmFlows } from './realm-flows.js';

/**
 * BROKERING (issue 37), to be reconciled with the built-in `first broker login` flow definition: Keycloak 26's
 * `first broker login` flow, in memory, for a realm that does not have one stored (realms created before the flow
 * was provisioned). A realm's own stored flow of that alias always wins (flows.ts runNamedFlow); once every realm
 * has it stored, this fallback can go.
 */
export const FIRST_BROKER_LOGIN = 'first broker login';

interface Spec {
  alias: string;
  executions: { requirement: AuthExecution['requirement']; authenticator?: string; config?: Record<string, string>; subflow?: Spec }[];
}

const firstBrokerLogin: Spec = {
  alias: FIRST_BROKER_LOGIN,
  executions: [
    { requirement: 'REQUIRED', authenticator: 'idp-review-profile', config: { 'update.profile.on.first.login': 'missing' } },
    {
      requirement: 'REQUIRED',
      subflow: {
        alias: 'User creation or linking',
        executions: [
          { requirement: 'ALTERNATIVE', authenticator: 'idp-create-user-if-unique', config: { 'require.password.update.after.registration': 'false' } },
          {
            requirement: 'ALTERNATIVE',
            subflow: {
              alias: 'Handle Existing Account',
              executions: [
                { requirement: 'REQUIRED', authenticator: 'idp-confirm-link' },
                {
                  requirement: 'REQUIRED',
                  subflow: {
                    alias: 'Account verification options',
                    executions: [
                      { requirement: 'ALTERNATIVE', authenticator: 'idp-email-verification' },
                      {
                        requirement: 'ALTERNATIVE',
                        subflow: {
                          alias: 'Verify Existing Account by Re-authentication',
                          executions: [
                            { requirement: 'REQUIRED', authenticator: 'idp-username-password-form' },
                            {
                              requirement: 'CONDITIONAL',
                              subflow: {
                                alias: 'First broker login - Conditional OTP',
                                executions: [
                                  { requirement: 'REQUIRED', authenticator: 'conditional-user-configured' },
                                  { requirement: 'REQUIRED', authenticator: 'auth-otp-form' },
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
      },
    },
  ],
};

/** The fallback flow of a realm, with ids derived from the realm's (stable across requests, so `done` carries over). */
export function fallbackBrokerFlows(realmId: string): RealmFlows {
  const flows: AuthFlow[] = [];
  const executions: AuthExecution[] = [];
  const configs: AuthenticatorConfig[] = [];
  const add = (spec: Spec, topLevel: boolean): string => {
    const id = `fbl:${realmId}:${spec.alias}`;
    flows.push({ id, realmId, alias: spec.alias, description: null, providerId: 'basic-flow', topLevel, builtIn: true });
    spec.executions.forEach((e, index) => {
      const executionId = `${id}:${index}`;
      const subFlowId = e.subflow ? add(e.subflow, false) : null;
      const configId = e.config ? `${executionId}:config` : null;
      if (e.config) configs.push({ id: configId!, realmId, alias: `${spec.alias} ${index}`, config: e.config });
      executions.push({ id: executionId, realmId, parentFlowId: id, authenticator: e.authenticator ?? null, subFlowId, requirement: e.requirement, priority: (index + 1) * 10, configId });
    });
    return id;
  };
  add(firstBrokerLogin, true);
  return new RealmFlows({ flows, executions, configs });
}
