/**
 * Builds Keycloak's admin console (the npm package @keycloak/keycloak-admin-ui and the small entry in src/) with
 * Vite into dist/, which is not committed; how, in scripts/ui-build.ts (shared with packages/account-console). The
 * English messages come from the Maven artifact org.keycloak:keycloak-admin-ui of the same version, fetched from
 * Maven Central with its checksum checked (scripts/maven-artifact.ts).
 *
 *   tsx packages/admin-console/build.ts          build when stale
 *   tsx packages/admin-console/build.ts --force  build anyway
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildUi, runAsScript, uiBuildIsCurrent, type UiBuild } from '../../scripts/ui-build.js';

const ROOT = dirname(fileURLToPath(import.meta.url));
/** Where the server finds the console; the server resolves the same folder on its own (it never imports this file). */
export const CONSOLE_DIST = join(ROOT, 'dist');
/** The URL path the hashed assets are served under (Vite's `base`); the server serves dist/ there. */
export const CONSOLE_RESOURCES = '/resources/admin-console/';

const ADMIN_CONSOLE: UiBuild = {
  root: ROOT,
  label: 'admin console',
  uiPackage: '@keycloak/keycloak-admin-ui',
  base: CONSOLE_RESOURCES,
  alsoBundled: ['@keycloak/keycloak-admin-client'],
  libFiles: ['logo.svg', 'icon.svg', 'favicon.svg'],
  messagesArtifact: 'keycloak-admin-ui',
  messagesEntry: 'theme/keycloak.v2/admin/messages/messages_en.properties',
};

export const consoleBuildIsCurrent = (): boolean => uiBuildIsCurrent(ADMIN_CONSOLE);

export const buildConsole = (options: { force?: boolean; quiet?: boolean } = {}) => buildUi(ADMIN_CONSOLE, options);

runAsScript(import.meta.url, ADMIN_CONSOLE);
