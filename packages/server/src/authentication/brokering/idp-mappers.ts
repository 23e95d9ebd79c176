import type { AuthenticationContext } from '../context.js';
import type { IdentityProvider, IdentityProviderMapper, Realm, Role, User } from '../../model/types.js';
import { upstreamUsername, type BrokeredIdentity } from './upstream-oidc.js';

/**
 * Keycloak's identity-provider mappers for OpenID Connect providers, run where Keycloak runs them: the username
 * mapper before the first broker login flow (preprocess), every mapper on the user a first login creates or links
 * (import), and on later logins as the mapper's sync mode says (its own, or the provider's when INHERIT): IMPORT
 * does nothing again, FORCE applies it again (a role whose claim is gone is taken back), LEGACY adds what matches
 * and takes nothing away. A mapper type this server does not have is skipped (and named in the log once).
 */

type MapperContext = Pick<AuthenticationContext, 'storage' | 'logger'>;

export const IDP_MAPPER_TYPES = [
  'oidc-hardcoded-role-idp-mapper',
  'hardcoded-attribute-idp-mapper',
  'oidc-user-attribute-idp-mapper',
  'oidc-role-idp-mapper',
  'oidc-advanced-role-idp-mapper',
  'oidc-username-idp-mapper',
  'oidc-hardcoded-group-idp-mapper',
  'github-user-attribute-mapper',
  'google-user-attribute-mapper',
  'microsoft-user-attribute-mapper',
  'facebook-user-attribute-mapper',
  'linkedin-user-attribute-mapper',
] as const;

/** The social providers' own attribute importers (Keycloak's AbstractJsonUserAttributeMapper), each for its provider only. */
const JSON_ATTRIBUTE_MAPPERS: Readonly<Record<string, string>> = {
  'github-user-attribute-mapper': 'github',
  'google-user-attribute-mapper': 'google',
  'microsoft-user-attribute-mapper': 'microsoft',
  'facebook-user-attribute-mapper': 'facebook',
  'linkedin-user-attribute-mapper': 'linkedin-openid-connect',
};

/**
 * A profile field by Keycloak's `jsonField` path: `a.b` nested, `a[0]` an array's item; a list of strings is the
 * values, a blank value none. Null when absent or the path is malformed.
 */
export function jsonFieldValues(profile: Record<string, unknown>, path: string): string[] | null {
  const field = path.trim();
  if (!field || field.startsWith('.') || field.endsWith('.') || field.startsWith('[')) return null;
  let node: unknown = profile;
  for (const part of field.split('.')) {
    const indexed = /^(.*)\[\s*(\d+)\s*\]$/.exec(part);
    if (part.endsWith(']') && !indexed) return null;
    const name = indexed ? indexed[1].trim() : part;
    if (typeof node !== 'object' || node === null || Array.isArray(node)) return null;
    node = (node as Record<string, unknown>)[name];
    if (indexed && Array.isArray(node)) node = node[Number(indexed[2])];
    if (node === undefined || node === null) return null;
    if (Array.isArray(node)) {
      const values = node.filter((v): v is string => typeof v === 'string');
      return values.length ? values : null;
    }
    if (typeof node !== 'object') {
      const value = String(node).trim();
      return value ? [value] : null;
    }
  }
  return [JSON.stringify(node)];
}

type SyncMode = 'IMPORT' | 'LEGACY' | 'FORCE';

/** The mapper's sync mode: its own, or the provider's (Keycloak's INHERIT, and the default). */
export function syncModeOf(provider: IdentityProvider, mapper?: IdentityProviderMapper): SyncMode {
  const own = mapper?.config.syncMode;
  const mode = own && own !== 'INHERIT' ? own : (provider.config.syncMode ?? 'LEGACY');
  return mode === 'FORCE' || mode === 'IMPORT' ? mode : 'LEGACY';
}

/** A claim by name; `a.b` reads a nested object (Keycloak's; `a\.b` is a name with a dot). */
export function claimValue(claims: Record<string, unknown>, name: string): unknown {
  const parts = name.split(/(?<!\\)\./).map((part) => part.replace(/\\\./g, '.'));
  let value: unknown = claims;
  for (const part of parts) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

const asStrings = (value: unknown): string[] =>
  value === undefined || value === null ? [] : Array.isArray(value) ? value.filter((v) => v !== null && v !== undefined).map((v) => (typeof v === 'object' ? JSON.stringify(v) : String(v))) : [typeof value === 'object' ? JSON.stringify(value) : String(value)];

/** Whether the upstream's claim holds the value (a list claim: one of its items). */
function claimHolds(identity: BrokeredIdentity, claim: string, expected: string, regex = false): boolean {
  const values = asStrings(claimValue(identity.claims, claim)).concat(identity.accessTokenClaims ? asStrings(claimValue(identity.accessTokenClaims, claim)) : []);
  if (!regex) return values.includes(expected);
  let pattern: RegExp;
  try {
    pattern = new RegExp(`^(?:${expected})$`, 'u');
  } catch {
    return false;
  }
  return values.some((value) => pattern.test(value));
}

/** Keycloak's advanced role mapper: every `{key, value}` of its `claims` JSON holds. */
function advancedClaimsHold(identity: BrokeredIdentity, config: Record<string, string>): boolean {
  let rules: unknown;
  try {
    rules = JSON.parse(config.claims ?? '[]');
  } catch {
    return false;
  }
  if (!Array.isArray(rules) || rules.length === 0) return false;
  const regex = config['are.claim.values.regex'] === 'true';
  return rules.every((rule) => typeof rule === 'object' && rule !== null && typeof rule.key === 'string' && claimHolds(identity, rule.key, String(rule.value ?? ''), regex));
}

/** A role by Keycloak's name: `realmRole`, or `clientId.role` for a client's. */
async function roleNamed(ctx: MapperContext, realm: Realm, name: string): Promise<Role | null> {
  for (let dot = name.indexOf('.'); dot > 0; dot = name.indexOf('.', dot + 1)) {
    const client = await ctx.storage.clients.cachedByClientId(realm.id, name.slice(0, dot));
    if (client) return ctx.storage.roles.byName(client.id, name.slice(dot + 1));
  }
  return ctx.storage.roles.byName(realm.id, name);
}

/** A group by its path (`/parent/child`). */
async function groupAt(ctx: MapperContext, realm: Realm, path: string): Promise<string | null> {
  const names = path.split('/').filter(Boolean);
  const groups = await ctx.storage.groups.tree(realm.id);
  let parentId: string | null = null;
  for (const name of names) {
    const group = groups.find((g) => g.parentId === parentId && g.name === name);
    if (!group) return null;
    parentId = group.id;
  }
  return parentId;
}

/** `${CLAIM.x}` and `${ALIAS}` of the username mapper's template, each value as Keycloak writes it (lower case kept). */
function renderTemplate(template: string, identity: BrokeredIdentity, alias: string): string {
  return template.replace(/\$\{([^}]+)\}/g, (_match, name: string) => {
    const [key, ...rest] = name.split(' | ');
    let value = key === 'ALIAS' ? alias : key.startsWith('CLAIM.') ? asStrings(claimValue(identity.claims, key.slice(6)))[0] ?? '' : '';
    for (const transform of rest) value = transform.trim() === 'lowercase' ? value.toLowerCase() : transform.trim() === 'uppercase' ? value.toUpperCase() : value;
    return value;
  });
}

/** Before the first broker login flow: the username mapper names the brokered user. */
export function preprocessIdentity(provider: IdentityProvider, mappers: readonly IdentityProviderMapper[], identity: BrokeredIdentity): BrokeredIdentity {
  let result = identity;
  for (const mapper of mappers) {
    if (mapper.identityProviderMapper !== 'oidc-username-idp-mapper' || !mapper.config.template) continue;
    const username = renderTemplate(mapper.config.template, identity, provider.alias).trim();
    if (username) result = { ...result, username, upstreamUsername: upstreamUsername(identity) };
  }
  return result;
}

export type MapperPhase = 'import' | 'update';

/**
 * The mappers' effect on `user`: on a first login (`import`) every mapper; on a later one (`update`) by sync mode.
 * Returns the user as it is after (attributes and basic fields written).
 */
export async function applyMappers(ctx: MapperContext, realm: Realm, provider: IdentityProvider, mappers: readonly IdentityProviderMapper[], identity: BrokeredIdentity, user: User, phase: MapperPhase): Promise<User> {
  let current = user;
  let changed = false;
  const grant: string[] = [];
  const revoke: string[] = [];
  for (const mapper of mappers) {
    const mode = syncModeOf(provider, mapper);
    if (phase === 'update' && mode === 'IMPORT') continue;
    const c = mapper.config;
    const type = mapper.identityProviderMapper;
    switch (type) {
      // Keycloak's id of the hardcoded role mapper is oidc-hardcoded-role-idp-mapper, for every kind of provider;
      // hardcoded-role-idp-mapper is the id this server used before (issue 41), still run for mappers stored with it.
      case 'oidc-hardcoded-role-idp-mapper':
      case 'hardcoded-role-idp-mapper':
      case 'oidc-role-idp-mapper':
      case 'oidc-advanced-role-idp-mapper': {
        const role = c.role ? await roleNamed(ctx, realm, c.role) : null;
        if (!role) {
          ctx.logger.warn({ realm: realm.name, provider: provider.alias, mapper: mapper.name, role: c.role }, 'identity provider mapper names a role the realm does not have: skipped');
          continue;
        }
        const holds =
          type === 'oidc-hardcoded-role-idp-mapper' || type === 'hardcoded-role-idp-mapper' ? true : type === 'oidc-role-idp-mapper' ? Boolean(c.claim) && claimHolds(identity, c.claim, c['claim.value'] ?? '') : advancedClaimsHold(identity, c);
        if (holds) grant.push(role.id);
        else if (phase === 'update' && mode === 'FORCE') revoke.push(role.id);
        break;
      }
      case 'hardcoded-attribute-idp-mapper':
      case 'oidc-user-attribute-idp-mapper': {
        const attribute = c.attribute ?? c['user.attribute'];
        if (!attribute) continue;
        const values = type === 'hardcoded-attribute-idp-mapper' ? [c['attribute.value'] ?? ''] : asStrings(claimValue(identity.claims, c.claim ?? ''));
        if (phase === 'update' && mode === 'LEGACY' && values.length === 0) continue;
        current = withAttribute(current, attribute, values);
        changed = true;
        break;
      }
      case 'oidc-hardcoded-group-idp-mapper': {
        const groupId = c.group ? await groupAt(ctx, realm, c.group) : null;
        if (!groupId) {
          ctx.logger.warn({ realm: realm.name, provider: provider.alias, mapper: mapper.name, group: c.group }, 'identity provider mapper names a group the realm does not have: skipped');
          continue;
        }
        const member = (await ctx.storage.groups.userGroupIds(current.id)).includes(groupId);
        if (!member) await ctx.storage.groups.join(current.id, [groupId]);
        break;
      }
      case 'github-user-attribute-mapper':
      case 'google-user-attribute-mapper':
      case 'microsoft-user-attribute-mapper':
      case 'facebook-user-attribute-mapper':
      case 'linkedin-user-attribute-mapper': {
        // Keycloak: imported on a first login when present; later only with FORCE (set, or removed when gone).
        const attribute = (c.userAttribute ?? '').trim();
        if (!attribute || provider.providerId !== JSON_ATTRIBUTE_MAPPERS[type]) continue;
        if (phase === 'update' && mode !== 'FORCE') continue;
        const values = jsonFieldValues(identity.claims, c.jsonField ?? '');
        if (!values && phase === 'import') continue;
        current = withAttribute(current, attribute, values ?? []);
        changed = true;
        break;
      }
      case 'oidc-username-idp-mapper':
        // Applied before the flow (preprocessIdentity); the local username is not changed afterwards.
        break;
      default:
        ctx.logger.warn({ realm: realm.name, provider: provider.alias, mapper: mapper.name, type }, 'identity provider mapper type not supported by this server: skipped');
    }
  }
  if (changed) await ctx.storage.users.update(current);
  if (grant.length) {
    const held = new Set(await ctx.storage.roles.userRoleIds(current.id));
    const missing = [...new Set(grant)].filter((id) => !held.has(id));
    if (missing.length) await ctx.storage.roles.grant(current.id, missing);
  }
  const toRevoke = revoke.filter((id) => !grant.includes(id));
  if (toRevoke.length) await ctx.storage.roles.revoke(current.id, toRevoke);
  return current;
}

/** The basic fields Keycloak's attribute mapper writes as the user's own, else an attribute. */
function withAttribute(user: User, attribute: string, values: string[]): User {
  const first = values[0] ?? null;
  switch (attribute) {
    case 'email':
      return { ...user, email: first ? first.toLowerCase() : null };
    case 'firstName':
      return { ...user, firstName: first };
    case 'lastName':
      return { ...user, lastName: first };
    case 'username':
      return user;
    default: {
      const attributes = { ...user.attributes };
      if (values.length) attributes[attribute] = values;
      else delete attributes[attribute];
      return { ...user, attributes };
    }
  }
}
