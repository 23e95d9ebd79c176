import { randomUUID } from 'node:crypto';
import type {
  Counter,
  FormActionContext,
  FormActionFactory,
  FormValidation,
  Gauge,
  Logger,
  ProviderContext,
  ProviderFactory,
  RealmResourceFactory,
  ResourceRequest,
  ResourceResponse,
} from '@realmgate/spi';
import { Blocklist, defaultBlocklist, emailDomain } from './blocklist.js';
import { parseSettings, unknownKeys } from './config.js';
import { emailCheckScript } from './email-check-script.js';

export const FORM_ACTION_ID = 'ext-email-domain-validation';
export const RESOURCE_ID = 'ext-disposable-email-resource-provider';
export const REFRESH_CHANNEL = 'disposable-email:refresh';
export const INVALID_EMAIL_DOMAIN = 'invalid_email_domain';
export const REJECTION_MESSAGE = 'Disposable e-mail addresses are not accepted. Please use a permanent address.';
export const MAX_EMAIL_LENGTH = 320;
export const SCRIPT_PATH = '/assets/email-check.js';

const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** What a refresh broadcast carries: the sender, so it can skip its own message. */
interface RefreshMessage {
  origin: string;
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): ResourceResponse {
  return { status, headers: { 'cache-control': 'no-store', ...headers }, body };
}

function escapeAttribute(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** For logs: the domain only, never the address. */
function domainForLog(email: string): string {
  return (emailDomain(email) ?? '(none)').slice(0, 253);
}

/** What one server's init gave the realm resource; its routes keep it, so each server uses its own. */
interface ServerState {
  logger: Logger;
  store: ProviderContext['store'];
  tokens: ProviderContext['tokens'];
  domainsGauge: Gauge;
  refreshes: Counter;
  /** Names this server in broadcasts: every subscriber gets the message, the sender has already refreshed. */
  origin: string;
  unsubscribe?: () => Promise<void>;
}

/**
 * The two factories, sharing one blocklist. The server loads `providers` (the default list); tests build
 * their own around a separate Blocklist.
 *
 * A factory is a module-level object, so a host running several servers in one process (tests do) calls
 * `init` once per server on the same factory. Everything a server's context provides (logger, store, token
 * verifier, metrics) is therefore captured by the instance `create()` returns right after that server's
 * `init`, not kept in one shared variable the next server's `init` would overwrite. The list itself is one
 * per process, as specified.
 */
export function createProviders(blocklist: Blocklist = defaultBlocklist): ProviderFactory[] {
  const script = emailCheckScript(REJECTION_MESSAGE);
  let formState: { logger: Logger; rejections?: Counter } = { logger: silentLogger };

  const formAction: FormActionFactory = {
    kind: 'form-action',
    id: FORM_ACTION_ID,
    displayName: 'Email Domain Validation',
    helpText: 'Rejects registrations whose e-mail domain, or a parent domain, is a known disposable-e-mail domain.',
    requirementChoices: ['REQUIRED', 'DISABLED'],
    init(context) {
      formState = {
        logger: context.logger,
        rejections: context.metrics.counter(
          'realmgate_disposable_email_rejections_total',
          'Registrations rejected for a disposable e-mail domain',
        ),
      };
      if (Object.keys(context.config).length > 0) {
        context.logger.warn(
          `settings under providers.${FORM_ACTION_ID} are ignored; put them under providers.${RESOURCE_ID}`,
          { keys: Object.keys(context.config) },
        );
      }
    },
    create() {
      const { logger, rejections } = formState;
      // Registration and a later change of address are judged alike: a refused domain cannot come in afterwards.
      const judge = (what: string) => ({ form, realm }: FormActionContext): FormValidation => {
        const email = form.email;
        if (typeof email !== 'string' || !blocklist.isDisposable(email)) return { ok: true };
        rejections?.inc();
        logger.info(`${what} rejected: disposable e-mail domain`, {
          realm: realm.name,
          domain: domainForLog(email),
        });
        return {
          ok: false,
          error: INVALID_EMAIL_DOMAIN,
          fieldErrors: [{ field: 'email', message: REJECTION_MESSAGE }],
        };
      };
      return {
        validate: judge('registration'),
        validateProfile: judge('e-mail change'),
        renderAssets({ assetsBaseUrl }) {
          const src = `${assetsBaseUrl.replace(/\/+$/, '')}/${RESOURCE_ID}${SCRIPT_PATH}`;
          return `<script src="${escapeAttribute(src)}" defer></script>`;
        },
      };
    },
  };

  /** Servers initialised and not yet closed; `create()` takes the latest. */
  const servers: ServerState[] = [];

  const refreshList = async (state: ServerState, trigger: 'api' | 'broadcast' | 'start'): Promise<number> => {
    try {
      const count = await blocklist.refresh();
      state.refreshes.inc({ outcome: 'success' });
      state.domainsGauge.set(undefined, count);
      state.logger.info('disposable-email domain list refreshed', { trigger, ...blocklist.lastRefresh });
      return count;
    } catch (error) {
      state.refreshes.inc({ outcome: 'failure' });
      state.logger.error('disposable-email domain list refresh failed; the previous list is kept', {
        trigger,
        domains: blocklist.size,
        error: (error as Error).message,
      });
      throw error;
    }
  };

  const onBroadcast = (state: ServerState, raw: string): void => {
    let message: unknown;
    try {
      message = JSON.parse(raw);
    } catch {
      message = undefined;
    }
    if (typeof message !== 'object' || message === null || typeof (message as RefreshMessage).origin !== 'string') {
      state.logger.warn('ignored a malformed disposable-email refresh message');
      return;
    }
    if ((message as RefreshMessage).origin === state.origin) return;
    refreshList(state, 'broadcast').catch(() => undefined);
  };

  const checkEmail = (request: ResourceRequest): ResourceResponse => {
    const email = request.query.email;
    if (typeof email !== 'string' || email === '') {
      return json(400, { error: 'invalid_request', error_description: 'The email query parameter is required.' });
    }
    if (email.length > MAX_EMAIL_LENGTH) {
      return json(400, {
        error: 'invalid_request',
        error_description: `The email query parameter must be at most ${MAX_EMAIL_LENGTH} characters.`,
      });
    }
    return json(200, { disposable: blocklist.isDisposable(email) });
  };

  const refreshDomainList = async (state: ServerState, request: ResourceRequest): Promise<ResourceResponse> => {
    const { logger } = state;
    const challenge = `Bearer realm="${request.realm.name.replace(/[^\x20-\x7e]|["\\]/g, '')}"`;
    const authorization = request.headers.authorization;
    if (authorization === undefined || authorization.trim() === '') {
      return json(
        401,
        { error: 'invalid_request', error_description: 'An Authorization header with a bearer token is required.' },
        { 'www-authenticate': challenge },
      );
    }
    const token = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(authorization)?.[1];
    if (token === undefined) {
      return json(
        401,
        { error: 'invalid_request', error_description: 'The Authorization header must be "Bearer <access token>".' },
        { 'www-authenticate': `${challenge}, error="invalid_request"` },
      );
    }
    const verification = await state.tokens.verifyAccessToken(request.realm.name, token);
    if (!verification.valid) {
      logger.info('refresh-domain-list: token rejected', { realm: request.realm.name, reason: verification.reason });
      return json(
        401,
        { error: 'invalid_token', error_description: 'The access token is invalid, expired, or not from this realm.' },
        { 'www-authenticate': `${challenge}, error="invalid_token"` },
      );
    }
    const roles = verification.claims.resource_access?.['realm-management']?.roles;
    const isRealmAdmin = Array.isArray(roles) && roles.includes('realm-admin');
    if (!verification.serviceAccount || !isRealmAdmin) {
      logger.info('refresh-domain-list: caller lacks permission', {
        realm: request.realm.name,
        subject: verification.claims.sub,
        serviceAccount: verification.serviceAccount,
      });
      return json(
        403,
        {
          error: 'insufficient_scope',
          error_description: verification.serviceAccount
            ? 'The service account needs the realm-admin role of the realm-management client.'
            : 'Only a service-account token with the realm-admin role of realm-management may refresh the list.',
        },
        { 'www-authenticate': `${challenge}, error="insufficient_scope"` },
      );
    }
    let count: number;
    try {
      count = await refreshList(state, 'api');
    } catch (error) {
      const reason = (error as Error).message;
      return json(500, {
        success: false,
        message: `Refreshing the domain list failed; the previous list (${blocklist.size} domains) is kept: ${reason}`,
      });
    }
    const message: RefreshMessage = { origin: state.origin };
    try {
      await state.store.publish(REFRESH_CHANNEL, JSON.stringify(message));
    } catch (error) {
      logger.warn('disposable-email refresh not broadcast to other server processes', {
        error: (error as Error).message,
      });
      return json(200, {
        success: true,
        message: 'Domain list refreshed in this server process; notifying the other processes failed.',
        domains: count,
      });
    }
    return json(200, { success: true, message: 'Domain list refreshed.', domains: count });
  };

  const resource: RealmResourceFactory = {
    kind: 'realm-resource',
    id: RESOURCE_ID,
    displayName: 'Disposable e-mail domain list',
    helpText: 'check-email (public) and refresh-domain-list (service account with realm-admin).',
    async init(context) {
      const settings = parseSettings(context.config, context.env, `providers.${RESOURCE_ID}`);
      const { logger } = context;
      for (const key of unknownKeys(context.config)) {
        logger.warn(`unknown setting providers.${RESOURCE_ID}.${key} ignored`);
      }
      blocklist.configure(settings);
      const state: ServerState = {
        logger,
        store: context.store,
        tokens: context.tokens,
        domainsGauge: context.metrics.gauge('realmgate_disposable_email_domains', 'Domains in the disposable-e-mail list'),
        refreshes: context.metrics.counter(
          'realmgate_disposable_email_refreshes_total',
          'Disposable-e-mail list refreshes by outcome',
          ['outcome'],
        ),
        origin: randomUUID(),
      };
      if (settings.extraSources.length > 0) {
        // An unreachable source must not keep the server down: the bundled list is already in place.
        await refreshList(state, 'start').catch(() => undefined);
      }
      state.domainsGauge.set(undefined, blocklist.size);
      state.unsubscribe = await context.store.subscribe(REFRESH_CHANNEL, (raw) => onBroadcast(state, raw));
      servers.push(state);
      logger.info('disposable-email domain list ready', {
        domains: blocklist.size,
        allowlist: settings.allowlist.length,
        extraSources: settings.extraSources.length,
      });
    },
    async close() {
      // Called once per server, without saying which: every subscription ends (one server per process is the
      // deployed case); instances already created keep answering requests.
      const closing = servers.splice(0);
      await Promise.all(closing.map((state) => state.unsubscribe?.()));
    },
    create() {
      const state = servers.at(-1);
      if (state === undefined) throw new Error(`${RESOURCE_ID} created before init`);
      return {
        routes: [
          { method: 'GET', path: '/check-email', handler: checkEmail },
          { method: 'POST', path: '/refresh-domain-list', handler: (request) => refreshDomainList(state, request) },
          {
            method: 'GET',
            path: SCRIPT_PATH,
            handler: () => ({
              status: 200,
              headers: {
                'content-type': 'text/javascript; charset=utf-8',
                'cache-control': 'public, max-age=3600',
                'x-content-type-options': 'nosniff',
              },
              body: script,
            }),
          },
        ],
      };
    },
  };
  return [formAction, resource];
}

/** The server's entry point: both factories around the process-wide list. */
export const providers = createProviders();
