import { defineConfig } from 'vitest/config';

/**
 * The Keycloak differential suite (issue 41; npm run test:keycloak, not part of npm test): one Keycloak 26.7.3 per
 * run, started by the global setup, and a Realmgate per file beside it; the same steps on both, compared.
 */
export default defineConfig({
  test: {
    include: ['packages/server/test/keycloak/**/*.keycloak.ts'],
    globalSetup: ['packages/server/test/keycloak/global-setup.ts'],
    testTimeout: 180_000,
    hookTimeout: 180_000,
    pool: 'forks',
    // One file at a time: one Keycloak serves them all and the machine has two cores.
    maxWorkers: 1,
    expect: { requireAssertions: true },
  },
});
