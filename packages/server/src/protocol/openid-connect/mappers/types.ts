import type { Client, Organization, Realm, User } from '../../../model/types.js';
import type { EffectiveRoles } from '../../../services/index.js';

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
  /** Keycloak's user session notes: AUTH_TIME; for service accounts client_id, clientHost, clientAddress. */
  notes: Record<string, string>;
  /** The server's base URL: relative redirect URIs (web origins `+`) resolve against it. */
  base: string;
}

/** What a mapper reads beyond the user, the client and the notes. */
export interface MapperNeeds {
  roles?: boolean;
  groups?: boolean;
  organizations?: boolean;
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
