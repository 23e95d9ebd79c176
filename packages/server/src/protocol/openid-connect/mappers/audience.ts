import { addAudience } from './claims.js';
import type { MapperImplementation } from './types.js';

/** oidc-audience-mapper: a client id (`included.client.audience`) or, without one, a custom string into `aud`. */
export const audienceMapper: MapperImplementation = {
  id: 'oidc-audience-mapper',
  compile(config) {
    const audience = config['included.client.audience'] || config['included.custom.audience'];
    return { apply: (claims) => void (audience ? addAudience(claims, audience) : undefined) };
  },
};
