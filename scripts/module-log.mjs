/**
 * `node --import tsx --import scripts/module-log.mjs …`: the process appends the URL of every module it loads through
 * the ES module loader to the file REALMGATE_BENCH_MODULE_LOG names, one a line, so a bench can check which checkout's
 * code a server process runs (scripts/sign-in-bench.ts starts one from a worktree of an older commit).
 */
import { register } from 'node:module';

register('./module-log-hooks.mjs', import.meta.url);
