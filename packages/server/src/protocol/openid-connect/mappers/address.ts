import { userAttributeValues } from './user-attribute.js';
import type { MapperImplementation } from './types.js';

/** The address claim's members and the mapper config keys naming the attribute each is read from. */
const PARTS: [claim: string, key: string][] = [
  ['formatted', 'formatted'],
  ['street_address', 'street'],
  ['locality', 'locality'],
  ['region', 'region'],
  ['postal_code', 'postal_code'],
  ['country', 'country'],
];

/** oidc-address-mapper: OIDC's `address` object from the user's attributes (each part's attribute configurable). */
export const addressMapper: MapperImplementation = {
  id: 'oidc-address-mapper',
  compile(config) {
    const sources = PARTS.map(([claim, key]) => [claim, config[`user.attribute.${key}`] || key] as const);
    return {
      apply(claims, data) {
        const address: Record<string, string> = {};
        for (const [claim, attribute] of sources) {
          const value = userAttributeValues(data.user, attribute)?.[0];
          if (value !== undefined) address[claim] = value;
        }
        claims.address = address;
      },
    };
  },
};
