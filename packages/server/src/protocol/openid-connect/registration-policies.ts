import { isIP } from 'node:net';
import type { ProtocolContext } from '../context.js';
import { CLIENT_REGISTRATION_POLICY_TYPE, DEFAULT_MAX_CLIENTS, POLICY, POLICY_CONFIG, type RegistrationAuth } from '../../model/client-registration.js';
import { oauthError } from '../../model/errors.js';
import type { Client, Component, Realm } from '../../model/types.js';

/**
 * Keycloak's client registration policies, run: the realm's components of the policy type whose sub-type is how the
 * caller registers (`anonymous`, or `authenticated` for an initial access token, a user token or the registration
 * access token of a client registered so), in name order, the first refusal answering 403 `insufficient_scope`
 * "Policy '<name>' rejected request to client-registration service. Details: <why>", as Keycloak's. A policy of a
 * provider this server does not run refuses (never passes unseen).
 *
 * Trusted hosts never look a name up in DNS (a deliberate difference): the sender's address matches an entry that is
 * that address, or `localhost` / `*.localhost` for a loopback address; Keycloak would also resolve host names and
 * reverse-resolve the sender for domain entries.
 */

export type PolicyHook = 'register' | 'update' | 'view' | 'delete';

export interface PolicyInput {
  /** The sender's address (request.ip: X-Forwarded-For only from a trusted proxy). */
  ip: string;
  /** The client as it will be (register, update) or is (view, delete). Register may change it (full scope, disabled). */
  client: Partial<Client>;
  /** Fields the request gave (register, update). */
  given?: Partial<Client>;
  defaultClientScopes?: string[];
  optionalClientScopes?: string[];
  /** The client's scope names before an update (those stay allowed). */
  existingScopes?: string[];
  mapperTypes?: string[];
}

class Refusal extends Error {}

const list = (c: Component, key: string) => (c.config[key] ?? []).map((v) => v.trim()).filter((v) => v !== '');
const bool = (c: Component, key: string, fallback: boolean) => {
  const value = c.config[key]?.[0];
  return value === undefined || value === '' ? fallback : value === 'true';
};

const normalizeIp = (ip: string) => ip.toLowerCase().replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');
const isLoopback = (ip: string) => ip.startsWith('127.') || ip === '::1';

function domainMatches(host: string, entry: string): boolean {
  if (entry.startsWith('*.')) {
    const domain = entry.slice(2).toLowerCase();
    return host === domain || host.endsWith(`.${domain}`);
  }
  return host === entry.toLowerCase();
}

function senderTrusted(ip: string, entries: string[]): boolean {
  const address = normalizeIp(ip);
  for (const entry of entries) {
    const bare = entry.replace(/^\[|\]$/g, '');
    if (!entry.startsWith('*.') && isIP(bare) && normalizeIp(bare) === address) return true;
    // Keycloak names a loopback sender `localhost` for its domain entries; no other name is resolved.
    if (isLoopback(address) && domainMatches('localhost', entry)) return true;
  }
  return false;
}

function uriTrusted(uri: string, entries: string[], what: 'URL' | 'URI'): void {
  let host: string;
  try {
    // A wildcard redirect (`https://app.example/*`) is judged by its host.
    host = new URL(uri.replace(/\*$/, '')).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  } catch {
    throw new Refusal(`${what} is malformed`);
  }
  if (!entries.some((entry) => domainMatches(host, entry.replace(/^\[|\]$/g, '')))) throw new Refusal(`${what} doesn't match any trusted host or trusted domain`);
}

function trustedHosts(policy: Component, hook: PolicyHook, input: PolicyInput): void {
  const entries = list(policy, POLICY_CONFIG.trustedHosts);
  if (bool(policy, POLICY_CONFIG.hostMustMatch, true) && !senderTrusted(input.ip, entries)) throw new Refusal('Host not trusted.');
  if ((hook === 'register' || hook === 'update') && bool(policy, POLICY_CONFIG.clientUrisMustMatch, true)) {
    const c = input.client;
    const root = c.rootUrl ?? null;
    const absolute = (u: string | null | undefined) => (!u ? null : u.startsWith('/') ? (root ? root + u : null) : u);
    if (root) uriTrusted(root, entries, 'URL');
    const base = absolute(c.baseUrl);
    if (base) uriTrusted(base, entries, 'URL');
    for (const redirect of c.redirectUris ?? []) {
      const resolved = absolute(redirect);
      if (resolved) uriTrusted(resolved, entries, 'URI');
    }
  }
}

async function runOne(ctx: Pick<ProtocolContext, 'storage'>, realm: Realm, policy: Component, hook: PolicyHook, input: PolicyInput): Promise<void> {
  const writing = hook === 'register' || hook === 'update';
  switch (policy.providerId) {
    case POLICY.trustedHosts:
      return trustedHosts(policy, hook, input);
    case POLICY.maxClients: {
      if (hook !== 'register') return;
      const max = Number(policy.config[POLICY_CONFIG.maxClients]?.[0] ?? DEFAULT_MAX_CLIENTS);
      if ((await ctx.storage.clientRegistration.countClients(realm.id)) >= max) throw new Refusal(`It's allowed to have max ${max} clients per realm`);
      return;
    }
    case POLICY.fullScopeDisabled:
      if (hook === 'register') input.client.fullScopeAllowed = false;
      else if (hook === 'update' && input.given?.fullScopeAllowed === true) throw new Refusal('Not permitted to enable fullScopeAllowed');
      return;
    case 'client-disabled':
      if (hook === 'register') input.client.enabled = false;
      else if (hook === 'update' && input.given?.enabled === true) throw new Refusal('Not permitted to enable client');
      return;
    case POLICY.consentRequired:
      // As Keycloak's: a client registered so asks the user's consent (the consent screen), and keeps asking.
      if (hook === 'register') input.client.consentRequired = true;
      else if (hook === 'update' && input.given?.consentRequired === false) throw new Refusal('Not permitted to update consentRequired to false');
      return;
    case POLICY.protocolMappers: {
      if (!writing) return;
      const allowed = new Set(list(policy, POLICY_CONFIG.allowedMapperTypes));
      if ((input.mapperTypes ?? []).some((type) => !allowed.has(type))) throw new Refusal('ProtocolMapper type not allowed');
      return;
    }
    case POLICY.clientScopes: {
      if (!writing) return;
      const allowed = new Set(list(policy, POLICY_CONFIG.allowedClientScopes));
      if (bool(policy, POLICY_CONFIG.allowDefaultScopes, true)) {
        const links = await ctx.storage.clientScopes.realmLinks(realm.id);
        for (const scope of await ctx.storage.clientScopes.byIds(realm.id, links.map((l) => l.scopeId))) allowed.add(scope.name);
      }
      const kept = new Set(hook === 'update' ? (input.existingScopes ?? []) : []);
      const requested = [...(input.defaultClientScopes ?? []), ...(input.optionalClientScopes ?? [])].filter((name) => !kept.has(name));
      if (requested.some((name) => !allowed.has(name))) throw new Refusal('Not permitted to use specified clientScope');
      return;
    }
    default:
      throw new Refusal(`Policy of type '${policy.providerId}' not found`);
  }
}

/** Runs the realm's policies for `auth` at `hook`; the first refusal is a 403 naming the policy. */
export async function runRegistrationPolicies(ctx: Pick<ProtocolContext, 'storage'>, realm: Realm, auth: RegistrationAuth, hook: PolicyHook, input: PolicyInput): Promise<void> {
  // Who may call first: Trusted Hosts policies run before the others (then name order), so an untrusted sender hears
  // "Host not trusted." whatever else would refuse, as Keycloak's defaults (in the order it creates them) answer.
  const policies = (await ctx.storage.federation.components(realm.id, { parentId: realm.id, providerType: CLIENT_REGISTRATION_POLICY_TYPE }))
    .filter((c) => c.subType === auth)
    .sort((a, b) => Number(b.providerId === POLICY.trustedHosts) - Number(a.providerId === POLICY.trustedHosts));
  for (const policy of policies) {
    try {
      await runOne(ctx, realm, policy, hook, input);
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      throw oauthError.insufficient_scope(`Policy '${policy.name}' rejected request to client-registration service. Details: ${error.message}`);
    }
  }
}
