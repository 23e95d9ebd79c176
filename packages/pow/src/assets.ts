import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** hash-wasm's UMD builds, served as they are to the worker. */
export const ARGON2_SCRIPT = 'argon2.umd.min.js';
/** For pages that are not a secure context, where WebCrypto is missing. */
export const SHA256_SCRIPT = 'sha256.umd.min.js';

const require = createRequire(import.meta.url);

/** The only files the asset route serves. */
const SOURCES: Readonly<Record<string, string>> = {
  'pow-form.js': fileURLToPath(new URL('../assets/pow-form.js', import.meta.url)),
  'pow-worker.js': fileURLToPath(new URL('../assets/pow-worker.js', import.meta.url)),
  'pow.css': fileURLToPath(new URL('../assets/pow.css', import.meta.url)),
  [ARGON2_SCRIPT]: require.resolve('hash-wasm/dist/argon2.umd.min.js'),
  [SHA256_SCRIPT]: require.resolve('hash-wasm/dist/sha256.umd.min.js'),
};

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
  for (const [name, path] of Object.entries(SOURCES)) {
    const body = await readFile(path);
    all.update(body);
    files.set(name, { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });
  }
  return { files, version: all.digest('base64url').slice(0, 12) };
}
