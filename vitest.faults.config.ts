import { defineConfig } from 'vitest/config';

/** The fault suite (npm run test:faults): its own PostgreSQL and Redis, broken on purpose; run after the main suites. */
export default defineConfig({
  test: {
    include: ['packages/server/faults/**/*.fault.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 1,
  },
});
