import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The server's layers, as docs/architecture.md draws them: a module may import only from its own unit or from a
 * unit of a lower layer; units of one layer are peers and never import each other; and no two modules import each
 * other, directly or around a circle. Type-only imports count for the layers too: a unit's types are read without
 * the units above it (a layer that needs a service of a higher one names it by an interface of its own, as
 * authentication/ports.ts does, and each layer declares the part of the server's context it reads).
 */

const SRC = resolve(import.meta.dirname, '../src');

/** Bottom to top. A unit is a folder below src/, or a file at the top. */
const LAYERS: string[][] = [
  ['model'],
  ['config', 'credentials', 'observability', 'store'],
  ['storage', 'mail', 'http', 'required-actions'],
  ['keys', 'events'],
  ['flows'],
  ['representations'],
  ['services'],
  ['providers'],
  ['authentication'],
  ['protocol', 'pages'],
  ['context.ts'],
  ['admin', 'dev', 'account-api'],
  ['bootstrap.ts'],
  ['server.ts'],
  ['export-command.ts'],
  ['main.ts', 'index.ts'],
];

/** The unit a path below src/ belongs to: its first segment (a folder, or a file at the top). */
function unitOf(path: string): string {
  return path.split('/')[0];
}

const rank = new Map(LAYERS.flatMap((units, layer) => units.map((unit) => [unit, layer] as const)));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** `import type …`, `export type …`, or braces holding only `type X` names. */
function typeOnly(clause: string): boolean {
  const text = clause.trim();
  if (/^type\s/.test(text)) return true;
  const names = /^\{([^}]*)\}$/.exec(text)?.[1].split(',').map((name) => name.trim()).filter(Boolean);
  return names !== undefined && names.length > 0 && names.every((name) => name.startsWith('type '));
}

/** The modules (paths below src/) that a source text imports, at run time only unless `types`; relative specifiers only. */
function imports(file: string, text: string, types = false): string[] {
  const statements = text.matchAll(/^\s*(?:import|export)\s+(?:([^'";]*?)\s+from\s+)?'([^']+)'/gm);
  return [...statements]
    .filter(([, clause, specifier]) => specifier.startsWith('.') && (types || !(clause && typeOnly(clause))))
    .map(([, , specifier]) => relative(SRC, resolve(file, '..', specifier)).replace(/\.js$/, '.ts'));
}

const valueImports = (file: string, text: string): string[] => imports(file, text);

function importGraph(types = false): Map<string, string[]> {
  return new Map(sources(SRC).map((file) => [relative(SRC, file), imports(file, readFileSync(file, 'utf8'), types)]));
}

/** Imports that run to a higher layer, to a peer of the same layer, or to a unit the layer table does not know. */
function layerViolations(graph: Map<string, string[]>): string[] {
  const violations: string[] = [];
  for (const [from, targets] of graph) {
    for (const to of targets) {
      const [a, b] = [unitOf(from), unitOf(to)];
      if (a === b) continue;
      const [ra, rb] = [rank.get(a), rank.get(b)];
      if (ra === undefined || rb === undefined) violations.push(`${from} → ${to} (unit ${ra === undefined ? a : b} is in no layer)`);
      else if (rb >= ra) violations.push(`${from} → ${to} (${a} is layer ${ra}, ${b} is layer ${rb})`);
    }
  }
  return violations;
}

/** Every set of two or more modules that reach each other through run-time imports (Tarjan's algorithm). */
function importCircles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const circle: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      circle.push(member);
    } while (member !== node);
    if (circle.length > 1) circles.push(circle.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return circles;
}

/** The circles whose modules lie in two units or more, each as `<n> files across <units>: <files>`. */
function circlesAcrossUnits(graph: Map<string, string[]>): string[] {
  return importCircles(graph)
    .filter((circle) => new Set(circle.map(unitOf)).size > 1)
    .map((circle) => `${circle.length} files across ${[...new Set(circle.map(unitOf))].join(', ')}: ${circle.join(' ')}`);
}

describe('the server layers', () => {
  const graph = importGraph();
  const graphWithTypes = importGraph(true);

  it('every unit of src/ is placed in a layer', () => {
    const units = new Set([...graph.keys()].map(unitOf));
    expect([...units].filter((unit) => !rank.has(unit))).toEqual([]);
  });

  it('no import runs up a layer or across to a peer, type-only imports included', () => {
    expect(layerViolations(graphWithTypes)).toEqual([]);
  });

  it('no modules import each other, directly or around a circle', () => {
    expect(importCircles(graph)).toEqual([]);
  });

  it('no circle of imports spans two units, type-only imports included', () => {
    // Types cost nothing at run time but a circle of them still ties the units' meaning together: a unit's types are
    // read without the units above it. A circle inside one unit (two files of storage/) is that unit's business.
    expect(circlesAcrossUnits(graphWithTypes)).toEqual([]);
  });

  it('pages/ and protocol/ meet only through the authentication ports', () => {
    const crossings = [...graph].flatMap(([from, targets]) =>
      targets.filter((to) => new Set([unitOf(from), unitOf(to)]).size === 2 && ['pages', 'protocol'].includes(unitOf(from)) && ['pages', 'protocol'].includes(unitOf(to))));
    expect(crossings).toEqual([]);
  });
});

describe('the layer check itself', () => {
  const file = join(SRC, 'http', 'errors.ts');

  it('reads value imports, skips type-only ones, follows re-exports', () => {
    const text = [
      "import { a } from '../model/errors.js';",
      "import type { B } from '../protocol/x.js';",
      "import { type C, type D } from '../pages/y.js';",
      "import {\n  e,\n  type F,\n} from '../storage/index.js';",
      "export { g } from './cookies.js';",
      "import './side-effect.js';",
      "import { h } from 'fastify';",
    ].join('\n');
    expect(valueImports(file, text)).toEqual(['model/errors.ts', 'storage/index.ts', 'http/cookies.ts', 'http/side-effect.ts']);
  });

  it('reads type-only imports too when asked', () => {
    const text = ["import type { B } from '../protocol/x.js';", "import { type C } from '../pages/y.js';"].join('\n');
    expect(imports(file, text)).toEqual([]);
    expect(imports(file, text, true)).toEqual(['protocol/x.ts', 'pages/y.ts']);
  });

  it('tells a circle across two units from one inside a unit', () => {
    const graph = new Map([
      ['context.ts', ['pages/index.ts']],
      ['pages/index.ts', ['pages/login.ts']],
      ['pages/login.ts', ['context.ts']],
      ['store/index.ts', ['store/memory-store.ts']],
      ['store/memory-store.ts', ['store/index.ts']],
    ]);
    expect(circlesAcrossUnits(graph)).toEqual(['3 files across context.ts, pages: context.ts pages/index.ts pages/login.ts']);
  });

  it('finds an upward import, a peer import and an unknown unit', () => {
    const graph = new Map([
      ['http/errors.ts', ['protocol/openid-connect/tokens.ts', 'model/errors.ts']],
      ['pages/login.ts', ['protocol/openid-connect/auth.ts']],
      ['nowhere/x.ts', ['model/types.ts']],
    ]);
    expect(layerViolations(graph)).toEqual([
      'http/errors.ts → protocol/openid-connect/tokens.ts (http is layer 2, protocol is layer 9)',
      'pages/login.ts → protocol/openid-connect/auth.ts (pages is layer 9, protocol is layer 9)',
      'nowhere/x.ts → model/types.ts (unit nowhere is in no layer)',
    ]);
  });

  it('names a unit by its first folder below src/, or by the file at the top', () => {
    expect(unitOf('services/realm-import/parse.ts')).toBe('services');
    expect(unitOf('admin/users.ts')).toBe('admin');
    expect(unitOf('server.ts')).toBe('server.ts');
  });

  it('finds a circle of three modules and leaves a chain alone', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ]);
    expect(importCircles(graph)).toEqual([['a.ts', 'b.ts', 'c.ts']]);
  });
});
