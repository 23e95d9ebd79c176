import { badRequest } from '../model/errors.js';
import type { Organization } from '../model/types.js';
import { parseRepresentation, type Spec } from './fields.js';

const domainPattern = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i;
const orgSpec: Spec = {
  name: { type: 'string', min: 1 },
  alias: { type: 'string', min: 1, pattern: /^[A-Za-z0-9_.-]+$/, patternHint: 'letters, digits, ".", "_" or "-"' },
  description: { type: 'string', max: 4000 },
  redirectUrl: { type: 'string', max: 2048 },
  enabled: { type: 'boolean' },
  attributes: { type: 'multiMap', max: 2048 },
  domains: { type: 'array' },
};

export interface OrganizationInput {
  name?: string;
  alias?: string;
  description?: string;
  redirectUrl?: string;
  enabled?: boolean;
  attributes?: Record<string, string[]>;
  domains?: { name: string; verified: boolean }[];
}

export function parseOrganization(body: unknown, path = 'organization', onUnknown?: (path: string) => void): OrganizationInput {
  const input = parseRepresentation(body, orgSpec, ['id', 'members', 'identityProviders', 'groups'], path, onUnknown) as OrganizationInput & { domains?: unknown };
  if (input.domains !== undefined) {
    if (!Array.isArray(input.domains) || input.domains.length > 100) throw badRequest(`${path}.domains: must be an array`, 'domains');
    const seen = new Set<string>();
    input.domains = input.domains.map((d, i) => {
      const name = (d as { name?: unknown })?.name;
      const verified = (d as { verified?: unknown })?.verified;
      if (typeof name !== 'string' || !domainPattern.test(name)) throw badRequest(`${path}.domains[${i}].name: must be a domain name`, 'domains');
      if (verified !== undefined && typeof verified !== 'boolean') throw badRequest(`${path}.domains[${i}].verified: must be true or false`, 'domains');
      if (seen.has(name.toLowerCase())) throw badRequest(`${path}.domains[${i}].name: is listed twice`, 'domains');
      seen.add(name.toLowerCase());
      return { name: name.toLowerCase(), verified: verified === true };
    });
  }
  return input as OrganizationInput;
}

export function organizationRep(org: Organization) {
  return {
    id: org.id,
    name: org.name,
    alias: org.alias,
    enabled: org.enabled,
    ...(org.description !== null ? { description: org.description } : {}),
    ...(org.redirectUrl !== null ? { redirectUrl: org.redirectUrl } : {}),
    attributes: org.attributes,
    domains: org.domains,
  };
}
