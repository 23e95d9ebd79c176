import type { TestProject } from 'vitest/node';
import { missingTools, startKeycloak, type RunningKeycloak } from './keycloak-process.js';

/** What the suite's files read with inject('keycloak'). */
export interface KeycloakTarget {
  url: string;
  adminUsername: string;
  adminPassword: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    keycloak: KeycloakTarget;
  }
}

let running: RunningKeycloak | null = null;

/**
 * Starts the one Keycloak of the run (or uses REALMGATE_KEYCLOAK_URL with REALMGATE_KEYCLOAK_ADMIN_PASSWORD, one
 * already running, for working on the suite) and hands its address to the test files.
 */
export async function setup(project: TestProject): Promise<void> {
  const log = (line: string) => console.log(`keycloak: ${line}`);
  const given = process.env.REALMGATE_KEYCLOAK_URL;
  if (given) {
    const adminPassword = process.env.REALMGATE_KEYCLOAK_ADMIN_PASSWORD;
    if (!adminPassword) throw new Error('REALMGATE_KEYCLOAK_URL needs REALMGATE_KEYCLOAK_ADMIN_PASSWORD');
    log(`using the Keycloak at ${given}`);
    project.provide('keycloak', { url: given.replace(/\/$/, ''), adminUsername: process.env.REALMGATE_KEYCLOAK_ADMIN_USERNAME ?? 'admin', adminPassword });
    return;
  }
  const missing = missingTools();
  if (missing) throw new Error(`the Keycloak suite needs Java 17+ and Maven: ${missing} (npm run test:keycloak skips it plainly)`);
  const started = Date.now();
  running = await startKeycloak(log);
  log(`ready in ${Math.round((Date.now() - started) / 1000)} s`);
  project.provide('keycloak', { url: running.url, adminUsername: 'admin', adminPassword: running.adminPassword });
}

export async function teardown(): Promise<void> {
  await running?.stop();
}
