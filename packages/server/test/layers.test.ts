import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Issue 13, point 1: sign-in lives in `authentication/`, below `pages/` and `protocol/`; those two reach each
 * other only through the ports the server context carries, so neither imports the other, and the layer
 * imports neither.
 */

const SRC = resolve(import.meta.dirname, '../src');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** Every module a file imports (type-only imports included), as a path below src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/^\s*(?:import|export)\b[^'";]*?from\s+'([^']+)'/gm)].map((m) => m[1]);
  return specifiers.filter((s) => s.startsWith('.')).map((s) => relative(SRC, resolve(file, '..', s)));
}

const crossings = (from: string, to: string[]) =>
  sources(join(SRC, from)).flatMap((file) => importsOf(file).filter((target) => to.some((layer) => target.startsWith(`${layer}/`))).map((target) => `${relative(SRC, file)} → ${target}`));

describe('the sign-in layers', () => {
  it('pages/ does not import protocol/', () => {
    expect(crossings('pages', ['protocol'])).toEqual([]);
  });

  it('protocol/ does not import pages/', () => {
    expect(crossings('protocol', ['pages'])).toEqual([]);
  });

  it('authentication/ imports neither pages/ nor protocol/', () => {
    expect(crossings('authentication', ['pages', 'protocol'])).toEqual([]);
  });

  it('the check sees an import when there is one', () => {
    expect(crossings('pages', ['authentication']).length).toBeGreaterThan(0);
  });
});
