import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The argon2id package's JavaScript (BLAKE2b, the Argon2id driver) as one classic script for the worker. */
export const ARGON2ID_SCRIPT = 'argon2id.js';
/** Its WebAssembly (the compression function G): with 128-bit SIMD, and without for browsers that lack it. */
export const ARGON2ID_SIMD_WASM = 'argon2id-simd.wasm';
export const ARGON2ID_BASELINE_WASM = 'argon2id-baseline.wasm';
/** hash-wasm's SHA-256 UMD build, for pages that are not a secure context, where WebCrypto is missing. */
export const SHA256_SCRIPT = 'sha256.umd.min.js';

const require = createRequire(import.meta.url);
const argon2idDir = dirname(require.resolve('argon2id/package.json'));

/**
 * The argon2id package ships ES modules (lib/blake2b.js, imported by lib/argon2id.js) meant for a bundler.
 * A worker that must also run where module workers are missing loads a classic script, so the two modules are
 * wrapped here, each in its own function scope (both declare a top-level `G`), their one import and two
 * exports replaced: the result defines the global `argon2id(params, { instance, memory })`, with the package's
 * BLAKE2b as `argon2id.blake2b(outlen)`. The edits are checked, so an upgrade that moves them fails at start-up
 * rather than in browsers.
 */
export function classicArgon2idScript(blake2bSource: string, argon2idSource: string, version: string): string {
  const replaceOnce = (source: string, from: string, to: string, file: string): string => {
    const at = source.indexOf(from);
    if (at < 0 || source.indexOf(from, at + 1) >= 0) throw new Error(`argon2id ${version}: expected "${from}" once in ${file}`);
    return source.slice(0, at) + to + source.slice(at + from.length);
  };
  const blake2b = replaceOnce(blake2bSource, 'export default function createHash(', 'function createHash(', 'lib/blake2b.js');
  let argon2id = replaceOnce(argon2idSource, 'import blake2b from "./blake2b.js"', '', 'lib/argon2id.js');
  argon2id = replaceOnce(argon2id, 'export default function argon2id(', 'function argon2id(', 'lib/argon2id.js');
  for (const [file, source] of [['lib/blake2b.js', blake2b], ['lib/argon2id.js', argon2id]] as const)
    if (/^\s*(import|export)\b/m.test(source)) throw new Error(`argon2id ${version}: another import or export in ${file}`);
  return [
    `/* argon2id ${version} (MIT licence, npm package "argon2id"): lib/blake2b.js and lib/argon2id.js as one classic script. */`,
    'var argon2id = (function () {',
    "'use strict';",
    'var blake2b = (function () {',
    "'use strict';",
    blake2b,
    'return createHash;',
    '})();',
    argon2id,
    // pow-worker.js drives the package's WebAssembly with its own block loop and needs the package's BLAKE2b.
    'argon2id.blake2b = blake2b;',
    'return argon2id;',
    '})();',
    '',
  ].join('\n');
}

/** What the served pow-worker.js starts with, before the library script and assets/pow-worker.js. */
const WORKER_PROLOGUE = "'use strict';\n";

/** The only files the asset route serves: each one's bytes, read or made once. */
async function sources(): Promise<Record<string, Buffer>> {
  const own = (name: string) => readFile(fileURLToPath(new URL(`../assets/${name}`, import.meta.url)));
  const { version } = JSON.parse(await readFile(join(argon2idDir, 'package.json'), 'utf8')) as { version: string };
  const script = classicArgon2idScript(
    await readFile(join(argon2idDir, 'lib/blake2b.js'), 'utf8'),
    await readFile(join(argon2idDir, 'lib/argon2id.js'), 'utf8'),
    version,
  );
  return {
    'pow-form.js': await own('pow-form.js'),
    // The worker is served with the library in front of it: one request, no synchronous importScripts() on the
    // way to the first hash (4–45 ms per worker on a page load here). The whole script is strict, as the
    // worker's own file asks (its 'use strict' is no longer the script's first statement).
    'pow-worker.js': Buffer.concat([Buffer.from(`${WORKER_PROLOGUE}${script}`, 'utf8'), await own('pow-worker.js')]),
    'pow.css': await own('pow.css'),
    [ARGON2ID_SCRIPT]: Buffer.from(script, 'utf8'),
    [ARGON2ID_SIMD_WASM]: await readFile(join(argon2idDir, 'dist/simd.wasm')),
    [ARGON2ID_BASELINE_WASM]: await readFile(join(argon2idDir, 'dist/no-simd.wasm')),
    [SHA256_SCRIPT]: await readFile(require.resolve('hash-wasm/dist/sha256.umd.min.js')),
  };
}

export interface Asset {
  body: Buffer;
  etag: string;
}

export interface AssetBundle {
  files: ReadonlyMap<string, Asset>;
  /** Changes whenever any file does; URLs carry it as `?v=` so caches can keep a version forever. */
  version: string;
}

export async function loadAssets(): Promise<AssetBundle> {
  const files = new Map<string, Asset>();
  const all = createHash('sha256');
  for (const [name, body] of Object.entries(await sources())) {
    all.update(body);
    files.set(name, { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });
  }
  return { files, version: all.digest('base64url').slice(0, 12) };
}
