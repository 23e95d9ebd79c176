import type { FormAction, FormActionFactory, FormProtector, FormProtectorFactory, ProviderFactory, Requirement } from '@realmgate/spi';

/** Keycloak's flow provider ids: a sequence of authenticators, a form with form actions, or client authentication. */
export type FlowType = 'basic-flow' | 'form-flow' | 'client-flow';

export interface AuthFlow {
  id: string;
  realmId: string;
  alias: string;
  description: string | null;
  providerId: FlowType;
  topLevel: boolean;
  builtIn: boolean;
}

export interface AuthExecution {
  id: string;
  realmId: string;
  parentFlowId: string;
  /** Provider id; a form subflow carries its form provider here too. Null for a basic subflow. */
  authenticator: string | null;
  /** Set when this execution runs a subflow. */
  subFlowId: string | null;
  requirement: Requirement;
  priority: number;
  configId: string | null;
}

export interface AuthenticatorConfig {
  id: string;
  realmId: string;
  alias: string;
  config: Record<string, string>;
}

/** The realm settings that name a flow, as Keycloak's realm representation. */
export const flowBindings = ['browserFlow', 'registrationFlow', 'resetCredentialsFlow'] as const;
export type FlowBinding = (typeof flowBindings)[number];

/**
 * Every flow binding of Keycloak's realm representation, with the built-in flow Keycloak binds by default. A realm
 * file may name all seven; Realmgate stores the three above and runs its built-in `direct grant` and `clients`
 * flows for the password grant and client authentication (it has no Docker authentication nor identity brokering).
 */
export const keycloakBindingDefaults = {
  browserFlow: 'browser',
  registrationFlow: 'registration',
  directGrantFlow: 'direct grant',
  resetCredentialsFlow: 'reset credentials',
  clientAuthenticationFlow: 'clients',
  dockerAuthenticationFlow: 'docker auth',
  firstBrokerLoginFlow: 'first broker login',
} as const;
export type KeycloakBinding = keyof typeof keycloakBindingDefaults;

/** Flow and config aliases: Keycloak's reserved characters refused, and control characters (they reach logs and pages). */
export const aliasPattern = /^[^<>&"\\\u0000-\u001f\u007f]{1,255}$/u;
export const aliasHint = 'a name of 1 to 255 characters without <, >, &, ", \\ or control characters';

/**
 * Keycloak's per-client bindings (a client's `authenticationFlowBindingOverrides`), each with the sign-in it
 * replaces the realm's flow for: the browser flow of the login pages, the direct grant flow of the password grant.
 */
export const overrideBindings = ['browser', 'direct_grant'] as const;
export type OverrideBinding = (typeof overrideBindings)[number];
export const isOverrideBinding = (key: string): key is OverrideBinding => (overrideBindings as readonly string[]).includes(key);

/**
 * The installed extensions as the flows read them (their form actions and protectors): providers/registry.ts
 * implements it a layer above, so the flows name it by what they use.
 */
export interface FlowExtensions {
  list(): readonly { factory: ProviderFactory }[];
  readonly formActions: ReadonlyMap<string, { factory: FormActionFactory; instance: FormAction }>;
  readonly formProtectors: ReadonlyMap<string, { factory: FormProtectorFactory; instance: FormProtector }>;
}
