/**
 * OpenID Connect Back-Channel Logout 1.0 as Keycloak 26 sends it: when a user session ends by logout (the user's
 * own, with a refresh token or in the browser, or an administrator's), every client of the session with a
 * `backchannel.logout.url` gets a signed `logout_token` POSTed form-encoded. Unlike Keycloak (which sends while the
 * logout waits), the notifications are rows of the server's durable outbox (storage/outbox.ts, the table webhooks
 * use, under its own provider id), written before the logout answers and sent by a worker on every node, with
 * retries: a slow or down receiver never holds up the user's logout, and a node that dies mid-delivery leaves its
 * rows to the others once their lease runs out. Every request goes through the server's one outbound guard.
 */
import type { OutboxItem, OutboxItemInput, OutboxNext } from '@realmgate/spi';
import { sessionProvider } from '../../authentication/index.js';
import { newId } from '../../credentials/index.js';
import { isTargetRefusal, outboundRequest } from '../../http/index.js';
import type { Client, Realm, UserSession } from '../../model/types.js';
import type { OutboundGuard } from '@realmgate/spi';
import type { ServerLogger } from '../../observability/index.js';
import { inBackground, type Storage } from '../../storage/index.js';
import type { TokenService } from './tokens.js';
import { outboxNodeId } from '../../providers/outbox.js';
import type { Db } from '../../storage/db.js';
import { OutboxRepository } from '../../storage/outbox.js';
import { signatureAlgorithm } from './tokens.js';

/** The logout token's event (Back-Channel Logout 1.0, 2.4) and Keycloak's flag asking the client to drop offline tokens. */
export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';
export const REVOKE_OFFLINE_EVENT = 'revoke_offline_access';
/** The JWS `typ` of a logout token (Keycloak's TokenUtil.TOKEN_TYPE_JWT_LOGOUT_TOKEN). */
export const LOGOUT_TOKEN_TYPE = 'logout+jwt';

/** Keycloak's client attributes (OIDCConfigAttributes). */
export const LOGOUT_ATTRIBUTES = {
  backchannelUrl: 'backchannel.logout.url',
  backchannelSessionRequired: 'backchannel.logout.session.required',
  backchannelRevokeOffline: 'backchannel.logout.revoke.offline.tokens',
  frontchannelUrl: 'frontchannel.logout.url',
  frontchannelSessionRequired: 'frontchannel.logout.session.required',
} as const;

/** The outbox's provider id for these rows (the webhook extension has its own). */
export const LOGOUT_OUTBOX_ID = 'oidc-backchannel-logout';

/** Keycloak's default for both `…session.required` attributes is true: only "false" turns them off. */
const flagOn = (value: string | undefined, fallback: boolean) => (value === undefined || value === '' ? fallback : value === 'true');

export const backchannelLogoutUrl = (client: Client): string | null => client.attributes[LOGOUT_ATTRIBUTES.backchannelUrl]?.trim() || null;

/** An identity provider's logout URL when it logs the upstream out by back-channel (`backchannelSupported`), else null. */
const brokerLogoutUrl = (config: Record<string, string>): string | null => {
  const url = config.backchannelSupported === 'true' ? config.logoutUrl?.trim() : '';
  if (!url) return null;
  try {
    return ['http:', 'https:'].includes(new URL(url).protocol) ? url : null;
  } catch {
    return null;
  }
};

/**
 * A row telling an upstream identity provider (brokering) that the user's session here ended, as Keycloak's
 * OIDCIdentityProvider.backchannelLogout: a GET of the provider's `logoutUrl` with `state` (the session's id),
 * `id_token_hint` (the upstream's ID token of that sign-in, unless `sendIdTokenOnLogout` is "false") and, with
 * `sendClientIdOnLogout`, `client_id`. Only for a provider with `backchannelSupported`.
 */
interface StoredBrokerLogout {
  kind: 'broker';
  realmId: string;
  alias: string;
  state: string;
  idToken: string;
}

/** The outbox row type of a logout towards an upstream identity provider. */
export const BROKER_LOGOUT_TYPE = 'BROKER_BACKCHANNEL_LOGOUT';

/** What a row carries: enough to sign the token at each attempt (a fresh iat and exp, the same jti). */
interface StoredLogout {
  kind?: 'client';
  realmId: string;
  /** The client's UUID. */
  client: string;
  iss: string;
  sub: string;
  sid: string;
  jti: string;
}

export interface LogoutDeliverySettings {
  /** The waits before the 2nd, 3rd … attempt; the last repeats. */
  backoffMs: number[];
  maxAttempts: number;
  /** How often a node looks for due rows when nothing woke it (a retry due, another node's rows). */
  pollMs: number;
  leaseMs: number;
  /** Rows sent at once by one node. */
  concurrency: number;
  /** Delivered and dead rows are removed after this long. */
  retentionMs: number;
}

export const DEFAULT_LOGOUT_DELIVERY: LogoutDeliverySettings = {
  backoffMs: [1_000, 5_000, 30_000, 120_000, 600_000],
  maxAttempts: 8,
  pollMs: 1_000,
  leaseMs: 60_000,
  concurrency: 8,
  retentionMs: 7 * 86_400_000,
};

const EXCERPT_CHARS = 200;
const PURGE_EVERY_MS = 3_600_000;
const ERROR_LOG_INTERVAL_MS = 10_000;

interface Deps {
  storage: Storage;
  tokens: TokenService;
  outbound: OutboundGuard;
  logger: ServerLogger;
}

export class BackchannelLogout {
  /** Mutable for tests (short backoffs); read at each attempt. */
  readonly settings: LogoutDeliverySettings = { ...DEFAULT_LOGOUT_DELIVERY, backoffMs: [...DEFAULT_LOGOUT_DELIVERY.backoffMs] };
  readonly store: OutboxRepository;
  private closing = false;
  private woken = false;
  private wakeUp: (() => void) | null = null;
  private loopDone: Promise<void> | null = null;
  private purgeTimer: ReturnType<typeof setInterval> | null = null;
  private lastErrorLogAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly deps: Deps) {
    this.store = new OutboxRepository(deps.storage.db, deps.storage.dialect, LOGOUT_OUTBOX_ID, outboxNodeId());
  }

  /** Starts this node's worker (again, after close). */
  start(): void {
    if (this.loopDone && !this.closing) return;
    this.closing = false;
    // The worker's statements, and its purge's, are a background worker's, not a request's (inBackground).
    this.loopDone = inBackground(() => this.loop());
    this.purgeTimer = setInterval(() => void inBackground(() => this.purge()), PURGE_EVERY_MS);
    this.purgeTimer.unref?.();
  }

  /** Stops claiming and waits (up to `graceMs`) for the attempts under way; rows not finished are sent again after their lease. */
  async close(graceMs: number): Promise<void> {
    this.closing = true;
    this.wake();
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.loopDone ?? Promise.resolve(), new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
  }

  /**
   * Wakes this node's worker. After an enqueue it is called from setImmediate: the claim it starts (SQLite's driver
   * runs statements on the event loop) then follows the logout's answer instead of delaying it.
   */
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /**
   * Writes one notification for each client of these sessions that has a back-channel logout URL (and, when
   * `only` is given, is one of those client UUIDs); resolves once the rows are committed, before anything is sent.
   * Call it before the sessions are deleted (their client sessions go with them). Returns how many were written.
   */
  async enqueue(realm: Realm, sessions: UserSession[], issuer: string, only?: (client: Client) => boolean): Promise<number> {
    const items = await this.notifications(realm, sessions, issuer, only, {});
    if (items.length === 0) return 0;
    await this.store.enqueue(items);
    setImmediate(() => this.wake());
    return items.length;
  }

  /**
   * Ends sessions: their notifications (as `enqueue`) and `end` (which deletes the sessions, with `trx`) in one
   * transaction, one commit: a logout that fails leaves both undone, one that answers has written both.
   */
  async endSessions(
    realm: Realm,
    sessions: UserSession[],
    issuer: string,
    end: (trx: Db) => Promise<void>,
    only?: (client: Client) => boolean,
    /** `initiatingIdp`: the identity provider whose own logout this is (Keycloak's): it is not told back. */
    options: { initiatingIdp?: string } = {},
  ): Promise<number> {
    const items = await this.notifications(realm, sessions, issuer, only, options);
    if (items.length === 0) {
      await end(this.deps.storage.db);
      return 0;
    }
    await this.deps.storage.transaction(async (trx) => {
      await this.store.enqueueIn(trx, items);
      await end(trx);
    });
    setImmediate(() => this.wake());
    return items.length;
  }

  private async notifications(realm: Realm, sessions: UserSession[], issuer: string, only: ((client: Client) => boolean) | undefined, options: { initiatingIdp?: string }): Promise<OutboxItemInput[]> {
    if (sessions.length === 0) return [];
    const clientSessions = await this.deps.storage.sessions.clientSessionsOf(sessions.map((s) => s.id));
    const byId = new Map(sessions.map((s) => [s.id, s]));
    const items: OutboxItemInput[] = await this.brokerLogouts(realm, sessions, options.initiatingIdp);
    for (const cs of clientSessions) {
      const client = await this.deps.storage.clients.cachedById(realm.id, cs.clientId);
      const session = byId.get(cs.sessionId);
      if (!client || !session || !client.enabled || !backchannelLogoutUrl(client) || (only && !only(client))) continue;
      const stored: StoredLogout = { realmId: realm.id, client: client.id, iss: issuer, sub: session.userId, sid: session.id, jti: newId() };
      items.push({
        id: stored.jti,
        realmId: realm.id,
        endpoint: client.id,
        endpointLabel: client.clientId,
        orderKey: null,
        type: 'BACKCHANNEL_LOGOUT',
        label: session.id,
        payload: JSON.stringify(stored),
        maxAttempts: this.settings.maxAttempts,
      });
    }
    return items;
  }

  /** A row for each brokered session whose identity provider logs the upstream out by back-channel (StoredBrokerLogout). */
  private async brokerLogouts(realm: Realm, sessions: UserSession[], initiatingIdp: string | undefined): Promise<OutboxItemInput[]> {
    const brokered = sessions.filter((s) => s.brokerIdToken && s.brokerUserId);
    if (brokered.length === 0) return [];
    const providers = await this.deps.storage.federation.cachedProviders(realm.id);
    const items: OutboxItemInput[] = [];
    for (const session of brokered) {
      // The longest alias the recorded `{alias}.{upstream sub}` starts with (an alias may hold a dot).
      const provider = sessionProvider(providers, session);
      if (!provider || provider.alias === initiatingIdp || !brokerLogoutUrl(provider.config)) continue;
      const stored: StoredBrokerLogout = { kind: 'broker', realmId: realm.id, alias: provider.alias, state: session.id, idToken: session.brokerIdToken! };
      items.push({
        id: newId(),
        realmId: realm.id,
        endpoint: provider.internalId,
        endpointLabel: provider.alias,
        orderKey: null,
        type: BROKER_LOGOUT_TYPE,
        label: session.id,
        payload: JSON.stringify(stored),
        maxAttempts: this.settings.maxAttempts,
      });
    }
    return items;
  }

  /** The logout token for a row, as Keycloak's TokenManager.initLogoutToken makes it, signed like the client's ID tokens. */
  async logoutToken(realm: Realm, client: Client, stored: StoredLogout, now = Math.floor(Date.now() / 1000)): Promise<string> {
    const events: Record<string, unknown> = { [BACKCHANNEL_LOGOUT_EVENT]: {} };
    if (flagOn(client.attributes[LOGOUT_ATTRIBUTES.backchannelRevokeOffline], false)) events[REVOKE_OFFLINE_EVENT] = true;
    const payload = {
      iat: now,
      // Back-Channel Logout 1.0, 2.4: "preferably at most two minutes in the future", as Keycloak.
      exp: now + 120,
      jti: stored.jti,
      iss: stored.iss,
      aud: client.clientId,
      sub: stored.sub,
      ...(flagOn(client.attributes[LOGOUT_ATTRIBUTES.backchannelSessionRequired], true) ? { sid: stored.sid } : {}),
      events,
    };
    return this.deps.tokens.signDocument(realm.id, payload, signatureAlgorithm(realm, client, 'id'), LOGOUT_TOKEN_TYPE);
  }

  private async loop(): Promise<void> {
    while (!this.closing) {
      this.woken = false;
      let items: OutboxItem[] = [];
      try {
        items = await this.store.claimDue(this.settings.concurrency, this.settings.leaseMs);
      } catch (error) {
        this.logError('back-channel logout: claiming due notifications failed', error);
      }
      if (items.length > 0) {
        await Promise.all(items.map((item) => this.attempt(item)));
        continue;
      }
      if (this.woken || this.closing) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.settings.pollMs);
        timer.unref?.();
        this.wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wakeUp = null;
    }
  }

  /** One delivery: 2xx delivered; a refusal by the guard, a missing URL or a 4xx (but 408, 429) final; else retried. */
  private async attempt(item: OutboxItem): Promise<void> {
    const startedAt = Date.now();
    const made = item.attempts + 1;
    let status: number | null = null;
    let error: string | null = null;
    let excerpt: string | null = null;
    let final = false;
    let target = '';
    try {
      const parsed = JSON.parse(item.payload) as StoredLogout | StoredBrokerLogout;
      const stored = parsed.kind === 'broker' ? null : parsed;
      const realm = stored ? await this.deps.storage.realms.byId(stored.realmId) : null;
      const client = realm && stored ? await this.deps.storage.clients.byId(realm.id, stored.client) : null;
      const url = client ? backchannelLogoutUrl(client) : null;
      if (parsed.kind === 'broker') {
        ({ status, error, final, target, excerpt } = await this.brokerAttempt(parsed));
      } else if (!realm || !client || !url || !stored) {
        final = true;
        error = 'the client or its back-channel logout URL no longer exists';
      } else {
        target = url;
        const token = await this.logoutToken(realm, client, stored);
        const response = await outboundRequest(this.deps.outbound, url, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ logout_token: token }).toString(),
        });
        status = response.status;
        excerpt = response.body.slice(0, EXCERPT_CHARS) || null;
        if (status >= 400 && status < 500 && status !== 408 && status !== 429) final = true;
        if (status < 200 || status >= 300) error = `HTTP ${status}`;
      }
    } catch (caught) {
      error = caught instanceof Error ? caught.message : String(caught);
      if (isTargetRefusal(caught)) {
        final = true;
        error = `refused by outboundAllow: ${error}`;
      }
    }
    const delivered = error === null;
    let next: OutboxNext;
    if (delivered) next = { state: 'delivered' };
    else if (final || made >= item.maxAttempts) next = { state: 'dead' };
    else {
      const { backoffMs } = this.settings;
      const wait = backoffMs[Math.min(made, backoffMs.length) - 1] ?? 1000;
      next = { state: 'pending', dueAt: Date.now() + wait };
      const timer = setTimeout(() => this.wake(), wait);
      timer.unref?.();
    }
    const fields = { client: item.endpointLabel, session: item.label, attempt: made, maxAttempts: item.maxAttempts, status, target };
    if (delivered) this.deps.logger.debug(fields, 'back-channel logout delivered');
    else if (next.state === 'dead') this.deps.logger.warn({ ...fields, error }, `back-channel logout not delivered, given up: ${error}`);
    else this.deps.logger.info({ ...fields, error }, `back-channel logout attempt failed, will retry: ${error}`);
    try {
      await this.store.finishAttempt(item, { startedAt, durationMs: Date.now() - startedAt, status, error, responseExcerpt: excerpt }, next, { pauseAfterFailures: 0 });
    } catch (caught) {
      // The row stays leased; once the lease runs out it is due again (a receiver may get the same jti twice).
      this.logError('back-channel logout: recording an attempt failed', caught);
    }
  }

  /** One GET of an upstream's logout URL (StoredBrokerLogout); 2xx and 3xx are success, as Keycloak's. */
  private async brokerAttempt(stored: StoredBrokerLogout): Promise<{ status: number | null; error: string | null; final: boolean; target: string; excerpt: string | null }> {
    const provider = (await this.deps.storage.federation.cachedProviders(stored.realmId)).find((p) => p.alias === stored.alias);
    const base = provider ? brokerLogoutUrl(provider.config) : null;
    if (!provider || !base) return { status: null, error: 'the identity provider or its back-channel logout no longer exists', final: true, target: '', excerpt: null };
    const url = new URL(base);
    url.searchParams.set('state', stored.state);
    if (provider.config.sendIdTokenOnLogout !== 'false') url.searchParams.set('id_token_hint', stored.idToken);
    if (provider.config.sendClientIdOnLogout === 'true' && provider.config.clientId) url.searchParams.set('client_id', provider.config.clientId);
    // The target logged is the logout URL without its query: the ID token is not written to the logs.
    const target = `${url.origin}${url.pathname}`;
    const response = await outboundRequest(this.deps.outbound, url.href, { method: 'GET' });
    const status = response.status;
    const failed = status < 200 || status >= 400;
    return { status, error: failed ? `HTTP ${status}` : null, final: failed && status >= 400 && status < 500 && status !== 408 && status !== 429, target, excerpt: response.body.slice(0, EXCERPT_CHARS) || null };
  }

  private async purge(): Promise<void> {
    try {
      while ((await this.store.purgeFinishedBefore(Date.now() - this.settings.retentionMs, 1000)) === 1000 && !this.closing);
    } catch (error) {
      this.logError('back-channel logout: purging old notifications failed', error);
    }
  }

  private logError(message: string, error: unknown): void {
    if (Date.now() - this.lastErrorLogAt < ERROR_LOG_INTERVAL_MS) return;
    this.lastErrorLogAt = Date.now();
    this.deps.logger.warn({ err: error }, message);
  }
}

/** One client's front-channel logout frame on the logout page. */
export interface FrontchannelFrame {
  clientId: string;
  name: string;
  url: string;
}

/**
 * The front-channel logout frames of a session ending in the browser, as Keycloak's FrontChannelLogoutHandler: each
 * enabled client of the session with `frontchannelLogout` and a `frontchannel.logout.url` (else its base URL, when
 * absolute), with `sid` and `iss` added unless `frontchannel.logout.session.required` is "false".
 */
export async function frontchannelFrames(storage: Storage, realm: Realm, session: UserSession, issuer: string): Promise<FrontchannelFrame[]> {
  const frames: FrontchannelFrame[] = [];
  for (const cs of await storage.sessions.clientSessionsOf([session.id])) {
    const client = await storage.clients.cachedById(realm.id, cs.clientId);
    if (!client || !client.enabled || !client.frontchannelLogout) continue;
    const configured = client.attributes[LOGOUT_ATTRIBUTES.frontchannelUrl]?.trim() || client.baseUrl?.trim() || '';
    let url: URL;
    try {
      url = new URL(configured);
    } catch {
      continue;
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') continue;
    if (flagOn(client.attributes[LOGOUT_ATTRIBUTES.frontchannelSessionRequired], true)) {
      url.searchParams.set('sid', session.id);
      url.searchParams.set('iss', issuer);
    }
    frames.push({ clientId: client.clientId, name: client.name || client.clientId, url: url.href });
  }
  return frames;
}
