import module from 'node:module';
import { afterAll } from 'vitest';

/**
 * A test worker's share of Node's compile cache (vitest.config.ts, NODE_COMPILE_CACHE on Node 22 and later): Node
 * writes the code it compiled when a process exits, but vitest ends its workers with a signal, so nothing would be
 * written and every worker would compile vitest's runtime and the server's dependencies again. After each file, the
 * code compiled so far is written (what another worker wrote is read, not written again). Node 20, and Node 22 before
 * 22.10, have no flushCompileCache: nothing happens there.
 */
const { flushCompileCache } = module as { flushCompileCache?: () => void };
if (flushCompileCache && process.env.NODE_COMPILE_CACHE) afterAll(() => flushCompileCache());
