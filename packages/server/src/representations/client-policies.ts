import { isIP } from 'node:net';
import {
  CLIENT_POLICY_MODES,
  CONDITION,
  ENFORCED_EXECUTORS,
  EVALUATED_CONDITIONS,
  EXECUTOR,
  FAPI_ALGORITHMS,
  UNSUPPORTED_CONDITIONS,
  UPDATER_SOURCES,
  UNSUPPORTED_EXECUTORS,
  configFlag,
  configList,
  domainPattern,
  globalClientProfiles,
  type ClientPolicy,
  type ClientPolicyCondition,
  type ClientPolicyExecutor,
  type ClientProfile,
} from '../model/client-policies.js';
import { badRequest } from '../model/errors.js';
import { CLIENT_AUTHENTICATOR_TYPES } from '../model/types.js';

/**
 * Reads Keycloak's ClientProfilesRepresentation and ClientPoliciesRepresentation (the admin API's PUT bodies and a
 * realm file's `clientProfiles`/`clientPolicies`). `globalProfiles`/`globalPolicies` are read-only and ignored, as
 * Keycloak ignores them. Every executor and condition is one this server runs, or the body is refused naming it
 * (400): never stored to be silently ignored.
 */

const MAX_ITEMS = 100;
const MAX_TEXT = 255;
const MAX_CONFIG_JSON = 16_384;

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

function text(value: unknown, path: string, required: boolean): string | undefined {
  if (value === undefined || value === null) {
    if (required) throw badRequest(`${path}: is required`);
    return undefined;
  }
  if (typeof value !== 'string' || value.includes('\u0000') || value.length > MAX_TEXT) throw badRequest(`${path}: must be a string of at most ${MAX_TEXT} characters`);
  if (required && value.trim() === '') throw badRequest(`${path}: must not be empty`);
  return value;
}

function list(value: unknown, path: string): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw badRequest(`${path}: must be a list`);
  if (value.length > MAX_ITEMS) throw badRequest(`${path}: at most ${MAX_ITEMS} entries`);
  return value;
}

function configuration(value: unknown, path: string): Json {
  if (value === undefined || value === null) return {};
  if (!isObject(value)) throw badRequest(`${path}: must be a JSON object`);
  const json = JSON.stringify(value);
  if (json.length > MAX_CONFIG_JSON || json.includes('\\u0000')) throw badRequest(`${path}: too large, or holds a NUL character`);
  return value;
}

function unknownFields(item: Json, allowed: readonly string[], path: string): void {
  const extra = Object.keys(item).find((k) => !allowed.includes(k));
  if (extra) throw badRequest(`${path}.${extra}: unrecognized field`, extra);
}

/** 400 naming an executor this server does not run (and why), or that Keycloak does not have. */
export function unsupportedExecutor(executor: string, path: string): Error {
  const reason = UNSUPPORTED_EXECUTORS[executor];
  return reason
    ? badRequest(`${path}: the executor ${executor} is not enforced by Realmgate (${reason}); enforced: ${ENFORCED_EXECUTORS.join(', ')}`)
    : badRequest(`${path}: no executor provider ${executor}; enforced: ${ENFORCED_EXECUTORS.join(', ')}`);
}

function checkExecutorConfig(executor: string, config: Json, path: string): void {
  if (executor === EXECUTOR.clientAuthenticator) {
    const allowed = configList(config['allowed-client-authenticators']);
    const known = [...CLIENT_AUTHENTICATOR_TYPES, 'client-x509'] as readonly string[];
    const bad = allowed.find((a) => !known.includes(a));
    if (bad) throw badRequest(`${path}.configuration.allowed-client-authenticators: no client authenticator ${bad}`);
    const fallback = config['default-client-authenticator'];
    if (fallback !== undefined && fallback !== null) {
      if (typeof fallback !== 'string' || !allowed.includes(fallback)) throw badRequest(`${path}.configuration.default-client-authenticator: must be one of allowed-client-authenticators`);
      if (!(CLIENT_AUTHENTICATOR_TYPES as readonly string[]).includes(fallback)) throw badRequest(`${path}.configuration.default-client-authenticator: ${fallback} is not run by Realmgate`);
    }
  }
  if (executor === EXECUTOR.secureRedirectUris) {
    const bad = configList(config['allow-permitted-domains']).find((pattern) => domainPattern(pattern) === null);
    if (bad !== undefined) throw badRequest(`${path}.configuration.allow-permitted-domains: not a regular expression: ${bad.slice(0, 100)}`);
  }
  if (executor === EXECUTOR.signatureAlgorithm && config['default-algorithm'] !== undefined && config['default-algorithm'] !== null) {
    // Keycloak falls back to PS256 for an algorithm FAPI does not allow; refused here so the setting is never ignored.
    if (typeof config['default-algorithm'] !== 'string' || !FAPI_ALGORITHMS.includes(config['default-algorithm'])) {
      throw badRequest(`${path}.configuration.default-algorithm: must be one of ${FAPI_ALGORITHMS.join(', ')}`);
    }
  }
  if (executor === EXECUTOR.dpopBind && configFlag(config['allow-only-refresh-token-binding'])) {
    throw badRequest(`${path}.configuration.allow-only-refresh-token-binding: not enforced by Realmgate (a public client's access and refresh tokens are both bound)`);
  }
}

export function parseExecutor(value: unknown, path: string): ClientPolicyExecutor {
  if (!isObject(value)) throw badRequest(`${path}: must be a JSON object`);
  unknownFields(value, ['executor', 'configuration'], path);
  const executor = text(value.executor, `${path}.executor`, true)!;
  if (!ENFORCED_EXECUTORS.includes(executor)) throw unsupportedExecutor(executor, path);
  const config = configuration(value.configuration, `${path}.configuration`);
  checkExecutorConfig(executor, config, path);
  return { executor, configuration: config };
}

function checkConditionConfig(condition: string, config: Json, path: string): void {
  if (condition === CONDITION.attributes && config.attributes !== undefined) {
    let ok = typeof config.attributes === 'string';
    try {
      ok &&= Array.isArray(JSON.parse(config.attributes as string));
    } catch {
      ok = false;
    }
    if (!ok) throw badRequest(`${path}.configuration.attributes: must be a JSON text of [{"key": …, "value": …}]`);
  }
  if (condition === CONDITION.updaterContext) {
    const bad = configList(config['update-client-source']).find((t) => !(UPDATER_SOURCES as readonly string[]).includes(t));
    if (bad !== undefined) throw badRequest(`${path}.configuration.update-client-source: ${bad.slice(0, 100)} is not one of ${UPDATER_SOURCES.join(', ')}`);
  }
  if (condition === CONDITION.updaterSourceHost) {
    // Keycloak resolves host names (and trusted domains by reverse lookup) for every client saved; here a trusted
    // host is an address or localhost, so saving a client never waits on DNS.
    const bad = configList(config['trusted-hosts']).find((h) => h.toLowerCase() !== 'localhost' && isIP(h.replace(/^\[|\]$/g, '')) === 0);
    if (bad !== undefined) throw badRequest(`${path}.configuration.trusted-hosts: ${bad.slice(0, 100)} is not an IP address or localhost (Realmgate does not resolve host names here)`);
  }
  if (condition === CONDITION.accessType) {
    const bad = configList(config.type).find((t) => !['confidential', 'public', 'bearer-only'].includes(t));
    if (bad) throw badRequest(`${path}.configuration.type: ${bad} is not confidential, public or bearer-only`);
  }
}

export function parseCondition(value: unknown, path: string): ClientPolicyCondition {
  if (!isObject(value)) throw badRequest(`${path}: must be a JSON object`);
  unknownFields(value, ['condition', 'configuration'], path);
  const condition = text(value.condition, `${path}.condition`, true)!;
  if (!EVALUATED_CONDITIONS.includes(condition)) {
    const reason = UNSUPPORTED_CONDITIONS[condition];
    const known = `evaluated: ${EVALUATED_CONDITIONS.join(', ')}`;
    throw badRequest(reason ? `${path}: the condition ${condition} is ${reason} by Realmgate; ${known}` : `${path}: no condition provider ${condition}; ${known}`);
  }
  const config = configuration(value.configuration, `${path}.configuration`);
  checkConditionConfig(condition, config, path);
  return { condition, configuration: config };
}

/** A ClientProfilesRepresentation's `profiles`: names unique and not a global profile's. */
export function parseClientProfiles(body: unknown, path = 'clientProfiles'): ClientProfile[] {
  if (!isObject(body)) throw badRequest(`${path}: must be a JSON object`);
  unknownFields(body, ['profiles', 'globalProfiles'], path);
  const globals = new Set(globalClientProfiles().map((p) => p.name));
  const seen = new Set<string>();
  return list(body.profiles, `${path}.profiles`).map((value, i) => {
    const at = `${path}.profiles[${i}]`;
    if (!isObject(value)) throw badRequest(`${at}: must be a JSON object`);
    unknownFields(value, ['name', 'description', 'executors'], at);
    const name = text(value.name, `${at}.name`, true)!;
    if (globals.has(name)) throw badRequest(`${at}.name: ${name} is a global profile's name`);
    if (seen.has(name)) throw badRequest(`${at}.name: ${name} is given twice`);
    seen.add(name);
    const description = text(value.description, `${at}.description`, false);
    const executors = list(value.executors, `${at}.executors`).map((x, j) => parseExecutor(x, `${at}.executors[${j}]`));
    return { name, ...(description !== undefined ? { description } : {}), executors };
  });
}

/**
 * A ClientPoliciesRepresentation's `policies`: each names profiles of `profiles` (the realm's) or global ones, and a
 * global profile only when this server runs all of its executors.
 */
export function parseClientPolicies(body: unknown, profiles: readonly ClientProfile[], path = 'clientPolicies'): ClientPolicy[] {
  if (!isObject(body)) throw badRequest(`${path}: must be a JSON object`);
  unknownFields(body, ['policies', 'globalPolicies'], path);
  const realmProfiles = new Set(profiles.map((p) => p.name));
  const globals = new Map(globalClientProfiles().map((p) => [p.name, p]));
  const seen = new Set<string>();
  return list(body.policies, `${path}.policies`).map((value, i) => {
    const at = `${path}.policies[${i}]`;
    if (!isObject(value)) throw badRequest(`${at}: must be a JSON object`);
    unknownFields(value, ['name', 'description', 'enabled', 'mode', 'conditions', 'profiles'], at);
    const name = text(value.name, `${at}.name`, true)!;
    if (seen.has(name)) throw badRequest(`${at}.name: ${name} is given twice`);
    seen.add(name);
    const description = text(value.description, `${at}.description`, false);
    if (value.enabled !== undefined && value.enabled !== null && typeof value.enabled !== 'boolean') throw badRequest(`${at}.enabled: must be true or false`);
    const mode = value.mode === undefined || value.mode === null ? undefined : value.mode;
    if (mode !== undefined && !(CLIENT_POLICY_MODES as readonly unknown[]).includes(mode)) throw badRequest(`${at}.mode: the client policy ${name} has an invalid mode (DEFAULT or STRICT)`);
    const conditions = list(value.conditions, `${at}.conditions`).map((c, j) => parseCondition(c, `${at}.conditions[${j}]`));
    const names = list(value.profiles, `${at}.profiles`).map((p, j) => text(p, `${at}.profiles[${j}]`, true)!);
    for (const [j, profile] of names.entries()) {
      if (realmProfiles.has(profile)) continue;
      const global = globals.get(profile);
      if (!global) throw badRequest(`${at}.profiles[${j}]: no client profile ${profile}`);
      const unrun = global.executors.find((x) => !ENFORCED_EXECUTORS.includes(x.executor));
      if (unrun) throw unsupportedExecutor(unrun.executor, `${at}.profiles[${j}] (global profile ${profile})`);
      for (const x of global.executors) checkExecutorConfig(x.executor, x.configuration, `${at}.profiles[${j}] (global profile ${profile})`);
    }
    return { name, ...(description !== undefined ? { description } : {}), enabled: value.enabled === true, ...(mode ? { mode: mode as ClientPolicy['mode'] } : {}), conditions, profiles: names };
  });
}
