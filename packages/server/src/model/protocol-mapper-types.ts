import { BUILTIN_CLIENT_SCOPES } from './builtin-client-scopes.js';
import { badRequest } from './errors.js';
import type { ProtocolMapper } from './types.js';

/**
 * The catalogue of OpenID Connect protocol mapper types Realmgate runs (Keycloak's ids and configuration keys), as
 * `GET /admin/serverinfo` lists them under `protocolMapperTypes['openid-connect']` (Keycloak's
 * ProtocolMapperTypeRepresentation: id, name, category, helpText, priority, properties), and the validation every
 * entry point calls before a mapper is stored (admin API, realm import). The help texts are Realmgate's own words.
 */

/** Keycloak's ConfigPropertyRepresentation, as serverinfo lists it. */
export interface MapperConfigProperty {
  name: string;
  label: string;
  helpText: string;
  /** Keycloak's property types: String, boolean, List (one of `options`), ClientList (a client id), Role, UserProfileAttributeList. */
  type: 'String' | 'boolean' | 'List' | 'ClientList' | 'Role' | 'UserProfileAttributeList' | 'Text';
  defaultValue?: string;
  options?: string[];
  secret: boolean;
  required: boolean;
  readOnly: boolean;
}

export interface ProtocolMapperType {
  id: string;
  name: string;
  category: string;
  helpText: string;
  priority: number;
  properties: MapperConfigProperty[];
}

/** The `jsonType.label` values: how a claim's value is written. */
export const JSON_TYPES = ['String', 'long', 'int', 'boolean', 'JSON'] as const;

const prop = (name: string, label: string, type: MapperConfigProperty['type'], helpText: string, extra: Partial<MapperConfigProperty> = {}): MapperConfigProperty => ({
  name,
  label,
  helpText,
  type,
  secret: false,
  required: false,
  readOnly: false,
  ...extra,
});

const claimName = (helpText = 'Name of the claim to write. Dots nest it (a.b writes {"a":{"b":…}}); a backslash keeps a dot (a\\.b).') =>
  prop('claim.name', 'Token Claim Name', 'String', helpText);
const jsonType = prop('jsonType.label', 'Claim JSON Type', 'List', 'Type the value is written as: a string, a number (long, int), a boolean or parsed JSON.', {
  options: [...JSON_TYPES],
  defaultValue: 'String',
});
const multivalued = (defaultValue?: string) =>
  prop('multivalued', 'Multivalued', 'boolean', 'Write every value as a JSON array; off, only the first (roles: the list as one string).', defaultValue ? { defaultValue } : {});

/** Which tokens a mapper writes to; `defaults` gives each one's default ('true' unless listed false). */
function targets(which: ('id' | 'access' | 'lightweight' | 'userinfo' | 'introspection')[], off: string[] = []): MapperConfigProperty[] {
  const all = {
    id: prop('id.token.claim', 'Add to ID token', 'boolean', 'Write the claim into the ID token.'),
    access: prop('access.token.claim', 'Add to access token', 'boolean', 'Write the claim into the access token.'),
    lightweight: prop('lightweight.claim', 'Add to lightweight access token', 'boolean', 'Keycloak\'s lightweight access tokens; kept as data.', { defaultValue: 'false' }),
    userinfo: prop('userinfo.token.claim', 'Add to userinfo', 'boolean', 'Return the claim from the userinfo endpoint.'),
    introspection: prop('introspection.token.claim', 'Add to token introspection', 'boolean', 'Return the claim from the introspection endpoint.'),
  };
  return which.map((w) => {
    const p = all[w];
    return w === 'lightweight' ? p : { ...p, defaultValue: off.includes(w) ? 'false' : 'true' };
  });
}

const TOKEN = 'Token mapper';
const ALL_TARGETS = targets(['id', 'access', 'lightweight', 'userinfo', 'introspection']);

export const PROTOCOL_MAPPER_TYPES: readonly ProtocolMapperType[] = [
  {
    id: 'oidc-audience-mapper',
    name: 'Audience',
    category: TOKEN,
    helpText: 'Adds a client id or a custom string to the token\'s audience (aud).',
    priority: 0,
    properties: [
      prop('included.client.audience', 'Included Client Audience', 'ClientList', 'Client id to add to the audience.'),
      prop('included.custom.audience', 'Included Custom Audience', 'String', 'Any string to add to the audience; used when no client is chosen.'),
      ...targets(['id', 'access', 'lightweight', 'introspection'], ['id']),
    ],
  },
  {
    id: 'oidc-hardcoded-claim-mapper',
    name: 'Hardcoded claim',
    category: TOKEN,
    helpText: 'Writes a fixed value into a claim.',
    priority: 0,
    properties: [claimName(), prop('claim.value', 'Claim value', 'String', 'The value written.'), jsonType, ...ALL_TARGETS],
  },
  {
    id: 'oidc-usermodel-attribute-mapper',
    name: 'User Attribute',
    category: TOKEN,
    helpText: 'Writes a user attribute (username, email, firstName and lastName count as attributes) into a claim.',
    priority: 0,
    properties: [
      prop('user.attribute', 'User Attribute', 'UserProfileAttributeList', 'Name of the user attribute.'),
      claimName(),
      jsonType,
      ...ALL_TARGETS,
      multivalued(),
      prop('aggregate.attrs', 'Aggregate attribute values', 'boolean', 'Indicates if attribute values should be aggregated with the group attributes: the user\'s values and those of every group of the user and of their parent groups. Without it a user lacking the attribute gets the first group\'s (by name) that has it, up through its parents.'),
    ],
  },
  {
    id: 'oidc-usermodel-property-mapper',
    name: 'User Property',
    category: TOKEN,
    helpText: 'Writes a built-in property of the user (username, email, emailVerified, firstName, lastName, id, enabled, createdTimestamp) into a claim.',
    priority: 0,
    properties: [prop('user.attribute', 'Property', 'String', 'Name of the property.'), claimName(), jsonType, ...ALL_TARGETS],
  },
  {
    id: 'oidc-usermodel-realm-role-mapper',
    name: 'User Realm Role',
    category: TOKEN,
    helpText: 'Writes the user\'s realm roles (within the client\'s scope, composites expanded) into a claim.',
    priority: 0,
    properties: [
      prop('usermodel.realmRoleMapping.rolePrefix', 'Realm Role prefix', 'String', 'Prefix put before each role name.'),
      multivalued(),
      claimName(),
      jsonType,
      ...ALL_TARGETS,
    ],
  },
  {
    id: 'oidc-usermodel-client-role-mapper',
    name: 'User Client Role',
    category: TOKEN,
    helpText: 'Writes the user\'s client roles into a claim; ${client_id} in the claim name becomes each role\'s client id.',
    priority: 0,
    properties: [
      prop('usermodel.clientRoleMapping.clientId', 'Client ID', 'ClientList', 'Only this client\'s roles; empty for every client\'s.'),
      prop('usermodel.clientRoleMapping.rolePrefix', 'Client Role prefix', 'String', 'Prefix put before each role name.'),
      multivalued(),
      claimName(),
      jsonType,
      ...ALL_TARGETS,
    ],
  },
  {
    id: 'oidc-group-membership-mapper',
    name: 'Group Membership',
    category: TOKEN,
    helpText: 'Writes the groups the user is a member of into a claim, as a list.',
    priority: 0,
    properties: [claimName(), prop('full.path', 'Full group path', 'boolean', 'Write each group\'s path (/parent/child) instead of its name.', { defaultValue: 'true' }), ...ALL_TARGETS],
  },
  {
    id: 'oidc-full-name-mapper',
    name: 'User\'s full name',
    category: TOKEN,
    helpText: 'Writes the user\'s first and last name into the standard "name" claim.',
    priority: 0,
    properties: ALL_TARGETS,
  },
  {
    id: 'oidc-audience-resolve-mapper',
    name: 'Audience Resolve',
    category: TOKEN,
    helpText: 'Adds to the audience every client the user holds a role of in this token, other than the client asking.',
    priority: 0,
    properties: targets(['access', 'lightweight', 'introspection']),
  },
  {
    id: 'oidc-allowed-origins-mapper',
    name: 'Allowed Web Origins',
    category: TOKEN,
    helpText: 'Writes the client\'s web origins into the "allowed-origins" claim.',
    priority: 0,
    properties: targets(['access', 'lightweight', 'introspection']),
  },
  {
    id: 'oidc-sub-mapper',
    name: 'Subject (sub)',
    category: TOKEN,
    helpText: 'Writes the user\'s id into the access token\'s "sub" claim (the ID token always has it).',
    priority: 0,
    properties: targets(['access', 'lightweight', 'introspection']),
  },
  {
    id: 'oidc-acr-mapper',
    name: 'Authentication Context Class Reference (ACR)',
    category: TOKEN,
    helpText: 'Writes the authentication\'s level ("acr") into the token.',
    priority: 0,
    properties: targets(['id', 'access', 'lightweight', 'introspection']),
  },
  {
    id: 'oidc-usersessionmodel-note-mapper',
    name: 'User Session Note',
    category: TOKEN,
    helpText: 'Writes a note of the user session into a claim: AUTH_TIME, and for service accounts client_id, clientHost, clientAddress.',
    priority: 0,
    properties: [prop('user.session.note', 'User Session Note', 'String', 'Name of the note.'), claimName(), jsonType, ...targets(['id', 'access', 'lightweight', 'introspection'])],
  },
  {
    id: 'oidc-address-mapper',
    name: 'User Address',
    category: TOKEN,
    helpText: 'Writes the "address" claim from the user\'s attributes, one per part.',
    priority: 0,
    properties: [
      ...ALL_TARGETS,
      ...['street', 'locality', 'region', 'postal_code', 'country', 'formatted'].map((part) =>
        prop(`user.attribute.${part}`, `User Attribute Name for ${part}`, 'String', `User attribute holding the address's ${part}.`, { defaultValue: part }),
      ),
    ],
  },
  {
    id: 'oidc-organization-membership-mapper',
    name: 'Organization Membership',
    category: TOKEN,
    helpText: 'Writes the organizations the user is a member of (their aliases) into a claim.',
    priority: 0,
    properties: [
      claimName(),
      jsonType,
      multivalued('true'),
      prop('addOrganizationId', 'Add organization id', 'boolean', 'Write each organization as an object carrying its id.', { defaultValue: 'false' }),
      prop('addOrganizationAttributes', 'Add organization attributes', 'boolean', 'Write each organization as an object carrying its attributes.', { defaultValue: 'false' }),
      ...targets(['id', 'access', 'lightweight', 'userinfo', 'introspection'], ['userinfo']),
    ],
  },
  {
    id: 'oidc-organization-group-membership-mapper',
    name: 'Organization Group Membership',
    category: TOKEN,
    helpText: "Writes, under the organization claim, each organization's groups the user is in (and their roles).",
    priority: 10,
    properties: [
      prop('addGroupRoleMappings', 'Add group role mappings', 'boolean', "Also write the roles mapped to the user's organization groups (realm_access, resource_access).", { defaultValue: 'false' }),
      ...targets(['id', 'access', 'lightweight', 'userinfo', 'introspection'], ['userinfo']),
    ],
  },
];

const TYPES = new Map(PROTOCOL_MAPPER_TYPES.map((t) => [t.id, t]));

export const PROTOCOL_MAPPER_TYPE_IDS: readonly string[] = PROTOCOL_MAPPER_TYPES.map((t) => t.id);

export function protocolMapperType(id: string): ProtocolMapperType | undefined {
  return TYPES.get(id);
}

/**
 * The mapper part of `GET /admin/serverinfo`: `protocolMapperTypes` (this catalogue) and `builtinProtocolMappers`
 * (the built-in client scopes' mappers, each once by name, as the admin console offers them "by configuration").
 */
export function mapperServerInfo(): { protocolMapperTypes: Record<string, readonly ProtocolMapperType[]>; builtinProtocolMappers: Record<string, Omit<ProtocolMapper, 'id'>[]> } {
  const builtin = new Map<string, Omit<ProtocolMapper, 'id'>>();
  for (const scope of BUILTIN_CLIENT_SCOPES) for (const m of scope.protocolMappers) if (!builtin.has(m.name)) builtin.set(m.name, m);
  return { protocolMapperTypes: { 'openid-connect': PROTOCOL_MAPPER_TYPES }, builtinProtocolMappers: { 'openid-connect': [...builtin.values()] } };
}

/**
 * Claims the token service writes itself (the token's mechanics) and no mapper's `claim.name` may write into: a
 * mapper would otherwise forge the issuer, subject, lifetime or the session. `aud` is written by the audience
 * mappers only, `sub` by the sub mapper, `acr` by the acr mapper; `auth_time`, `client_id`, `clientHost` and
 * `clientAddress` are written by session-note mappers and stay allowed.
 */
export const RESERVED_CLAIMS: ReadonlySet<string> = new Set(['iss', 'sub', 'aud', 'exp', 'iat', 'nbf', 'jti', 'typ', 'azp', 'sid', 'nonce', 'at_hash', 'c_hash', 's_hash', 'session_state', 'scope', 'cnf']);

/** A claim name's path: split on dots, `\.` keeps a dot. */
export function claimPath(name: string): string[] {
  const parts: string[] = [];
  let current = '';
  for (let i = 0; i < name.length; i++) {
    const c = name[i];
    if (c === '\\' && name[i + 1] === '.') {
      current += '.';
      i++;
    } else if (c === '.') {
      parts.push(current);
      current = '';
    } else current += c;
  }
  parts.push(current);
  return parts;
}

/** Throws a 400 (ApiError) naming the problem: unknown type, a config value of the wrong type, a reserved claim name. */
export function validateProtocolMapper(mapper: Omit<ProtocolMapper, 'id'>, path = 'protocolMapper'): void {
  if (typeof mapper.name !== 'string' || mapper.name.trim() === '') throw badRequest(`${path}.name: a protocol mapper needs a name`, 'name');
  if (mapper.protocol !== 'openid-connect' && mapper.protocol !== 'saml') throw badRequest(`${path}.protocol: unknown protocol "${String(mapper.protocol)}"`, 'protocol');
  const config = mapper.config ?? {};
  if (typeof config !== 'object' || Array.isArray(config)) throw badRequest(`${path}.config: must be an object of strings`, 'config');
  for (const [key, value] of Object.entries(config)) {
    if (typeof value !== 'string') throw badRequest(`${path}.config.${key}: must be a string`, 'config');
  }
  // SAML mappers are kept as data (Realmgate issues no SAML assertions): not checked further.
  if (mapper.protocol !== 'openid-connect') return;
  const type = TYPES.get(mapper.protocolMapper);
  if (!type) throw badRequest(`${path}.protocolMapper: unknown mapper type "${String(mapper.protocolMapper)}"`, 'protocolMapper');
  // Keys the type does not declare are kept, as Keycloak keeps them; declared ones must have their type's values.
  for (const property of type.properties) {
    const value = config[property.name];
    if (value === undefined) continue;
    if (property.type === 'boolean' && value !== 'true' && value !== 'false') {
      throw badRequest(`${path}.config.${property.name}: must be "true" or "false", not "${value}"`, 'config');
    }
    if (property.type === 'List' && property.options && !property.options.includes(value)) {
      throw badRequest(`${path}.config.${property.name}: must be one of ${property.options.join(', ')}, not "${value}"`, 'config');
    }
  }
  for (const key of ['access.token.claim', 'id.token.claim', 'userinfo.token.claim', 'introspection.token.claim', 'lightweight.claim']) {
    const value = config[key];
    if (value !== undefined && value !== 'true' && value !== 'false') throw badRequest(`${path}.config.${key}: must be "true" or "false", not "${value}"`, 'config');
  }
  const claim = config['claim.name'];
  if (claim !== undefined && type.properties.some((p) => p.name === 'claim.name')) {
    const top = claimPath(claim)[0];
    if (RESERVED_CLAIMS.has(top)) {
      throw badRequest(`${path}.config.claim.name: "${claim}" would write the reserved claim "${top}"${top === 'aud' ? ' (use an audience mapper)' : ''}`, 'config');
    }
    if (claimPath(claim).some((part) => part === '') && claim !== '') throw badRequest(`${path}.config.claim.name: "${claim}" has an empty part`, 'config');
  }
  // A hardcoded value is known now: one its type cannot hold would silently never reach a token.
  const value = config['claim.value'];
  if (mapper.protocolMapper === 'oidc-hardcoded-claim-mapper' && value !== undefined) {
    const kind = config['jsonType.label'];
    const bad =
      (kind === 'JSON' && !parsesAsJson(value)) ||
      ((kind === 'long' || kind === 'int') && !/^[-+]?\d+$/.test(value.trim())) ||
      (kind === 'boolean' && !['true', 'false'].includes(value.toLowerCase()));
    if (bad) throw badRequest(`${path}.config.claim.value: "${value}" is not a valid ${kind} (jsonType.label)`, 'config');
  }
}

function parsesAsJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
