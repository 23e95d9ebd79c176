import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { REPO_ROOT } from '../support/server.js';
import type { Both, Side, SideName } from './both.js';
import { differences as listed, type ListedDifference } from './differences.js';

/**
 * Compares what the same steps observed on Keycloak and on Realmgate. An observation is plain JSON (statuses, error
 * field names, which page came); it is flattened to leaf paths (`status`, `body.keys`, `pages.2`) and every path
 * whose values differ is a difference. A difference listed in differences.ts (same case, the path or a prefix of
 * it) is allowed; any other fails the case. Every difference seen goes to test-results/keycloak-differences.json.
 */

export interface Difference {
  case: string;
  path: string;
  keycloak: unknown;
  realmgate: unknown;
}

/** One row of a table-driven comparison: a name and the steps that observe one side. */
export interface DiffCase<C = void> {
  name: string;
  observe(side: Side, context: C): Promise<unknown>;
}

export function flatten(value: unknown, path = '', into = new Map<string, unknown>()): Map<string, unknown> {
  if (Array.isArray(value)) {
    if (!value.length) into.set(path, '[]');
    value.forEach((v, i) => flatten(v, path ? `${path}.${i}` : String(i), into));
  } else if (value && typeof value === 'object') {
    const entries = Object.entries(value);
    if (!entries.length) into.set(path, '{}');
    for (const [k, v] of entries) flatten(v, path ? `${path}.${k}` : k, into);
  } else into.set(path, value);
  return into;
}

export function differencesOf(name: string, observed: Record<SideName, unknown>): Difference[] {
  const k = flatten(observed.keycloak);
  const r = flatten(observed.realmgate);
  const out: Difference[] = [];
  for (const path of [...new Set([...k.keys(), ...r.keys()])].sort()) {
    if (k.get(path) !== r.get(path)) out.push({ case: name, path, keycloak: k.get(path) ?? '(absent)', realmgate: r.get(path) ?? '(absent)' });
  }
  return out;
}

export function listingOf(difference: Difference): ListedDifference | undefined {
  return listed.find((l) => l.case === difference.case && (l.path === difference.path || difference.path.startsWith(`${l.path}.`) || l.path === '*'));
}

const seenAll: Difference[] = [];

function writeReport(): void {
  const dir = join(REPO_ROOT, 'test-results');
  mkdirSync(dir, { recursive: true });
  const rows = seenAll.map((d) => ({ ...d, listed: listingOf(d)?.reason ?? null }));
  writeFileSync(join(dir, 'keycloak-differences.json'), `${JSON.stringify(rows, null, 2)}\n`);
}

/**
 * Runs the case on both sides and fails on a difference not listed, or on a listed difference of this case that
 * no longer occurs (so the list stays true).
 */
export async function compareOnBoth<C>(both: Both, row: DiffCase<C>, context: C): Promise<Record<SideName, unknown>> {
  const observed = await both.run((side) => row.observe(side, context));
  const found = differencesOf(row.name, observed);
  seenAll.push(...found);
  writeReport();
  const unlisted = found.filter((d) => !listingOf(d));
  const stale = listed.filter((l) => l.case === row.name && !found.some((d) => listingOf(d) === l));
  expect(
    unlisted.map((d) => `${d.path}: keycloak ${JSON.stringify(d.keycloak)}, realmgate ${JSON.stringify(d.realmgate)}`),
    `differences not listed in test/keycloak/differences.ts (observed: ${JSON.stringify(observed)})`,
  ).toEqual([]);
  expect(
    stale.map((l) => l.path),
    'listed in differences.ts but no longer different: remove them',
  ).toEqual([]);
  return observed;
}

/** An error answer reduced to what is compared: the status and the names of the body's fields (never its text). */
export function errorShape(response: { status: number; body: unknown }): { status: number; keys: string[] } {
  const body = response.body;
  return { status: response.status, keys: body && typeof body === 'object' && !Array.isArray(body) ? Object.keys(body).sort() : [typeof body] };
}

/** An OAuth answer: the status, the `error` code of a refusal and which fields came (descriptions are text). */
export function oauthShape(response: { status: number; body: unknown }): { status: number; error?: unknown; keys: string[] } {
  const body = (response.body ?? {}) as Record<string, unknown>;
  return { status: response.status, ...(body.error !== undefined ? { error: body.error } : {}), keys: Object.keys(body).sort() };
}
