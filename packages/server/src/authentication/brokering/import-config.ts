import type { OutboundGuard } from '@realmgate/spi';
import { outboundRequest } from '../../http/index.js';
import { OIDC_PROVIDER_IDS } from './upstream-oidc.js';

/**
 * Keycloak's `identity-provider/import-config` for OpenID Connect providers (the console's "Use discovery endpoint"
 * and its file upload): an OpenID Provider Metadata document read into the provider's config fields, as Keycloak's
 * OIDC factory reads it (issuer, endpoints, and signature validation by the JWKS URL when the document names one).
 * The URL is fetched through the server's outbound guard; a document that is not an object of https/http URLs is
 * refused, naming what is wrong. Nothing is stored: the console puts the fields in its form.
 */

export class ImportConfigError extends Error {}

const URL_FIELDS = [
  ['authorization_endpoint', 'authorizationUrl'],
  ['token_endpoint', 'tokenUrl'],
  ['userinfo_endpoint', 'userInfoUrl'],
  ['end_session_endpoint', 'logoutUrl'],
  ['jwks_uri', 'jwksUrl'],
] as const;

const isHttpUrl = (value: string) => {
  try {
    return ['http:', 'https:'].includes(new URL(value).protocol);
  } catch {
    return false;
  }
};

/** The config fields of a provider of `providerId` from its metadata document (parsed JSON). */
function checkProviderId(providerId: string): void {
  if (!OIDC_PROVIDER_IDS.has(providerId)) throw new ImportConfigError(`providerId: "${providerId.slice(0, 64)}" has no configuration to import (${[...OIDC_PROVIDER_IDS].join(', ')})`);
}

export function configFromMetadata(providerId: string, document: unknown): Record<string, string> {
  checkProviderId(providerId);
  if (typeof document !== 'object' || document === null || Array.isArray(document)) throw new ImportConfigError('the metadata is not a JSON object');
  const metadata = document as Record<string, unknown>;
  const config: Record<string, string> = {};
  if (metadata.issuer !== undefined) {
    if (typeof metadata.issuer !== 'string' || metadata.issuer.length > 2048) throw new ImportConfigError('issuer: must be a string');
    config.issuer = metadata.issuer;
  }
  for (const [field, key] of URL_FIELDS) {
    const value = metadata[field];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string' || value.length > 2048 || !isHttpUrl(value)) throw new ImportConfigError(`${field}: must be an http or https URL`);
    config[key] = value;
  }
  if (!config.authorizationUrl || !config.tokenUrl) throw new ImportConfigError('the metadata names no authorization_endpoint or token_endpoint: not an OpenID Provider');
  if (config.jwksUrl) Object.assign(config, { validateSignature: 'true', useJwksUrl: 'true' });
  return config;
}

/** The metadata at `url`, fetched through the guard, then read as configFromMetadata does. */
export async function configFromMetadataUrl(guard: OutboundGuard, providerId: string, url: string): Promise<Record<string, string>> {
  // Nothing is fetched for a request that would be refused anyway.
  checkProviderId(providerId);
  if (!isHttpUrl(url) || url.length > 2048) throw new ImportConfigError('fromUrl: must be an http or https URL');
  let response;
  try {
    response = await outboundRequest(guard, url, { headers: { accept: 'application/json' } });
  } catch (error) {
    throw new ImportConfigError(`fromUrl: the metadata could not be fetched (${(error as Error).message})`);
  }
  if (response.status !== 200) throw new ImportConfigError(`fromUrl: the metadata endpoint answered status ${response.status}`);
  let document: unknown;
  try {
    document = JSON.parse(response.body);
  } catch {
    throw new ImportConfigError('fromUrl: the metadata endpoint answered no JSON');
  }
  return configFromMetadata(providerId, document);
}
