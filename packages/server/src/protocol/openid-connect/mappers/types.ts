import type { Client, Organization, Realm, User } from '../../../model/types.js';
import type { EffectiveRoles } from '../../../services/roles.js';

/** The documents mappers write to: the access token, the ID token, the userinfo answer, the introspection answer. */
export type TokenKind = 'access' | 'id' | 'userinfo' | 'introspection';

export type Claims = Record<string, unknown>;

/** What a mapper may read; loaded once per token request, only the parts the applied mappers need. */
export interface MapperData {
  realm: Realm;
  client: Client;
  user: User;
  /** The user's roles within the client's scope (and the applied scopes'); empty unless a mapper needs them. */
  roles: EffectiveRoles;
  /** The user's groups, each as its path of names from the top; empty unless a group mapper applies. */
  groups: string[][];
  /** The user's organizations; empty unless an organization mapper applies. */
  organizations: Organization[];
  /** By organization id: the user's groups of each of their organizations (paths, and their roles when asked for). */
  organizationGroups?: Readonly<Record<string, OrganizationGroups>>;
  /**
   * The user's groups and their ancestors with their attributes, for attribute mappers that read through groups
   * (Keycloak's KeycloakModelUtils.resolveAttribute); empty unless one applies and the user lacks the attribute.
   */
  groupAttributes?: UserGroupAttributes;
  /** Keycloak's user session notes: AUTH_TIME; for service accounts client_id, clientHost, clientAddress. */
  notes: Record<string, string>;
  /** The server's base URL: relative redirect URIs (web origins `+`) resolve against it. */
  base: string;
}

/** A user's groups (ids, in Keycloak's order: by name) and every group on their way up, with its attributes. */
export interface UserGroupAttributes {
  memberOf: readonly string[];
  groups: Readonly<Record<string, { parentId: string | null; attributes: Readonly<Record<string, readonly string[]>> }>>;
}

/** The groups of one organization a user is directly in: paths from the organization's top, and their roles by name. */
export interface OrganizationGroups {
  paths: string[];
  realmRoles: string[];
  clientRoles: Record<string, string[]>;
}

/** A user attribute a mapper may find on the user's groups: `aggregate` (`aggregate.attrs`) reads them always. */
export interface GroupAttributeNeed {
  name: string;
  aggregate: boolean;
}

/** What a mapper reads beyond the user, the client and the notes. */
export interface MapperNeeds {
  roles?: boolean;
  groups?: boolean;
  organizations?: boolean;
  /** The user's organization groups: their paths, or their paths and the roles mapped to them. */
  organizationGroups?: 'paths' | 'roles';
  /** User attributes that fall back to the user's groups (read only when the user lacks one, or to aggregate). */
  groupAttributes?: readonly GroupAttributeNeed[];
}

/** Several mappers' needs together (the lists of attributes joined). */
export function mergeNeeds(target: MapperNeeds, add: MapperNeeds | undefined): MapperNeeds {
  if (!add) return target;
  const { groupAttributes, organizationGroups, ...flags } = add;
  Object.assign(target, flags);
  if (organizationGroups && target.organizationGroups !== 'roles') target.organizationGroups = organizationGroups;
  if (groupAttributes?.length) target.groupAttributes = [...(target.groupAttributes ?? []), ...groupAttributes];
  return target;
}

/** A mapper with its configuration read once: claim path split, types looked up. */
export interface CompiledMapper {
  needs?: MapperNeeds;
  apply(claims: Claims, data: MapperData, kind: TokenKind): void;
}

/** One mapper type: reads a mapper's configuration into a CompiledMapper. */
export interface MapperImplementation {
  id: string;
  compile(config: Record<string, string>): CompiledMapper;
}
