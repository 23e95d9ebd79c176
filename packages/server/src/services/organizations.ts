import type { OrganizationInput } from '../representations/organization.js';
import { newId } from '../credentials/index.js';
import { badRequest, conflict } from '../model/errors.js';
import type { Organization, Realm } from '../model/types.js';
import { isUniqueViolation, type Db, type Storage } from '../storage/index.js';

/** Creates or replaces an organization; used by the organizations API and by realm import. */
export async function saveOrganization(storage: Storage, realm: Realm, input: OrganizationInput, existing: Organization | null, db: Db, path = 'organization'): Promise<Organization> {
  if (!existing && !input.name) throw badRequest(`${path}.name: is required`, 'name');
  if (existing && input.alias !== undefined && input.alias !== existing.alias) throw badRequest(`${path}.alias: cannot be changed`, 'alias');
  const org: Organization = {
    id: existing?.id ?? newId(),
    realmId: realm.id,
    name: input.name ?? existing!.name,
    alias: existing?.alias ?? input.alias ?? input.name!,
    description: input.description ?? null,
    enabled: input.enabled ?? true,
    redirectUrl: input.redirectUrl ?? null,
    attributes: input.attributes ?? {},
    domains: input.domains ?? [],
  };
  try {
    await storage.organizations.save(org, existing === null, db);
  } catch (error) {
    if (isUniqueViolation(error)) {
      // Which constraint failed: PostgreSQL names it, SQLite lists its columns in the message.
      const where = `${(error as { constraint?: string }).constraint ?? ''} ${(error as Error).message}`;
      // Keycloak answers a taken domain 400 (ModelValidationException), a taken name or alias 409.
      if (where.includes('organization_domain')) throw badRequest(`${path}.domains: a domain is already linked to another organization`, 'domains');
      if (where.includes('alias')) throw conflict(`${path}.alias: an organization with this alias already exists`, 'alias');
      throw conflict(`${path}.name: an organization with this name already exists`, 'name');
    }
    throw error;
  }
  return org;
}
