import type { Reporter, TestModule } from 'vitest/node';

/** How many files the summary names. */
const SHOWN = 10;

/**
 * Prints, after the default reporter's summary, the test files that took longest (start-up, import and tests),
 * so that the next slow file is seen when it arrives rather than when the suite has doubled.
 */
export default class SlowestFilesReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const files = testModules.map((module) => {
      const d = module.diagnostic();
      const setUp = d.environmentSetupDuration + d.prepareDuration + d.setupDuration;
      return { file: module.relativeModuleId, total: setUp + d.collectDuration + d.duration, setUp, imported: d.collectDuration, tests: d.duration };
    });
    if (files.length < 2) return;
    const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`.padStart(8);
    const lines = files
      .sort((a, b) => b.total - a.total)
      .slice(0, SHOWN)
      .map((f) => `${s(f.total)}  ${f.file}  (set-up ${s(f.setUp).trim()}, import ${s(f.imported).trim()}, tests ${s(f.tests).trim()})`);
    process.stdout.write(`\nSlowest ${lines.length} test files:\n${lines.join('\n')}\n`);
  }
}
