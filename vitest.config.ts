import { defineConfig } from 'vitest/config';
import SlowestFilesReporter from './scripts/slowest-files-reporter.js';

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts'],
    // Generous: the route sweeps and browser tests send thousands of requests on two shared cores.
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // A worker imports the server once for all its files, not once per file (issue 36: about 40% of the suite's CPU
    // went to importing it again). Every file starts its own servers and restores what it changes (Date, timers).
    isolate: false,
    // Two cores on CI machines: more parallel files only adds contention (Argon2, Chromium).
    maxWorkers: 2,
    // A test in which no expect() ran fails: none passes by luck (issue 36).
    expect: { requireAssertions: true },
    // The default output, then the ten slowest files (issue 36: the next slow file is seen).
    reporters: ['default', new SlowestFilesReporter()],
  },
});
