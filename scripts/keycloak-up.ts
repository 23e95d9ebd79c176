/**
 * `node --import tsx scripts/keycloak-up.ts <state-file>`: starts the differential suite's Keycloak (the same
 * download, cache, port and command as its test set-up), writes `{ url, adminPassword }` to <state-file> (mode 600)
 * once it answers, and keeps it running until SIGUSR2 (stopped gently) or SIGINT/SIGTERM (its process group killed).
 *
 * Why: `.ci/run` starts Keycloak beside the fault suite and hands it to `npm run test:keycloak` through
 * REALMGATE_KEYCLOAK_URL, so its start-up (half a minute, minutes the first time) overlaps other work (issue 36).
 */
import { renameSync, writeFileSync } from 'node:fs';
import { startKeycloak } from '../packages/server/test/keycloak/keycloak-process.js';

const stateFile = process.argv[2];
if (!stateFile) {
  console.error('usage: node --import tsx scripts/keycloak-up.ts <state-file>');
  process.exit(2);
}

const started = Date.now();
const keycloak = await startKeycloak((line) => console.log(`keycloak: ${line}`));
console.log(`keycloak: ready in ${Math.round((Date.now() - started) / 1000)} s`);
// Renamed into place, so the waiting script never reads half a file.
writeFileSync(`${stateFile}.tmp`, JSON.stringify({ url: keycloak.url, adminPassword: keycloak.adminPassword }), { mode: 0o600 });
renameSync(`${stateFile}.tmp`, stateFile);
process.on('SIGUSR2', () => {
  void keycloak.stop().then(() => process.exit(0));
});
// Held open until a signal arrives.
setInterval(() => {}, 1 << 30);
