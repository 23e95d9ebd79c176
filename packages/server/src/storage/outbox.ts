/**
 * Providers' durable outboxes (SPI `OutboxStore`): items, attempts and per-endpoint pause state, one set of
 * tables shared by every provider (keyed by provider id), SQLite and PostgreSQL alike.
 *
 * Claiming: one UPDATE … WHERE id IN (SELECT … LIMIT n) RETURNING. On PostgreSQL the inner SELECT locks with
 * FOR UPDATE SKIP LOCKED, so concurrent processes take disjoint items; on SQLite the statement is atomic (one
 * process, one connection). A claimed item's `due_at` becomes its lease end, so an item whose node died is due
 * again — for any node — when the lease expires.
 */
import { sql, type Kysely, type QueryCreator } from 'kysely';
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

const UNFINISHED: OutboxState[] = ['pending', 'sending'];

/** Finished attempts recorded per transaction at most (8 parameters each, far below either database's limit). */
const FINISH_BATCH = 500;
/** The SQL types of finishMany's VALUES columns: explicit, so PostgreSQL does not read untyped parameters as text. */
const RECORD_TYPES = ['text', 'text', 'integer', 'integer', 'bigint', 'integer', 'text', 'integer'];
/**
 * The partial indexes' predicate, as literal SQL: a planner uses a partial index only when the query carries its
 * condition, and SQLite cannot see that through bound parameters.
 */
const unfinished = (alias: 'b' | 'c' | 'n') => sql<boolean>`${sql.ref(`${alias}.state`)} in ('pending', 'sending')`;
const FINISHED: OutboxState[] = ['delivered', 'dead'];
/** Rows per INSERT: well under SQLite's 32,766 bound parameters (20 columns each). */
const INSERT_BATCH = 500;
const MAX_LIST = 1000;

/**
 * Enqueue order across calls of this process: milliseconds × 1000 + a counter, so that items enqueued in the
 * same millisecond keep their order. Across processes the order follows their clocks.
 */
let lastSeq = 0;
function nextSeq(now: number): number {
  lastSeq = Math.max(lastSeq + 1, now * 1000);
  return lastSeq;
}

function toItem(row: OutboxTable): OutboxItem {
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

  constructor(
    db: Db,
    private readonly dialect: 'sqlite' | 'postgres',
    private readonly providerId: string,
    readonly nodeId: string,
    private readonly clock: () => number = () => Date.now(),
  ) {
    this.db = db.withTables<OutboxTables>() as unknown as OutboxDb;
  }

  async enqueue(items: OutboxItemInput[]): Promise<void> {
    const now = this.clock();
    for (let start = 0; start < items.length; start += INSERT_BATCH) {
      const rows = items.slice(start, start + INSERT_BATCH).map((item) => ({
        provider_id: this.providerId,
        id: item.id,
        seq: nextSeq(now),
        realm_id: item.realmId,
        endpoint: item.endpoint,
        endpoint_label: item.endpointLabel,
        order_key: item.orderKey,
        type: item.type,
        label: item.label,
        payload: item.payload,
        state: 'pending',
        attempts: 0,
        total_attempts: 0,
        max_attempts: item.maxAttempts,
        due_at: item.orderKey === null ? now : this.dueBehind(item.endpoint, item.orderKey, now),
        claimed_by: null,
        created_at: now,
        updated_at: now,
        last_status: null,
        last_error: null,
      }));
      const endpoints = new Map(rows.map((row) => [`${row.realm_id}\u0000${row.endpoint}`, row]));
      await this.db
        .insertInto('provider_outbox_endpoint')
        .values(
          [...endpoints.values()].map((row) => ({ provider_id: this.providerId, realm_id: row.realm_id, endpoint: row.endpoint, paused: 0, consecutive_failures: 0, paused_at: null, reason: null, hold_until: null, updated_at: now })),
        )
        .onConflict((oc) => oc.columns(['provider_id', 'realm_id', 'endpoint']).doNothing())
        .execute();
      await this.db
        .insertInto('provider_outbox')
        .values(rows)
        .onConflict((oc) => oc.columns(['provider_id', 'id']).doNothing())
        .execute();
    }
  }

  /**
   * A new item is due no sooner than the unfinished items before it with the same order key (it could not be
   * claimed before them anyway): a backlog behind a failing head is then not due, and the claim's scan over
   * due rows never wades through it. finishAttempt keeps this true (pushes on retry, releases on finish).
   */
  private dueBehind(endpoint: string, orderKey: string, now: number) {
    // The last unfinished item of the key has the latest due time; ORDER BY seq DESC LIMIT 1 keeps the planner on
    // provider_outbox_order (a max() over due_at made SQLite range-scan provider_outbox_due: quadratic in bulk).
    return sql<number>`coalesce((select case when b.due_at > ${now} then b.due_at end from provider_outbox b where b.provider_id = ${this.providerId} and b.endpoint = ${endpoint} and b.order_key = ${orderKey} and ${unfinished('b')} order by b.seq desc limit 1), ${now})`;
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
    const claim = async (db: OutboxDb) => {
      const claimed: OutboxItem[] = [];
      for (let i = 0; i < endpoints.length && claimed.length < limit; i++) {
        const { realm_id, endpoint } = endpoints[(start + i) % endpoints.length];
        claimed.push(...(await this.claimFrom(db, realm_id, endpoint, limit - claimed.length, leaseMs, now)));
      }
      return claimed.sort((a, b) => a.dueAt - b.dueAt || a.createdAt - b.createdAt);
    };
    if (this.dialect === 'sqlite') return claim(this.db);
    // A lease lost in a database crash is only a delivery claimed again: no need to wait for the disk flush.
    return this.db.transaction().execute(async (trx) => {
      await sql`set local synchronous_commit = off`.execute(trx);
      return claim(trx);
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

  private async claimFrom(db: OutboxDb, realmId: string, endpoint: string, limit: number, leaseMs: number, now: number): Promise<OutboxItem[]> {
    const p = this.providerId;
    const earlierUnfinished = db
      .selectFrom('provider_outbox as b')
      .select(sql`1`.as('one'))
      .whereRef('b.provider_id', '=', 'c.provider_id' as never)
      .whereRef('b.endpoint', '=', 'c.endpoint' as never)
      .whereRef('b.order_key', '=', 'c.order_key' as never)
      .whereRef('b.seq', '<', 'c.seq' as never)
      .where(unfinished('b'));
    const rows = await db
      // Materialized: evaluated once. Inlined into the UPDATE, PostgreSQL may run a LIMIT … SKIP LOCKED
      // subquery again per row and claim more than `limit` (seen: 3 of limit 2).
      .with(
        (cte) => cte('candidates').materialized(),
        (db) =>
          this.dueIn(db, realmId, endpoint, now)
            .select('c.id')
            .where(({ not, exists, or, eb }) => or([eb('c.order_key', 'is', null), not(exists(earlierUnfinished))]))
            .orderBy('c.due_at')
            .orderBy('c.seq')
            .limit(limit)
            .$if(this.dialect === 'postgres', (q) => q.forUpdate().skipLocked()),
      )
      .updateTable('provider_outbox')
      .set({ state: 'sending', claimed_by: this.nodeId, due_at: now + leaseMs, updated_at: now })
      .where('provider_id', '=', p)
      .where('id', 'in', (eb) => eb.selectFrom('candidates').select('candidates.id'))
      .returningAll()
      .execute();
    return rows.map(toItem);
  }

  /** Finished attempts waiting for the next group commit. */
  private finishing: { args: FinishArgs; resolve: (result: FinishResult) => void; reject: (error: unknown) => void }[] = [];

  /**
   * Group commit: the attempts that finish within one event-loop turn are recorded in one transaction (each as
   * its own statements, in order), so a busy worker pays one BEGIN/COMMIT for several deliveries.
   */
  finishAttempt(
    item: OutboxItem,
    attempt: Omit<OutboxAttempt, 'number' | 'node'>,
    next: OutboxNext,
    policy: { pauseAfterFailures: number; holdUntil?: number | null },
  ): Promise<FinishResult> {
    return new Promise((resolve, reject) => {
      if (this.finishing.push({ args: [item, attempt, next, policy], resolve, reject }) === 1) setImmediate(() => void this.flushFinished());
    });
  }

  private async flushFinished(): Promise<void> {
    const batch = this.finishing;
    this.finishing = [];
    try {
      const results: FinishResult[] = [];
      for (let i = 0; i < batch.length; i += FINISH_BATCH) {
        const chunk = batch.slice(i, i + FINISH_BATCH).map(({ args }) => args);
        results.push(...(await this.db.transaction().execute((trx) => this.finishMany(trx, chunk))));
      }
      batch.forEach(({ resolve }, i) => resolve(results[i]));
    } catch (error) {
      for (const { reject } of batch) reject(error);
    }
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
    // The record of an attempt need not wait for PostgreSQL's disk flush: lost in a crash, the delivery is sent
    // again after its lease with the same webhook-id, which at-least-once delivery allows. The enqueue, written
    // with the event, keeps the server's setting.
    if (this.dialect === 'postgres') await sql`set local synchronous_commit = off`.execute(trx);
    const rows = batch.map(([item, attempt, next]) => {
      const values = [item.id, next.state, item.attempts + 1, item.totalAttempts + 1, next.state === 'pending' ? next.dueAt : now, attempt.status, attempt.error, item.totalAttempts];
      return sql`(${sql.join(values.map((value, i) => sql`cast(${value} as ${sql.raw(RECORD_TYPES[i])})`))})`;
    });
    const recorded = await sql<{ id: string; seq: number }>`
      with v(id, state, attempts, total_attempts, due_at, status, error, previous_total) as (values ${sql.join(rows)})
      update provider_outbox set state = v.state, attempts = v.attempts, total_attempts = v.total_attempts, due_at = v.due_at,
        claimed_by = null, updated_at = ${now}, last_status = v.status, last_error = v.error
      from v
      where provider_outbox.provider_id = ${p} and provider_outbox.id = v.id and provider_outbox.state = 'sending'
        and provider_outbox.claimed_by = ${this.nodeId} and provider_outbox.total_attempts = v.previous_total
      returning provider_outbox.id as id, provider_outbox.seq as seq`.execute(trx);
    const seqOf = new Map(recorded.rows.map((row) => [row.id, row.seq]));
    const done = batch.filter(([item]) => seqOf.has(item.id));
    if (done.length === 0) return batch.map(() => ({ recorded: false, endpoint: null }));

    await trx
      .insertInto('provider_outbox_attempt')
      .values(
        done.map(([item, attempt]) => ({
          provider_id: p,
          item_id: item.id,
          number: item.totalAttempts + 1,
          node: this.nodeId,
          started_at: attempt.startedAt,
          duration_ms: Math.round(attempt.durationMs),
          status: attempt.status,
          error: attempt.error,
          response_excerpt: attempt.responseExcerpt,
        })),
      )
      .execute();

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
      const keys = released.map((r) => sql`(cast(${r.endpoint} as text), cast(${r.orderKey} as text), cast(${r.seq} as bigint))`);
      // The next item of each key through provider_outbox_order (a correlated lookup per key), then updated by key.
      await sql`
        with f(endpoint, order_key, seq) as (values ${sql.join(keys)})
        update provider_outbox set due_at = ${now}
        where provider_id = ${p} and state = 'pending' and attempts = 0 and due_at > ${now} and id in (
          select (select n.id from provider_outbox as n where n.provider_id = ${p} and n.endpoint = f.endpoint and n.order_key = f.order_key
            and ${unfinished('n')} and n.seq > f.seq order by n.seq limit 1) from f)`.execute(trx);
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

  async purgeFinishedBefore(time: number, limit: number): Promise<number> {
    const ids = this.db
      .selectFrom('provider_outbox')
      .select('id')
      .where('provider_id', '=', this.providerId)
      .where('updated_at', '<', time)
      .where('state', 'in', FINISHED)
      .limit(limit);
    // The attempts go with their item (foreign key, ON DELETE CASCADE).
    const result = await this.db
      .deleteFrom('provider_outbox')
      .where('provider_id', '=', this.providerId)
      .where('id', 'in', ids)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
