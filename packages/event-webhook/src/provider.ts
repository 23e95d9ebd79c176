/**
 * The `ext-event-webhook` event listener: turns user events (and admin deletions of users) into
 * deliveries for the clients that have a webhook configured in their attributes.
 */
import type {
  AdminEvent,
  ClientInfo,
  EventListenerFactory,
  Metrics,
  ProviderContext,
  UserEvent,
} from '@realmgate/spi';
import { clientIp, parseTrustedProxyCount } from './client-ip.js';
import { WebhookDispatcher, undiciTransport } from './delivery.js';
import type { Connector, DeliveryMetrics, DeliveryOutcome, Transport } from './delivery.js';
import { adminDeletePayload, userEventPayload } from './payload.js';
import type { Origin, WebhookPayload } from './payload.js';
import { readSettings } from './settings.js';
import type { WebhookSettings } from './settings.js';
import { parseSecret, signatureHeaders } from './signature.js';
import { OutboxWorker, encodeStored } from './outbox.js';
import type { CurrentTarget, OutboxMetrics, StoredDelivery } from './outbox.js';
import { outboxAdminRoutes } from './admin-api.js';
import type { OutboundGuard, OutboundResolver, OutboxItem, OutboxItemInput } from '@realmgate/spi';

export const PROVIDER_ID = 'ext-event-webhook';

/** The user event types that are sent (SPEC 5). */
export const WEBHOOK_EVENT_TYPES: ReadonlySet<string> = new Set([
  'REGISTER',
  'REGISTER_ERROR',
  'LOGIN',
  'LOGOUT',
  'RESET_PASSWORD',
  'VERIFY_EMAIL',
  'UPDATE_EMAIL',
  'DELETE_ACCOUNT',
]);

/** A client's webhook configuration, read from its attributes. */
export interface WebhookTarget {
  url: string;
  key: string;
  /** Decoded `api.secret`, or null when deliveries are not signed. */
  signingKey: Buffer | null;
  /** Types named in `api.events`, or null for every type. */
  events: ReadonlySet<string> | null;
  trustedProxyCount: number;
}

/**
 * null when the client sends nothing (disabled, or `api.url` / `api.key` missing); `problem` when its
 * attributes are set but unusable, so that the operator can be told.
 */
export function webhookTarget(client: ClientInfo): WebhookTarget | { problem: string; refused?: true } | null {
  const attributes = client.attributes;
  const url = attributes['api.url']?.trim();
  const key = attributes['api.key']?.trim();
  if (!client.enabled || !url || !key) return null;

  let parsed: URL | null = null;
  try {
    parsed = new URL(url);
  } catch {
    // reported below
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    return { problem: 'api.url is not an absolute http(s) URL', refused: true };
  }
  // A header value with control characters would fail on every attempt (and could split headers).
  if (/[\u0000-\u001f\u007f]/.test(key)) return { problem: 'api.key contains control characters' };

  let signingKey: Buffer | null = null;
  const secret = attributes['api.secret']?.trim();
  if (secret) {
    try {
      signingKey = parseSecret(secret);
    } catch (error) {
      return { problem: `api.secret is invalid: ${(error as Error).message}` };
    }
  }

  const names = (attributes['api.events'] ?? '')
    .split(',')
    .map((name) => name.trim().toUpperCase())
    .filter((name) => name.length > 0);
  return {
    url,
    key,
    signingKey,
    events: names.length > 0 ? new Set(names) : null,
    trustedProxyCount: parseTrustedProxyCount(attributes['trusted.proxy.count']),
  };
}

export interface EventWebhookProviderOptions {
  /** Replaces the undici transport (tests, or a custom HTTP stack); the target guard is then not applied. */
  transport?: Transport;
  /** Replaces the system resolver of the target guard (tests). */
  resolver?: OutboundResolver;
  /** Replaces undici's connector behind the target guard (tests: no socket is opened). */
  connector?: Connector;
}

export function createEventWebhookProvider(options: EventWebhookProviderOptions = {}): EventListenerFactory {
  let webhook: ClientWebhooks | null = null;
  return {
    kind: 'event-listener',
    id: PROVIDER_ID,
    displayName: 'Event webhook',
    helpText: 'POSTs user events to the URL in the client attributes api.url / api.key, with retries.',
    init(context) {
      webhook = new ClientWebhooks(context, readSettings(context.config, context.env, context.outbound?.ruleProblem), options);
    },
    // The webhook's own settings: a manage-clients holder sets them on account-console too (the original setup).
    ownedClientAttributes: ['api.url', 'api.key'],
    // In production mode the admin API refuses an api.url the guard would refuse without DNS (scheme,
    // literal addresses, localhost names, host rules); the delivery checks the resolved address anyway.
    validateClientAttributes(attributes) {
      const url = attributes['api.url']?.trim();
      if (!webhook || !url || webhook.guard.mode !== 'production') return [];
      const refusal = webhook.guard.checkUrl(url);
      return refusal ? [`api.url: ${refusal.message}`] : [];
    },
    create() {
      // Bound to the instance of the init just before: a second server in the same process (tests, a
      // bench) re-initialises the shared factory, and must not take over this server's listener, whose
      // client lookups belong to this server's context.
      const own = webhook;
      if (own?.outbox) {
        // Outbox mode: the host awaits these before answering the request that caused the event.
        return {
          persistEvent: (event) => own.persistEvent(event),
          persistAdminEvent: (event) => own.persistAdminEvent(event),
        };
      }
      return {
        onEvent: (event) => own?.onEvent(event),
        onAdminEvent: (event) => own?.onAdminEvent(event),
      };
    },
    adminResource() {
      // Only in outbox mode: the in-memory engine keeps no delivery log.
      const own = webhook;
      return own?.outbox ? { routes: outboxAdminRoutes(own.outbox, own.context) } : { routes: [] };
    },
    async close() {
      await webhook?.close();
    },
  };
}

const LATENCY_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const WARNED_LIMIT = 1000;

/** Delivery outcomes plus the provider's own: the event failed before it reached the queue (client lookup). */
type ProviderOutcome = DeliveryOutcome | 'dropped_error';

/** Client lookups at send time (outbox mode) are reused this long, so a burst does not look the client up per row. */
const TARGET_CACHE_MS = 1000;

class ClientWebhooks {
  private readonly dispatcher: WebhookDispatcher | null = null;
  readonly outbox: OutboxWorker | null = null;
  private readonly targetCache = new Map<string, { at: number; client: Promise<ClientInfo | null> }>();
  /** checkUrl's verdicts by URL (null: allowed), at most WARNED_LIMIT. */
  private readonly urlVerdicts = new Map<string, string | null>();
  private readonly countOutcome: (outcome: ProviderOutcome) => void;
  /** Concurrent events for one client share one lookup. */
  private readonly lookups = new Map<string, Promise<ClientInfo | null>>();
  /** Lookups and fan-outs not yet handed to the dispatcher; close() waits for them. */
  private readonly preparing = new Set<Promise<void>>();
  /** Misconfigurations already reported, so a busy client does not repeat the warning per event. */
  private readonly warned = new Set<string>();
  private closing = false;
  readonly guard: OutboundGuard;

  constructor(
    readonly context: ProviderContext,
    private readonly settings: WebhookSettings,
    options: EventWebhookProviderOptions,
  ) {
    const metrics = metricHooks(context.metrics);
    this.countOutcome = metrics.count;
    if (!context.outbound) throw new Error('the event webhook needs a server that guards outbound targets (ProviderContext.outbound)');
    this.guard = context.outbound.guard({ allow: settings.allow, deny: settings.deny, label: 'webhook target', resolver: options.resolver });
    const transport = options.transport ?? undiciTransport(settings, { guard: this.guard, connector: options.connector });
    if (settings.mode === 'outbox') {
      if (!context.outbox) throw new Error('outbox mode needs a server that offers a durable outbox (ProviderContext.outbox)');
      this.outbox = new OutboxWorker({
        store: context.outbox,
        settings,
        transport,
        logger: context.logger,
        metrics: outboxMetrics(context.metrics, metrics.hooks),
        target: (item, stored) => this.currentTarget(item, stored),
        checkUrl: (url) => this.checkUrl(url),
      });
      this.outbox.start();
    } else {
      this.dispatcher = new WebhookDispatcher({ ...settings, logger: context.logger, metrics: metrics.hooks, transport });
    }
  }

  /** Outbox mode, on the request path (awaited by the host): the deliveries of one user event, committed. */
  async persistEvent(event: UserEvent): Promise<void> {
    const clientId = event.clientId;
    if (this.closing || !clientId || !WEBHOOK_EVENT_TYPES.has(event.type)) return;
    await this.persist(event.type, event.realmName, async () => {
      const client = await this.lookUp(event.realmName, clientId);
      const target = client && this.target(event.realmName, client);
      if (!client || !target || !allows(target, event.type)) return [];
      const payload = userEventPayload(await withUser(this.context, event), originOf(event, target));
      return [this.outboxItem(event.realmId, event.realmName, client, payload, webhookId(event.id), payload.user_name ?? event.details.username ?? null)];
    });
  }

  async persistAdminEvent(event: AdminEvent): Promise<void> {
    if (this.closing || event.resourceType !== 'USER' || event.operationType !== 'DELETE' || event.error) return;
    await this.persist('DELETE_ACCOUNT', event.realmName, async () => {
      const items: OutboxItemInput[] = [];
      for (const client of await this.context.clients.list(event.realmName)) {
        const target = this.target(event.realmName, client);
        if (!target || !allows(target, 'DELETE_ACCOUNT')) continue;
        const payload = adminDeletePayload(event, originOf(event, target));
        items.push(this.outboxItem(event.realmId, event.realmName, client, payload, webhookId(event.id, client.id), payload.user_name));
      }
      return items;
    });
  }

  private async persist(eventType: string, realmName: string, build: () => Promise<OutboxItemInput[]>): Promise<void> {
    try {
      await this.outbox!.enqueue(await build());
    } catch (error) {
      this.countOutcome('dropped_error');
      this.context.logger.warn(`webhook event ${eventType} dropped: writing it to the outbox failed`, {
        realm: realmName,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  private outboxItem(realmId: string, realmName: string, client: ClientInfo, payload: WebhookPayload, id: string, userName: string | null): OutboxItemInput {
    const stored: StoredDelivery = { realm: realmName, body: JSON.stringify(payload) };
    return {
      id,
      realmId,
      endpoint: client.id,
      endpointLabel: client.clientId,
      // Per-user order: a user's deliveries to one client go one at a time, oldest first.
      orderKey: payload.user_id ?? null,
      type: payload.type,
      label: userName,
      payload: encodeStored(stored),
      maxAttempts: this.settings.maxAttempts,
    };
  }

  /**
   * The target guard's verdict on a URL without DNS, per outbox attempt: remembered per URL (it depends on the URL and
   * the server's settings only), since parsing it again for every delivery cost about 5 µs each.
   */
  private checkUrl(url: string): string | null {
    let verdict = this.urlVerdicts.get(url);
    if (verdict === undefined) {
      if (this.urlVerdicts.size >= WARNED_LIMIT) this.urlVerdicts.clear();
      verdict = this.guard.checkUrl(url)?.message ?? null;
      this.urlVerdicts.set(url, verdict);
    }
    return verdict;
  }

  /** The client's webhook now (outbox attempts): a rotated key, a new URL or a removed webhook applies. */
  private async currentTarget(item: OutboxItem, stored: StoredDelivery): Promise<CurrentTarget> {
    const key = `${stored.realm}\u0000${item.endpointLabel ?? ''}`;
    const now = Date.now();
    let cached = this.targetCache.get(key);
    if (!cached || now - cached.at > TARGET_CACHE_MS || now < cached.at) {
      if (this.targetCache.size >= WARNED_LIMIT) this.targetCache.clear();
      cached = { at: now, client: this.context.clients.getByClientId(stored.realm, item.endpointLabel ?? '') };
      cached.client.catch(() => this.targetCache.delete(key));
      this.targetCache.set(key, cached);
    }
    const client = await cached.client;
    if (!client || client.id !== item.endpoint) return { problem: 'the client no longer exists' };
    const target = webhookTarget(client);
    if (target === null) return { problem: 'the client no longer has a webhook (api.url and api.key), or is disabled' };
    if ('problem' in target) return { problem: target.problem, refused: target.refused };
    const signingKey = target.signingKey;
    return {
      url: target.url,
      headers: deliveryHeaders(target),
      attemptHeaders: signingKey ? () => signatureHeaders(signingKey, item.id, stored.body) : undefined,
    };
  }

  /** Must stay synchronous and cheap: it runs on the request that caused the event. */
  onEvent(event: UserEvent): void {
    const clientId = event.clientId;
    if (this.closing || !clientId || !WEBHOOK_EVENT_TYPES.has(event.type)) return;
    this.prepare(event.realmName, event.type, async () => {
      const client = await this.lookUp(event.realmName, clientId);
      const target = client && this.target(event.realmName, client);
      if (!target || !allows(target, event.type)) return;
      const payload = userEventPayload(await withUser(this.context, event), originOf(event, target));
      this.send(target, payload, webhookId(event.id), payload.user_name ?? event.details.username ?? null);
    });
  }

  onAdminEvent(event: AdminEvent): void {
    if (this.closing || event.resourceType !== 'USER' || event.operationType !== 'DELETE' || event.error) return;
    this.prepare(event.realmName, 'DELETE_ACCOUNT', async () => {
      const clients = await this.context.clients.list(event.realmName);
      for (const client of clients) {
        const target = this.target(event.realmName, client);
        if (!target || !allows(target, 'DELETE_ACCOUNT')) continue;
        const payload = adminDeletePayload(event, originOf(event, target));
        this.send(target, payload, webhookId(event.id, client.id), payload.user_name);
      }
    });
  }

  async close(): Promise<void> {
    this.closing = true;
    const started = Date.now();
    const grace = this.settings.shutdownGraceMs;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.allSettled([...this.preparing]),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, grace))),
    ]);
    clearTimeout(timer);
    const left = Math.max(0, grace - (Date.now() - started));
    await (this.outbox ? this.outbox.close(left) : this.dispatcher?.close(left));
  }

  private prepare(realmName: string, eventType: string, work: () => Promise<void>): void {
    // Deferred to a microtask so that even the lookup's synchronous part stays off the caller's path.
    const job = Promise.resolve()
      .then(work)
      .catch((error: unknown) => {
        this.countOutcome('dropped_error');
        this.context.logger.warn(`webhook event ${eventType} dropped: client lookup failed`, {
          realm: realmName,
          error: error instanceof Error ? error.message : String(error),
        });
      })
      .finally(() => this.preparing.delete(job));
    this.preparing.add(job);
  }

  private lookUp(realmName: string, clientId: string): Promise<ClientInfo | null> {
    const key = `${realmName}\u0000${clientId}`;
    let lookup = this.lookups.get(key);
    if (!lookup) {
      lookup = this.context.clients.getByClientId(realmName, clientId).finally(() => this.lookups.delete(key));
      this.lookups.set(key, lookup);
    }
    return lookup;
  }

  private target(realmName: string, client: ClientInfo): WebhookTarget | null {
    const target = webhookTarget(client);
    if (target === null || !('problem' in target)) return target;
    if (target.refused) this.countOutcome('refused');
    const warning = `${realmName}\u0000${client.id}\u0000${target.problem}`;
    if (!this.warned.has(warning)) {
      if (this.warned.size >= WARNED_LIMIT) this.warned.clear();
      this.warned.add(warning);
      this.context.logger.warn(`webhook not sent: client ${client.clientId} ${target.problem}`, {
        realm: realmName,
        clientId: client.clientId,
      });
    }
    return null;
  }

  private send(target: WebhookTarget, payload: WebhookPayload, id: string, userName: string | null): void {
    const body = JSON.stringify(payload);
    const signingKey = target.signingKey;
    this.dispatcher?.enqueue({
      id,
      url: target.url,
      headers: deliveryHeaders(target),
      body,
      attemptHeaders: signingKey ? () => signatureHeaders(signingKey, id, body) : undefined,
      eventType: payload.type,
      userName,
    });
  }
}

/**
 * The host should attach a snapshot to every user event; when it did not (e.g. a LOGIN without one), the
 * user is read now, in the background, so the payload still carries the user's fields. Not for
 * REGISTER_ERROR (no user) nor DELETE_ACCOUNT (the user is gone: only the host's snapshot can describe it).
 */
async function withUser(context: ProviderContext, event: UserEvent): Promise<UserEvent> {
  if (event.user || !event.userId || event.type === 'REGISTER_ERROR' || event.type === 'DELETE_ACCOUNT') return event;
  const user = await context.users?.get(event.realmName, event.userId).catch(() => null);
  return user ? { ...event, user } : event;
}

function deliveryHeaders(target: WebhookTarget): Record<string, string> {
  return {
    Authorization: `Bearer ${target.key}`,
    'Content-Type': 'application/json',
    'User-Agent': 'Realmgate-Webhook/1',
  };
}

/** The outbox's gauges (database-wide: every node's deliveries), on top of the shared outcome and attempt counters. */
function outboxMetrics(metrics: Metrics, hooks: DeliveryMetrics): OutboxMetrics {
  const depth = metrics.gauge('realmgate_webhook_outbox_depth', 'Webhook deliveries in the outbox not yet delivered or dead (all nodes)');
  const oldest = metrics.gauge(
    'realmgate_webhook_outbox_oldest_due_seconds',
    'How long the most overdue webhook delivery has been due (endpoint not paused): the workers\' lag, 0 when none',
  );
  depth.set(undefined, 0);
  oldest.set(undefined, 0);
  return {
    outcome: (outcome, seconds) => hooks.outcome(outcome, seconds),
    attempt: () => hooks.attempt(),
    depth(value, oldestSeconds) {
      depth.set(undefined, value);
      oldest.set(undefined, oldestSeconds);
    },
  };
}

function allows(target: WebhookTarget, type: string): boolean {
  return target.events === null || target.events.has(type);
}

/** The request that caused the event, read through the client's own proxy count. */
function originOf(event: UserEvent | AdminEvent, target: WebhookTarget): Origin {
  const fallback = 'authDetails' in event ? event.authDetails.ipAddress : event.ipAddress;
  return {
    userIp: (event.request ? clientIp(event.request, target.trustedProxyCount) : null) ?? fallback,
    userAgent: event.request?.userAgent ?? null,
  };
}

/** Standard Webhooks forbids `.` in the id (it delimits the signed content); keep it to a safe alphabet. */
function webhookId(...parts: string[]): string {
  return `msg_${parts.map((part) => part.replace(/[^A-Za-z0-9_-]/g, '_')).join('_')}`;
}

function metricHooks(metrics: Metrics): { hooks: DeliveryMetrics; count: (outcome: ProviderOutcome) => void } {
  const deliveries = metrics.counter(
    'realmgate_webhook_deliveries_total',
    'Webhook deliveries by final outcome',
    ['outcome'],
  );
  const attempts = metrics.counter('realmgate_webhook_attempts_total', 'Webhook HTTP attempts, retries included');
  const depth = metrics.gauge(
    'realmgate_webhook_queue_depth',
    'Webhook deliveries waiting to be sent: queued or waiting for a retry',
  );
  const latency = metrics.histogram(
    'realmgate_webhook_delivery_seconds',
    'Time from enqueue to the final outcome of a webhook delivery, retries and backoff included',
    ['outcome'],
    LATENCY_BUCKETS,
  );
  const outcomes: ProviderOutcome[] = ['success', 'failed', 'refused', 'dropped_queue_full', 'dropped_shutdown', 'dropped_error'];
  // Every series exists from the start, so rate() and alerts see zeros rather than gaps.
  for (const outcome of outcomes) deliveries.inc({ outcome }, 0);
  depth.set(undefined, 0);
  const count = (outcome: ProviderOutcome) => deliveries.inc({ outcome });
  return {
    count,
    hooks: {
      outcome(outcome, seconds) {
        count(outcome);
        if (seconds !== undefined) latency.observe({ outcome }, seconds);
      },
      attempt: () => attempts.inc(),
      queueDepth: (value) => depth.set(undefined, value),
    },
  };
}
