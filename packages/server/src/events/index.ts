import type { AdminEvent, AdminOperation, EventListener, RealmInfo, RequestInfo, UserEvent, UserSnapshot } from '@realmgate/spi';
import { newId } from '../credentials/index.js';
import type { RecordedEventError } from '../model/errors.js';
import type { Realm } from '../model/types.js';
import type { ServerLogger, MetricsRegistry } from '../observability/index.js';
import type { Storage } from '../storage/index.js';
import { requestScope } from '../store/index.js';

export interface UserEventInput {
  type: string;
  clientId?: string | null;
  userId?: string | null;
  sessionId?: string | null;
  /** Keycloak's event error name (the catalogue's), or one a provider gave (`providerEventError`). */
  error?: RecordedEventError | null;
  details?: Record<string, string>;
  request?: RequestInfo | null;
  /** The user as listeners see it; a function is called only when a listener of the realm reads it (`readsUser`). */
  user?: UserSnapshot | null | (() => Promise<UserSnapshot>);
}

export interface AdminEventInput {
  operationType: AdminOperation;
  resourceType: string;
  resourcePath: string;
  representation?: unknown;
  auth: { realmId: string; clientId: string | null; userId: string | null };
  request?: RequestInfo | null;
  user?: UserSnapshot | null;
}

export const realmInfo = (realm: Realm): RealmInfo => ({ id: realm.id, name: realm.name, displayName: realm.displayName, enabled: realm.enabled });

/**
 * Records events and hands them to the realm's listeners. Callers emit after their change has committed;
 * listeners run on a later tick, each isolated, so none can slow or fail the request.
 */
export class EventBus {
  private readonly listeners = new Map<string, EventListener>();
  private readonly failures;
  private readonly warnedUnknown = new Set<string>();

  constructor(
    private readonly storage: Storage,
    private readonly logger: ServerLogger,
    metrics: MetricsRegistry,
  ) {
    this.failures = metrics.counter('realmgate_event_listener_failures_total', 'Event listener calls that threw', ['listener']);
  }

  register(id: string, listener: EventListener): void {
    this.listeners.set(id, listener);
  }

  async user(realm: Realm, input: UserEventInput): Promise<UserEvent> {
    const event: UserEvent = {
      id: newId(),
      time: Date.now(),
      type: input.type,
      realmId: realm.id,
      realmName: realm.name,
      clientId: input.clientId ?? null,
      userId: input.userId ?? (typeof input.user === 'function' ? null : input.user?.id) ?? null,
      sessionId: input.sessionId ?? null,
      ipAddress: input.request?.ipAddress ?? null,
      error: input.error ?? null,
      details: input.details ?? {},
      request: input.request ?? null,
      user: typeof input.user === 'function' ? (this.userRead(realm) ? await input.user() : null) : (input.user ?? null),
      realm: realmInfo(realm),
    };
    if (realm.eventsEnabled && (realm.enabledEventTypes.length === 0 || realm.enabledEventTypes.includes(event.type))) {
      await this.storage.events
        .insert({
          id: event.id,
          realm_id: realm.id,
          time: event.time,
          type: event.type,
          client_id: event.clientId,
          user_id: event.userId,
          session_id: event.sessionId,
          ip_address: event.ipAddress,
          error: event.error,
          details: JSON.stringify(event.details),
        })
        .catch((error) => this.logger.error({ err: error, eventType: event.type }, 'storing event failed'));
    }
    await this.persist(realm, event.type, (listener) => listener.persistEvent?.(event));
    this.dispatch(realm, event.type, (listener) => listener.onEvent?.(event));
    return event;
  }

  async admin(realm: Realm, input: AdminEventInput): Promise<AdminEvent> {
    const event: AdminEvent = {
      id: newId(),
      time: Date.now(),
      realmId: realm.id,
      realmName: realm.name,
      operationType: input.operationType,
      resourceType: input.resourceType,
      resourcePath: input.resourcePath,
      representation: input.representation === undefined ? null : JSON.stringify(input.representation),
      authDetails: { ...input.auth, ipAddress: input.request?.ipAddress ?? null },
      error: null,
      user: input.user ?? null,
      realm: realmInfo(realm),
      request: input.request ?? null,
    };
    if (realm.adminEventsEnabled) {
      await this.storage.events
        .insertAdmin({
          id: event.id,
          realm_id: realm.id,
          time: event.time,
          operation_type: event.operationType,
          resource_type: event.resourceType,
          resource_path: event.resourcePath,
          representation: realm.adminEventsDetailsEnabled ? event.representation : null,
          auth_realm_id: event.authDetails.realmId,
          auth_client_id: event.authDetails.clientId,
          auth_user_id: event.authDetails.userId,
          auth_ip_address: event.authDetails.ipAddress,
          error: null,
        })
        .catch((error) => this.logger.error({ err: error }, 'storing admin event failed'));
    }
    await this.persist(realm, `${event.operationType} ${event.resourceType}`, (listener) => listener.persistAdminEvent?.(event));
    this.dispatch(realm, `${event.operationType} ${event.resourceType}`, (listener) => listener.onAdminEvent?.(event));
    return event;
  }

  /**
   * The listeners' durable part (SPI `persistEvent`, e.g. a webhook outbox write), awaited so that it is
   * committed before the caller answers its request; a failure is logged and counted, never thrown.
   */
  private async persist(realm: Realm, what: string, call: (listener: EventListener) => Promise<void> | undefined): Promise<void> {
    const writes: Promise<void>[] = [];
    for (const id of realm.eventsListeners) {
      const listener = this.listeners.get(id);
      if (!listener || (!listener.persistEvent && !listener.persistAdminEvent)) continue;
      const fail = (error: unknown) => {
        this.failures.inc({ listener: id });
        this.logger.error({ err: error, listener: id, event: what, realm: realm.name }, 'event listener failed to persist the event');
      };
      try {
        const result = call(listener);
        if (result) writes.push(result.catch(fail));
      } catch (error) {
        fail(error);
      }
    }
    if (writes.length > 0) await Promise.all(writes);
  }

  /** Whether a listener the realm names reads `event.user`. */
  private userRead(realm: Realm): boolean {
    return realm.eventsListeners.some((id) => {
      const listener = this.listeners.get(id);
      return listener !== undefined && listener.readsUser !== false;
    });
  }

  private dispatch(realm: Realm, what: string, call: (listener: EventListener) => unknown): void {
    for (const id of realm.eventsListeners) {
      const listener = this.listeners.get(id);
      if (!listener) {
        if (!this.warnedUnknown.has(`${realm.id}:${id}`)) {
          this.warnedUnknown.add(`${realm.id}:${id}`);
          this.logger.warn({ realm: realm.name, listener: id }, 'realm names an event listener that is not installed');
        }
        continue;
      }
      // Outside the request's scope: the event is of work already committed, and a listener's own work (an outbox
      // worker it wakes) must not stop when this request's client goes (store/request-scope.ts).
      setImmediate(() => requestScope.exit(() => {
        const fail = (error: unknown) => {
          this.failures.inc({ listener: id });
          this.logger.error({ err: error, listener: id, event: what, realm: realm.name }, 'event listener failed');
        };
        try {
          const result = call(listener);
          if (result && typeof (result as Promise<unknown>).then === 'function') (result as Promise<unknown>).catch(fail);
        } catch (error) {
          fail(error);
        }
      }));
    }
  }
}
