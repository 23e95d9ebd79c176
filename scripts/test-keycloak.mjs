// npm run test:keycloak: the Keycloak differential suite when Java 17+ and Maven are there; otherwise says so
// plainly and exits 0 (a skip, not a pass: CI prints the line).
import { spawn, spawnSync } from 'node:child_process';

function missing() {
  const java = spawnSync('java', ['-version'], { encoding: 'utf8' });
  if (java.error) return 'java is not installed';
  const major = /version "(\d+)/.exec(`${java.stderr}${java.stdout}`)?.[1];
  if (!major || Number(major) < 17) return `Java 17 or later is needed (found ${major ?? 'an unknown version'})`;
  if (spawnSync('mvn', ['-v'], { stdio: 'ignore' }).error) return 'mvn (Maven) is not installed';
  return null;
}

const why = process.env.REALMGATE_KEYCLOAK_URL ? null : missing();
if (why) {
  console.log(`KEYCLOAK SUITE SKIPPED: ${why}; nothing was compared against Keycloak.`);
  process.exit(0);
}
const run = spawn('npx', ['vitest', 'run', '--config', 'vitest.keycloak.config.ts', ...process.argv.slice(2)], { stdio: 'inherit' });
// Passed on, so vitest's global setup stops the Keycloak it started.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => run.kill(signal));
run.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
