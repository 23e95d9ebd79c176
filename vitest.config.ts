import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores on CI machines: more parallel files only adds contention (Argon2, Chromium).
    maxWorkers: 2,
  },
});
