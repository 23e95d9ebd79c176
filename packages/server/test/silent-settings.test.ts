import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { clientFieldUse, clientIgnored, clientRefusedValues, clientSpec, parseClient } from '../src/representations/client.js';
import { parseRepresentation } from '../src/representations/fields.js';
import { realmFieldUse, realmIgnored, realmSpec } from '../src/representations/realm.js';

/**
 * Issue 17, point 4: no silent settings. Every field of Keycloak's RealmRepresentation and ClientRepresentation
 * (as `@keycloak/keycloak-admin-client` 26 declares them) is either acted on (`realmFieldUse` / `clientFieldUse`,
 * naming the source file where), listed in the README's "Stored, not enforced" table, or refused by the admin API.
 */

const SRC = resolve(import.meta.dirname, '../src');
const README = resolve(import.meta.dirname, '../README.md');
const require = createRequire(import.meta.url);
const DEFS = join(dirname(require.resolve('@keycloak/keycloak-admin-client')), 'defs');

/** The fields of a representation's `export default interface` in the admin client's type definitions. */
function keycloakFields(file: string): string[] {
  const text = readFileSync(join(DEFS, file), 'utf8');
  const body = /export default interface \w+ \{\n([\s\S]*?)\n\}/.exec(text)?.[1] ?? '';
  return [...body.matchAll(/^ {4}(\w+)\?:/gm)].map(([, name]) => name);
}

/** The README's "Stored, not enforced" rows as `representation field`. */
function documentedRows(markdown: string): string[] {
  const section = /^## Stored, not enforced\n([\s\S]*?)(?=^## )/m.exec(markdown)?.[1] ?? '';
  return [...section.matchAll(/^\| (realm|client) \| `([^`]+)` \|/gm)].map(([, rep, field]) => `${rep} ${field}`);
}

interface Representation {
  name: 'realm' | 'client';
  fields: string[];
  accepted: Set<string>;
  use: Record<string, string>;
  refuses: (field: string) => boolean;
  /** Fields accepted with some values only, each refused with its others (a 400 naming the field). */
  refusedValues: Record<string, unknown>;
}

const refusedBy = (parse: (body: unknown) => unknown) => (field: string) => {
  try {
    parse({ [field]: 'x' });
    return false;
  } catch (err) {
    return err instanceof Error && err.message.includes(`.${field}: unrecognized field`);
  }
};

const realm: Representation = {
  name: 'realm',
  fields: keycloakFields('realmRepresentation.d.ts'),
  accepted: new Set([...Object.keys(realmSpec), ...realmIgnored]),
  use: realmFieldUse,
  refuses: refusedBy((body) => parseRepresentation(body, realmSpec, realmIgnored, 'realm')),
  refusedValues: {},
};
const client: Representation = {
  name: 'client',
  fields: keycloakFields('clientRepresentation.d.ts'),
  accepted: new Set([...Object.keys(clientSpec), ...clientIgnored]),
  use: clientFieldUse,
  refuses: refusedBy((body) => parseClient(body)),
  // The values Keycloak means by these, which Realmgate cannot honour (clientRefusedValues says why).
  refusedValues: { authorizationServicesEnabled: true },
};

function refusesValue(rep: Representation, field: string): boolean {
  try {
    (rep.name === 'client' ? parseClient : (body: unknown) => parseRepresentation(body, realmSpec, realmIgnored, 'realm'))({ [field]: rep.refusedValues[field] });
    return false;
  } catch (err) {
    return err instanceof Error && 'field' in err && err.field === field;
  }
}

/** What is wrong with a representation's fields against the README table; empty when nothing is. */
function problems(rep: Representation, table: string[]): string[] {
  const out: string[] = [];
  const listed = new Set(table.filter((row) => row.startsWith(`${rep.name} `)).map((row) => row.slice(rep.name.length + 1)));
  for (const field of rep.fields) {
    if (Object.hasOwn(rep.use, field) || listed.has(field) || (!rep.accepted.has(field) && rep.refuses(field))) continue;
    if (Object.hasOwn(rep.refusedValues, field) && refusesValue(rep, field)) continue;
    out.push(`${rep.name}.${field}: neither enforced, listed nor refused`);
  }
  for (const [field, file] of Object.entries(rep.use)) {
    if (!rep.accepted.has(field)) out.push(`${rep.name}.${field}: said to be enforced, but the admin API does not accept it`);
    const path = join(SRC, file);
    if (!existsSync(path) || !readFileSync(path, 'utf8').includes(field)) out.push(`${rep.name}.${field}: not found in src/${file}`);
  }
  // The table is exactly the accepted fields that have no effect: none missing, none stale.
  for (const field of rep.accepted) {
    const used = Object.hasOwn(rep.use, field);
    if (Object.hasOwn(rep.refusedValues, field)) {
      if (listed.has(field)) out.push(`${rep.name}.${field}: in the README table, but refused with some values`);
      continue;
    }
    if (!used && !listed.has(field)) out.push(`${rep.name}.${field}: accepted without effect, not in the README table`);
    if (used && listed.has(field)) out.push(`${rep.name}.${field}: in the README table, but enforced in src/${rep.use[field]}`);
  }
  for (const field of listed) if (!rep.accepted.has(field)) out.push(`${rep.name}.${field}: in the README table, but refused`);
  return out;
}

describe('no silent settings (issue 17, point 4)', () => {
  const table = documentedRows(readFileSync(README, 'utf8'));

  it('reads Keycloak’s representations from the admin client’s type definitions', () => {
    expect(realm.fields.length).toBeGreaterThan(100);
    expect(realm.fields).toContain('sslRequired');
    expect(client.fields).toContain('consentRequired');
    expect(table.length).toBeGreaterThan(50);
  });

  it('every realm field is enforced (where named), listed in the README, or refused', () => {
    expect(problems(realm, table)).toEqual([]);
  });

  it('every client field is enforced (where named), listed in the README, or refused', () => {
    expect(problems(client, table)).toEqual([]);
  });

  it('the fields refused with some values say why in the code', () => {
    expect(Object.keys(clientRefusedValues)).toEqual(expect.arrayContaining(Object.keys(client.refusedValues)));
    // authorizationServicesEnabled: false (what every Keycloak export carries) is accepted; consentRequired either way.
    expect(() => parseClient({ clientId: 'c', consentRequired: true, authorizationServicesEnabled: false })).not.toThrow();
    expect(parseClient({ clientId: 'c', consentRequired: true }).consentRequired).toBe(true);
    // A realm file's client with authorization services on is imported without them (and the import names it).
    expect(() => parseClient({ clientId: 'c', authorizationServicesEnabled: true }, 'realm.clients[0]', undefined, true)).not.toThrow();
  });

  it('would see a field accepted silently, a table row dropped, or an enforcement that names the wrong file', () => {
    const madeUp = { ...realm, fields: [...realm.fields, 'madeUpSecurityLevel'], accepted: new Set([...realm.accepted, 'madeUpSecurityLevel']) };
    expect(problems(madeUp, table)).toEqual([
      'realm.madeUpSecurityLevel: neither enforced, listed nor refused',
      'realm.madeUpSecurityLevel: accepted without effect, not in the README table',
    ]);
    expect(problems(realm, table.filter((row) => row !== 'realm rememberMe'))).toContain('realm.rememberMe: neither enforced, listed nor refused');
    expect(problems({ ...realm, use: { ...realm.use, accessTokenLifespan: 'mail/index.ts' } }, table)).toEqual([
      'realm.accessTokenLifespan: not found in src/mail/index.ts',
    ]);
    // A Keycloak field the admin API does not accept counts as refused only when it really is refused.
    expect(problems({ ...realm, fields: [...realm.fields, 'madeUpRefused'] }, table)).toEqual([]);
    expect(problems({ ...realm, fields: [...realm.fields, 'madeUpRefused'], refuses: () => false }, table)).toEqual([
      'realm.madeUpRefused: neither enforced, listed nor refused',
    ]);
  });
});
