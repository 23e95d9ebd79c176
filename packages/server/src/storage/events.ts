import type { Db } from './db.js';
import type { AdminEventTable, EventTable } from './schema.js';

export interface EventQuery {
  types?: string[];
  client?: string;
  user?: string;
  dateFrom?: number;
  dateTo?: number;
  ipAddress?: string;
  first?: number;
  max?: number;
}

export interface AdminEventQuery {
  operationTypes?: string[];
  resourceTypes?: string[];
  resourcePath?: string;
  authUser?: string;
  dateFrom?: number;
  dateTo?: number;
  first?: number;
  max?: number;
}

export class EventRepository {
  constructor(private readonly db: Db) {}

  async insert(row: EventTable): Promise<void> {
    await this.db.insertInto('event_entity').values(row).execute();
  }

  async insertAdmin(row: AdminEventTable): Promise<void> {
    await this.db.insertInto('admin_event_entity').values(row).execute();
  }

  async list(realmId: string, q: EventQuery): Promise<EventTable[]> {
    let query = this.db.selectFrom('event_entity').selectAll().where('realm_id', '=', realmId);
    if (q.types?.length) query = query.where('type', 'in', q.types);
    if (q.client) query = query.where('client_id', '=', q.client);
    if (q.user) query = query.where('user_id', '=', q.user);
    if (q.ipAddress) query = query.where('ip_address', '=', q.ipAddress);
    if (q.dateFrom !== undefined) query = query.where('time', '>=', q.dateFrom);
    if (q.dateTo !== undefined) query = query.where('time', '<=', q.dateTo);
    query = query.orderBy('time', 'desc').orderBy('id').limit(q.max ?? 100);
    if (q.first) query = query.offset(q.first);
    return query.execute();
  }

  async listAdmin(realmId: string, q: AdminEventQuery): Promise<AdminEventTable[]> {
    let query = this.db.selectFrom('admin_event_entity').selectAll().where('realm_id', '=', realmId);
    if (q.operationTypes?.length) query = query.where('operation_type', 'in', q.operationTypes);
    if (q.resourceTypes?.length) query = query.where('resource_type', 'in', q.resourceTypes);
    if (q.resourcePath) query = query.where('resource_path', '=', q.resourcePath);
    if (q.authUser) query = query.where('auth_user_id', '=', q.authUser);
    if (q.dateFrom !== undefined) query = query.where('time', '>=', q.dateFrom);
    if (q.dateTo !== undefined) query = query.where('time', '<=', q.dateTo);
    query = query.orderBy('time', 'desc').orderBy('id').limit(q.max ?? 100);
    if (q.first) query = query.offset(q.first);
    return query.execute();
  }

  async deleteAll(realmId: string, admin: boolean): Promise<void> {
    await this.db.deleteFrom(admin ? 'admin_event_entity' : 'event_entity').where('realm_id', '=', realmId).execute();
  }

  async purgeOlderThan(realmId: string, time: number): Promise<void> {
    await this.db.deleteFrom('event_entity').where('realm_id', '=', realmId).where('time', '<', time).execute();
  }
}
