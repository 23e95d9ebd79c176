import { badRequest } from '../model/errors.js';
import { validateProtocolMapper } from '../model/protocol-mapper-types.js';
import type { ClientScope, ProtocolMapper } from '../model/types.js';
import { asArray, parseRepresentation, type Spec } from './fields.js';

/** The protocols a client scope or mapper may have: OpenID Connect, and SAML kept as data (Keycloak exports carry it). */
const protocolSpec = { type: 'string', pattern: /^(openid-connect|saml)$/, patternHint: '"openid-connect" or "saml"' } as const;

const mapperSpec: Spec = {
  name: { type: 'string', min: 1 },
  protocol: protocolSpec,
  protocolMapper: { type: 'string', min: 1 },
  config: { type: 'stringMap', max: 4096 },
};
const mapperIgnored = ['id', 'consentRequired', 'consentText'];

export type ProtocolMapperInput = Omit<ProtocolMapper, 'id'>;

/** A protocol mapper representation, checked by its type's rules (model/protocol-mapper-types.ts): 400 naming the field. */
export function parseProtocolMapper(body: unknown, path = 'protocolMapper', onUnknown?: (path: string) => void): ProtocolMapperInput {
  const rep = parseRepresentation(body, mapperSpec, mapperIgnored, path, onUnknown) as Partial<ProtocolMapperInput>;
  if (rep.name === undefined) throw badRequest(`${path}.name: is required`, 'name');
  if (rep.protocolMapper === undefined) throw badRequest(`${path}.protocolMapper: is required`, 'protocolMapper');
  const mapper: ProtocolMapperInput = { name: rep.name, protocol: rep.protocol ?? 'openid-connect', protocolMapper: rep.protocolMapper, config: rep.config ?? {} };
  validateProtocolMapper(mapper, path);
  return mapper;
}

/** A list of mappers (`protocolMappers`, `add-models`): each parsed, two of one name refused. */
export function parseProtocolMappers(body: unknown, path: string, onUnknown?: (path: string) => void): ProtocolMapperInput[] {
  const mappers = asArray(body, path).map((m, i) => parseProtocolMapper(m, `${path}[${i}]`, onUnknown));
  const seen = new Set<string>();
  for (const [i, m] of mappers.entries()) {
    if (seen.has(m.name)) throw badRequest(`${path}[${i}].name: "${m.name}" is named twice`, 'name');
    seen.add(m.name);
  }
  return mappers;
}

const scopeSpec: Spec = {
  name: { type: 'string', min: 1 },
  description: { type: 'string', max: 2048 },
  protocol: protocolSpec,
  attributes: { type: 'stringMap', max: 4096 },
  protocolMappers: { type: 'array' },
};
const scopeIgnored = ['id'];

export type ClientScopeInput = Omit<ClientScope, 'id' | 'realmId' | 'protocolMappers'> & { protocolMappers?: ProtocolMapperInput[] };

/**
 * A scope's name is sent as a token of the `scope` parameter: RFC 6749's scope-token characters (printable ASCII
 * but space, `"` and `\`), as Keycloak 26's admin API requires of every client scope's name (SAML's too).
 */
const scopeToken = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/**
 * A client scope representation; `protocolMappers` are validated too (create, realm import). A realm file's names
 * are taken as they are (`fromFile`), as Keycloak's import takes them; the admin API checks them.
 */
export function parseClientScope(body: unknown, path = 'clientScope', onUnknown?: (path: string) => void, fromFile = false): ClientScopeInput {
  const rep = parseRepresentation(body, scopeSpec, scopeIgnored, path, onUnknown) as Partial<ClientScopeInput> & { protocolMappers?: unknown };
  if (rep.name === undefined) throw badRequest(`${path}.name: is required`, 'name');
  const protocol = rep.protocol ?? 'openid-connect';
  if (!fromFile && !scopeToken.test(rep.name)) throw badRequest(`${path}.name: a client scope's name is a scope token (no spaces, quotes or backslashes)`, 'name');
  return {
    name: rep.name,
    description: rep.description ?? null,
    protocol,
    attributes: rep.attributes ?? {},
    ...(rep.protocolMappers !== undefined ? { protocolMappers: parseProtocolMappers(rep.protocolMappers, `${path}.protocolMappers`, onUnknown) } : {}),
  };
}

export function protocolMapperRep(mapper: ProtocolMapper) {
  return { id: mapper.id, name: mapper.name, protocol: mapper.protocol, protocolMapper: mapper.protocolMapper, consentRequired: false, config: mapper.config };
}

/** Keycloak's ClientScopeRepresentation (`protocolMappers` absent when there is none, as Keycloak's). */
export function clientScopeRep(scope: ClientScope) {
  return {
    id: scope.id,
    name: scope.name,
    ...(scope.description !== null ? { description: scope.description } : {}),
    protocol: scope.protocol,
    attributes: scope.attributes,
    ...(scope.protocolMappers.length ? { protocolMappers: scope.protocolMappers.map(protocolMapperRep) } : {}),
  };
}
