import type { ClientScope, ClientScopeSet, ProtocolMapper } from '../../../model/types.js';
import { acrMapper } from './acr.js';
import { addressMapper } from './address.js';
import { allowedOriginsMapper } from './allowed-origins.js';
import { audienceResolveMapper } from './audience-resolve.js';
import { audienceMapper } from './audience.js';
import { targetsOf } from './claims.js';
import { clientRoleMapper } from './client-role.js';
import { fullNameMapper } from './full-name.js';
import { groupMembershipMapper } from './group-membership.js';
import { hardcodedClaimMapper } from './hardcoded-claim.js';
import { organizationGroupMembershipMapper } from './organization-group-membership.js';
import { organizationMembershipMapper } from './organization-membership.js';
import { realmRoleMapper } from './realm-role.js';
import { sessionNoteMapper } from './session-note.js';
import { subMapper } from './sub.js';
import { mergeNeeds, type Claims, type CompiledMapper, type MapperData, type MapperImplementation, type MapperNeeds, type TokenKind } from './types.js';
import { userAttributeMapper } from './user-attribute.js';
import { userPropertyMapper } from './user-property.js';

export type { Claims, MapperData, MapperNeeds, TokenKind } from './types.js';
export { addAudience } from './claims.js';
export { loadMapperData } from './data.js';

/** Every mapper type Realmgate runs, by Keycloak's id (model/protocol-mapper-types.ts lists the same ids). */
export const MAPPER_IMPLEMENTATIONS: ReadonlyMap<string, MapperImplementation> = new Map(
  [
    audienceMapper, hardcodedClaimMapper, userAttributeMapper, userPropertyMapper, realmRoleMapper, clientRoleMapper,
    groupMembershipMapper, fullNameMapper, audienceResolveMapper, allowedOriginsMapper, subMapper, acrMapper,
    sessionNoteMapper, addressMapper, organizationMembershipMapper, organizationGroupMembershipMapper,
  ].map((m) => [m.id, m]),
);

const KINDS: readonly TokenKind[] = ['access', 'id', 'userinfo', 'introspection'];

/**
 * A mapper's compiled form and the documents it writes to, or null for a type Realmgate does not run (SAML's). The
 * organization group mapper writes under the claim of the request's organization membership mapper (Keycloak's
 * effective model): without one among `all`, it writes nothing, as Keycloak's.
 */
function compileMapper(mapper: ProtocolMapper, all: readonly ProtocolMapper[]): { mapper: CompiledMapper; kinds: TokenKind[] } | null {
  const implementation = mapper.protocol === 'openid-connect' ? MAPPER_IMPLEMENTATIONS.get(mapper.protocolMapper) : undefined;
  if (!implementation) return null;
  let config = mapper.config;
  if (implementation === organizationGroupMembershipMapper) {
    const membership = all.find((m) => m.protocol === 'openid-connect' && m.protocolMapper === organizationMembershipMapper.id);
    if (!membership) return null;
    config = { ...config, 'claim.name': membership.config['claim.name'] || 'organization' };
  }
  const targets = targetsOf(mapper.config);
  return { mapper: implementation.compile(config), kinds: KINDS.filter((k) => targets[k]) };
}

/** What a request's `scope` makes of a client's scope set: the scopes applied, the token's `scope`, the mappers. */
export interface ScopePlan {
  /** The applied client scopes' ids (default ones, then the optional ones asked for). */
  scopeIds: string[];
  /** The `scope` of the token and the token response. */
  scope: string;
  /** `openid` was asked for: an ID token is issued. */
  openid: boolean;
  /** Per document, the mappers to run, in Keycloak's order: the client's own, then its scopes'. */
  mappers: Record<TokenKind, CompiledMapper[]>;
  /** Per document, what its mappers read beyond the user and the client. */
  needs: Record<TokenKind, MapperNeeds>;
}

/** Plans per scope set (a stored set is one object until the scopes change) and per normalized request. */
const plans = new WeakMap<ClientScopeSet, Map<string, ScopePlan>>();
/** Bound on the plans kept per set: requests name combinations of a few optional scopes. */
const MAX_PLANS_PER_SET = 256;

const names = (requested: string | undefined) => (requested ?? '').split(/\s+/).filter(Boolean);

/**
 * The requested names that are neither `openid` nor one of the client's default or optional scopes: Keycloak
 * refuses such a request (`invalid_scope`, "Invalid scopes: …").
 */
export function unknownScopes(set: ClientScopeSet, requested: string | undefined): string[] {
  const known = new Set([...set.defaultScopes, ...set.optionalScopes].map((s) => s.name));
  return names(requested).filter((n) => n !== 'openid' && !known.has(n));
}

/** The request's scope as a grant keeps it: each name once, in the order asked; `offline_access` dropped unless allowed. */
export function normalizeScope(requested: string | undefined, offlineAllowed: boolean): string {
  return [...new Set(names(requested))].filter((n) => offlineAllowed || n !== 'offline_access').join(' ');
}

/**
 * The plan for a client scope set and a (normalized) requested scope: every default scope, and the optional ones
 * the request names. The token's `scope`: `openid` when asked for, then the applied scopes' names whose
 * `include.in.token.scope` is not "false", sorted (Keycloak's order follows its internal ids; sorted is stable).
 */
export function scopePlan(set: ClientScopeSet, requested: string): ScopePlan {
  let forSet = plans.get(set);
  if (!forSet) plans.set(set, (forSet = new Map()));
  const key = requested;
  const cached = forSet.get(key);
  if (cached) return cached;
  const asked = new Set(names(requested));
  const applied: ClientScope[] = [...set.defaultScopes, ...set.optionalScopes.filter((s) => asked.has(s.name) && !set.defaultScopes.some((d) => d.id === s.id))];
  const inScope = applied.filter((s) => s.attributes['include.in.token.scope'] !== 'false').map((s) => s.name).sort();
  const openid = asked.has('openid');
  const mappers: Record<TokenKind, CompiledMapper[]> = { access: [], id: [], userinfo: [], introspection: [] };
  const needs: Record<TokenKind, MapperNeeds> = { access: {}, id: {}, userinfo: {}, introspection: {} };
  const all = [...set.clientMappers, ...applied.flatMap((s) => s.protocolMappers)];
  // Keycloak runs mappers by priority: the organization group mapper's 10 after the membership mapper's 0.
  const ordered = [...all.filter((m) => m.protocolMapper !== organizationGroupMembershipMapper.id), ...all.filter((m) => m.protocolMapper === organizationGroupMembershipMapper.id)];
  for (const mapper of ordered) {
    const entry = compileMapper(mapper, all);
    if (!entry) continue;
    for (const kind of entry.kinds) {
      mappers[kind].push(entry.mapper);
      mergeNeeds(needs[kind], entry.mapper.needs);
    }
  }
  const plan: ScopePlan = { scopeIds: applied.map((s) => s.id), scope: [...(openid ? ['openid'] : []), ...inScope].join(' '), openid, mappers, needs };
  if (forSet.size >= MAX_PLANS_PER_SET) forSet.clear();
  forSet.set(key, plan);
  return plan;
}

/** Runs a document's mappers over `claims` (written in place and returned). */
export function runMappers(mappers: readonly CompiledMapper[], data: MapperData, kind: TokenKind, claims: Claims = {}): Claims {
  for (const mapper of mappers) mapper.apply(claims, data, kind);
  return claims;
}

/** What several documents' mappers need together. */
export function needsOf(plan: ScopePlan, kinds: readonly TokenKind[]): MapperNeeds {
  return kinds.reduce((merged, k) => mergeNeeds(merged, plan.needs[k]), {} as MapperNeeds);
}
