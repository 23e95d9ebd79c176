import { randomBytes } from 'node:crypto';
import type {
  ConfigProperty,
  FormProtector,
  FormProtectorFactory,
  FormProtectorRenderContext,
  Logger,
  ProtectorDecision,
  ProviderContext,
  RealmResource,
  RealmResourceFactory,
  ResourceRequest,
  ResourceResponse,
} from '@realmgate/spi';
import { loadAssets } from './assets.js';
import type { AssetBundle } from './assets.js';
import { loadKey } from './challenge.js';
import { VerificationPool } from './pool.js';
import {
  DEFAULT_SETTINGS,
  PowSettingsError,
  SERVER_CONFIG_KEYS,
  SETTING_KEYS,
  SETTING_RULES,
  envName,
  flowConfigProblems,
  resolveLimits,
  resolveServerOptions,
  resolveSettings,
  resolveSettingsReport,
} from './settings.js';
import type { PowLimits, PowSettings } from './settings.js';
import { ProofOfWork } from './verifier.js';

export const PROVIDER_ID = 'ext-pow';

/** Field names of SPEC 6. */
export const FIELDS = { challenge: 'pow_challenge', nonce: 'pow_nonce', honeypot: 'website' } as const;

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (ch) => ESCAPES[ch]);
}

const CONFIG_PROPERTIES: ConfigProperty[] = SETTING_KEYS.map((key) => ({
  name: key,
  label: SETTING_RULES[key].label,
  helpText: `${SETTING_RULES[key].help} Environment variable ${envName(key)}.`,
  type: 'String',
  defaultValue: String(DEFAULT_SETTINGS[key]),
}));

/** The status line's English texts, by the message keys a host may translate them under. */
const STATUS_TEXTS = {
  powChecking: 'Checking your browser\u2026',
  powReady: 'Ready',
  powFailed: 'Your browser could not be checked. Please reload the page to try again.',
  powNoScript: 'JavaScript is needed for this form: it lets your browser prove it is not a bot. Please turn JavaScript on and reload the page.',
};

/** Off-screen rather than display:none, which some bots detect and skip. */

interface ProtectorState {
  pow: ProofOfWork;
  logger: Logger;
  base: PowSettings;
  layers: { env: ProviderContext['env']; server: ProviderContext['config']; limits: PowLimits };
  assetsVersion: string;
  /** Parsed per-flow configs; a realm has few, so a small cache avoids re-parsing on every page. */
  perFlow: Map<string, PowSettings>;
}

const PER_FLOW_CACHE = 256;

function settingsFor(state: ProtectorState, config: Readonly<Record<string, string>>): PowSettings {
  const cacheKey = JSON.stringify(config);
  const cached = state.perFlow.get(cacheKey);
  if (cached) return cached;
  let settings: PowSettings;
  try {
    const report = resolveSettingsReport({ ...state.layers, flow: config });
    settings = report.settings;
    // Stored past the admin API's check (a realm import, a limit lowered since): used at the limit.
    if (report.clamped.length > 0)
      state.logger.warn(`${report.clamped.join('; ')}; this flow uses the limit instead`);
  } catch (error) {
    if (!(error instanceof PowSettingsError)) throw error;
    // A bad per-flow value must not lock users out or fail the page: the flow falls back to the
    // server-wide settings, and the operator is told once per distinct config.
    state.logger.error(`${error.message}; this flow uses the server-wide settings instead`);
    settings = state.base;
  }
  if (state.perFlow.size >= PER_FLOW_CACHE) state.perFlow.clear();
  state.perFlow.set(cacheKey, settings);
  return settings;
}

function renderFields(
  context: FormProtectorRenderContext,
  token: string,
  settings: PowSettings,
  assetsVersion: string,
): string {
  const assets = `${context.resourceBaseUrl}/assets/`;
  const honeypotId = `rg-pow-website-${randomBytes(4).toString('hex')}`;
  const attr = (value: string | number): string => escapeHtml(String(value));
  // The status line in the page's language when the host has the texts (its bundles' pow* keys); English otherwise.
  const text = (key: keyof typeof STATUS_TEXTS) => attr(context.msg ? context.msg(key, STATUS_TEXTS[key]) : STATUS_TEXTS[key]);
  return [
    `<div class="rg-pow" data-rg-pow data-min-solve-ms="${attr(settings.min_solve_time_ms)}"` +
      ` data-assets="${attr(assets)}" data-version="${attr(assetsVersion)}"` +
      ` data-text-checking="${text('powChecking')}" data-text-ready="${text('powReady')}" data-text-failed="${text('powFailed')}">`,
    `<input type="hidden" name="${FIELDS.challenge}" value="${attr(token)}">`,
    `<input type="hidden" name="${FIELDS.nonce}" value="">`,
    // A stylesheet, not a style attribute: host pages forbid inline styles in their CSP.
    `<link rel="stylesheet" href="${attr(`${assets}pow.css?v=${assetsVersion}`)}">`,
    `<div class="rg-pow-hp" aria-hidden="true">`,
    `<label for="${honeypotId}">Website</label>`,
    `<input type="text" id="${honeypotId}" name="${FIELDS.honeypot}" value="" tabindex="-1" autocomplete="off">`,
    `</div>`,
    `<p class="rg-pow-status" role="status" aria-live="polite"></p>`,
    `<noscript><p class="rg-pow-noscript">${text('powNoScript')}</p></noscript>`,
    `</div>`,
    // async, not defer: it runs as soon as it arrives, while the rest of the page is still being parsed, and
    // starts the workers then (the container it looks for is above it, so already parsed).
    `<script src="${attr(`${assets}pow-form.js?v=${assetsVersion}`)}" async></script>`,
  ].join('\n');
}

export const WORKER_CSP = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; connect-src 'self'";

function contentType(file: string): string {
  if (file.endsWith('.css')) return 'text/css; charset=utf-8';
  // WebAssembly.instantiateStreaming accepts only this type.
  if (file.endsWith('.wasm')) return 'application/wasm';
  return 'text/javascript; charset=utf-8';
}

function assetResponse(bundle: AssetBundle, request: ResourceRequest): ResourceResponse {
  const asset = bundle.files.get(request.params.file);
  if (!asset) return { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: 'Not found' };
  const headers: Record<string, string> = {
    etag: asset.etag,
    // Versioned URLs (what render() emits) never change; a bare URL must pick up an upgrade soon.
    'cache-control':
      request.query.v === bundle.version ? 'public, max-age=31536000, immutable' : 'public, max-age=300',
  };
  const ifNoneMatch = request.headers['if-none-match'];
  if (ifNoneMatch?.split(',').some((tag) => tag.trim().replace(/^W\//, '') === asset.etag))
    return { status: 304, headers };
  return {
    status: 200,
    headers: {
      ...headers,
      'content-type': contentType(request.params.file),
      'x-content-type-options': 'nosniff',
      // A worker runs under the CSP of its own script's response, not the page's: it fetches and compiles the
      // Argon2id WebAssembly (its JavaScript comes in the same response) or, without WebCrypto, loads
      // hash-wasm's SHA-256 script, and nothing else.
      ...(request.params.file === 'pow-worker.js' ? { 'content-security-policy': WORKER_CSP } : {}),
    },
    body: asset.body,
  };
}

/**
 * The two factories of Extension C. They share no state, so each can be initialised on its own;
 * `providers` in index.ts is one instance of this pair.
 */
export function createProviders(): [FormProtectorFactory, RealmResourceFactory] {
  let protector: ProtectorState | undefined;
  let bundle: AssetBundle | undefined;

  const formProtector: FormProtectorFactory = {
    kind: 'form-protector',
    id: PROVIDER_ID,
    displayName: 'Proof of Work',
    helpText:
      'Makes the browser solve a memory-hard puzzle before the password of the login, registration or reset ' +
      'form is processed; difficulty rises per client IP under load.',
    requirementChoices: ['REQUIRED', 'DISABLED'],
    installOn: ['login', 'registration', 'reset-credentials'],
    configProperties: CONFIG_PROPERTIES,

    async init(context: ProviderContext) {
      const limits = resolveLimits({ env: context.env, server: context.config });
      const layers = { env: context.env, server: context.config, limits };
      const base = resolveSettings(layers);
      const options = resolveServerOptions(layers);
      const unknown = Object.keys(context.config).filter((key) => !SERVER_CONFIG_KEYS.includes(key));
      if (unknown.length > 0)
        context.logger.warn('unknown proof-of-work config keys ignored', { keys: unknown.join(', ') });
      const pow = new ProofOfWork({
        store: context.store,
        key: await loadKey(context.store, options.secret),
        pool: new VerificationPool({ concurrency: options.verify_concurrency, queueLimit: options.verify_queue_limit }),
        metrics: context.metrics,
        logger: context.logger,
      });
      const { version } = await loadAssets();
      protector = { pow, logger: context.logger, base, layers, assetsVersion: version, perFlow: new Map() };
    },

    /**
     * For the admin API, before it stores an `authenticatorConfig` of an `ext-pow` execution: every
     * problem, each naming its key (a value above a server-wide limit names the limit too).
     */
    validateConfig(config: Readonly<Record<string, string>>): string[] {
      const state = protector;
      if (!state) throw new Error(`${PROVIDER_ID} form protector used before init`);
      return flowConfigProblems(config, state.layers);
    },

    create(): FormProtector {
      const state = protector;
      if (!state) throw new Error(`${PROVIDER_ID} form protector used before init`);
      return {
        async render(context) {
          const settings = settingsFor(state, context.config);
          const token = await state.pow.issueChallenge(
            { realm: context.realm.name, flow: context.form, ip: context.request.ipAddress },
            settings,
          );
          return renderFields(context, token, settings, state.assetsVersion);
        },

        async verify(context): Promise<ProtectorDecision> {
          const verdict = await state.pow.verifySolution(
            {
              realm: context.realm.name,
              flow: context.form,
              ip: context.request.ipAddress,
              challenge: context.submitted[FIELDS.challenge],
              nonce: context.submitted[FIELDS.nonce],
              honeypot: context.submitted[FIELDS.honeypot],
            },
            settingsFor(state, context.config),
          );
          if (verdict.ok) return { ok: true };
          state.logger.debug('proof of work rejected', {
            realm: context.realm.name,
            form: context.form,
            reason: verdict.reason,
          });
          const decision: ProtectorDecision = { ok: false, reason: verdict.reason, error: 'pow_failed' };
          return verdict.status === undefined
            ? decision
            : { ...decision, status: verdict.status, retryAfterSeconds: verdict.retryAfterSeconds };
        },
      };
    },
  };

  const assetResource: RealmResourceFactory = {
    kind: 'realm-resource',
    id: PROVIDER_ID,
    displayName: 'Proof of Work assets',
    helpText:
      'Serves the proof-of-work form script, its Web Worker, the argon2id library (script and WebAssembly, with ' +
      "and without SIMD) and hash-wasm's SHA-256 build.",

    async init() {
      bundle = await loadAssets();
    },

    create(): RealmResource {
      const assets = bundle;
      if (!assets) throw new Error(`${PROVIDER_ID} resource used before init`);
      return {
        routes: [{ method: 'GET', path: '/assets/:file', handler: (request) => assetResponse(assets, request) }],
      };
    },
  };

  return [formProtector, assetResource];
}
