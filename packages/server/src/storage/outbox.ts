/**
 * Providers' durable outboxes (SPI `OutboxStore`): items, attempts and per-endpoint pause state, one set of
 * tables shared by every provider (keyed by provider id), SQLite and PostgreSQL alike.
 *
 * Claiming: one UPDATE … WHERE id IN (SELECT … LIMIT n) RETURNING. On PostgreSQL the inner SELECT locks with
 * FOR UPDATE SKIP LOCKED, so concurrent processes take disjoint items; on SQLite the statement is atomic (one
 * process, one connection). A claimed item's `due_at` becomes its lease end, so an item whose node died is due
 * again — for any node — when the lease expires.
 */
import { CompiledQuery, sql, type Kysely, type QueryCreator, type QueryResult } from 'kysely';
import type {
  OutboxAttempt,
  OutboxEndpointState,
  OutboxItem,
  OutboxItemInput,
  OutboxNext,
  OutboxQuery,
  OutboxState,
  OutboxStats,
  OutboxStore,
} from '@realmgate/spi';
import type { Db } from './db.js';
import { DependencyUnavailableError } from '../store/index.js';

export interface OutboxTable {
  provider_id: string;
  id: string;
  seq: number;
  realm_id: string;
  endpoint: string;
  endpoint_label: string | null;
  order_key: string | null;
  type: string;
  label: string | null;
  payload: string;
  state: string;
  attempts: number;
  total_attempts: number;
  max_attempts: number;
  due_at: number;
  claimed_by: string | null;
  created_at: number;
  updated_at: number;
  last_status: number | null;
  last_error: string | null;
}

export interface OutboxAttemptTable {
  provider_id: string;
  item_id: string;
  number: number;
  node: string;
  started_at: number;
  duration_ms: number;
  status: number | null;
  error: string | null;
  response_excerpt: string | null;
}

export interface OutboxEndpointTable {
  provider_id: string;
  realm_id: string;
  endpoint: string;
  paused: number;
  consecutive_failures: number;
  paused_at: number | null;
  reason: string | null;
  hold_until: number | null;
  updated_at: number;
}

type OutboxTables = {
  provider_outbox: OutboxTable;
  provider_outbox_attempt: OutboxAttemptTable;
  provider_outbox_endpoint: OutboxEndpointTable;
};

type OutboxDb = Kysely<OutboxTables>;
type FinishArgs = Parameters<OutboxStore['finishAttempt']>;
type FinishResult = { recorded: boolean; endpoint: OutboxEndpointState | null };

/**
 * How long a finished attempt waits for others before its group commit: at thousands of deliveries a second it
 * gathers tens of them per transaction (the cost of a commit and of each statement is mostly per batch); for a lone
 * delivery it is a few milliseconds more before its record, none before its HTTP request.
 */
const GROUP_COMMIT_WAIT_MS = 5;
/** Finished attempts recorded per statement at most (15 parameters each at most, far below either database's limit). */
const FINISH_BATCH = 500;
/** The SQL types of finishMany's VALUES columns: explicit, so PostgreSQL does not read untyped parameters as text. */
const RECORD_TYPES = ['text', 'text', 'integer', 'integer', 'bigint', 'integer', 'text', 'integer'];
/** The columns of provider_outbox_attempt, in finishMany's INSERT order. */
const ATTEMPT_TYPES = ['text', 'text', 'integer', 'text', 'bigint', 'integer', 'integer', 'text', 'text'];
/** finishDelivered's attempt log columns (provider and node are the same for all). */
const DELIVERED_ATTEMPT_TYPES = ['text', 'integer', 'bigint', 'integer', 'integer', 'text', 'text'];
/** The (endpoint, order key, sequence number) of each finished item whose next item may go. */
const RELEASE_TYPES = ['text', 'text', 'bigint'];
/**
 * The partial indexes' predicate, as literal SQL: a planner uses a partial index only when the query carries its
 * condition, and SQLite cannot see that through bound parameters.
 */
const unfinished = (alias: 'c') => sql<boolean>`${sql.ref(`${alias}.state`)} in ('pending', 'sending')`;
const FINISHED: OutboxState[] = ['delivered', 'dead'];
/**
 * A new item (`v`, a row of enqueue's VALUES; parameters: provider, now, now, now) is due no sooner than the
 * unfinished items before it with the same order key (it could not be claimed before them anyway): a backlog behind
 * a failing head is then not due, and the claim's scan over due rows never wades through it. finishAttempt keeps this
 * true (pushes on retry, releases on finish). Items of one key in the same batch do not see each other (the claim
 * still orders them). The last unfinished item of the key has the latest due time; ORDER BY seq DESC LIMIT 1 keeps the
 * planner on provider_outbox_order (a max() over due_at made SQLite range-scan provider_outbox_due: quadratic in bulk).
 * Only a predecessor waiting to be retried ('pending') passes its due time on: one being delivered ('sending') has its
 * lease end there, and its finish may not see an item whose INSERT commits after it (issue 34: deliveries held up to
 * a lease, 60 s, behind a predecessor long finished). Such an item is due now; the claim's NOT EXISTS keeps it
 * behind the predecessor until that one finishes.
 */
const DUE_BEHIND = `case when v.order_key is null then cast(? as bigint) else coalesce((select case when b.state = 'pending' and b.due_at > cast(? as bigint) then b.due_at end
  from provider_outbox b where b.provider_id = cast(? as text) and b.endpoint = v.endpoint and b.order_key = v.order_key
  and b.state in ('pending', 'sending') order by b.seq desc limit 1), cast(? as bigint)) end`;
/** How long, and how often, enqueue tries again a write the database cannot take now (DependencyUnavailableError). */
const ENQUEUE_RETRY_FOR_MS = 30_000;
const ENQUEUE_RETRY_EVERY_MS = 100;
/** Rows per INSERT: well under SQLite's 32,766 bound parameters (10 each). */
const INSERT_BATCH = 500;
/** The SQL types of enqueue's VALUES columns (explicit for PostgreSQL, as RECORD_TYPES). */
const ENQUEUE_TYPES = ['text', 'bigint', 'text', 'text', 'text', 'text', 'text', 'text', 'text', 'integer'];
const MAX_LIST = 1000;
/** Endpoints remembered as registered at most (emptied when full: then they are upserted once more). */
const MAX_REGISTERED = 10_000;
/** What a claim reads back: every column but those it sets (state, claimed_by, due_at, updated_at). */
const CLAIM_RETURNS = 'id, realm_id, endpoint, endpoint_label, order_key, type, label, payload, attempts, total_attempts, max_attempts, created_at, last_status, last_error';

/**
 * Enqueue order across calls of this process: milliseconds × 1000 + a counter, so that items enqueued in the
 * same millisecond keep their order. Across processes the order follows their clocks.
 */
let lastSeq = 0;
function nextSeq(now: number): number {
  lastSeq = Math.max(lastSeq + 1, now * 1000);
  return lastSeq;
}

function toItem(row: Omit<OutboxTable, 'provider_id' | 'seq'>): OutboxItem {
  return {
    id: row.id,
    realmId: row.realm_id,
    endpoint: row.endpoint,
    endpointLabel: row.endpoint_label,
    orderKey: row.order_key,
    type: row.type,
    label: row.label,
    payload: row.payload,
    maxAttempts: Number(row.max_attempts),
    state: row.state as OutboxState,
    attempts: Number(row.attempts),
    totalAttempts: Number(row.total_attempts),
    dueAt: Number(row.due_at),
    claimedBy: row.claimed_by,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    lastStatus: row.last_status === null ? null : Number(row.last_status),
    lastError: row.last_error,
  };
}

function toEndpoint(row: OutboxEndpointTable): OutboxEndpointState {
  return {
    realmId: row.realm_id,
    endpoint: row.endpoint,
    paused: Number(row.paused) === 1,
    consecutiveFailures: Number(row.consecutive_failures),
    pausedAt: row.paused_at === null ? null : Number(row.paused_at),
    reason: row.reason,
    holdUntil: row.hold_until === null ? null : Number(row.hold_until),
  };
}

export class OutboxRepository implements OutboxStore {
  private readonly db: OutboxDb;
  /**
   * Endpoints (realm id and endpoint) this process has seen registered: their row exists and stays (rows go only with
   * their realm, whose id is never used again), so enqueueing for them again skips the upsert, one statement and one
   * commit of every event's write.
   */
  private readonly registered = new Set<string>();

  constructor(
    db: Db,
    private readonly dialect: 'sqlite' | 'postgres',
    private readonly providerId: string,
    readonly nodeId: string,
    private readonly clock: () => number = () => Date.now(),
    /** Told, for each claimed item, how long it waited past its due time (ms): a metric (providers/outbox.ts). */
    private readonly observeLateness: (lateMs: number) => void = () => {},
  ) {
    this.db = db.withTables<OutboxTables>() as unknown as OutboxDb;
  }

  /**
   * Writes an event's deliveries; resolves once committed. The request that caused the event waits for this (SPI
   * `persistEvent`), and its own change has already committed: a write the database cannot take now (a connection
   * lost to a restart or pg_terminate_backend, the database not accepting connections yet) is tried again every
   * ENQUEUE_RETRY_EVERY_MS, so an outage shorter than ENQUEUE_RETRY_FOR_MS loses no event that its request says
   * happened. A request whose client has gone, or whose time has run out, stops waiting at once (request-scope.ts:
   * it gets no new connection): nobody saw it answered.
   */
  async enqueue(items: OutboxItemInput[]): Promise<number | null> {
    const deadline = performance.now() + ENQUEUE_RETRY_FOR_MS;
    for (;;) {
      try {
        return await this.write(items);
      } catch (error) {
        if (!(error instanceof DependencyUnavailableError) || performance.now() + ENQUEUE_RETRY_EVERY_MS > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, ENQUEUE_RETRY_EVERY_MS));
      }
    }
  }

  /**
   * Writes items inside the caller's transaction `trx` (not tried again: the caller's transaction succeeds or fails
   * with its own change), so that they commit with it: one commit for both.
   */
  async enqueueIn(trx: Db, items: OutboxItemInput[]): Promise<void> {
    await this.write(items, trx.withTables<OutboxTables>() as unknown as OutboxDb);
  }

  /** Writes the items; returns the earliest due time of those written (null when every id was there already). */
  private async write(items: OutboxItemInput[], db: OutboxDb = this.db): Promise<number | null> {
    const now = this.clock();
    const p = this.providerId;
    let earliest: number | null = null;
    for (let start = 0; start < items.length; start += INSERT_BATCH) {
      const batch = items.slice(start, start + INSERT_BATCH);
      const endpoints = new Map(batch.map((item) => [`${item.realmId}\u0000${item.endpoint}`, item]));
      for (const key of endpoints.keys()) if (this.registered.has(key)) endpoints.delete(key);
      if (endpoints.size > 0) {
        await db
          .insertInto('provider_outbox_endpoint')
          .values(
            [...endpoints.values()].map((item) => ({ provider_id: p, realm_id: item.realmId, endpoint: item.endpoint, paused: 0, consecutive_failures: 0, paused_at: null, reason: null, hold_until: null, updated_at: now })),
          )
          .onConflict((oc) => oc.columns(['provider_id', 'realm_id', 'endpoint']).doNothing())
          .execute();
        if (this.registered.size + endpoints.size > MAX_REGISTERED) this.registered.clear();
        for (const key of endpoints.keys()) this.registered.add(key);
      }
      // One INSERT … SELECT over a row source, so the due time (DUE_BEHIND) is one correlated subquery planned once; as
      // a subquery per VALUES row PostgreSQL planned 500 of them per statement (about 0.8 ms per row written).
      const values: unknown[] = [];
      for (const item of batch) {
        values.push(item.id, nextSeq(now), item.realmId, item.endpoint, item.endpointLabel, item.orderKey, item.type, item.label, item.payload, item.maxAttempts);
      }
      const source = this.rows(ENQUEUE_TYPES, values);
      const { rows } = await this.run<{ due_at: number | string }>(
        db,
        `with v(id, seq, realm_id, endpoint, endpoint_label, order_key, type, label, payload, max_attempts) as (${source.text})
        insert into provider_outbox (provider_id, id, seq, realm_id, endpoint, endpoint_label, order_key, type, label, payload, state,
          attempts, total_attempts, max_attempts, due_at, claimed_by, created_at, updated_at, last_status, last_error)
        select cast(? as text), v.id, v.seq, v.realm_id, v.endpoint, v.endpoint_label, v.order_key, v.type, v.label, v.payload, 'pending',
          0, 0, v.max_attempts, ${DUE_BEHIND}, null, cast(? as bigint), cast(? as bigint), null, null
        from v
        where true
        on conflict (provider_id, id) do nothing
        returning due_at`,
        [...source.parameters, p, now, now, p, now, now, now],
      );
      for (const row of rows) {
        const due = Number(row.due_at);
        if (earliest === null || due < earliest) earliest = due;
      }
    }
    return earliest;
  }

  /**
   * Hand-written SQL with `?` placeholders (numbered for PostgreSQL; the text has no other `?`), run without Kysely's
   * builder and compiler: on the statements each delivery goes through, building them (a node per VALUES cell) cost
   * more CPU than running them.
   */
  private run<R>(db: OutboxDb, text: string, parameters: unknown[]): Promise<QueryResult<R>> {
    let n = 0;
    return db.executeQuery<R>(CompiledQuery.raw(this.dialect === 'postgres' ? text.replace(/\?/g, () => `$${++n}`) : text, parameters));
  }

  /**
   * A row source for `values` (row after row, `types.length` each): on SQLite a VALUES list of placeholders; on
   * PostgreSQL `select * from unnest(…)` over one typed array per column, so that neither the statement's text nor its
   * parameters grow with its rows. With a VALUES list PostgreSQL spent 6.4 ms planning the 5,000 typed parameters of
   * 500 rows, as long as running the statement.
   */
  private rows(types: readonly string[], values: unknown[]): { text: string; parameters: unknown[] } {
    const width = types.length;
    const count = values.length / width;
    if (this.dialect === 'sqlite') {
      const row = `(${types.map(() => '?').join(', ')})`;
      return { text: `values ${Array.from({ length: count }, () => row).join(', ')}`, parameters: values };
    }
    const columns = types.map((_, column) => {
      const cells = new Array<unknown>(count);
      for (let row = 0; row < count; row++) cells[row] = values[row * width + column];
      return cells;
    });
    return { text: `select * from unnest(${types.map((type) => `cast(? as ${type}[])`).join(', ')})`, parameters: columns };
  }

  /** The unfinished items after `item` (whose sequence number is `seq`) with the same order key. */
  private followers(db: OutboxDb, item: OutboxItem, seq: number) {
    return db
      .updateTable('provider_outbox')
      .where('provider_id', '=', this.providerId)
      .where('endpoint', '=', item.endpoint)
      .where('order_key', '=', item.orderKey)
      .where(sql<boolean>`state in ('pending', 'sending')`)
      .where('seq', '>', seq)
      .where('state', '=', 'pending');
  }

  /**
   * The endpoints whose items may be claimed now (not paused, not held). Every endpoint with items has a row
   * (enqueue registers it), so the claim can go endpoint by endpoint and never scans the rows of a paused or
   * held one: 100,000 waiting deliveries of a dead receiver cost nothing per poll.
   */
  private async activeEndpoints(now: number): Promise<{ realm_id: string; endpoint: string }[]> {
    return this.db
      .selectFrom('provider_outbox_endpoint')
      .select(['realm_id', 'endpoint'])
      .where('provider_id', '=', this.providerId)
      .where('paused', '=', 0)
      .where((eb) => eb.or([eb('hold_until', 'is', null), eb('hold_until', '<=', now)]))
      .execute();
  }

  async claimDue(limit: number, leaseMs: number): Promise<OutboxItem[]> {
    const now = this.clock();
    const endpoints = await this.activeEndpoints(now);
    if (endpoints.length === 0) return [];
    // Start with a different endpoint each time, so a busy one does not take every slot first.
    const start = this.rotation++ % endpoints.length;
    // Each endpoint's claim is one atomic statement (no transaction around them: nothing spans two).
    const claimed: OutboxItem[] = [];
    for (let i = 0; i < endpoints.length && claimed.length < limit; i++) {
      const { realm_id, endpoint } = endpoints[(start + i) % endpoints.length];
      claimed.push(...(await this.claimFrom(realm_id, endpoint, limit - claimed.length, leaseMs, now)));
    }
    return claimed.sort((a, b) => a.dueAt - b.dueAt || a.createdAt - b.createdAt);
  }

  /**
   * PostgreSQL: a condition that is always true and sets `synchronous_commit = off` for the statement's own (implicit)
   * transaction, so that a claim or a record sent as one statement does not wait for the disk flush at its commit. A
   * claim or record lost in a database crash is only a delivery sent again after its lease, with its webhook-id, which
   * at-least-once delivery allows. The enqueue, written with the event, keeps the server's setting.
   */
  private unflushedCommit(): string {
    return this.dialect === 'postgres' ? ` and (select set_config('synchronous_commit', 'off', true)) is not null` : '';
  }

  /**
   * A transaction whose commit does not wait for PostgreSQL's disk flush (see unflushedCommit), with BEGIN and the
   * setting sent as one simple query. SQLite: a plain transaction (in WAL mode a commit does not flush to disk anyway).
   */
  private async unflushed<T>(work: (db: OutboxDb) => Promise<T>): Promise<T> {
    if (this.dialect === 'sqlite') return this.db.transaction().execute(work);
    return this.db.connection().execute(async (db) => {
      await this.run(db, 'begin; set local synchronous_commit = off', []);
      let result: T;
      try {
        result = await work(db);
      } catch (error) {
        await this.run(db, 'rollback', []).catch(() => undefined);
        throw error;
      }
      await this.run(db, 'commit', []);
      return result;
    });
  }

  private rotation = 0;

  /** An endpoint's unfinished items that are due (or whose lease ran out), in provider_outbox_due's range. */
  private dueIn(db: QueryCreator<OutboxTables>, realmId: string, endpoint: string, now: number) {
    return db
      .selectFrom('provider_outbox as c')
      .where('c.provider_id', '=', this.providerId)
      .where('c.endpoint', '=', endpoint)
      .where(unfinished('c'))
      .where('c.due_at', '<=', now)
      .where('c.realm_id', '=', realmId);
  }

  private async claimFrom(realmId: string, endpoint: string, limit: number, leaseMs: number, now: number): Promise<OutboxItem[]> {
    const p = this.providerId;
    // The endpoint's due items (provider_outbox_due's range) that have no earlier unfinished item of their order key.
    // Materialized: evaluated once. Inlined into the UPDATE, PostgreSQL may run a LIMIT … SKIP LOCKED subquery again
    // per row and claim more than `limit` (seen: 3 of limit 2).
    const { rows } = await this.run<Omit<OutboxTable, 'provider_id' | 'seq' | 'state' | 'claimed_by' | 'due_at' | 'updated_at'> & { previous_due: number }>(
      this.db,
      `with candidates as materialized (
        select c.id, c.due_at from provider_outbox as c
        where c.provider_id = ? and c.endpoint = ? and c.state in ('pending', 'sending') and c.due_at <= ? and c.realm_id = ?
          and (c.order_key is null or not exists (select 1 from provider_outbox as b where b.provider_id = c.provider_id
            and b.endpoint = c.endpoint and b.order_key = c.order_key and b.seq < c.seq and b.state in ('pending', 'sending')))
        order by c.due_at, c.seq limit ?${this.dialect === 'postgres' ? ' for update skip locked' : ''})
      update provider_outbox set state = 'sending', claimed_by = ?, due_at = ?, updated_at = ?
      where provider_id = ? and id in (select candidates.id from candidates)${this.unflushedCommit()}
      returning ${CLAIM_RETURNS}, (select candidates.due_at from candidates where candidates.id = provider_outbox.id) as previous_due`,
      [p, endpoint, now, realmId, limit, this.nodeId, now + leaseMs, now, p],
    );
    for (const row of rows) this.observeLateness(Math.max(0, now - Number(row.previous_due)));
    // The columns the claim has just set are not read back: each returned column costs the driver a conversion per row.
    return rows.map((row) => toItem({ ...row, state: 'sending', claimed_by: this.nodeId, due_at: now + leaseMs, updated_at: now }));
  }

  /**
   * Gives claimed items back unsent (this node will not attempt them): pending and due now, for any node, instead
   * of after their lease. Only items still leased to this node change.
   */
  async release(items: OutboxItem[]): Promise<number> {
    if (items.length === 0) return 0;
    const now = this.clock();
    const result = await this.db
      .updateTable('provider_outbox')
      .set({ state: 'pending', claimed_by: null, due_at: now, updated_at: now })
      .where('provider_id', '=', this.providerId)
      .where('id', 'in', items.map((item) => item.id))
      .where('state', '=', 'sending')
      .where('claimed_by', '=', this.nodeId)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  /** Finished attempts waiting for the next group commit. */
  private finishing: { args: FinishArgs; resolve: (result: FinishResult) => void; reject: (error: unknown) => void }[] = [];
  /** The group commit under way, if any: attempts finishing meanwhile wait for the next one. */
  private flushing: Promise<void> | null = null;

  /**
   * Group commit: attempts are recorded together, one transaction at a time; those that finish while one commits
   * go in the next. A busy worker's batches grow by themselves (one BEGIN/COMMIT and a fixed number of statements
   * for many deliveries) while a lone attempt is recorded at the next event-loop turn.
   */
  finishAttempt(
    item: OutboxItem,
    attempt: Omit<OutboxAttempt, 'number' | 'node'>,
    next: OutboxNext,
    policy: { pauseAfterFailures: number; holdUntil?: number | null },
  ): Promise<FinishResult> {
    return new Promise((resolve, reject) => {
      this.finishing.push({ args: [item, attempt, next, policy], resolve, reject });
      this.flushing ??= this.flushAll();
    });
  }

  private async flushAll(): Promise<void> {
    await new Promise<void>((done) => setTimeout(done, GROUP_COMMIT_WAIT_MS));
    while (this.finishing.length > 0) await this.flushFinished();
    this.flushing = null;
  }

  private async flushFinished(): Promise<void> {
    const batch = this.finishing;
    this.finishing = [];
    try {
      const results: FinishResult[] = [];
      for (let i = 0; i < batch.length; i += FINISH_BATCH) {
        const chunk = batch.slice(i, i + FINISH_BATCH).map(({ args }) => args);
        const allDelivered = chunk.every(([, , next]) => next.state === 'delivered');
        results.push(...(await (this.dialect === 'postgres' && allDelivered ? this.finishDelivered(chunk) : this.unflushed((trx) => this.finishMany(trx, chunk)))));
      }
      batch.forEach(({ resolve }, i) => resolve(results[i]));
    } catch (error) {
      for (const { reject } of batch) reject(error);
    }
  }

  /**
   * PostgreSQL, a batch in which every attempt delivered (a busy worker's usual batch): finishMany's statements as
   * one, through data-modifying CTEs, in one round trip and without BEGIN/COMMIT. The parts see the table as it was
   * before the statement and change disjoint rows: `done` this node's items (claimed_by is set only with 'sending'),
   * `released` the never-tried pending item behind each of them, found through provider_outbox_order and updated by
   * primary key. Pending is said as `claimed_by is null` (the same, for an unfinished item): with `state = 'pending'`
   * PostgreSQL's planner walked provider_outbox_due over every item due later instead, before statistics existed.
   */
  private async finishDelivered(batch: FinishArgs[]): Promise<FinishResult[]> {
    const now = this.clock();
    const p = this.providerId;
    const states: unknown[] = [];
    const attempts: unknown[] = [];
    for (const [item, attempt, next] of batch) {
      states.push(item.id, next.state, item.attempts + 1, item.totalAttempts + 1, now, attempt.status, attempt.error, item.totalAttempts);
      attempts.push(item.id, item.totalAttempts + 1, attempt.startedAt, Math.round(attempt.durationMs), attempt.status, attempt.error, attempt.responseExcerpt);
    }
    const v = this.rows(RECORD_TYPES, states);
    const a = this.rows(DELIVERED_ATTEMPT_TYPES, attempts);
    const { rows } = await this.run<{ id: string }>(
      this.db,
      `with v(id, state, attempts, total_attempts, due_at, status, error, previous_total) as (${v.text}),
      a(item_id, number, started_at, duration_ms, status, error, response_excerpt) as (${a.text}),
      done as (
        update provider_outbox set state = v.state, attempts = v.attempts, total_attempts = v.total_attempts, due_at = v.due_at,
          claimed_by = null, updated_at = ?, last_status = v.status, last_error = v.error
        from v
        where provider_outbox.provider_id = ? and provider_outbox.id = v.id
          and provider_outbox.claimed_by = ? and provider_outbox.total_attempts = v.previous_total${this.unflushedCommit()}
        returning provider_outbox.id, provider_outbox.seq, provider_outbox.realm_id, provider_outbox.endpoint, provider_outbox.order_key),
      logged as (
        insert into provider_outbox_attempt (provider_id, item_id, number, node, started_at, duration_ms, status, error, response_excerpt)
        select ?, a.item_id, a.number, ?, a.started_at, a.duration_ms, a.status, a.error, a.response_excerpt from a join done on done.id = a.item_id),
      released as (
        update provider_outbox set due_at = ?
        from (select (select n.id from provider_outbox as n where n.provider_id = ? and n.endpoint = done.endpoint and n.order_key = done.order_key
            and n.state in ('pending', 'sending') and n.seq > done.seq order by n.seq limit 1) as id from done where done.order_key is not null) as f
        where provider_outbox.provider_id = ? and provider_outbox.id = f.id and provider_outbox.claimed_by is null
          and provider_outbox.attempts = 0 and provider_outbox.due_at > ?),
      reset as (
        update provider_outbox_endpoint set consecutive_failures = 0, hold_until = null, updated_at = ?
        where provider_id = ? and consecutive_failures > 0 and (realm_id, endpoint) in (select done.realm_id, done.endpoint from done))
      select done.id from done`,
      [...v.parameters, ...a.parameters, now, p, this.nodeId, p, this.nodeId, now, p, p, now, now, p],
    );
    const recorded = new Set(rows.map((row) => row.id));
    return batch.map(([item]) => ({ recorded: recorded.has(item.id), endpoint: null }));
  }

  /**
   * Records a batch of finished attempts with a fixed number of statements for the usual case (every attempt
   * delivered): the items' new states in one UPDATE … FROM a VALUES list (each guarded: still this node's, the
   * attempt count unchanged), their attempts in one INSERT, the release of the next item of each order key in one
   * UPDATE, one reset per endpoint. A failed attempt's endpoint bookkeeping runs per attempt, in order. On
   * PostgreSQL that is a few round trips per batch instead of four per delivery.
   */
  private async finishMany(trx: OutboxDb, batch: FinishArgs[]): Promise<FinishResult[]> {
    const now = this.clock();
    const p = this.providerId;
    // Still this node's: `claimed_by` is set only with state 'sending' (claimDue) and cleared whenever the state
    // changes (here, release, requeue). No condition on `state`: it would let PostgreSQL's planner pick a partial index
    // by provider alone and scan every unfinished row per batch (it did, before statistics existed).
    const values: unknown[] = [];
    for (const [item, attempt, next] of batch) {
      values.push(item.id, next.state, item.attempts + 1, item.totalAttempts + 1, next.state === 'pending' ? next.dueAt : now, attempt.status, attempt.error, item.totalAttempts);
    }
    const v = this.rows(RECORD_TYPES, values);
    const recorded = await this.run<{ id: string; seq: number }>(
      trx,
      `with v(id, state, attempts, total_attempts, due_at, status, error, previous_total) as (${v.text})
      update provider_outbox set state = v.state, attempts = v.attempts, total_attempts = v.total_attempts, due_at = v.due_at,
        claimed_by = null, updated_at = ?, last_status = v.status, last_error = v.error
      from v
      where provider_outbox.provider_id = ? and provider_outbox.id = v.id
        and provider_outbox.claimed_by = ? and provider_outbox.total_attempts = v.previous_total
      returning provider_outbox.id as id, provider_outbox.seq as seq`,
      [...v.parameters, now, p, this.nodeId],
    );
    const seqOf = new Map(recorded.rows.map((row) => [row.id, row.seq]));
    const done = batch.filter(([item]) => seqOf.has(item.id));
    if (done.length === 0) return batch.map(() => ({ recorded: false, endpoint: null }));

    const attempts: unknown[] = [];
    for (const [item, attempt] of done) {
      attempts.push(p, item.id, item.totalAttempts + 1, this.nodeId, attempt.startedAt, Math.round(attempt.durationMs), attempt.status, attempt.error, attempt.responseExcerpt);
    }
    const logged = this.rows(ATTEMPT_TYPES, attempts);
    await this.run(
      trx,
      `insert into provider_outbox_attempt (provider_id, item_id, number, node, started_at, duration_ms, status, error, response_excerpt)
      ${logged.text}`,
      logged.parameters,
    );

    // Order keys: a retry holds the items behind it at least as long (see dueBehind); a finished item lets the next
    // one (never tried, held back behind it) go now.
    const released: { endpoint: string; orderKey: string; seq: number }[] = [];
    for (const [item, , next] of done) {
      if (item.orderKey === null) continue;
      const seq = seqOf.get(item.id)!;
      if (next.state === 'pending') await this.followers(trx, item, seq).set({ due_at: next.dueAt }).where('due_at', '<', next.dueAt).execute();
      else released.push({ endpoint: item.endpoint, orderKey: item.orderKey, seq });
    }
    if (released.length) {
      // The next item of each key through provider_outbox_order (a correlated lookup per key), then updated by key.
      const f = this.rows(RELEASE_TYPES, released.flatMap((r) => [r.endpoint, r.orderKey, r.seq]));
      await this.run(
        trx,
        `with f(endpoint, order_key, seq) as (${f.text})
        update provider_outbox set due_at = ?
        where provider_id = ? and state = 'pending' and attempts = 0 and due_at > ? and id in (
          select (select n.id from provider_outbox as n where n.provider_id = ? and n.endpoint = f.endpoint and n.order_key = f.order_key
            and n.state in ('pending', 'sending') and n.seq > f.seq order by n.seq limit 1) from f)`,
        [...f.parameters, now, p, now, p],
      );
    }

    // Endpoint bookkeeping in the attempts' order: a delivery clears the failure count, a failure raises it (and
    // may pause the endpoint). Consecutive deliveries to one endpoint need one reset.
    const endpoints = new Map<string, FinishResult['endpoint']>();
    const resetPending = new Map<string, OutboxItem>();
    const reset = async (item: OutboxItem) => {
      await trx
        .updateTable('provider_outbox_endpoint')
        .set({ consecutive_failures: 0, hold_until: null, updated_at: now })
        .where('provider_id', '=', p)
        .where('realm_id', '=', item.realmId)
        .where('endpoint', '=', item.endpoint)
        .where('consecutive_failures', '>', 0) // cheap when there was no failure: the WHERE matches nothing
        .execute();
    };
    for (const [item, , next, policy] of done) {
      const key = `${item.realmId}\u0000${item.endpoint}`;
      if (next.state === 'delivered') {
        resetPending.set(key, item);
        continue;
      }
      const pending = resetPending.get(key);
      if (pending) {
        await reset(pending);
        resetPending.delete(key);
      }
      endpoints.set(item.id, await this.bumpFailures(trx, item, now, policy.pauseAfterFailures, policy.holdUntil ?? null));
    }
    for (const item of resetPending.values()) await reset(item);
    return batch.map(([item]) => (seqOf.has(item.id) ? { recorded: true, endpoint: endpoints.get(item.id) ?? null } : { recorded: false, endpoint: null }));
  }

  private async bumpFailures(trx: OutboxDb, item: OutboxItem, now: number, pauseAfter: number, holdUntil: number | null): Promise<OutboxEndpointState> {
    const p = this.providerId;
    await trx
      .insertInto('provider_outbox_endpoint')
      .values({ provider_id: p, realm_id: item.realmId, endpoint: item.endpoint, paused: 0, consecutive_failures: 0, paused_at: null, reason: null, hold_until: null, updated_at: now })
      .onConflict((oc) => oc.columns(['provider_id', 'realm_id', 'endpoint']).doNothing())
      .execute();
    const row = await trx
      .updateTable('provider_outbox_endpoint')
      .set((eb) => ({
        consecutive_failures: eb('consecutive_failures', '+', 1),
        // From the second failure in a row (the count before this one is 1 or more).
        ...(holdUntil !== null ? { hold_until: eb.case().when('consecutive_failures', '>=', 1).then(holdUntil).else(eb.ref('hold_until')).end() } : {}),
        updated_at: now,
      }))
      .where('provider_id', '=', p)
      .where('realm_id', '=', item.realmId)
      .where('endpoint', '=', item.endpoint)
      .returningAll()
      .executeTakeFirstOrThrow();
    if (pauseAfter > 0 && Number(row.paused) === 0 && Number(row.consecutive_failures) >= pauseAfter) {
      const paused = await trx
        .updateTable('provider_outbox_endpoint')
        .set({ paused: 1, paused_at: now, reason: `${row.consecutive_failures} consecutive failed attempts`, updated_at: now })
        .where('provider_id', '=', p)
        .where('realm_id', '=', item.realmId)
        .where('endpoint', '=', item.endpoint)
        .returningAll()
        .executeTakeFirstOrThrow();
      return toEndpoint(paused);
    }
    return toEndpoint(row);
  }

  private filtered(query: OutboxQuery) {
    let q = this.db.selectFrom('provider_outbox').where('provider_id', '=', this.providerId).where('realm_id', '=', query.realmId);
    if (query.endpoint !== undefined) q = q.where('endpoint', '=', query.endpoint);
    if (query.states?.length) q = q.where('state', 'in', query.states);
    if (query.types?.length) q = q.where('type', 'in', query.types);
    if (query.from !== undefined) q = q.where('created_at', '>=', query.from);
    if (query.to !== undefined) q = q.where('created_at', '<=', query.to);
    if (query.ids) q = q.where('id', 'in', query.ids.length ? query.ids : ['']);
    return q;
  }

  async list(query: OutboxQuery): Promise<OutboxItem[]> {
    const rows = await this.filtered(query)
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('seq', 'desc')
      .limit(Math.min(query.max ?? 100, MAX_LIST))
      .offset(query.first ?? 0)
      .execute();
    return rows.map(toItem);
  }

  async attempts(itemIds: string[]): Promise<Map<string, OutboxAttempt[]>> {
    const result = new Map<string, OutboxAttempt[]>(itemIds.map((id) => [id, []]));
    if (itemIds.length === 0) return result;
    const rows = await this.db
      .selectFrom('provider_outbox_attempt')
      .selectAll()
      .where('provider_id', '=', this.providerId)
      .where('item_id', 'in', itemIds)
      .orderBy('item_id')
      .orderBy('number')
      .execute();
    for (const row of rows) {
      result.get(row.item_id)?.push({
        number: Number(row.number),
        node: row.node,
        startedAt: Number(row.started_at),
        durationMs: Number(row.duration_ms),
        status: row.status === null ? null : Number(row.status),
        error: row.error,
        responseExcerpt: row.response_excerpt,
      });
    }
    return result;
  }

  async requeue(query: OutboxQuery): Promise<number> {
    const now = this.clock();
    const states = (query.states?.length ? query.states : FINISHED).filter((s) => FINISHED.includes(s));
    if (states.length === 0) return 0;
    const ids = this.filtered({ ...query, states, first: undefined, max: undefined }).select('id');
    const result = await this.db
      .updateTable('provider_outbox')
      .set({ state: 'pending', attempts: 0, due_at: now, claimed_by: null, updated_at: now })
      .where('provider_id', '=', this.providerId)
      .where('state', 'in', states)
      .where('id', 'in', ids)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  async endpoint(realmId: string, endpoint: string): Promise<OutboxEndpointState | null> {
    const row = await this.db
      .selectFrom('provider_outbox_endpoint')
      .selectAll()
      .where('provider_id', '=', this.providerId)
      .where('realm_id', '=', realmId)
      .where('endpoint', '=', endpoint)
      .executeTakeFirst();
    return row ? toEndpoint(row) : null;
  }

  async setPaused(realmId: string, endpoint: string, paused: boolean, reason: string | null): Promise<OutboxEndpointState> {
    const now = this.clock();
    const values = { paused: paused ? 1 : 0, paused_at: paused ? now : null, reason: paused ? reason : null, consecutive_failures: 0, hold_until: null, updated_at: now };
    const row = await this.db
      .insertInto('provider_outbox_endpoint')
      .values({ provider_id: this.providerId, realm_id: realmId, endpoint, ...values })
      .onConflict((oc) => oc.columns(['provider_id', 'realm_id', 'endpoint']).doUpdateSet(values))
      .returningAll()
      .executeTakeFirstOrThrow();
    return toEndpoint(row);
  }

  async stats(now: number): Promise<OutboxStats> {
    const p = this.providerId;
    const depth = await this.db
      .selectFrom('provider_outbox as c')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('c.provider_id', '=', p)
      .where(unfinished('c'))
      // Always true; it steers SQLite (no statistics) to the partial index: 25 ms instead of 250 ms at 100,000 rows.
      .where('c.due_at', '>=', 0)
      .executeTakeFirstOrThrow();
    let oldestDueAt: number | null = null;
    for (const { realm_id, endpoint } of await this.activeEndpoints(now)) {
      const oldest = await this.dueIn(this.db, realm_id, endpoint, now)
        .select('c.due_at')
        .orderBy('c.due_at')
        .limit(1)
        .executeTakeFirst();
      if (oldest && (oldestDueAt === null || Number(oldest.due_at) < oldestDueAt)) oldestDueAt = Number(oldest.due_at);
    }
    return { depth: Number(depth.n), oldestDueAt };
  }

  /**
   * The purge's next batch: finished items last changed before `time`, from provider_outbox_finished (which holds
   * finished rows only); its plan is checked by test/outbox-store.test.ts.
   */
  purgeQuery(time: number, limit: number) {
    return (
      this.db
        .selectFrom('provider_outbox')
        .select('id')
        .where('provider_id', '=', this.providerId)
        .where('updated_at', '<', time)
        // Literal, so that SQLite's planner sees the index's condition (not through bound parameters).
        .where(sql<boolean>`state in ('delivered', 'dead')`)
        .limit(limit)
    );
  }

  async purgeFinishedBefore(time: number, limit: number): Promise<number> {
    // The attempts go with their item (foreign key, ON DELETE CASCADE).
    const result = await this.db
      .deleteFrom('provider_outbox')
      .where('provider_id', '=', this.providerId)
      .where('id', 'in', this.purgeQuery(time, limit))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

}
