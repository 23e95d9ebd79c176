import { defineConfig } from 'vitest/config';
import SlowestFilesReporter from './scripts/slowest-files-reporter.js';

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts'],
    // Generous: the route sweeps and browser tests send thousands of requests on two shared cores.
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // A worker imports the server once for all its files, not once per file, and keeps one Chromium for them
    // (test/support/browser.ts): on a 10-file sample run in one worker, 66.8 s of CPU with isolation, 30.3 s without
    // (issue 36). Every file starts its own servers and restores what it changes (Date, timers). A server close that
    // waits on a request still in flight is cut after the grace period and named on stderr (test/support/server.ts).
    isolate: false,
    // Two cores on CI machines: more parallel files only adds contention (Argon2, Chromium).
    maxWorkers: 2,
    // A test in which no expect() ran fails: none passes by luck (issue 36).
    expect: { requireAssertions: true },
    // The default output, then the ten slowest files (issue 36: the next slow file is seen).
    reporters: ['default', new SlowestFilesReporter()],
  },
});
