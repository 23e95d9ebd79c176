import type { DependencyState } from '../store/index.js';
import { openDatabase, type Db, type DatabaseHandle, type OpenDatabaseOptions } from './db.js';
import type { ConfigCache } from './config-cache.js';
import type { StatementCache } from './sqlite-driver.js';
import { ClientRepository } from './clients.js';
import { ClientRegistrationRepository } from './client-registration.js';
import { ClientScopeRepository } from './client-scopes.js';
import { CredentialRepository } from './credentials.js';
import { EventRepository } from './events.js';
import { ConsentRepository } from './consents.js';
import { FederationRepository } from './federation.js';
import { LocalizationRepository } from './localization.js';
import { GroupRepository } from './groups.js';
import { OrganizationInvitationRepository, OrganizationRepository } from './organizations.js';
import { RealmRepository } from './realms.js';
import { RoleRepository } from './roles.js';
import { SessionRepository } from './sessions.js';
import { UserRepository } from './users.js';

export type { Db, OpenDatabaseOptions } from './db.js';
export { ConfigCache, type ConfigCacheStats, type InvalidationChannel } from './config-cache.js';
export { inBackground } from './write-tracking.js';
export type { UserQuery } from './users.js';
export type { MapperOwner, ScopeLink } from './client-scopes.js';
export type { IdentityProviderQuery } from './federation.js';
export type { RequiredActionSetting, StoredCredential } from './credentials.js';
export type { EventQuery, AdminEventQuery } from './events.js';
export type { AdminEventTable, AuthExecutionTable, AuthFlowTable, AuthenticatorConfigTable, EventTable } from './schema.js';
export { isUniqueViolation } from './codec.js';
export type { InitialAccess, RegistrationToken } from './client-registration.js';

/** The database and one repository per aggregate. */
export class Storage {
  readonly realms: RealmRepository;
  readonly clients: ClientRepository;
  readonly clientScopes: ClientScopeRepository;
  readonly users: UserRepository;
  readonly roles: RoleRepository;
  readonly groups: GroupRepository;
  readonly organizations: OrganizationRepository;
  readonly organizationInvitations: OrganizationInvitationRepository;
  readonly sessions: SessionRepository;
  readonly events: EventRepository;
  readonly credentials: CredentialRepository;
  /** Identity providers, their mappers and components: kept as data, not acted on. */
  readonly federation: FederationRepository;
  /** Users' consents to clients, from realm files and the consent screen. */
  readonly consents: ConsentRepository;
  /** A realm's localization texts: the overrides of the pages' and e-mails' texts. */
  readonly localization: LocalizationRepository;
  /** Dynamic client registration: initial access tokens and registration access tokens (hashes). */
  readonly clientRegistration: ClientRegistrationRepository;

  private constructor(private readonly handle: DatabaseHandle) {
    const db = handle.db;
    this.realms = new RealmRepository(db, handle.cache);
    this.clients = new ClientRepository(db, handle.cache);
    this.clientScopes = new ClientScopeRepository(db);
    this.users = new UserRepository(db, handle.cache, handle.dialect);
    this.roles = new RoleRepository(db);
    this.groups = new GroupRepository(db, handle.dialect);
    this.organizations = new OrganizationRepository(db);
    this.organizationInvitations = new OrganizationInvitationRepository(db);
    this.sessions = new SessionRepository(db);
    this.events = new EventRepository(db);
    this.credentials = new CredentialRepository(db, handle.cache);
    this.federation = new FederationRepository(db, handle.cache);
    this.consents = new ConsentRepository(db);
    this.localization = new LocalizationRepository(db, handle.cache);
    this.clientRegistration = new ClientRegistrationRepository(db);
  }

  static async open(url: string, options: OpenDatabaseOptions = {}): Promise<Storage> {
    return new Storage(await openDatabase(url, options));
  }

  /** Configuration the hot paths read (config-cache.ts); every committed write invalidates what it touched. */
  get cache(): ConfigCache {
    return this.handle.cache;
  }

  /** Statements sent to the database since open by requests (transaction control and background workers excluded). */
  get queryCount(): number {
    return this.handle.counts.queries;
  }

  /** Statements sent since open by background workers (storage/write-tracking.ts inBackground). */
  get backgroundQueryCount(): number {
    return this.handle.counts.background;
  }

  /** SQLite: the driver's prepared-statement cache (how many were prepared, reused); absent for PostgreSQL. */
  get statements(): StatementCache | undefined {
    return this.handle.statements;
  }

  /** The database up or down, as the last statement found it (health, metrics). */
  get state(): DependencyState {
    return this.handle.state;
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
