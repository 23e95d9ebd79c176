/** Authentication flows as a Keycloak realm file writes them (authenticationFlows), for tests that import one. */
export type Execution = Record<string, unknown>;

export const step = (authenticator: string, requirement: string, priority: number, extra: Execution = {}): Execution => ({
  authenticator,
  authenticatorFlow: false,
  requirement,
  priority,
  autheticatorFlow: false,
  userSetupAllowed: false,
  ...extra,
});

export const subflow = (flowAlias: string, requirement: string, priority: number): Execution => ({ authenticatorFlow: true, flowAlias, requirement, priority, autheticatorFlow: true, userSetupAllowed: false });

export const flow = (alias: string, topLevel: boolean, authenticationExecutions: Execution[], builtIn = false) => ({ alias, description: alias, providerId: 'basic-flow', topLevel, builtIn, authenticationExecutions });
