/** The flow tables, in storage's encoding: 0/1 flags, JSON text. `Database` in storage/schema.ts extends this. */
type Flag = number;

export interface AuthFlowTable {
  id: string;
  realm_id: string;
  /** Unique within the realm, subflows included: Keycloak addresses flows by alias. */
  alias: string;
  description: string | null;
  /** `basic-flow`, `form-flow` or `client-flow`. */
  provider_id: string;
  top_level: Flag;
  built_in: Flag;
}

export interface AuthExecutionTable {
  id: string;
  realm_id: string;
  parent_flow_id: string;
  /** Provider id; null for a basic subflow (a form subflow keeps its form provider here, as Keycloak). */
  authenticator: string | null;
  sub_flow_id: string | null;
  requirement: string;
  priority: number;
  authenticator_config_id: string | null;
}

export interface AuthenticatorConfigTable {
  id: string;
  realm_id: string;
  /** Unique within the realm, as Keycloak checks. */
  alias: string;
  /** JSON Record<string,string> */
  config: string;
}

export interface FlowTables {
  auth_flow: AuthFlowTable;
  auth_execution: AuthExecutionTable;
  authenticator_config: AuthenticatorConfigTable;
}
