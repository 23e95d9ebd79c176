import { absoluteClientUrl } from '../../../model/redirect-uri.js';
import type { Client } from '../../../model/types.js';
import type { MapperImplementation } from './types.js';

/** The client's web origins with `+` replaced by its redirect URIs' origins (Keycloak's resolution). */
export function resolvedWebOrigins(client: Client, base: string): string[] {
  const origins: string[] = [];
  const add = (origin: string) => void (origins.includes(origin) ? undefined : origins.push(origin));
  for (const entry of client.webOrigins) {
    if (entry !== '+') {
      add(entry);
      continue;
    }
    for (const redirect of client.redirectUris) {
      const absolute = absoluteClientUrl(client, redirect, base);
      try {
        const url = new URL(absolute.endsWith('*') ? absolute.slice(0, -1) : absolute);
        if (url.protocol === 'http:' || url.protocol === 'https:') add(url.origin);
      } catch {
        // not a URL: no origin
      }
    }
  }
  return origins;
}

/** oidc-allowed-origins-mapper: `allowed-origins`, the client's web origins; none, no claim (as Keycloak's). */
export const allowedOriginsMapper: MapperImplementation = {
  id: 'oidc-allowed-origins-mapper',
  compile() {
    return {
      apply(claims, data) {
        if (data.client.webOrigins.length === 0) return;
        claims['allowed-origins'] = resolvedWebOrigins(data.client, data.base);
      },
    };
  },
};
