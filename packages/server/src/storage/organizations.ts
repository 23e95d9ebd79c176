import { sql, type SqlBool } from 'kysely';
import type { Organization, OrganizationInvitation } from '../model/types.js';
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

type InvitationRow = { id: string; organization_id: string; email: string; first_name: string | null; last_name: string | null; created_at: number | string; expires_at: number | string; invite_link: string | null };

const invitationOf = (row: InvitationRow): OrganizationInvitation => ({
  id: row.id,
  organizationId: row.organization_id,
  email: row.email,
  firstName: row.first_name,
  lastName: row.last_name,
  createdAt: Number(row.created_at),
  expiresAt: Number(row.expires_at),
  inviteLink: row.invite_link,
});

/** The filters of Keycloak's invitation listing: status (PENDING or EXPIRED at `now`), exact e-mail and names, and a search over all three. */
export interface InvitationFilter {
  status?: 'PENDING' | 'EXPIRED';
  email?: string;
  firstName?: string;
  lastName?: string;
  search?: string;
  now: number;
  first?: number;
  max?: number;
}

/** An organization's invitations (Keycloak's InvitationManager). */
export class OrganizationInvitationRepository {
  constructor(private readonly db: Db) {}

  async create(invitation: OrganizationInvitation, db: Db = this.db): Promise<void> {
    await db
      .insertInto('organization_invitation')
      .values({
        id: invitation.id,
        organization_id: invitation.organizationId,
        email: invitation.email,
        first_name: invitation.firstName,
        last_name: invitation.lastName,
        created_at: invitation.createdAt,
        expires_at: invitation.expiresAt,
        invite_link: invitation.inviteLink,
      })
      .execute();
  }

  async setLink(id: string, link: string, db: Db = this.db): Promise<void> {
    await db.updateTable('organization_invitation').set({ invite_link: link }).where('id', '=', id).execute();
  }

  async byId(orgId: string, id: string): Promise<OrganizationInvitation | null> {
    const row = await this.db.selectFrom('organization_invitation').selectAll().where('organization_id', '=', orgId).where('id', '=', id).executeTakeFirst();
    return row ? invitationOf(row) : null;
  }

  async byEmail(orgId: string, email: string): Promise<OrganizationInvitation | null> {
    const row = await this.db
      .selectFrom('organization_invitation')
      .selectAll()
      .where('organization_id', '=', orgId)
      .where(sql<SqlBool>`lower(email) = ${email.toLowerCase()}`)
      .orderBy('created_at', 'desc')
      .executeTakeFirst();
    return row ? invitationOf(row) : null;
  }

  async list(orgId: string, filter: InvitationFilter): Promise<OrganizationInvitation[]> {
    let query = this.db.selectFrom('organization_invitation').selectAll().where('organization_id', '=', orgId);
    if (filter.status === 'EXPIRED') query = query.where('expires_at', '<', filter.now);
    if (filter.status === 'PENDING') query = query.where('expires_at', '>=', filter.now);
    for (const [column, value] of [['email', filter.email], ['first_name', filter.firstName], ['last_name', filter.lastName]] as const) {
      if (value !== undefined) query = query.where(sql<SqlBool>`lower(${sql.ref(column)}) = ${value.toLowerCase()}`);
    }
    const search = filter.search;
    if (search !== undefined) query = query.where((eb) => eb.or([containsIgnoreCase('email', search), containsIgnoreCase('first_name', search), containsIgnoreCase('last_name', search)]));
    query = query.orderBy('id').limit(filter.max ?? 100);
    if (filter.first) query = query.offset(filter.first);
    return (await query.execute()).map(invitationOf);
  }

  /** False when there was no such invitation (another request accepted or deleted it first). */
  async remove(orgId: string, id: string, db: Db = this.db): Promise<boolean> {
    const result = await db.deleteFrom('organization_invitation').where('organization_id', '=', orgId).where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}
