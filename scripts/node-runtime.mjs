#!/usr/bin/env node
/**
 * `node scripts/node-runtime.mjs 24` prints the path of a Node 24 executable, the machine's own when it already is
 * a 24, else the official build that npm's `node-<platform>-<arch>` package ships (bin/node and include/node, the
 * headers a native build needs), fetched with npm from the registry once and kept under .runtimes/ (gitignored).
 * CI and the bench run the suite and the host figures on it beside the machine's Node.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The directory holding bin/node and include/node for Node `major`. */
export function nodeRuntime(major) {
  if (process.versions.node.split('.')[0] === String(major)) return dirname(dirname(process.execPath));
  const dir = join(root, '.runtimes', `node-${major}`);
  if (existsSync(join(dir, 'bin', 'node'))) return dir;
  mkdirSync(join(root, '.runtimes'), { recursive: true });
  const work = mkdtempSync(join(root, '.runtimes', `.fetch-${major}-`));
  try {
    const spec = `node-${process.platform}-${process.arch}@${major}`;
    // stdout carries the tarball's name; npm's notices go to stderr, shown so a failure says why.
    const out = execFileSync('npm', ['pack', spec, '--silent', '--pack-destination', work], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const tarball = out.trim().split('\n').pop();
    execFileSync('tar', ['-xzf', join(work, tarball), '-C', work]);
    // Renamed into place only when complete, so an interrupted fetch is never taken for a runtime.
    rmSync(dir, { recursive: true, force: true });
    renameSync(join(work, 'package'), dir);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return dir;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const major = process.argv[2] ?? '24';
  if (!/^\d+$/.test(major)) {
    console.error('usage: node scripts/node-runtime.mjs <major version>');
    process.exit(2);
  }
  const dir = nodeRuntime(major);
  console.log(join(dir, 'bin', 'node'));
}
