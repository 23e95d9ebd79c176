/**
 * The outbox's admin REST API, mounted by the host under `/admin/realms/{realm}/ext-event-webhook/…` behind its
 * admin authentication (role manage-clients; realm-admin holds it); the host records each successful POST as
 * an admin event. Clients are named by their `clientId`. Users' data in deliveries needs view-users too (README).
 */
import type { AdminResourceRequest, AdminResourceRoute, OutboxItem, OutboxQuery, OutboxState, ProviderContext, ResourceResponse } from '@realmgate/spi';
import { decodeStored } from './outbox.js';
import type { OutboxWorker } from './outbox.js';

const STATES: readonly OutboxState[] = ['pending', 'sending', 'delivered', 'dead'];
const MAX_PAGE = 1000;

class BadRequest extends Error {
  constructor(
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

const error = (status: number, message: string): ResourceResponse => ({ status, body: { error: message } });

function list(raw: unknown, name: string, allowed?: readonly string[]): string[] | undefined {
  if (raw === undefined || raw === null || raw === '') return undefined;
  const items = typeof raw === 'string' ? raw.split(',') : Array.isArray(raw) ? raw : null;
  if (!items || !items.every((item) => typeof item === 'string')) throw new BadRequest(`${name} must be a comma-separated list of strings`);
  const values = (items as string[]).map((item) => item.trim()).filter(Boolean);
  const bad = allowed && values.find((value) => !allowed.includes(value));
  if (bad) throw new BadRequest(`${name}: unknown value ${JSON.stringify(bad)}; one of ${allowed.join(', ')}`);
  return values;
}

/** Epoch milliseconds, or an ISO 8601 date. */
function time(raw: unknown, name: string): number | undefined {
  if (raw === undefined || raw === null || raw === '') return undefined;
  if (typeof raw === 'number' && Number.isSafeInteger(raw)) return raw;
  if (typeof raw === 'string' && /^\d{1,15}$/.test(raw)) return Number(raw);
  const parsed = typeof raw === 'string' ? Date.parse(raw) : Number.NaN;
  if (Number.isNaN(parsed)) throw new BadRequest(`${name} must be epoch milliseconds or an ISO 8601 date`);
  return parsed;
}

function integer(raw: string | undefined, name: string, min: number, max: number, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  const value = /^\d{1,9}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= min && value <= max)) throw new BadRequest(`${name} must be an integer from ${min} to ${max}`);
  return value;
}

export function outboxAdminRoutes(worker: OutboxWorker, context: ProviderContext): AdminResourceRoute[] {
  const store = worker.store;

  async function endpointOf(realmName: string, clientId: unknown): Promise<string | undefined> {
    if (clientId === undefined || clientId === null || clientId === '') return undefined;
    if (typeof clientId !== 'string') throw new BadRequest('clientId must be a string');
    const client = await context.clients.getByClientId(realmName, clientId);
    if (!client) throw new BadRequest(`Client ${clientId} not found`, 404);
    return client.id;
  }

  async function filterOf(request: AdminResourceRequest, source: Record<string, unknown>): Promise<OutboxQuery> {
    return {
      realmId: request.realm.id,
      endpoint: await endpointOf(request.realm.name, source.clientId),
      states: list(source.state, 'state', STATES) as OutboxState[] | undefined,
      types: list(source.type, 'type')?.map((type) => type.toUpperCase()),
      from: time(source.from, 'from'),
      to: time(source.to, 'to'),
    };
  }

  /**
   * A delivery carries a user's personal data (username, e-mail, names, address, roles): shown only to callers
   * who may view users, as the admin API shows it nowhere else to manage-clients alone. Others get the delivery
   * with `payload` and `userName` null and `payloadWithheld` true.
   */
  const mayReadUsers = (request: AdminResourceRequest) => request.admin.hasRole('view-users');

  /**
   * Resending sends a past payload again, to the client's webhook URL as it is now, which manage-clients may have
   * just changed: the same rule as reading it.
   */
  const requireMayReadUsers = (request: AdminResourceRequest) => {
    if (!mayReadUsers(request)) throw new BadRequest('Resending a delivery sends its user data again: it needs view-users as well', 403);
  };

  async function present(items: OutboxItem[], withUserData: boolean): Promise<unknown[]> {
    const attempts = await store.attempts(items.map((item) => item.id));
    return items.map((item) => {
      let payload: unknown = null;
      try {
        if (withUserData) payload = JSON.parse(decodeStored(item.payload).body);
      } catch {
        // an unreadable row: shown without its payload
      }
      return {
        id: item.id,
        clientId: item.endpointLabel,
        eventType: item.type,
        userName: withUserData ? item.label : null,
        state: item.state,
        attempts: item.attempts,
        maxAttempts: item.maxAttempts,
        totalAttempts: item.totalAttempts,
        createdTimestamp: item.createdAt,
        updatedTimestamp: item.updatedAt,
        nextAttemptTimestamp: item.state === 'pending' ? item.dueAt : null,
        leaseExpiresTimestamp: item.state === 'sending' ? item.dueAt : null,
        lastStatus: item.lastStatus,
        lastError: item.lastError,
        payload,
        ...(withUserData ? {} : { payloadWithheld: true }),
        attemptLog: (attempts.get(item.id) ?? []).map((attempt) => ({
          number: attempt.number,
          node: attempt.node,
          startedTimestamp: attempt.startedAt,
          durationMs: attempt.durationMs,
          status: attempt.status,
          error: attempt.error,
          responseExcerpt: attempt.responseExcerpt,
        })),
      };
    });
  }

  const handle =
    (work: (request: AdminResourceRequest) => Promise<ResourceResponse>) =>
    async (request: AdminResourceRequest): Promise<ResourceResponse> => {
      try {
        return await work(request);
      } catch (problem) {
        if (problem instanceof BadRequest) return error(problem.status, problem.message);
        throw problem;
      }
    };

  const bodyOf = (request: AdminResourceRequest): Record<string, unknown> => {
    const body = request.body ?? {};
    if (typeof body !== 'object' || Array.isArray(body)) throw new BadRequest('the body must be a JSON object');
    return body as Record<string, unknown>;
  };

  const endpointState = async (request: AdminResourceRequest) => {
    const endpoint = (await endpointOf(request.realm.name, request.params.clientId))!;
    const state = await store.endpoint(request.realm.id, endpoint);
    return {
      clientId: request.params.clientId,
      paused: state?.paused ?? false,
      consecutiveFailures: state?.consecutiveFailures ?? 0,
      pausedTimestamp: state?.pausedAt ?? null,
      reason: state?.reason ?? null,
    };
  };

  const setPaused = (paused: boolean) =>
    handle(async (request) => {
      const endpoint = (await endpointOf(request.realm.name, request.params.clientId))!;
      const reason = paused ? 'paused by an administrator' : null;
      await store.setPaused(request.realm.id, endpoint, paused, reason);
      if (!paused) worker.resumed(request.realm.id, endpoint);
      return { status: 200, body: await endpointState(request) };
    });

  return [
    {
      method: 'GET',
      path: '/deliveries',
      role: 'manage-clients',
      handler: handle(async (request) => {
        const query = await filterOf(request, request.query);
        const first = integer(request.query.first, 'first', 0, 1_000_000_000, 0);
        const max = integer(request.query.max, 'max', 1, MAX_PAGE, 100);
        return { status: 200, body: await present(await store.list({ ...query, first, max }), mayReadUsers(request)) };
      }),
    },
    {
      method: 'GET',
      path: '/deliveries/:id',
      role: 'manage-clients',
      handler: handle(async (request) => {
        const [item] = await store.list({ realmId: request.realm.id, ids: [request.params.id], max: 1 });
        if (!item) return error(404, 'Delivery not found');
        return { status: 200, body: (await present([item], mayReadUsers(request)))[0] };
      }),
    },
    {
      method: 'POST',
      path: '/deliveries/:id/resend',
      role: 'manage-clients',
      handler: handle(async (request) => {
        requireMayReadUsers(request);
        const [item] = await store.list({ realmId: request.realm.id, ids: [request.params.id], max: 1 });
        if (!item) return error(404, 'Delivery not found');
        if (item.state === 'pending' || item.state === 'sending') return error(409, `The delivery is ${item.state}: it will be sent anyway`);
        const requeued = await store.requeue({ realmId: request.realm.id, ids: [item.id] });
        worker.wake();
        return { status: 200, body: { requeued } };
      }),
    },
    {
      method: 'POST',
      path: '/deliveries/resend',
      role: 'manage-clients',
      handler: handle(async (request) => {
        requireMayReadUsers(request);
        const body = bodyOf(request);
        const unknown = Object.keys(body).filter((key) => !['clientId', 'state', 'type', 'from', 'to'].includes(key));
        if (unknown.length > 0) throw new BadRequest(`unknown field ${unknown[0]}; known: clientId, state, type, from, to`);
        const query = await filterOf(request, body);
        const states = query.states ?? ['dead'];
        if (states.some((state) => state === 'pending' || state === 'sending')) throw new BadRequest('state: only delivered and dead deliveries are resent');
        const requeued = await store.requeue({ ...query, states });
        worker.wake();
        return { status: 200, body: { requeued } };
      }),
    },
    {
      method: 'GET',
      path: '/clients/:clientId/endpoint',
      role: 'manage-clients',
      handler: handle(async (request) => ({ status: 200, body: await endpointState(request) })),
    },
    { method: 'POST', path: '/clients/:clientId/pause', role: 'manage-clients', handler: setPaused(true) },
    { method: 'POST', path: '/clients/:clientId/resume', role: 'manage-clients', handler: setPaused(false) },
  ];
}
