import { createEventWebhookProvider } from './provider.js';

export {
  DEFAULT_SETTINGS,
  SETTING_LIMITS,
  WebhookDispatcher,
  isRetryableStatus,
  guardedConnector,
  settingProblem,
  undiciTransport,
} from './delivery.js';
export type {
  Connector,
  DeliveryLogger,
  DeliveryMetrics,
  DeliveryOutcome,
  DispatcherOptions,
  DispatcherSettings,
  Transport,
  TransportRequest,
  UndiciTransportOptions,
  WebhookDelivery,
} from './delivery.js';
export { isTargetRefusal } from './target-refusal.js';
export { parseSecret, sign, signatureHeaders } from './signature.js';
export type { SignatureHeaders } from './signature.js';
export { adminDeletePayload, userEventPayload } from './payload.js';
export type { Origin, WebhookPayload } from './payload.js';
export { DEFAULT_TRUSTED_PROXY_COUNT, clientIp, normalizeIp, parseTrustedProxyCount } from './client-ip.js';
export type { ForwardingInfo } from './client-ip.js';
export { DEFAULT_SHUTDOWN_GRACE_MS, SETTING_ENV, readSettings } from './settings.js';
export type { WebhookSettings } from './settings.js';
export { PROVIDER_ID, WEBHOOK_EVENT_TYPES, createEventWebhookProvider, webhookTarget } from './provider.js';
export type { EventWebhookProviderOptions, WebhookTarget } from './provider.js';

/** What the server loads, once per server: each server gets its own listener and delivery engine. */
export const createProviders = () => [createEventWebhookProvider()];
/** The same as one shared list, for hosts that import `providers`. */
export const providers = createProviders();
