export {
  Blocklist,
  defaultBlocklist,
  emailDomain,
  isDisposableEmail,
  mailcheckerDataPath,
  normalizeDomain,
  normalizeListEntry,
  refresh,
  size,
} from './blocklist.js';
export type { BlocklistOptions, BlocklistSettings, RefreshReport, SourceReport } from './blocklist.js';
export {
  ConfigError,
  ENV_ALLOWLIST,
  ENV_EXTRA_SOURCES,
  ENV_SOURCE_TIMEOUT_MS,
  parseSettings,
} from './config.js';
export type { DisposableEmailSettings } from './config.js';
export {
  FORM_ACTION_ID,
  INVALID_EMAIL_DOMAIN,
  REFRESH_CHANNEL,
  REJECTION_MESSAGE,
  RESOURCE_ID,
  createProviders,
  providers,
} from './provider.js';
