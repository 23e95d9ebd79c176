import { readdir, readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ProviderFactory } from '@realmgate/spi';
import { ProviderLoadError } from '../model/errors.js';

export interface LoadedPackage {
  name: string;
  version: string;
  directory: string;
  factories: ProviderFactory[];
}

const kinds = new Set(['event-listener', 'form-action', 'form-protector', 'realm-resource']);

/**
 * Imports every package (a directory with a package.json) in `directory`, in name order, and takes its factories:
 * from `createProviders()` when it exports one (called for each server), else its `providers` array. A missing
 * directory is empty.
 */
export async function loadProviderPackages(directory: string): Promise<LoadedPackage[]> {
  const root = resolve(directory);
  let entries: string[];
  try {
    entries = (await readdir(root)).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new ProviderLoadError(`cannot read providers directory ${root}: ${(error as Error).message}`);
  }
  const packages: LoadedPackage[] = [];
  for (const entry of entries) {
    if (entry.startsWith('.')) continue;
    const dir = join(root, entry);
    let isDirectory: boolean;
    try {
      isDirectory = (await stat(dir)).isDirectory();
    } catch (error) {
      // A dangling link (a package uninstalled behind the operator's back) would otherwise stop start-up with a bare ENOENT.
      throw new ProviderLoadError(`provider package ${dir} cannot be read: ${(error as Error).message}`);
    }
    if (!isDirectory) continue;
    packages.push(await loadPackage(dir));
  }
  return packages;
}

async function loadPackage(dir: string): Promise<LoadedPackage> {
  let manifest: { name?: string; version?: string; main?: string; exports?: unknown };
  try {
    manifest = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'));
  } catch (error) {
    throw new ProviderLoadError(`provider package ${dir} has no readable package.json: ${(error as Error).message}`);
  }
  const name = manifest.name ?? dir;
  const entry = entryPoint(manifest);
  let module: Record<string, unknown>;
  try {
    module = await import(pathToFileURL(join(dir, entry)).href);
  } catch (error) {
    throw new ProviderLoadError(`provider package ${name} failed to load: ${(error as Error).message}`);
  }
  // createProviders() gives this server factories of its own; a `providers` array is shared by every server
  // of the process (the module is imported once), which suits only a package without per-server state.
  let factories: unknown;
  try {
    factories = typeof module.createProviders === 'function' ? await (module.createProviders as () => unknown)() : (module.providers ?? module.default);
  } catch (error) {
    throw new ProviderLoadError(`provider package ${name} failed to create its providers: ${(error as Error).message}`);
  }
  if (!Array.isArray(factories) || factories.length === 0) {
    throw new ProviderLoadError(`provider package ${name} exports neither createProviders() nor a "providers" array`);
  }
  for (const factory of factories) {
    const f = factory as Partial<ProviderFactory>;
    if (typeof f?.id !== 'string' || !/^[a-z0-9][a-z0-9._-]*$/.test(f.id)) {
      throw new ProviderLoadError(`provider package ${name} has a factory without a valid id (lower-case letters, digits, . _ -)`);
    }
    if (!kinds.has(f.kind as string) || typeof f.create !== 'function') {
      throw new ProviderLoadError(`provider ${f.id} in ${name} has an unknown kind "${String(f.kind)}" or no create()`);
    }
  }
  return { name, version: manifest.version ?? '0.0.0', directory: dir, factories: factories as ProviderFactory[] };
}

function entryPoint(manifest: { main?: string; exports?: unknown }): string {
  const exp = manifest.exports;
  if (typeof exp === 'string') return exp;
  if (exp && typeof exp === 'object') {
    // `exports` is either a map of subpaths ("." …) or, as shorthand for ".", a map of conditions.
    const map = exp as Record<string, unknown>;
    const dot = Object.keys(map).some((key) => key.startsWith('.')) ? map['.'] : map;
    if (typeof dot === 'string') return dot;
    if (dot && typeof dot === 'object') {
      const conditional = dot as Record<string, unknown>;
      const pick = conditional.import ?? conditional.default;
      if (typeof pick === 'string') return pick;
    }
  }
  return manifest.main ?? 'index.js';
}
