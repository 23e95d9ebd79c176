import { AppError, badRequest } from '../model/errors.js';
import {
  aliasHint,
  aliasPattern,
  keycloakBindingDefaults,
  type AuthExecution,
  type AuthFlow,
  type AuthProvider,
  type AuthenticatorConfig,
  type FlowImport,
  type FlowType,
  type Flows,
  type ImportedExecution,
  type ImportedFlow,
  type KeycloakBinding,
  type RealmFlows,
  type WalkedExecution,
} from '../flows/index.js';
import { asArray, parseRepresentation, type FieldSpec, type Spec } from './fields.js';

// The authentication management API's bodies ------------------------------------------------------------

const aliasSpec: FieldSpec = { type: 'string', pattern: aliasPattern, patternHint: aliasHint };
// PostgreSQL refuses NUL in text; descriptions may hold any other character.
const descriptionSpec: FieldSpec = { type: 'string', max: 4096, pattern: /^[^\u0000]*$/, patternHint: 'text without NUL characters' };
const requirementSpec: FieldSpec = { type: 'string', pattern: /^(REQUIRED|ALTERNATIVE|DISABLED|CONDITIONAL)$/, patternHint: 'REQUIRED, ALTERNATIVE, DISABLED or CONDITIONAL' };
const prioritySpec: FieldSpec = { type: 'integer', min: -2147483648 };
const MAX_PRIORITY = 2147483647;

export const flowSpec: Spec = {
  alias: aliasSpec,
  description: descriptionSpec,
  providerId: { type: 'string', pattern: /^(basic-flow|form-flow|client-flow)$/, patternHint: 'basic-flow, form-flow or client-flow' },
  topLevel: { type: 'boolean' },
  builtIn: { type: 'boolean' },
};
export const flowIgnored = ['id', 'authenticationExecutions'];
export const copySpec: Spec = { newName: aliasSpec };
export const newExecutionSpec: Spec = { provider: { type: 'string', min: 1 }, priority: prioritySpec };
export const newSubflowSpec: Spec = {
  alias: aliasSpec,
  type: { type: 'string', pattern: /^(basic-flow|form-flow)$/, patternHint: 'basic-flow or form-flow' },
  provider: { type: 'string' },
  description: descriptionSpec,
  priority: prioritySpec,
};
export const executionChangeSpec: Spec = {
  id: { type: 'string', min: 1 },
  requirement: requirementSpec,
  priority: prioritySpec,
  // A provider's display name for a plain execution; the subflow's new alias for a subflow (checked there).
  displayName: { type: 'string', max: 4096 },
  description: descriptionSpec,
};
export const executionChangeIgnored = ['level', 'index', 'requirementChoices', 'configurable', 'authenticationFlow', 'providerId', 'authenticationConfig', 'flowId', 'alias'];
export const requiredActionSpec: Spec = { enabled: { type: 'boolean' }, defaultAction: { type: 'boolean' }, priority: prioritySpec, config: { type: 'stringMap', max: 4096 } };
/** What the console sends back as it read it: the action's identity, which a PUT does not change. */
export const requiredActionIgnored = ['alias', 'name', 'providerId', 'configurable'];
/** Keycloak's `register-required-action` body: the provider and, optionally, its name in the realm. */
export const requiredActionRegistrationSpec: Spec = { providerId: { type: 'string', min: 1, max: 255 }, name: { type: 'string', max: 255 } };
/** Keycloak's RequiredActionConfigRepresentation. */
export const requiredActionConfigSpec: Spec = { config: { type: 'stringMap', max: 4096 } };
export const configSpec: Spec = { alias: aliasSpec, config: { type: 'stringMap', max: 4096 } };

/** An authentication API body: its spec, and priorities within a Java int as Keycloak stores them. */
export function parseBody<T>(body: unknown, spec: Spec, path: string, ignored: readonly string[] = []): T {
  const parsed = parseRepresentation(body, spec, ignored, path);
  if (typeof parsed.priority === 'number' && parsed.priority > MAX_PRIORITY) throw badRequest(`${path}.priority: must be at most ${MAX_PRIORITY}`, 'priority');
  return parsed as T;
}

export function requiredField<T>(value: T | undefined, path: string, field: string): T {
  if (value === undefined) throw badRequest(`${path}.${field}: is required`, field);
  return value;
}

// Representations, as Keycloak's (null fields left out)

function executionExportRep(flows: RealmFlows, execution: AuthExecution) {
  const config = flows.config(execution.configId);
  const subflow = execution.subFlowId ? flows.flow(execution.subFlowId) : undefined;
  return {
    ...(config ? { authenticatorConfig: config.alias } : {}),
    ...(execution.authenticator ? { authenticator: execution.authenticator } : {}),
    authenticatorFlow: execution.subFlowId !== null,
    ...(subflow ? { flowAlias: subflow.alias } : {}),
    requirement: execution.requirement,
    priority: execution.priority,
    autheticatorFlow: execution.subFlowId !== null,
    userSetupAllowed: false,
  };
}

export function flowRep(flows: RealmFlows, flow: AuthFlow) {
  return {
    id: flow.id,
    alias: flow.alias,
    ...(flow.description !== null ? { description: flow.description } : {}),
    providerId: flow.providerId,
    topLevel: flow.topLevel,
    builtIn: flow.builtIn,
    authenticationExecutions: flows.executionsOf(flow.id).map((e) => executionExportRep(flows, e)),
  };
}

export function executionRep(execution: AuthExecution) {
  const isFlow = execution.subFlowId !== null;
  return {
    id: execution.id,
    ...(execution.authenticator ? { authenticator: execution.authenticator } : {}),
    ...(execution.configId ? { authenticatorConfig: execution.configId } : {}),
    authenticatorFlow: isFlow,
    ...(execution.subFlowId ? { flowId: execution.subFlowId } : {}),
    parentFlow: execution.parentFlowId,
    priority: execution.priority,
    requirement: execution.requirement,
    autheticatorFlow: isFlow,
  };
}

export const configRep = (config: AuthenticatorConfig) => ({ id: config.id, alias: config.alias, config: config.config });

export const providerRep = (provider: AuthProvider) => ({ id: provider.id, displayName: provider.displayName, description: provider.description });

/** Keycloak's execution info: one row of the flattened tree under a flow. */
export function executionInfoRep(editor: Flows['editor'], catalog: Flows['catalog'], flows: RealmFlows, walked: WalkedExecution) {
  const { execution, level, index } = walked;
  const config = flows.config(execution.configId);
  const common = {
    id: execution.id,
    requirement: execution.requirement,
    requirementChoices: [...editor.requirementChoices(flows, execution)],
    level,
    index,
    priority: execution.priority,
  };
  const subflow = execution.subFlowId ? flows.flow(execution.subFlowId) : undefined;
  if (subflow) {
    return {
      ...common,
      displayName: subflow.alias,
      ...(subflow.description !== null ? { description: subflow.description } : {}),
      configurable: false,
      authenticationFlow: true,
      flowId: subflow.id,
      ...(subflow.providerId === 'form-flow' && execution.authenticator ? { providerId: execution.authenticator } : {}),
      ...(subflow.providerId === 'form-flow' && config ? { authenticationConfig: config.id } : {}),
    };
  }
  const provider = execution.authenticator ? catalog.get(execution.authenticator) : undefined;
  const configurable = (provider?.configProperties.length ?? 0) > 0;
  return {
    ...common,
    // Not installed (a realm file's Keycloak provider, a removed package): the provider id, and what it means.
    displayName: provider?.displayName ?? execution.authenticator ?? '',
    description: provider?.description ?? notInstalled(execution),
    configurable,
    authenticationFlow: false,
    ...(configurable && config ? { alias: config.alias } : {}),
    ...(execution.authenticator ? { providerId: execution.authenticator } : {}),
    ...(config ? { authenticationConfig: config.id } : {}),
  };
}

/** The description of a step whose provider is not installed: what it does to sign-ins (flows/runnable.ts). */
function notInstalled(execution: AuthExecution): string {
  const text = 'This provider is not installed on the server.';
  if (execution.requirement === 'DISABLED') return text;
  if ((execution.authenticator ?? '').startsWith('conditional-')) return `${text} As a condition it counts as met.`;
  return `${text} It never runs: a flow that needs this step cannot run, and sign-ins through it are refused, until the provider is installed or the step disabled.`;
}

/** Keycloak's config description of a provider: its settings as the admin console shows them. */
export const configDescriptionRep = (provider: AuthProvider) => ({
  providerId: provider.id,
  name: provider.displayName,
  helpText: provider.description,
  properties: provider.configProperties.map((p) => ({
    name: p.name,
    label: p.label,
    ...(p.helpText !== undefined ? { helpText: p.helpText } : {}),
    type: p.type,
    ...(p.defaultValue !== undefined ? { defaultValue: p.defaultValue } : {}),
    secret: p.type === 'Password',
  })),
});

// A realm file's `authenticationFlows` and `authenticatorConfig` ------------------------------------------

const flowAliasSpec = { type: 'string', pattern: aliasPattern, patternHint: aliasHint } as const;
const flowImportSpec: Spec = {
  alias: flowAliasSpec,
  description: { type: 'string', max: 4096 },
  providerId: { type: 'string', pattern: /^(basic-flow|form-flow|client-flow)$/, patternHint: 'basic-flow, form-flow or client-flow' },
  topLevel: { type: 'boolean' },
  builtIn: { type: 'boolean' },
  authenticationExecutions: { type: 'array' },
};
const executionImportSpec: Spec = {
  authenticator: { type: 'string' },
  authenticatorConfig: flowAliasSpec,
  authenticatorFlow: { type: 'boolean' },
  // Keycloak's exports carry this misspelling beside the right one.
  autheticatorFlow: { type: 'boolean' },
  flowAlias: flowAliasSpec,
  requirement: { type: 'string', pattern: /^(REQUIRED|ALTERNATIVE|DISABLED|CONDITIONAL)$/, patternHint: 'REQUIRED, ALTERNATIVE, DISABLED or CONDITIONAL' },
  priority: { type: 'integer', min: -2_147_483_648 },
};
const configImportSpec: Spec = { alias: flowAliasSpec, config: { type: 'stringMap', max: 4096 } };

function parseImportedFlow(value: unknown, path: string, onUnknown?: (path: string) => void, onBadStep?: (error: AppError) => void): ImportedFlow {
  const flow = parseRepresentation(value, flowImportSpec, ['id'], path, onUnknown);
  if (typeof flow.alias !== 'string') throw badRequest(`${path}.alias: is required`);
  const executions = asArray(flow.authenticationExecutions, `${path}.authenticationExecutions`).flatMap((e, j): ImportedExecution[] => {
    const at = `${path}.authenticationExecutions[${j}]`;
    try {
      const execution = parseRepresentation(e, executionImportSpec, ['userSetupAllowed', 'id'], at, onUnknown);
      const runsFlow = execution.authenticatorFlow === true || execution.autheticatorFlow === true;
      if (runsFlow && typeof execution.flowAlias !== 'string') throw badRequest(`${at}.flowAlias: is required when authenticatorFlow is true`);
      return [
        {
          path: at,
          authenticator: (execution.authenticator as string | undefined) ?? null,
          flowAlias: runsFlow ? (execution.flowAlias as string) : null,
          requirement: (execution.requirement as ImportedExecution['requirement'] | undefined) ?? 'DISABLED',
          priority: (execution.priority as number | undefined) ?? (j + 1) * 10,
          configAlias: (execution.authenticatorConfig as string | undefined) ?? null,
        },
      ];
    } catch (error) {
      if (!onBadStep || !(error instanceof AppError)) throw error;
      onBadStep(error);
      return [];
    }
  });
  const fileId = (value as { id?: unknown }).id;
  return {
    path,
    fileId: typeof fileId === 'string' ? fileId : null,
    alias: flow.alias,
    description: (flow.description as string | undefined) ?? null,
    providerId: (flow.providerId as FlowType | undefined) ?? 'basic-flow',
    topLevel: flow.topLevel !== false,
    executions,
  };
}

/**
 * `authenticationFlows`, `authenticatorConfig` and the seven flow bindings of a realm file. The file's own flows
 * are read strictly (a problem is 400 naming its path). Keycloak's built-in flows (`builtIn: true`) are read to be
 * merged into the realm's own; a part of one that cannot be read (an older Keycloak's `OPTIONAL`, say) is left out
 * and named in `unreadable`, since the realm has that flow anyway.
 */
export function parseAuthentication(rep: Record<string, unknown>, onUnknown?: (path: string) => void): FlowImport {
  const flows: ImportedFlow[] = [];
  const builtIns: ImportedFlow[] = [];
  const unreadable: string[] = [];
  const notKept = (error: AppError) => unreadable.push(`${error.message} (in a built-in flow; not kept)`);
  for (const [i, value] of asArray(rep.authenticationFlows, 'realm.authenticationFlows').entries()) {
    const path = `realm.authenticationFlows[${i}]`;
    if ((value as { builtIn?: unknown } | null)?.builtIn !== true) {
      flows.push(parseImportedFlow(value, path, onUnknown));
      continue;
    }
    try {
      builtIns.push(parseImportedFlow(value, path, onUnknown, notKept));
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      notKept(error);
    }
  }
  const bindings = (Object.keys(keycloakBindingDefaults) as KeycloakBinding[]).flatMap((field) => {
    const alias = rep[field];
    if (alias === undefined || alias === null) return [];
    if (typeof alias !== 'string') throw badRequest(`realm.${field}: must be a string`, field);
    return [{ field, alias }];
  });
  const configs = asArray(rep.authenticatorConfig, 'realm.authenticatorConfig').map((value, i) => {
    const path = `realm.authenticatorConfig[${i}]`;
    const config = parseRepresentation(value, configImportSpec, ['id'], path, onUnknown);
    if (typeof config.alias !== 'string') throw badRequest(`${path}.alias: is required`);
    return { path, alias: config.alias, config: (config.config as Record<string, string> | undefined) ?? {} };
  });
  return { flows, configs, builtIns, unreadable, bindings };
}
