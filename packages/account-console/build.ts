/**
 * Builds Keycloak's account console (the npm package @keycloak/keycloak-account-ui and the small entry in src/) with
 * Vite into dist/, which is not committed, as packages/admin-console builds the admin console (scripts/ui-build.ts).
 * The English messages come from the Maven artifact org.keycloak:keycloak-account-ui of the same version, fetched
 * from Maven Central with its checksum checked (scripts/maven-artifact.ts); the console's menu (content.json) and logo are this package's own, in static/.
 *
 *   tsx packages/account-console/build.ts          build when stale
 *   tsx packages/account-console/build.ts --force  build anyway
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildUi, runAsScript, uiBuildIsCurrent, type UiBuild } from '../../scripts/ui-build.js';

const ROOT = dirname(fileURLToPath(import.meta.url));
/** Where the server finds the console; the server resolves the same folder on its own (it never imports this file). */
export const ACCOUNT_CONSOLE_DIST = join(ROOT, 'dist');
/** The URL path the hashed assets are served under (Vite's `base`); the server serves dist/ there. */
export const ACCOUNT_CONSOLE_RESOURCES = '/resources/account-console/';

const ACCOUNT_CONSOLE: UiBuild = {
  root: ROOT,
  label: 'account console',
  uiPackage: '@keycloak/keycloak-account-ui',
  base: ACCOUNT_CONSOLE_RESOURCES,
  alsoBundled: ['@patternfly/react-icons', '@patternfly/react-table', 'react-hook-form', 'lodash-es'],
  libFiles: [],
  messagesArtifact: 'keycloak-account-ui',
  messagesEntry: 'theme/keycloak.v3/account/messages/messages_en.properties',
  packageStyles: 'lib/keycloak-account-ui.css',
  // The built-in clients' names are message keys (`${client_account-console}`) that Keycloak's base theme defines, not
  // the console's own messages: the console shows them in device activity and applications.
  extraMessages: {
    'client_account': 'Account',
    'client_account-console': 'Account Console',
    'client_security-admin-console': 'Security Admin Console',
    'client_admin-cli': 'Admin CLI',
    'client_realm-management': 'Realm Management',
    'client_broker': 'Broker',
  },
};

export const accountConsoleBuildIsCurrent = (): boolean => uiBuildIsCurrent(ACCOUNT_CONSOLE);

export const buildAccountConsole = (options: { force?: boolean; quiet?: boolean } = {}) => buildUi(ACCOUNT_CONSOLE, options);

runAsScript(import.meta.url, ACCOUNT_CONSOLE);
