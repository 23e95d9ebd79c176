/** The loader hook of scripts/module-log.mjs; it runs on the loader's thread, after the hooks registered before it. */
import { appendFileSync } from 'node:fs';

const file = process.env.REALMGATE_BENCH_MODULE_LOG;

export async function load(url, context, nextLoad) {
  if (file && url.startsWith('file:')) appendFileSync(file, `${url}\n`);
  return nextLoad(url, context);
}
