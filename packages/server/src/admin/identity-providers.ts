import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { newId } from '../credentials/index.js';
import { badRequest, conflict, notFound, serverFailure } from '../model/errors.js';
import type { IdentityProvider, IdentityProviderMapper, Realm } from '../model/types.js';
import { isUniqueViolation } from '../storage/index.js';
import { appleKeyOf, configFromMetadata, configFromMetadataUrl, idpMapperTypes, ImportConfigError, reloadProviderKeys, SIGN_IN_PROVIDER_IDS, SOCIAL_PROVIDERS, UpstreamError } from '../authentication/index.js';
import { acceptMultipart, readMultipart } from './multipart.js';
import { queryBool, queryInt, queryString } from './query.js';
import {
  identityProviderMapperRep,
  identityProviderRep,
  parseIdentityProvider,
  parseIdentityProviderMapper,
  SECRET_MASK,
  unmaskConfig,
  type IdentityProviderInput,
} from '../representations/federation.js';
import { locationOf, pathId, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';

type AliasParams = { realm: string; alias: string };

/**
 * The kinds of identity provider this server signs in through, by Keycloak's provider id, with Keycloak's names:
 * the console's Add provider cards (serverinfo) and a kind's factory (`identity-provider/providers/{id}`).
 */
export const IDENTITY_PROVIDER_KINDS: { id: string; name: string; groupName: 'User-defined' | 'Social' }[] = [
  { id: 'oidc', name: 'OpenID Connect v1.0', groupName: 'User-defined' },
  { id: 'keycloak-oidc', name: 'Keycloak OpenID Connect', groupName: 'User-defined' },
  ...Object.entries(SOCIAL_PROVIDERS).map(([id, provider]) => ({ id, name: provider.name, groupName: 'Social' as const })),
];
type MapperParams = AliasParams & { id: string };

const taken = (alias: string) => conflict(`Identity Provider ${alias} already exists`, 'alias');

/**
 * Keycloak's identity-provider resource (`/identity-provider/instances`, each provider's mappers): the providers
 * are exported and imported with the realm; OpenID Connect ones sign users in (README, Identity brokering). Reading needs
 * view-identity-providers (or view-realm), writing manage-identity-providers, as Keycloak's. Secrets in a config
 * (`clientSecret`) are answered as `**********`; a PUT that sends the mask back keeps the stored secret.
 */
export function identityProviderRoutes(app: FastifyInstance, ctx: ServerContext): void {
  // The caller's role is checked at the door, before the provider is looked up: who may not read providers learns nothing of their aliases.
  const load = async (request: AdminRequest<AliasParams>) => {
    const realm = await targetRealm(ctx, request);
    const alias = request.params.alias;
    const provider = alias.length <= 255 && !alias.includes('\u0000') ? await ctx.storage.federation.providerByAlias(realm.id, alias) : null;
    if (!provider) throw notFound('Could not find identity provider');
    return { realm, provider };
  };
  // Only OpenID Connect and the social providers of social-providers.ts sign users in; the others are kept as data.
  const inert = (realm: Realm, provider: IdentityProvider) => {
    if (SIGN_IN_PROVIDER_IDS.has(provider.providerId)) return;
    ctx.logger.warn({ realm: realm.name, alias: provider.alias, providerId: provider.providerId }, 'identity provider stored as data: Realmgate signs users in through OpenID Connect and social (github, google, …) providers only');
  };

  app.get('/realms/:realm/identity-provider/instances', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    const q = request.query;
    const brief = queryBool(q, 'briefRepresentation') ?? false;
    const providers = await ctx.storage.federation.providers(realm.id, {
      search: queryString(q, 'search'),
      realmOnly: queryBool(q, 'realmOnly') ?? false,
      first: queryInt(q, 'first', 0, Number.MAX_SAFE_INTEGER)!,
      max: queryInt(q, 'max', Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)!,
    });
    return providers.map((p) => {
      const rep = identityProviderRep(p);
      if (!brief) return rep;
      return { alias: rep.alias, displayName: rep.displayName, internalId: rep.internalId, providerId: rep.providerId, enabled: rep.enabled, config: {} };
    });
  });

  /**
   * Keycloak's check when a provider is saved: a first or post broker login flow alias that is not blank names a flow
   * of the realm (400 naming the field, "No available authentication flow with alias" in Keycloak).
   */
  const checkBrokerFlows = async (realm: Realm, input: IdentityProviderInput) => {
    for (const field of ['firstBrokerLoginFlowAlias', 'postBrokerLoginFlowAlias'] as const) {
      const alias = input.rest[field];
      if (typeof alias !== 'string' || !alias.trim()) continue;
      if (!(await ctx.flows.editor.load(realm.id)).flowByAlias(alias)) throw badRequest(`identityProvider.${field}: no authentication flow "${alias.slice(0, 255)}" in this realm`, field);
    }
  };

  /**
   * Apple's key (`p8Content`, apple-client-secret.ts) is read at every code exchange: one that is not an EC P-256
   * private key would fail every sign-in, so it is refused when saved (the mask sent back and vault references pass).
   */
  const checkAppleKey = (input: IdentityProviderInput) => {
    const key = input.config.p8Content;
    if (input.providerId !== 'apple' || typeof key !== 'string' || !key.trim() || key === SECRET_MASK || /^\$\{vault\.[^}]+\}$/.test(key)) return;
    if (!appleKeyOf(key)) throw badRequest("identityProvider.config.p8Content: is not an EC P-256 private key in PKCS#8 (the .p8 file's text, or its base64 body)", 'p8Content');
  };

  app.post('/realms/:realm/identity-provider/instances', async (request: AdminRequest, reply) => {
    const realm = await targetRealm(ctx, request);
    const input = parseIdentityProvider(request.body);
    await checkBrokerFlows(realm, input);
    checkAppleKey(input);
    const provider: IdentityProvider = { ...input, internalId: newId(), realmId: realm.id };
    try {
      await ctx.storage.federation.insertProvider(provider);
    } catch (error) {
      if (isUniqueViolation(error)) throw taken(provider.alias);
      throw error;
    }
    inert(realm, provider);
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'IDENTITY_PROVIDER', `identity-provider/instances/${provider.alias}`, identityProviderRep(provider));
    return reply.code(201).header('location', locationOf(ctx, request, provider.alias)).send();
  });

  // Keycloak's factory of a kind (the console reads it on a provider's page for the kind's extra settings). No kind
  // here has settings beyond the representation's and the config keys the console already shows, so none are listed.
  app.get('/realms/:realm/identity-provider/providers/:providerId', async (request: AdminRequest<{ realm: string; providerId: string }>) => {
    await targetRealm(ctx, request);
    const kind = IDENTITY_PROVIDER_KINDS.find((k) => k.id === request.params.providerId);
    // Keycloak answers 400 for a kind it does not have.
    if (!kind) throw badRequest(`providerId: no identity provider kind "${request.params.providerId.slice(0, 64)}" on this server`, 'providerId');
    return { name: kind.name, id: kind.id, configProperties: [], helpText: '', configMetadata: [] };
  });

  // Keycloak's reload-keys: an OpenID Connect provider's JWKS fetched again now (true); false for a provider whose
  // signatures are not checked by its JWKS URL. The fetch goes through the outbound guard, as a sign-in's.
  app.get('/realms/:realm/identity-provider/instances/:alias/reload-keys', async (request: AdminRequest<AliasParams>) => {
    const { provider } = await load(request);
    try {
      return await reloadProviderKeys(ctx.outbound, ctx.config, provider);
    } catch (error) {
      // Keycloak answers 500 when the JWKS cannot be read; the reason is the upstream's, for the administrator.
      if (error instanceof UpstreamError) throw serverFailure(`The keys of identity provider ${provider.alias} could not be reloaded: ${error.message}`);
      throw error;
    }
  });

  app.get('/realms/:realm/identity-provider/instances/:alias', async (request: AdminRequest<AliasParams>) => {
    const { provider } = await load(request);
    return identityProviderRep(provider);
  });

  app.put('/realms/:realm/identity-provider/instances/:alias', async (request: AdminRequest<AliasParams>, reply) => {
    const { realm, provider } = await load(request);
    const body = request.body as { internalId?: unknown } | null;
    if (body && typeof body === 'object' && body.internalId !== undefined && body.internalId !== null && body.internalId !== provider.internalId) {
      throw badRequest('identityProvider.internalId: does not match the identity provider in the path', 'internalId');
    }
    const input = parseIdentityProvider(request.body);
    await checkBrokerFlows(realm, input);
    checkAppleKey(input);
    const updated: IdentityProvider = { ...provider, ...input, config: unmaskConfig(input.config, provider.config) };
    try {
      await ctx.storage.federation.updateProvider(updated);
    } catch (error) {
      if (isUniqueViolation(error)) throw taken(updated.alias);
      throw error;
    }
    await recordAdminEvent(ctx, request, realm, 'UPDATE', 'IDENTITY_PROVIDER', `identity-provider/instances/${updated.alias}`, identityProviderRep(updated));
    return reply.code(204).send();
  });

  app.delete('/realms/:realm/identity-provider/instances/:alias', async (request: AdminRequest<AliasParams>, reply) => {
    const { realm, provider } = await load(request);
    await ctx.storage.federation.deleteProvider(provider.internalId);
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'IDENTITY_PROVIDER', `identity-provider/instances/${provider.alias}`);
    return reply.code(204).send();
  });

  // No mapper types: Realmgate runs no identity-provider mapper (the console's "Add mapper" offers none).
  app.get('/realms/:realm/identity-provider/instances/:alias/mapper-types', async (request: AdminRequest<AliasParams>) => {
    const { provider } = await load(request);
    return idpMapperTypes(provider.providerId);
  });

  app.get('/realms/:realm/identity-provider/instances/:alias/mappers', async (request: AdminRequest<AliasParams>) => {
    const { realm, provider } = await load(request);
    return (await ctx.storage.federation.mappers(realm.id, provider.internalId)).map((m) => identityProviderMapperRep(m));
  });

  const loadMapper = async (request: AdminRequest<MapperParams>) => {
    const { realm, provider } = await load(request);
    const id = pathId(request.params.id, 'Mapper');
    const mapper = (await ctx.storage.federation.mappers(realm.id, provider.internalId)).find((m) => m.id === id);
    if (!mapper) throw notFound('Model not found');
    return { realm, provider, mapper };
  };
  const mapperTaken = (name: string) => conflict(`Identity provider mapper ${name} already exists`, 'name');

  app.post('/realms/:realm/identity-provider/instances/:alias/mappers', async (request: AdminRequest<AliasParams>, reply) => {
    const { realm, provider } = await load(request);
    const input = parseIdentityProviderMapper(request.body);
    if (input.identityProviderAlias && input.identityProviderAlias !== provider.alias) {
      throw badRequest('identityProviderMapper.identityProviderAlias: does not match the identity provider in the path', 'identityProviderAlias');
    }
    const mapper: IdentityProviderMapper = { ...input, id: newId(), identityProviderAlias: provider.alias };
    try {
      await ctx.storage.federation.insertMapper(realm.id, provider.internalId, mapper);
    } catch (error) {
      if (isUniqueViolation(error)) throw mapperTaken(mapper.name);
      throw error;
    }
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'IDENTITY_PROVIDER_MAPPER', `identity-provider/instances/${provider.alias}/mappers/${mapper.id}`, identityProviderMapperRep(mapper));
    return reply.code(201).header('location', locationOf(ctx, request, mapper.id)).send();
  });

  app.get('/realms/:realm/identity-provider/instances/:alias/mappers/:id', async (request: AdminRequest<MapperParams>) => {
    const { mapper } = await loadMapper(request);
    return identityProviderMapperRep(mapper);
  });

  app.put('/realms/:realm/identity-provider/instances/:alias/mappers/:id', async (request: AdminRequest<MapperParams>, reply) => {
    const { realm, provider, mapper } = await loadMapper(request);
    const input = parseIdentityProviderMapper(request.body);
    if (input.identityProviderAlias && input.identityProviderAlias !== provider.alias) {
      throw badRequest('identityProviderMapper.identityProviderAlias: does not match the identity provider in the path', 'identityProviderAlias');
    }
    const updated: IdentityProviderMapper = { ...mapper, ...input, identityProviderAlias: provider.alias, config: unmaskConfig(input.config, mapper.config) };
    try {
      await ctx.storage.federation.updateMapper(provider.internalId, updated);
    } catch (error) {
      if (isUniqueViolation(error)) throw mapperTaken(updated.name);
      throw error;
    }
    await recordAdminEvent(ctx, request, realm, 'UPDATE', 'IDENTITY_PROVIDER_MAPPER', `identity-provider/instances/${provider.alias}/mappers/${mapper.id}`, identityProviderMapperRep(updated));
    return reply.code(204).send();
  });

  app.delete('/realms/:realm/identity-provider/instances/:alias/mappers/:id', async (request: AdminRequest<MapperParams>, reply) => {
    const { realm, provider, mapper } = await loadMapper(request);
    await ctx.storage.federation.deleteMapper(provider.internalId, mapper.id);
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'IDENTITY_PROVIDER_MAPPER', `identity-provider/instances/${provider.alias}/mappers/${mapper.id}`);
    return reply.code(204).send();
  });

  // Keycloak's import-config (the console's "Use discovery endpoint" and metadata file): the provider's config fields
  // read from its OpenID Provider Metadata, fetched through the outbound guard or uploaded; nothing is stored.
  app.register(async (scoped) => {
    await acceptMultipart(scoped);
    scoped.post('/realms/:realm/identity-provider/import-config', { config: { multipartBody: true } }, async (request: AdminRequest) => {
      await targetRealm(ctx, request);
      try {
        if (request.isMultipart()) {
          const { fields, file } = await readMultipart(request);
          if (!file) throw badRequest('file: is required', 'file');
          let document: unknown;
          try {
            document = JSON.parse(file.toString('utf8'));
          } catch {
            throw badRequest('file: the metadata is not JSON', 'file');
          }
          return configFromMetadata(fields.providerId ?? '', document);
        }
        const body = request.body as Record<string, unknown> | null;
        if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('The body must be a JSON object with providerId and fromUrl');
        const providerId = typeof body.providerId === 'string' ? body.providerId : '';
        if (typeof body.fromUrl !== 'string') throw badRequest('fromUrl: is required', 'fromUrl');
        return await configFromMetadataUrl(ctx.outbound, providerId, body.fromUrl);
      } catch (error) {
        if (error instanceof ImportConfigError) throw badRequest(error.message);
        throw error;
      }
    });
  });
}
