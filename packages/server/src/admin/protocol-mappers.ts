import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { newId } from '../credentials/index.js';
import { badRequest, conflict, notFound } from '../model/errors.js';
import type { ProtocolMapper, Realm } from '../model/types.js';
import { isUniqueViolation, type MapperOwner } from '../storage/index.js';
import type { AdminRole } from './permissions.js';
import { parseProtocolMapper, protocolMapperRep } from '../representations/client-scope.js';
import { locationOf, pathId, recordAdminEvent, type AdminRequest } from './routing.js';

/**
 * What protocol mappers belong to: a client scope or a client, found from the request once the caller is known to
 * hold `role` over the realm (403 first, then 404 if it is not there).
 */
export interface MapperHolder {
  realm: Realm;
  owner: MapperOwner;
  /** The owner's resource path in admin events, e.g. `client-scopes/{id}`. */
  eventPath: string;
}

/** The protocols a mapper may have (as its representation's `protocol`): any other names nothing. */
const PROTOCOLS = ['openid-connect', 'saml'];

type Params = { realm: string; id: string; mapperId: string; protocol: string };

const ownerIdOf = (owner: MapperOwner) => ('clientScopeId' in owner ? owner.clientScopeId : owner.clientId);

/** A duplicate name is Keycloak's 409; nothing of the call is written (it runs in one transaction). */
async function storingMappers<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict('Protocol mapper exists with same name', 'name');
    throw error;
  }
}

/**
 * Keycloak's protocol-mappers resource, the same under a client scope and a client: `models` (list, create one,
 * read, update, delete), `add-models` (several at once, all or nothing) and `protocol/{protocol}` (list by
 * protocol). Reading needs view-clients, writing manage-clients, as Keycloak's; every mapper written goes
 * through its type's validation first.
 */
export function protocolMapperRoutes(app: FastifyInstance, ctx: ServerContext, prefix: string, holderOf: (request: AdminRequest<Params>, role: AdminRole) => Promise<MapperHolder>): void {
  const base = `${prefix}/protocol-mappers`;
  const loadMapper = async (request: AdminRequest<Params>, holder: MapperHolder): Promise<ProtocolMapper> => {
    const mapper = await ctx.storage.clientScopes.mapper(ownerIdOf(holder.owner), pathId(request.params.mapperId, 'Model'));
    if (!mapper) throw notFound('Model not found');
    return mapper;
  };

  app.get(`${base}/models`, async (request: AdminRequest<Params>) => {
    const holder = await holderOf(request, 'view-clients');
    return (await ctx.storage.clientScopes.mappers(ownerIdOf(holder.owner))).map(protocolMapperRep);
  });

  app.get(`${base}/protocol/:protocol`, async (request: AdminRequest<Params>) => {
    const holder = await holderOf(request, 'view-clients');
    const { protocol } = request.params;
    if (!PROTOCOLS.includes(protocol)) throw notFound(`Unknown protocol`);
    return (await ctx.storage.clientScopes.mappers(ownerIdOf(holder.owner))).filter((m) => m.protocol === protocol).map(protocolMapperRep);
  });

  app.post(`${base}/models`, async (request: AdminRequest<Params>, reply) => {
    const holder = await holderOf(request, 'manage-clients');
    const mapper: ProtocolMapper = { ...parseProtocolMapper(request.body), id: newId() };
    await storingMappers(() => ctx.storage.clientScopes.insertMappers(holder.realm.id, holder.owner, [mapper]));
    await recordAdminEvent(ctx, request, holder.realm, 'CREATE', 'PROTOCOL_MAPPER', `${holder.eventPath}/protocol-mappers/models/${mapper.id}`, protocolMapperRep(mapper));
    return reply.code(201).header('location', locationOf(ctx, request, mapper.id)).send();
  });

  app.post(`${base}/add-models`, async (request: AdminRequest<Params>, reply) => {
    const holder = await holderOf(request, 'manage-clients');
    if (!Array.isArray(request.body)) throw badRequest('protocolMappers: must be an array');
    const mappers = request.body.map((m, i) => ({ ...parseProtocolMapper(m, `protocolMappers[${i}]`), id: newId() }));
    // A name twice in the list is Keycloak's 409 too: its second insert meets the first (a duplicate, not bad input).
    if (new Set(mappers.map((m) => m.name)).size < mappers.length) throw conflict('Protocol mapper exists with same name', 'name');
    await storingMappers(() => ctx.storage.transaction((trx) => ctx.storage.clientScopes.insertMappers(holder.realm.id, holder.owner, mappers, trx)));
    for (const mapper of mappers) {
      await recordAdminEvent(ctx, request, holder.realm, 'CREATE', 'PROTOCOL_MAPPER', `${holder.eventPath}/protocol-mappers/models/${mapper.id}`, protocolMapperRep(mapper));
    }
    return reply.code(204).send();
  });

  app.get(`${base}/models/:mapperId`, async (request: AdminRequest<Params>) => {
    const holder = await holderOf(request, 'view-clients');
    return protocolMapperRep(await loadMapper(request, holder));
  });

  app.put(`${base}/models/:mapperId`, async (request: AdminRequest<Params>, reply) => {
    const holder = await holderOf(request, 'manage-clients');
    const existing = await loadMapper(request, holder);
    const body = request.body as { id?: unknown } | null;
    if (body && typeof body === 'object' && body.id !== undefined && body.id !== null && body.id !== existing.id) {
      throw badRequest('protocolMapper.id: does not match the mapper in the path', 'id');
    }
    const mapper: ProtocolMapper = { ...parseProtocolMapper(request.body), id: existing.id };
    await storingMappers(() => ctx.storage.clientScopes.updateMapper(ownerIdOf(holder.owner), mapper));
    await recordAdminEvent(ctx, request, holder.realm, 'UPDATE', 'PROTOCOL_MAPPER', `${holder.eventPath}/protocol-mappers/models/${mapper.id}`, protocolMapperRep(mapper));
    return reply.code(204).send();
  });

  app.delete(`${base}/models/:mapperId`, async (request: AdminRequest<Params>, reply) => {
    const holder = await holderOf(request, 'manage-clients');
    const mapper = await loadMapper(request, holder);
    await ctx.storage.clientScopes.deleteMapper(ownerIdOf(holder.owner), mapper.id);
    await recordAdminEvent(ctx, request, holder.realm, 'DELETE', 'PROTOCOL_MAPPER', `${holder.eventPath}/protocol-mappers/models/${mapper.id}`);
    return reply.code(204).send();
  });
}
