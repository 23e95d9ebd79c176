import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RealmgateServer } from '../src/index.js';
import { createRealmFromImport, parseRealmImport } from '../src/services/realm-import/index.js';
import { parsePartialImport, partialImport, type PartialImportGuard } from '../src/services/realm-import/partial.js';
import { realmExporter } from '../src/services/realm-export.js';
import { createTestServer } from './support/server.js';

/**
 * Realm import and export on SQLite and PostgreSQL, through the services, without HTTP (issue 36): every Keycloak
 * realm file of fixtures/keycloak-exports is imported into a server on each database and exported whole (users,
 * secrets, hashes, links, consents, groups, flows, components, keys as `realmgate export` writes them), and the two
 * exports are the same document. What differs between the two databases (a value's type, a date's width, an order, a
 * row kept by one and lost by the other) fails here; the round trip of an export is the HTTP files' (SQLite).
 * realm-exports.test.ts, realm-exports-kc18-26.test.ts, realm-export.test.ts, keycloak-full-export.test.ts,
 * realm-partial-import.test.ts, realm-import-flows.test.ts and realm-import-keys.test.ts (HTTP, SQLite) rely on it.
 */
type Rep = Record<string, unknown>;
const FIXTURES = join(import.meta.dirname, 'fixtures/keycloak-exports');
const FILES = readdirSync(FIXTURES).filter((f) => f.endsWith('.json')).sort();
const read = (file: string) => readFileSync(join(FIXTURES, file), 'utf8').replace(/^\uFEFF/, '');

/**
 * What the import makes where the file has none, and so differs between any two imports: ids (replaced by their first
 * place in the document, so a reference to one still has to match), the time of the import (a user's or credential's
 * creation) and what is random (the salt and hash of a password the file gives in clear, a generated secret or key).
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const STARTED = Date.now();
// A realm key the file gives without its material is made new (Keycloak's key-provider entries).
const MADE_RANDOM = new Set(['secretData', 'credentialData', 'secret', 'kid', 'privateKey', 'certificate', 'ecdsaPrivateKey', 'ecdsaPublicKey', 'eddsaPrivateKey', 'eddsaPublicKey']);
function normalise(document: unknown, input: string): unknown {
  const names = new Map<string, string>();
  const walk = (value: unknown, key: string): unknown => {
    if (Array.isArray(value)) return value.map((v) => walk(v, key));
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, k)]));
    if (typeof value === 'string' && UUID.test(value) && !input.includes(value)) {
      if (!names.has(value)) names.set(value, `<made ${names.size}>`);
      return names.get(value);
    }
    if (typeof value === 'number' && value >= STARTED && value <= Date.now() && !input.includes(String(value))) return '<import time>';
    if (typeof value === 'string' && MADE_RANDOM.has(key) && !input.includes(JSON.stringify(value).slice(1, -1))) return `<made ${key}>`;
    return value;
  };
  return walk(document, '');
}

describe('realm import and export: the same on SQLite and PostgreSQL', () => {
  const servers: Record<'sqlite' | 'postgres', { server: RealmgateServer; dispose(): Promise<void> } | undefined> = { sqlite: undefined, postgres: undefined };
  beforeAll(async () => {
    servers.sqlite = await createTestServer({ database: 'sqlite' });
    servers.postgres = await createTestServer({ database: 'postgres' });
  }, 60_000);
  afterAll(async () => {
    for (const s of Object.values(servers)) {
      await s?.server.close();
      await s?.dispose();
    }
  });

  /** Imports the document as realm `name` and exports it whole, as `realmgate export` does. */
  async function roundTrip(kind: 'sqlite' | 'postgres', body: Rep, name: string): Promise<Rep> {
    const ctx = servers[kind]!.server.context;
    const parsed = parseRealmImport({ ...body, realm: name }, (id) => ctx.providers.get('event-listener', id) !== undefined);
    return exportWhole(kind, await createRealmFromImport(ctx, parsed));
  }

  /** The realm exported whole, as `realmgate export` writes it. */
  async function exportWhole(kind: 'sqlite' | 'postgres', realm: Awaited<ReturnType<typeof createRealmFromImport>>): Promise<Rep> {
    const ctx = servers[kind]!.server.context;
    const exporter = await realmExporter(ctx, realm);
    const document = await exporter.document({ clients: true, groupsAndRoles: true, secrets: true, organizations: true });
    const users: Rep[] = [];
    for (let after: string | null = null, first = true; first || after !== null; first = false) {
      const page: Awaited<ReturnType<typeof exporter.users>> = await exporter.users(after, 50);
      users.push(...page.users);
      after = page.last;
    }
    return { ...document, users };
  }

  it.each(FILES)('%s', async (file) => {
    const input = read(file);
    const body = JSON.parse(input) as Rep;
    const name = `${String(body.realm)}-x`;
    // A file refused is refused on both, with the same error.
    const [fromSqlite, fromPg] = [await roundTrip('sqlite', body, name).catch((e: Error) => e), await roundTrip('postgres', body, name).catch((e: Error) => e)];
    if (fromSqlite instanceof Error || fromPg instanceof Error) {
      expect(String(fromPg)).toBe(String(fromSqlite));
      return;
    }
    expect(normalise(fromPg, input)).toEqual(normalise(fromSqlite, input));
  });

  /**
   * Keycloak's partial import (the admin route's service, every check allowed) into an existing realm on each
   * database: a real export's roles, clients, users, groups and identity providers added, skipped, overwritten, and a
   * FAIL that meets an existing resource writing nothing (its transaction rolled back). Each step answers the same
   * results on both, and the realm exports whole as the same document after each. realm-partial-import.test.ts
   * (HTTP, SQLite) relies on it for PostgreSQL.
   */
  it('partial import: SKIP, OVERWRITE and a refused FAIL leave the same realm on both', async () => {
    const file = 'wirtshaus-demo.json';
    const input = read(file);
    const { roles, clients, users, groups, identityProviders } = JSON.parse(input) as Rep;
    const allowed: PartialImportGuard = { addRole: async () => {}, change: async () => {}, compose: async () => {}, grant: async () => {}, changeAccount: async () => {} };
    const steps: Rep[] = [
      { ifResourceExists: 'SKIP', roles, clients, users },
      { ifResourceExists: 'OVERWRITE', roles, clients, users, groups, identityProviders },
      { ifResourceExists: 'SKIP', groups: [{ name: 'staff', attributes: { floor: ['2'] }, subGroups: [{ name: 'clerks', subGroups: [] }] }], users: [{ username: 'gina', enabled: true, groups: ['/staff/clerks'] }] },
      { ifResourceExists: 'FAIL', roles: { realm: [{ name: 'brand-new-role' }, { name: 'user-is-manager' }] }, users: [{ username: 'not-written', enabled: true }] },
    ];
    const run = async (kind: 'sqlite' | 'postgres') => {
      const ctx = servers[kind]!.server.context;
      const realm = await createRealmFromImport(ctx, parseRealmImport({ realm: 'partial-x', enabled: true }, () => false));
      const seen: unknown[] = [];
      for (const step of steps) {
        const answer = await partialImport(ctx, realm, parsePartialImport(step, realm), allowed).then(
          (results) => ({ ...results, results: results.results.map(({ id: _id, ...rest }) => rest) }),
          (e: Error) => String(e),
        );
        seen.push(answer, await exportWhole(kind, realm));
      }
      return seen;
    };
    const [onSqlite, onPg] = [await run('sqlite'), await run('postgres')];
    // The steps did what they say (on SQLite; PostgreSQL must then match it).
    const results = (i: number) => onSqlite[i * 2] as { added: number; skipped: number; overwritten: number };
    expect(results(0)).toMatchObject({ overwritten: 0 });
    expect(results(0).added).toBeGreaterThan(0);
    expect(results(0).skipped).toBeGreaterThan(0);
    expect(results(1).overwritten).toBeGreaterThan(0);
    expect(onSqlite[6]).toMatch(/already exists/);
    expect(JSON.stringify(onSqlite[7])).not.toContain('brand-new-role');
    expect(JSON.stringify(onSqlite[7])).not.toContain('not-written');
    expect(onSqlite[7]).toEqual(onSqlite[5]);
    expect(normalise(onPg, input)).toEqual(normalise(onSqlite, input));
  });
});
