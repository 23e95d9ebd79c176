import { openDatabase, type Db, type DatabaseHandle } from './db.js';
import { ClientRepository } from './clients.js';
import { EventRepository } from './events.js';
import { GroupRepository } from './groups.js';
import { OrganizationRepository } from './organizations.js';
import { RealmRepository } from './realms.js';
import { RoleRepository } from './roles.js';
import { SessionRepository } from './sessions.js';
import { UserRepository } from './users.js';

export type { Db } from './db.js';
export type { UserQuery } from './users.js';
export type { EventQuery, AdminEventQuery } from './events.js';
export type { AdminEventTable, AuthExecutionTable, AuthFlowTable, AuthenticatorConfigTable, EventTable } from './schema.js';
export { isUniqueViolation } from './codec.js';

/** The database and one repository per aggregate. */
export class Storage {
  readonly realms: RealmRepository;
  readonly clients: ClientRepository;
  readonly users: UserRepository;
  readonly roles: RoleRepository;
  readonly groups: GroupRepository;
  readonly organizations: OrganizationRepository;
  readonly sessions: SessionRepository;
  readonly events: EventRepository;

  private constructor(private readonly handle: DatabaseHandle) {
    const db = handle.db;
    this.realms = new RealmRepository(db);
    this.clients = new ClientRepository(db);
    this.users = new UserRepository(db);
    this.roles = new RoleRepository(db);
    this.groups = new GroupRepository(db, handle.dialect);
    this.organizations = new OrganizationRepository(db);
    this.sessions = new SessionRepository(db);
    this.events = new EventRepository(db);
  }

  static async open(url: string): Promise<Storage> {
    return new Storage(await openDatabase(url));
  }

  get db(): Db {
    return this.handle.db;
  }

  get dialect(): 'sqlite' | 'postgres' {
    return this.handle.dialect;
  }

  /**
   * Runs `work` in one transaction. Inside it, pass `trx` to every repository call: SQLite has one
   * connection, so a read through the outer handle would wait for the transaction forever.
   */
  transaction<T>(work: (trx: Db) => Promise<T>): Promise<T> {
    return this.handle.db.transaction().execute(work);
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}
