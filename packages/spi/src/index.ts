/**
 * @realmgate/spi: the contract between the Realmgate server and its providers.
 *
 * Types only. An extension depends on this package and nothing of the server's, so the server can change
 * its internals without breaking a provider, as Keycloak's SPI jars keep extensions apart from its core.
 */

export type Awaitable<T> = T | Promise<T>;

// ---------------------------------------------------------------------------------------------------------
// Services the host lends to providers

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/**
 * Key-value state shared by every server process (memory with one process, Redis with several).
 * Keys are namespaced by the host per provider, so two providers never collide.
 */
export interface SharedStore {
  get(key: string): Promise<string | null>;
  set(key: string, value: string, ttlMs?: number): Promise<void>;
  /** Atomic: true when this call stored the value, false when the key already existed. */
  setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean>;
  /** Atomic counter; the TTL starts with the first increment. Returns the new value. */
  increment(key: string, ttlMs: number): Promise<number>;
  delete(key: string): Promise<void>;
  /** Records one hit now and returns the number of hits within the last `windowMs` (sliding window). */
  recordHit(key: string, windowMs: number): Promise<number>;
  /** Counts hits within the last `windowMs` without recording one. */
  countHits(key: string, windowMs: number): Promise<number>;
  /** Broadcast to every process (including this one). */
  publish(channel: string, message: string): Promise<void>;
  /** Returns a function that ends the subscription. */
  subscribe(channel: string, onMessage: (message: string) => void): Promise<() => Promise<void>>;
}

export interface Counter {
  inc(labels?: Record<string, string>, value?: number): void;
}
export interface Gauge {
  set(labels: Record<string, string> | undefined, value: number): void;
  inc(labels?: Record<string, string>, value?: number): void;
  dec(labels?: Record<string, string>, value?: number): void;
}
export interface Histogram {
  observe(labels: Record<string, string> | undefined, value: number): void;
}

/** Prometheus metrics exposed at /metrics. Names get no prefix from the host; use `realmgate_<provider>_…`. */
export interface Metrics {
  counter(name: string, help: string, labelNames?: readonly string[]): Counter;
  gauge(name: string, help: string, labelNames?: readonly string[]): Gauge;
  histogram(name: string, help: string, labelNames?: readonly string[], buckets?: readonly number[]): Histogram;
}

// ---------------------------------------------------------------------------------------------------------
// Read models the host hands out

export interface RealmInfo {
  id: string;
  name: string;
  displayName: string | null;
  enabled: boolean;
}

export interface OrganizationInfo {
  id: string;
  name: string;
  alias: string;
}

/** A user as it was when an event happened (taken before a deletion, so listeners still see it). */
export interface UserSnapshot {
  id: string;
  username: string;
  email: string | null;
  firstName: string | null;
  lastName: string | null;
  emailVerified: boolean;
  enabled: boolean;
  createdTimestamp: number;
  attributes: Record<string, string[]>;
  /** Realm roles mapped directly to the user (not expanded through composites). */
  realmRoles: string[];
  organizations: OrganizationInfo[];
}

export interface ClientInfo {
  /** Internal UUID. */
  id: string;
  clientId: string;
  enabled: boolean;
  attributes: Record<string, string>;
}

/** Claims of a verified access token, as Keycloak issues them. */
export interface AccessTokenClaims {
  iss: string;
  sub: string;
  aud?: string | string[];
  exp: number;
  iat: number;
  jti: string;
  typ: string;
  azp?: string;
  sid?: string;
  scope?: string;
  realm_access?: { roles: string[] };
  resource_access?: Record<string, { roles: string[] }>;
  preferred_username?: string;
  /** Present only on service-account tokens. */
  client_id?: string;
  [claim: string]: unknown;
}

export type TokenVerification =
  | { valid: true; claims: AccessTokenClaims; serviceAccount: boolean }
  | { valid: false; reason: string };

/** What the host knows of the HTTP request behind an event or a form. */
export interface RequestInfo {
  /** Client IP after the server's own trusted-proxy rule. */
  ipAddress: string;
  /** The TCP peer address. */
  remoteAddress: string;
  forwardedFor: string | null;
  realIp: string | null;
  userAgent: string | null;
}

/** The narrow server API every provider gets at init. */
export interface ProviderContext {
  logger: Logger;
  store: SharedStore;
  metrics: Metrics;
  /** The provider's section of the server configuration (config file key `providers.<id>`), or {}. */
  config: Record<string, unknown>;
  /** The process environment, read once at start-up. */
  env: Readonly<Record<string, string | undefined>>;
  /**
   * The server's mode (`--mode`). Realmgate always sets it; a provider should treat its absence (an older
   * host) as `production`, the stricter side.
   */
  mode?: 'development' | 'production';
  realms: {
    get(realmName: string): Promise<RealmInfo | null>;
  };
  users: {
    get(realmName: string, userId: string): Promise<UserSnapshot | null>;
  };
  clients: {
    getByClientId(realmName: string, clientId: string): Promise<ClientInfo | null>;
    list(realmName: string): Promise<ClientInfo[]>;
  };
  tokens: {
    /** Verifies signature, expiry, issuer (this realm) and type; never throws for a bad token. */
    verifyAccessToken(realmName: string, token: string): Promise<TokenVerification>;
  };
  /**
   * A durable queue in the server's database, private to this provider (absent on an older host). Several
   * server processes sharing one database share it: `claimDue` hands an item to one process at a time.
   */
  outbox?: OutboxStore;
  /**
   * The host's guard on the addresses the server's own outbound HTTP may reach (absent on an older host): one
   * check for webhooks, identity providers and JWKS URLs alike, so a provider never writes its own.
   */
  outbound?: OutboundGuards;
}

// ---------------------------------------------------------------------------------------------------------
// Outbound targets (the host's one guard on where the server's own HTTP may connect)

export type OutboundMode = 'development' | 'production';

/** Why a target was refused; also the `reason` log field. */
export type OutboundRefusalReason = 'scheme' | 'unspecified' | 'link_local' | 'not_unicast' | 'loopback' | 'denied';

/** What a guard throws instead of opening a connection; `code` tells it from a network error. Never retried. */
export interface OutboundRefusal extends Error {
  readonly code: 'ERR_OUTBOUND_TARGET_REFUSED';
  readonly reason: OutboundRefusalReason;
}

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Every address of a host name (the default is the system resolver, all addresses). */
export type OutboundResolver = (hostname: string) => Promise<ResolvedAddress[]>;

export interface OutboundRules {
  /** CIDRs, addresses, host names (`hooks.internal`, `*.internal`) or the keywords `loopback`, `private`. */
  allow?: readonly string[];
  deny?: readonly string[];
  /** Names the rules in refusals ("denied by the <label> rules"). */
  label?: string;
  /** Replaces the system resolver (tests). */
  resolver?: OutboundResolver;
}

export interface OutboundGuard {
  /** production refuses loopback; development allows it. */
  readonly mode: OutboundMode;
  /**
   * Resolves `hostname` and returns the address to connect to (connect to that address, never to the name again:
   * no DNS rebinding); rejects with an OutboundRefusal when the host or any of its addresses is refused.
   */
  pin(hostname: string): Promise<string>;
  /** What can be judged without DNS (scheme, literal addresses, localhost names, host rules): null when nothing yet. */
  checkUrl(url: string): OutboundRefusal | null;
}

export interface OutboundGuards {
  /** A guard with the server's mode and these rules; throws RangeError naming a bad rule entry. */
  guard(rules?: OutboundRules): OutboundGuard;
  /** The problem with one allow/deny entry, or null when it is valid (for a provider's settings validation). */
  ruleProblem(entry: string): string | null;
}

// ---------------------------------------------------------------------------------------------------------
// Durable outbox (a provider's own queue in the server's database)

export type OutboxState = 'pending' | 'sending' | 'delivered' | 'dead';

export interface OutboxItemInput {
  /** Unique within the provider; enqueueing an id that exists already is a no-op. */
  id: string;
  realmId: string;
  /** The destination: the unit of pausing (e.g. a client's UUID). */
  endpoint: string;
  /** Items with the same endpoint and order key are claimed one at a time, in enqueue order; null: no order. */
  orderKey: string | null;
  /** For queries (e.g. the event type). */
  type: string;
  /** For queries and log lines (e.g. the client's clientId, the user name). */
  endpointLabel: string | null;
  label: string | null;
  /** Opaque to the host. */
  payload: string;
  maxAttempts: number;
}

export interface OutboxItem extends OutboxItemInput {
  state: OutboxState;
  /** Attempts in the current cycle (a requeue starts a new cycle). */
  attempts: number;
  /** Attempts over the item's life (numbers the attempt records). */
  totalAttempts: number;
  /** When it is due (pending), or when its lease ends (sending). Epoch ms. */
  dueAt: number;
  claimedBy: string | null;
  createdAt: number;
  updatedAt: number;
  lastStatus: number | null;
  lastError: string | null;
}

export interface OutboxAttempt {
  /** 1-based, over the item's life. */
  number: number;
  node: string;
  startedAt: number;
  durationMs: number;
  /** HTTP status, or null when no response came. */
  status: number | null;
  error: string | null;
  /** The first bytes of the response body (bounded by the provider). */
  responseExcerpt: string | null;
}

/** What follows an attempt: delivered, due again at `dueAt`, or dead (no more attempts). */
export type OutboxNext = { state: 'delivered' } | { state: 'pending'; dueAt: number } | { state: 'dead' };

export interface OutboxQuery {
  realmId: string;
  endpoint?: string;
  states?: OutboxState[];
  types?: string[];
  /** Epoch ms, inclusive bounds on the enqueue time. */
  from?: number;
  to?: number;
  ids?: string[];
  first?: number;
  max?: number;
}

export interface OutboxEndpointState {
  realmId: string;
  endpoint: string;
  paused: boolean;
  consecutiveFailures: number;
  pausedAt: number | null;
  reason: string | null;
  /** Epoch ms: its items are not claimed before then (see `finishAttempt`), or null. */
  holdUntil: number | null;
}

export interface OutboxStats {
  /** Items not yet final (pending or sending). */
  depth: number;
  /**
   * Due time of the most overdue unfinished item (due now, its endpoint neither paused nor held; a lease that ran out counts),
   * or null: `now - oldestDueAt` is how far the workers lag behind.
   */
  oldestDueAt: number | null;
}

export interface OutboxStore {
  /** This server process's name in `claimedBy` and attempt records. */
  readonly nodeId: string;
  /**
   * Writes the items (one statement per batch); returns when they are committed, with the earliest due time (epoch
   * ms) of the items written, null when every id was there already. An item behind an unfinished one of its endpoint
   * and order key that waits for a retry is due no sooner than that retry, so a worker need not claim before then.
   * While the database cannot take the write the host tries it again (up to 30 s, no longer than the current
   * request's client waits) before rejecting.
   */
  enqueue(items: OutboxItemInput[]): Promise<number | null>;
  /**
   * Takes up to `limit` items that are due (pending and due, or sending with an expired lease), whose endpoint
   * is not paused and with no earlier unfinished item of the same endpoint and order key; each is leased to
   * this node for `leaseMs`. PostgreSQL: `FOR UPDATE SKIP LOCKED`, so processes never take the same item.
   */
  claimDue(limit: number, leaseMs: number): Promise<OutboxItem[]>;
  /**
   * Gives back claimed items this node will not attempt (it claimed ahead, then the endpoint was held or paused,
   * or it is closing): pending and due now for any node, rather than after the lease. Items no longer leased to
   * this node are left alone. Returns how many were given back.
   */
  release(items: OutboxItem[]): Promise<number>;
  /**
   * Records an attempt and the item's next state, only while this node still holds the lease (false when it
   * lost it: another node has the item). Updates the endpoint's consecutive-failure count (a delivery resets it
   * and lifts any hold) and pauses it when `pauseAfterFailures` (> 0) is reached. `holdUntil`, on a failure once
   * the endpoint has 2 or more consecutive failures: none of its items is claimed before then (a circuit
   * breaker: while a receiver is down, only the retries that fall due probe it). Returns the endpoint's state.
   */
  finishAttempt(
    item: OutboxItem,
    attempt: Omit<OutboxAttempt, 'number' | 'node'>,
    next: OutboxNext,
    policy: { pauseAfterFailures: number; holdUntil?: number | null },
  ): Promise<{ recorded: boolean; endpoint: OutboxEndpointState | null }>;
  list(query: OutboxQuery): Promise<OutboxItem[]>;
  attempts(itemIds: string[]): Promise<Map<string, OutboxAttempt[]>>;
  /** Makes matching final (delivered or dead) items pending again, due now, with a new attempt cycle. */
  requeue(query: OutboxQuery): Promise<number>;
  endpoint(realmId: string, endpoint: string): Promise<OutboxEndpointState | null>;
  setPaused(realmId: string, endpoint: string, paused: boolean, reason: string | null): Promise<OutboxEndpointState>;
  stats(now: number): Promise<OutboxStats>;
  /** Removes delivered and dead items (and their attempts) last changed before `time`; returns how many. */
  purgeFinishedBefore(time: number, limit: number): Promise<number>;
}

// ---------------------------------------------------------------------------------------------------------
// Events

export type UserEventType =
  | 'LOGIN'
  | 'LOGIN_ERROR'
  | 'REGISTER'
  | 'REGISTER_ERROR'
  | 'LOGOUT'
  | 'LOGOUT_ERROR'
  | 'CODE_TO_TOKEN'
  | 'CODE_TO_TOKEN_ERROR'
  | 'CLIENT_LOGIN'
  | 'CLIENT_LOGIN_ERROR'
  | 'REFRESH_TOKEN'
  | 'REFRESH_TOKEN_ERROR'
  | 'INTROSPECT_TOKEN'
  | 'REVOKE_GRANT'
  | 'USER_INFO_REQUEST'
  | 'SEND_RESET_PASSWORD'
  | 'RESET_PASSWORD'
  | 'RESET_PASSWORD_ERROR'
  | 'SEND_VERIFY_EMAIL'
  | 'VERIFY_EMAIL'
  | 'UPDATE_EMAIL'
  | 'UPDATE_PROFILE'
  | 'UPDATE_PASSWORD'
  | 'DELETE_ACCOUNT';

export interface UserEvent {
  id: string;
  /** Epoch milliseconds. */
  time: number;
  type: UserEventType | (string & {});
  realmId: string;
  realmName: string;
  /** The client's `clientId` (not its UUID), or null. */
  clientId: string | null;
  userId: string | null;
  sessionId: string | null;
  ipAddress: string | null;
  error: string | null;
  details: Record<string, string>;
  request: RequestInfo | null;
  /** The user at the time of the event; null when there is none (REGISTER_ERROR, CLIENT_LOGIN). */
  user: UserSnapshot | null;
  realm: RealmInfo;
}

export type AdminOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'ACTION';

export interface AdminEvent {
  id: string;
  time: number;
  realmId: string;
  realmName: string;
  operationType: AdminOperation;
  /** Keycloak's resource types: USER, CLIENT, REALM, REALM_ROLE, REALM_ROLE_MAPPING, CLIENT_ROLE, … */
  resourceType: string;
  resourcePath: string;
  /** JSON of the representation written, when there is one (never with secrets). */
  representation: string | null;
  authDetails: { realmId: string; clientId: string | null; userId: string | null; ipAddress: string | null };
  error: string | null;
  /** For USER resources: the user before a DELETE, after a CREATE or UPDATE. */
  user: UserSnapshot | null;
  realm: RealmInfo;
  request: RequestInfo | null;
}

export interface EventListener {
  /**
   * False when the listener never reads `event.user`: where no listener of the realm reads it, the host does not
   * look the user's roles and organizations up for the event (one lookup less per sign-in). Default true.
   */
  readsUser?: boolean;
  onEvent?(event: UserEvent): void;
  onAdminEvent?(event: AdminEvent): void;
  /**
   * Optional, for listeners that must not lose an event (a durable outbox): awaited by the host after the
   * change has committed and before the request that caused the event is answered. A rejection is logged
   * and counted, never fails the request. Keep it to one short write.
   */
  persistEvent?(event: UserEvent): Promise<void>;
  persistAdminEvent?(event: AdminEvent): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------------
// Flows: form actions and form protectors

export type Requirement = 'REQUIRED' | 'ALTERNATIVE' | 'DISABLED' | 'CONDITIONAL';

/** The forms a protector can guard. */
export type ProtectedForm = 'login' | 'registration' | 'reset-credentials';

export interface FieldError {
  /** The form field name, e.g. `email`. */
  field: string;
  message: string;
}

export interface FormActionContext {
  realm: RealmInfo;
  clientId: string | null;
  /** Submitted fields (the password fields included; never log them). */
  form: Readonly<Record<string, string>>;
  /** `authenticatorConfig.config` of the execution, or {}. */
  config: Readonly<Record<string, string>>;
  request: RequestInfo;
}

export type FormValidation =
  | { ok: true }
  | { ok: false; /** event error code, e.g. `invalid_email_domain` */ error: string; fieldErrors: FieldError[] };

export interface FormAction {
  validate(context: FormActionContext): Awaitable<FormValidation>;
  /**
   * Optional: judges a change a signed-in user makes to their own profile (account page today; the
   * update-profile action and account API when they exist), so that what registration refuses cannot be set
   * afterwards. Asked when the action is enabled in the realm's bound registration flow; `form` holds `email`,
   * `firstName`, `lastName` and `username` as they would become.
   */
  validateProfile?(context: FormActionContext): Awaitable<FormValidation>;
  /** Runs after the user was created (registration success). */
  success?(context: FormActionContext & { userId: string }): Awaitable<void>;
  /** Markup appended to the form page (scripts for inline checks); must be safe HTML. */
  renderAssets?(context: { realm: RealmInfo; assetsBaseUrl: string }): Awaitable<string>;
}

export interface FormProtectorRenderContext {
  realm: RealmInfo;
  form: ProtectedForm;
  config: Readonly<Record<string, string>>;
  request: RequestInfo;
  /** Absolute path prefix of this provider's realm resource, e.g. `/realms/demo/ext-pow`. */
  resourceBaseUrl: string;
  /**
   * The page's language (a BCP 47 tag) and its texts: `msg(key, fallback)` is the host's message bundle text of
   * `key` in that language (the realm's overrides first), else `fallback` (the provider's own English). Absent when
   * the host renders no page (verification).
   */
  locale?: string;
  msg?: (key: string, fallback: string) => string;
}

export interface FormProtectorVerifyContext extends FormProtectorRenderContext {
  submitted: Readonly<Record<string, string>>;
}

export type ProtectorDecision =
  | { ok: true }
  | {
      ok: false;
      /** Short machine reason for the event details, e.g. `expired`. */
      reason: string;
      /** Event error code, e.g. `pow_failed`. */
      error: string;
      /** When the server is overloaded: answer this status (503) with Retry-After seconds. */
      status?: number;
      retryAfterSeconds?: number;
    };

export interface FormProtector {
  /** Hidden fields and scripts placed inside the form. Must be safe HTML. */
  render(context: FormProtectorRenderContext): Awaitable<string>;
  /** Runs before the password is looked at; a rejection stops the form. */
  verify(context: FormProtectorVerifyContext): Awaitable<ProtectorDecision>;
}

export interface ConfigProperty {
  name: string;
  label: string;
  helpText?: string;
  type: 'String' | 'boolean' | 'List' | 'Password';
  defaultValue?: string;
}

// ---------------------------------------------------------------------------------------------------------
// Realm REST resources

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';

export interface ResourceRequest {
  realm: RealmInfo;
  method: HttpMethod;
  /** The route's path parameters. */
  params: Readonly<Record<string, string>>;
  query: Readonly<Record<string, string>>;
  /** Lower-cased header names. */
  headers: Readonly<Record<string, string | undefined>>;
  /** Parsed JSON or form body, or undefined. */
  body: unknown;
  request: RequestInfo;
}

export interface ResourceResponse {
  status: number;
  headers?: Record<string, string>;
  /** An object is sent as JSON; a string or bytes as they are (set Content-Type). */
  body?: unknown;
}

export interface ResourceRoute {
  method: HttpMethod;
  /** Relative to `/realms/{realm}/{providerId}`, Fastify syntax (`/check-email`, `/assets/:file`). */
  path: string;
  handler(request: ResourceRequest): Awaitable<ResourceResponse>;
}

export interface RealmResource {
  routes: ResourceRoute[];
}

/** The administrative roles a provider's admin route may require (realm-admin holds them all). */
export type AdminRoleName = 'view-clients' | 'manage-clients' | 'view-users' | 'manage-users' | 'view-realm' | 'manage-realm' | 'view-events' | 'manage-events';

export interface AdminResourceRequest extends ResourceRequest {
  /** The authenticated administrator. */
  admin: {
    realmId: string;
    clientId: string | null;
    userId: string | null;
    /**
     * Whether the administrator has `role`'s power over the realm in the path, as the host's own admin API decides
     * (realm-admin holds every role, manage-X implies view-X): for what a route shows beyond its declared role.
     */
    hasRole(role: AdminRoleName): boolean;
  };
}

export interface AdminResourceRoute {
  method: HttpMethod;
  /** Relative to `/admin/realms/{realm}/{providerId}`, Fastify syntax. */
  path: string;
  /** The host answers 401/403 before the handler when the bearer token lacks it over the realm. */
  role: AdminRoleName;
  /**
   * Written as an admin event (operation ACTION, resource type CUSTOM, this resource path) when the handler
   * answers 2xx; defaults to true for every method but GET.
   */
  audited?: boolean;
  handler(request: AdminResourceRequest): Awaitable<ResourceResponse>;
}

export interface AdminResource {
  routes: AdminResourceRoute[];
}

// ---------------------------------------------------------------------------------------------------------
// Factories: what a provider package exports

interface FactoryBase {
  /** Unique across the server, e.g. `ext-event-webhook`. */
  id: string;
  displayName?: string;
  helpText?: string;
  init?(context: ProviderContext): Awaitable<void>;
  close?(): Awaitable<void>;
  /**
   * Checks the attributes of a client before the admin API stores it (`POST /clients`, `PUT /clients/{id}`):
   * the problems, each naming its attribute (`api.url: …`); empty when valid. The server answers 400 with
   * them and writes nothing. Optional, any kind of provider; called after `init`. Realm import does not call it.
   */
  validateClientAttributes?(attributes: Readonly<Record<string, string>>): Awaitable<string[]>;
  /**
   * The client attributes this provider owns (e.g. `api.url`, `api.key`), which no sign-in depends on. A
   * `manage-clients` holder may change these on the clients that sign administrators in (`account-console`, …),
   * whose other settings only a realm administrator may change; name only attributes that cannot redirect a
   * token, a code or a sign-in.
   */
  ownedClientAttributes?: readonly string[];
  /**
   * Optional, any kind: routes mounted under `/admin/realms/{realm}/{providerId}/…`, behind the admin API's
   * authentication, each requiring its declared role. Called once after `init`.
   */
  adminResource?(): AdminResource;
}

export interface EventListenerFactory extends FactoryBase {
  kind: 'event-listener';
  create(): EventListener;
}

export interface FormActionFactory extends FactoryBase {
  kind: 'form-action';
  displayName: string;
  requirementChoices: Requirement[];
  configProperties?: ConfigProperty[];
  /**
   * Checks an `authenticatorConfig.config` before the admin API stores it on an execution of this provider
   * (`POST …/executions/{id}/config`, `PUT …/config/{id}`): the problems, each naming its key; empty when
   * valid. The server answers 400 with them and writes nothing. Optional; called after `init`.
   */
  validateConfig?(config: Readonly<Record<string, string>>): string[];
  create(): FormAction;
}

export interface FormProtectorFactory extends FactoryBase {
  kind: 'form-protector';
  displayName: string;
  requirementChoices: Requirement[];
  configProperties?: ConfigProperty[];
  /**
   * Checks an `authenticatorConfig.config` before the admin API stores it on an execution of this provider
   * (`POST …/executions/{id}/config`, `PUT …/config/{id}`): the problems, each naming its key; empty when
   * valid. The server answers 400 with them and writes nothing. Optional; called after `init`.
   */
  validateConfig?(config: Readonly<Record<string, string>>): string[];
  /** Forms whose built-in flows (and copies) get this execution, REQUIRED, when it is installed. */
  installOn: ProtectedForm[];
  create(): FormProtector;
}

export interface RealmResourceFactory extends FactoryBase {
  kind: 'realm-resource';
  create(): RealmResource;
}

export type ProviderFactory = EventListenerFactory | FormActionFactory | FormProtectorFactory | RealmResourceFactory;

/**
 * The default export (or named export `providers`) of a provider package: its factories.
 * The package.json `name` and `version` are logged at load.
 */
export type ProviderModule = { providers: ProviderFactory[] } | { default: ProviderFactory[] };
