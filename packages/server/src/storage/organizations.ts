import type { Organization } from '../model/types.js';
import type { Db } from './db.js';
import { bool, containsIgnoreCase, flag, fromJson, toJson } from './codec.js';

export class OrganizationRepository {
  constructor(private readonly db: Db) {}

  private async withDomains(rows: { id: string; realm_id: string; name: string; alias: string; description: string | null; enabled: number; redirect_url: string | null; attributes: string }[]): Promise<Organization[]> {
    if (rows.length === 0) return [];
    const domains = await this.db
      .selectFrom('organization_domain')
      .selectAll()
      .where('organization_id', 'in', rows.map((r) => r.id))
      .execute();
    return rows.map((row) => ({
      id: row.id,
      realmId: row.realm_id,
      name: row.name,
      alias: row.alias,
      description: row.description,
      enabled: bool(row.enabled),
      redirectUrl: row.redirect_url,
      attributes: fromJson(row.attributes, {}),
      domains: domains
        .filter((d) => d.organization_id === row.id)
        .map((d) => ({ name: d.name, verified: bool(d.verified) })),
    }));
  }

  async list(realmId: string, options: { search?: string; exact?: boolean; first?: number; max?: number } = {}): Promise<Organization[]> {
    let query = this.db.selectFrom('organization').selectAll().where('realm_id', '=', realmId);
    if (options.search) {
      query = options.exact
        ? query.where('name', '=', options.search)
        : query.where(containsIgnoreCase('name', options.search));
    }
    query = query.orderBy('name').limit(options.max ?? 100);
    if (options.first) query = query.offset(options.first);
    return this.withDomains(await query.execute());
  }

  async count(realmId: string): Promise<number> {
    const row = await this.db
      .selectFrom('organization')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('realm_id', '=', realmId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async byId(realmId: string, id: string): Promise<Organization | null> {
    const rows = await this.db.selectFrom('organization').selectAll().where('realm_id', '=', realmId).where('id', '=', id).execute();
    return (await this.withDomains(rows))[0] ?? null;
  }

  async save(org: Organization, isNew: boolean, db: Db = this.db): Promise<void> {
    const row = {
      realm_id: org.realmId,
      name: org.name,
      alias: org.alias,
      description: org.description,
      enabled: flag(org.enabled),
      redirect_url: org.redirectUrl,
      attributes: toJson(org.attributes),
    };
    if (isNew) await db.insertInto('organization').values({ id: org.id, ...row }).execute();
    else await db.updateTable('organization').set(row).where('id', '=', org.id).execute();
    await db.deleteFrom('organization_domain').where('organization_id', '=', org.id).execute();
    if (org.domains.length) {
      await db
        .insertInto('organization_domain')
        .values(org.domains.map((d) => ({ organization_id: org.id, realm_id: org.realmId, name: d.name, verified: flag(d.verified) })))
        .execute();
    }
  }

  async delete(id: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('organization').where('id', '=', id).execute();
  }

  async memberIds(orgId: string, first = 0, max = 100): Promise<string[]> {
    let query = this.db.selectFrom('organization_member').select('user_id').where('organization_id', '=', orgId).orderBy('user_id').limit(max);
    if (first) query = query.offset(first);
    return (await query.execute()).map((r) => r.user_id);
  }

  async isMember(orgId: string, userId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('organization_member')
      .select('user_id')
      .where('organization_id', '=', orgId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return row !== undefined;
  }

  async addMember(orgId: string, userId: string, db: Db = this.db): Promise<void> {
    await db.insertInto('organization_member').values({ organization_id: orgId, user_id: userId }).execute();
  }

  async removeMember(orgId: string, userId: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('organization_member').where('organization_id', '=', orgId).where('user_id', '=', userId).execute();
  }

  async ofUser(userId: string): Promise<Organization[]> {
    const rows = await this.db
      .selectFrom('organization')
      .innerJoin('organization_member', 'organization_member.organization_id', 'organization.id')
      .selectAll('organization')
      .where('organization_member.user_id', '=', userId)
      .orderBy('organization.name')
      .execute();
    return this.withDomains(rows);
  }
}
