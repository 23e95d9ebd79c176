import { sql, type RawBuilder, type Selectable, type SqlBool } from 'kysely';
import type { User } from '../model/types.js';
import type { Db } from './db.js';
import type { ConfigCache } from './config-cache.js';
import type { UserTable } from './schema.js';
import { bool, containsIgnoreCase, escapeLike, flag, fromJson, storable, toJson } from './codec.js';

export interface UserQuery {
  username?: string;
  email?: string;
  firstName?: string;
  lastName?: string;
  /** Matches username, e-mail, first or last name. */
  search?: string;
  exact?: boolean;
  enabled?: boolean;
  emailVerified?: boolean;
  first?: number;
  max?: number;
}

export function toUser(row: Selectable<UserTable>): User {
  return {
    id: row.id,
    realmId: row.realm_id,
    username: row.username,
    email: row.email,
    emailVerified: bool(row.email_verified),
    firstName: row.first_name,
    lastName: row.last_name,
    enabled: bool(row.enabled),
    createdTimestamp: row.created_timestamp,
    attributes: fromJson(row.attributes, {}),
    serviceAccountClientId: row.service_account_client_id,
    passwordHash: row.password_hash,
    passwordCreated: row.password_created,
    passwordLabel: row.password_label,
    passwordCredentialId: row.password_credential_id,
  };
}

/**
 * Keycloak's `search` syntax for users: `"value"` matches a field exactly, `*value*` anywhere in it, and `value`
 * or `value*` at its start (Keycloak's default since version 22: a prefix search can use an index, a substring
 * search cannot). Case is ignored; `*` alone or an empty value matches everyone.
 */
export function parseUserSearch(raw: string | undefined): { mode: 'exact' | 'prefix' | 'infix'; term: string } | null {
  const text = raw?.trim() ?? '';
  if (text.length >= 2 && text.startsWith('"') && text.endsWith('"')) return { mode: 'exact', term: text.slice(1, -1).toLowerCase() };
  const infix = text.startsWith('*');
  const term = text.replace(/^\*+|\*+$/g, '').toLowerCase();
  if (term === '') return null;
  return { mode: infix ? 'infix' : 'prefix', term };
}

/**
 * `column` starts with `prefix` (both lower-case), in a form each database answers from an index. PostgreSQL:
 * LIKE 'prefix%', served by the text_pattern_ops indexes whatever the database's collation. SQLite (whose LIKE
 * ignores case and so no index serves it): the byte range [prefix, prefix + U+10FFFF) of the BINARY collation,
 * with the LIKE kept for exactness.
 */
function startsWith(dialect: 'sqlite' | 'postgres', column: RawBuilder<unknown> | ReturnType<typeof sql.ref>, prefix: string): RawBuilder<SqlBool> {
  const like = sql<SqlBool>`${column} like ${`${escapeLike(prefix)}%`} escape '\\'`;
  if (dialect === 'postgres') return like;
  return sql<SqlBool>`(${column} >= ${prefix} and ${column} < ${`${prefix}\u{10FFFF}`} and ${like})`;
}

/** Usernames and e-mail addresses are stored lower-case, so lookups and exact searches compare the indexed column. */
function toRow(user: User): Omit<Selectable<UserTable>, 'password_priority'> {
  return {
    id: user.id,
    realm_id: user.realmId,
    username: user.username.toLowerCase(),
    email: user.email?.toLowerCase() ?? null,
    email_verified: flag(user.emailVerified),
    first_name: user.firstName,
    last_name: user.lastName,
    enabled: flag(user.enabled),
    created_timestamp: user.createdTimestamp,
    attributes: toJson(user.attributes),
    service_account_client_id: user.serviceAccountClientId,
    password_hash: user.passwordHash,
    password_created: user.passwordCreated,
    password_label: user.passwordLabel ?? null,
    password_credential_id: user.passwordHash === null ? null : (user.passwordCredentialId ?? null),
  };
}

export class UserRepository {
  constructor(
    private readonly db: Db,
    private readonly cache: ConfigCache,
    private readonly dialect: 'sqlite' | 'postgres',
  ) {}

  /**
   * serviceAccountOf through the configuration cache (frozen): the client_credentials grant's user. Any write
   * to user_entity invalidates every cached user, so a disabled service account is refused at once.
   */
  cachedServiceAccountOf(clientUuid: string): Promise<User | null> {
    return this.cache.get(`service-account\0${clientUuid}`, ['user_entity', 'client'], () => this.serviceAccountOf(clientUuid));
  }

  /**
   * The user a login name stands for, through the configuration cache (frozen): every password sign-in's first
   * read. Keyed by the name as stored (lower case), so spellings of one name share an entry; a name nobody has is
   * looked up again every time (the cache keeps found values only), so made-up names cannot fill it.
   */
  cachedByLogin(realmId: string, field: 'username' | 'email', login: string): Promise<User | null> {
    if (!storable(login)) return Promise.resolve(null);
    const name = login.toLowerCase();
    return this.cache.get(`user-${field}\0${realmId}\0${name}`, ['user_entity'], () => (field === 'username' ? this.byUsername(realmId, name) : this.byEmail(realmId, name)));
  }

  /** byId through the configuration cache (frozen): token verification's "user still there and enabled". */
  cachedById(realmId: string, id: string): Promise<User | null> {
    return this.cache.get(`user\0${realmId}\0${id}`, ['user_entity'], () => this.byId(realmId, id));
  }

  /** The search's rows before selection and paging (its query plan is checked by test/users-bulk.test.ts). */
  filtered(realmId: string, q: UserQuery) {
    // Service-account users are not people: Keycloak leaves them out of user searches too.
    const search = parseUserSearch(q.search);
    // An indexed search names the realm in each of its branches (below). Said once more outside, or with the
    // service-account test open to an index, SQLite's planner (without statistics) would rather walk the whole realm
    // on one index than read the branches' indexes; SQLite's unary + keeps a column's test off its indexes.
    const indexedSearch = search !== null && search.mode !== 'infix';
    let query = this.db
      .selectFrom('user_entity')
      .$if(!indexedSearch, (qb) => qb.where('realm_id', '=', realmId))
      .where(indexedSearch && this.dialect === 'sqlite' ? sql<SqlBool>`+service_account_client_id is null` : sql<SqlBool>`service_account_client_id is null`);
    const field = (column: 'username' | 'email' | 'first_name' | 'last_name', value: string | undefined) => {
      if (value === undefined) return;
      if (!q.exact) query = query.where(containsIgnoreCase(column, value));
      // Stored lower-case (toRow): compared as they are, the (realm_id, username) and (realm_id, email) indexes serve.
      else if (column === 'username' || column === 'email') query = query.where(column, '=', value.toLowerCase());
      else query = query.where((eb) => eb(eb.fn('lower', [column]), '=', value.toLowerCase()));
    };
    field('username', q.username);
    field('email', q.email);
    field('first_name', q.firstName);
    field('last_name', q.lastName);
    if (search) {
      // Username and e-mail are stored lower-case (toRow); the names are compared through lower(), which the
      // user_search_* expression indexes of migration 0013 hold.
      const columns = [sql.ref('username'), sql.ref('email'), sql`lower(first_name)`, sql`lower(last_name)`];
      const term = search.term;
      const match = (column: (typeof columns)[number]) =>
        search.mode === 'exact'
          ? sql<SqlBool>`${column} = ${term}`
          : search.mode === 'prefix'
            ? startsWith(this.dialect, column, term)
            : sql<SqlBool>`${column} like ${`%${escapeLike(term)}%`} escape '\\'`;
      // The realm in each branch too: SQLite reads an OR from several indexes only when every branch, alone,
      // matches an index's leading columns.
      query = query.where((eb) => eb.or(columns.map((column) => sql<SqlBool>`(realm_id = ${realmId} and ${match(column)})`)));
    }
    if (q.enabled !== undefined) query = query.where('enabled', '=', flag(q.enabled));
    if (q.emailVerified !== undefined) query = query.where('email_verified', '=', flag(q.emailVerified));
    return query;
  }

  /** A page of the search, in username order (its query plan is checked by test/users-bulk.test.ts and the scale bench). */
  searchQuery(realmId: string, q: UserQuery) {
    // An exact e-mail or name is found on its own index; SQLite, without statistics, would rather walk the
    // username index for the ORDER BY … LIMIT and test every user. Its unary + keeps the order off that index.
    const otherIndex = this.dialect === 'sqlite' && q.exact === true && (q.email !== undefined || q.firstName !== undefined || q.lastName !== undefined);
    let query = this.filtered(realmId, q)
      .selectAll()
      .orderBy(otherIndex ? sql`+username` : sql.ref('username'))
      .limit(q.max ?? 100);
    if (q.first) query = query.offset(q.first);
    return query;
  }

  async search(realmId: string, q: UserQuery): Promise<User[]> {
    return (await this.searchQuery(realmId, q).execute()).map(toUser);
  }

  async count(realmId: string, q: UserQuery): Promise<number> {
    const row = await this.filtered(realmId, q)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Every user of the realm, service accounts too, a page at a time by username (the export's walk). */
  async page(realmId: string, afterUsername: string | null, limit: number): Promise<User[]> {
    let query = this.db.selectFrom('user_entity').selectAll().where('realm_id', '=', realmId);
    if (afterUsername !== null) query = query.where('username', '>', afterUsername);
    return (await query.orderBy('username').limit(limit).execute()).map(toUser);
  }

  async byId(realmId: string, id: string): Promise<User | null> {
    const row = await this.db
      .selectFrom('user_entity')
      .selectAll()
      .where('realm_id', '=', realmId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row ? toUser(row) : null;
  }

  async byUsername(realmId: string, username: string): Promise<User | null> {
    if (!storable(username)) return null;
    const row = await this.db
      .selectFrom('user_entity')
      .selectAll()
      .where('realm_id', '=', realmId)
      .where('username', '=', username.toLowerCase())
      .executeTakeFirst();
    return row ? toUser(row) : null;
  }

  async byEmail(realmId: string, email: string): Promise<User | null> {
    if (!storable(email)) return null;
    const row = await this.db
      .selectFrom('user_entity')
      .selectAll()
      .where('realm_id', '=', realmId)
      .where('email', '=', email.toLowerCase())
      .executeTakeFirst();
    return row ? toUser(row) : null;
  }

  async serviceAccountOf(clientUuid: string): Promise<User | null> {
    const row = await this.db
      .selectFrom('user_entity')
      .selectAll()
      .where('service_account_client_id', '=', clientUuid)
      .executeTakeFirst();
    return row ? toUser(row) : null;
  }

  async insert(user: User, db: Db = this.db): Promise<void> {
    await db.insertInto('user_entity').values(toRow(user)).execute();
  }

  /**
   * Inserts many users with multi-row INSERTs of at most 1,000 rows (14 parameters a row stays under SQLite's and
   * PostgreSQL's parameter limits). No transaction of its own: pass `trx` to make a batch atomic (and fast on SQLite).
   */
  async insertMany(users: readonly User[], db: Db = this.db): Promise<void> {
    for (let i = 0; i < users.length; i += 1000) {
      await db.insertInto('user_entity').values(users.slice(i, i + 1000).map(toRow)).execute();
    }
  }

  async update(user: User, db: Db = this.db): Promise<void> {
    const { id, ...row } = toRow(user);
    await db.updateTable('user_entity').set(row).where('id', '=', id).execute();
  }

  async delete(id: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('user_entity').where('id', '=', id).execute();
  }

  /**
   * Replaces the password hash only while it is still `previous` (a rehash at login must not undo a password
   * change made meanwhile); the password's age (password_created) stays. True when it was replaced.
   */
  async replacePasswordHash(id: string, previous: string, next: string): Promise<boolean> {
    const result = await this.db.updateTable('user_entity').set({ password_hash: next }).where('id', '=', id).where('password_hash', '=', previous).executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** The user's earlier password hashes, newest first. */
  async passwordHistory(id: string, limit: number, db: Db = this.db): Promise<string[]> {
    const rows = await db.selectFrom('password_history').select('password_hash').where('user_id', '=', id).orderBy('created_at', 'desc').limit(limit).execute();
    return rows.map((r) => r.password_hash);
  }

  /** Remembers a hash that stopped being the current one, keeping the newest `keep` (none when 0). */
  async rememberPassword(id: string, passwordHash: string, at: number, keep: number, db: Db = this.db): Promise<void> {
    if (keep > 0) await db.insertInto('password_history').values({ user_id: id, password_hash: passwordHash, created_at: at }).execute();
    const kept = await db.selectFrom('password_history').select('created_at').where('user_id', '=', id).orderBy('created_at', 'desc').offset(keep).limit(1).executeTakeFirst();
    if (kept) await db.deleteFrom('password_history').where('user_id', '=', id).where('created_at', '<=', kept.created_at).execute();
  }
}
