import { defineConfig } from 'vitest/config';
import SlowestFilesReporter from './scripts/slowest-files-reporter.js';

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts'],
    // Generous: the route sweeps and browser tests send thousands of requests on two shared cores.
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Each file in a fresh module graph. `isolate: false` (one import of the server per worker) saved about 55% of
    // the CPU on a 10-file sample, but a full run with it (2026-11-28, load 15-27) failed files that pass alone:
    // probably module state shared between files (disposable-email's defaultBlocklist), not yet verified. Off until
    // each is understood and fixed at its source (issue 36); test/support/server.ts names what a slow close waited for.
    isolate: true,
    // Two cores on CI machines: more parallel files only adds contention (Argon2, Chromium).
    maxWorkers: 2,
    // A test in which no expect() ran fails: none passes by luck (issue 36).
    expect: { requireAssertions: true },
    // The default output, then the ten slowest files (issue 36: the next slow file is seen).
    reporters: ['default', new SlowestFilesReporter()],
  },
});
