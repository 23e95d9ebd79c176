import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configDefaults, defineConfig } from 'vitest/config';
import SlowestFilesReporter from './scripts/slowest-files-reporter.js';

/**
 * Files run with `isolate: false` (issue 36): a worker imports the server's modules once for all of them instead of
 * once per file. Only server files that launch no browser, patch no global (Date, timers, mocks, process.env), load
 * no extension package (whose module state, such as disposable-email's process-wide blocklist, would carry from one
 * file to the next); each passed three runs in a row in this project before it was added
 * (21 files, then 67, then the three storage contract files of 2026-11-29 (sessions, flows, admin records), then 28
 * more of the evening of 2026-11-29 that met the same rules, then 19 that start a second node or an upstream in the
 * same process, which isolation does not separate either: packages/server/README.md, "One import of the server per worker").
 */
const SHARED_MODULES = [
  'account-anonymous.test.ts',
  'account-linked-accounts.test.ts',
  'action-token-lifespans.test.ts',
  'admin-account-takeover.test.ts',
  'admin-api.test.ts',
  'admin-bad-input.test.ts',
  'admin-client-setup.test.ts',
  'admin-clients-hardening.test.ts',
  'admin-composite-escalation.test.ts',
  'admin-console-mappings.test.ts',
  'admin-console.test.ts',
  'admin-parity-breadth.test.ts',
  'admin-parity-caches.test.ts',
  'admin-parity-evaluate.test.ts',
  'admin-parity-impersonation.test.ts',
  'admin-parity.test.ts',
  'admin-permissions.test.ts',
  'admin-sessions.test.ts',
  'admin-temporary-password.test.ts',
  'admin-user-emails.test.ts',
  'admin-user-profile.test.ts',
  'anonymous-state.test.ts',
  'bench-ceilings.test.ts',
  'brokering-apple-key.test.ts',
  'brokering-browser-logout.test.ts',
  'brokering-link.test.ts',
  'brokering-social.test.ts',
  'brokering-upstream-logout.test.ts',
  'brokering-upstreams.test.ts',
  'brokering.test.ts',
  'client-authenticator-type.test.ts',
  'client-authorization-settings.test.ts',
  'client-jwt-auth.test.ts',
  'client-keys-cache.test.ts',
  'client-keys-tab.test.ts',
  'client-policies-fapi.test.ts',
  'client-policies.test.ts',
  'client-registration.test.ts',
  'client-scope-tokens.test.ts',
  'client-scopes-admin.test.ts',
  'client-security-settings.test.ts',
  'client-x509.test.ts',
  'config-reference.test.ts',
  'consent-screen.test.ts',
  'cors.test.ts',
  'credential-labels.test.ts',
  'device-flow.test.ts',
  'device-pkce.test.ts',
  'discovery.test.ts',
  'dpop-code-binding.test.ts',
  'dpop.test.ts',
  'error-catalogue.test.ts',
  'federated-identities.test.ts',
  'federation-admin.test.ts',
  'flow-selection.test.ts',
  'groups-permissions.test.ts',
  'groups-storage.test.ts',
  'groups.test.ts',
  'i18n-pages.test.ts',
  'jws-verify.test.ts',
  'keycloak-connect-es256.test.ts',
  'keycloak-connect.test.ts',
  'keycloak-email-rule.test.ts',
  'keycloak-full-export.test.ts',
  'layers.test.ts',
  'legacy-user-federation.test.ts',
  'mappers-e2e.test.ts',
  'metrics-access.test.ts',
  'organization-group-mapper.test.ts',
  'organization-groups.test.ts',
  'organization-invitations.test.ts',
  'otp.test.ts',
  'par.test.ts',
  'password-policy.test.ts',
  'protocol-mappers.test.ts',
  'protocol.test.ts',
  'realm-exports.test.ts',
  'realm-import-bom.test.ts',
  'realm-import-keys.test.ts',
  'realm-import-size.test.ts',
  'realm-key-export.test.ts',
  'realm-key-providers.test.ts',
  'realm-keys.test.ts',
  'realm-localization.test.ts',
  'realm-partial-import.test.ts',
  'redirect-uri-keycloak.test.ts',
  'refresh-tokens.test.ts',
  'request-logger.test.ts',
  'request-object.test.ts',
  'required-action-providers.test.ts',
  'required-actions-account.test.ts',
  'required-actions.test.ts',
  'reset-and-broker-flows.test.ts',
  'sign-in-flows.test.ts',
  'sign-in.test.ts',
  'silent-settings.test.ts',
  'ssl-required.test.ts',
  'sso-cookie-attack.test.ts',
  'storage-admin-records.test.ts',
  'storage-client-registration.test.ts',
  'storage-client-scopes.test.ts',
  'storage-components.test.ts',
  'storage-consents.test.ts',
  'storage-federation.test.ts',
  'storage-flows.test.ts',
  'storage-groups.test.ts',
  'storage-import-export.test.ts',
  'storage-sessions.test.ts',
  'target-guard.test.ts',
  'token-claims-pin.test.ts',
  'token-endpoint-answers.test.ts',
  'token-exchange.test.ts',
  'update-profile-action.test.ts',
  'user-attribute-groups.test.ts',
  'user-consents.test.ts',
  'users-bulk.test.ts',
  'webauthn-policy.test.ts',
].map((file) => `packages/server/test/${file}`);

/**
 * Node 22.1 and later keep V8's compiled code of the modules Node itself loads (vitest's worker runtime, fastify, pg,
 * playwright-core, …; not the sources vitest transforms) in a directory when NODE_COMPILE_CACHE names one. Every test
 * worker, and every isolated file is one, compiles the same modules: with the cache a worker's imports cost ~0.17 s
 * less CPU on Node 24 (issue 36; 1.02 → 0.85 s for those modules, six alternating runs). The workers inherit this
 * process's environment. The cache is keyed by each file's content and the Node version, so a changed module is
 * compiled again; it lives in the OS's temporary directory, never in the repository. Node 20 has no such cache. Node
 * writes the cache when a process exits, and vitest stops its workers with a signal: scripts/compile-cache-flush.ts
 * writes it after each file.
 */
if (Number(process.versions.node.split('.')[0]) >= 22) process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), 'realmgate-node-compile-cache');

export default defineConfig({
  test: {
    // Generous: the route sweeps and browser tests send thousands of requests on two shared cores.
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Each file in a fresh module graph, except the project `shared-modules` below. `isolate: false` everywhere failed
    // six files in a full run (2026-11-28, load 15-27): module state shared between files (disposable-email's
    // process-wide defaultBlocklist, configured by one file's server, read by the next file). Files join the shared
    // project one set at a time, each set after three passing runs in it (issue 36).
    isolate: true,
    // Two cores on CI machines: more parallel files only adds contention (Argon2, Chromium).
    maxWorkers: 2,
    // Writes a worker's compiled code to Node's compile cache after each file (scripts/compile-cache-flush.ts).
    setupFiles: ['./scripts/compile-cache-flush.ts'],
    // A test in which no expect() ran fails: none passes by luck (issue 36).
    expect: { requireAssertions: true },
    // The default output, then the ten slowest files (issue 36: the next slow file is seen).
    reporters: ['default', new SlowestFilesReporter()],
    projects: [
      { extends: true, test: { name: 'shared-modules', include: SHARED_MODULES, isolate: false } },
      // Each project names its files (an `include` at the root would be added to a project's, not replaced).
      { extends: true, test: { name: 'isolated', include: ['packages/*/test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...SHARED_MODULES] } },
    ],
  },
});
