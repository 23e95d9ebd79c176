import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RealmgateServer } from '../src/index.js';
import { createRealmFromImport, parseRealmImport } from '../src/services/realm-import/index.js';
import { parsePartialImport, partialImport, type PartialImportGuard } from '../src/services/realm-import/partial.js';
import { exportRealm, realmExporter } from '../src/services/realm-export.js';
import { GroupTree } from '../src/services/groups.js';
import { createTestServer, REPO_ROOT } from './support/server.js';

/**
 * Organizations with their groups in realm import and export (issue 41): Keycloak 26.7.3's `organizations[]` of a
 * whole export (`kc.sh export`, `realmgate export`), each with `groups` (the organization's group tree, ids, attributes,
 * roles by name, `subGroups`) and `members` (`username`, `membershipType`, `groups`: ids of the organization's groups).
 * Imported and exported on SQLite and PostgreSQL: the export imports back to the same document (ids aside) and the two
 * databases give the same. Keycloak's partial export leaves organizations out, as does its partial import.
 */
type Rep = Record<string, unknown>;
type Kind = 'sqlite' | 'postgres';

const realmFile = (realm: string): Rep => ({
  realm,
  enabled: true,
  organizationsEnabled: true,
  roles: { realm: [{ name: 'org-admin' }, { name: 'auditor' }], client: { portal: [{ name: 'viewer' }] } },
  clients: [{ clientId: 'portal', publicClient: true, redirectUris: ['http://127.0.0.1/cb'] }],
  groups: [{ name: 'engineering', subGroups: [] }],
  users: [
    { username: 'ann', enabled: true, groups: ['/engineering'] },
    { username: 'bob', enabled: true },
    { username: 'cid', enabled: true },
  ],
  organizations: [
    {
      id: 'f0f0f0f0-0000-4000-8000-000000000001',
      name: 'Acme',
      alias: 'acme',
      enabled: true,
      description: 'Acme Corp',
      attributes: { tier: ['gold'] },
      domains: [{ name: 'acme.test', verified: false }],
      members: [
        { username: 'ann', membershipType: 'UNMANAGED', groups: ['g-backend', 'g-eng'] },
        { username: 'bob', membershipType: 'UNMANAGED' },
      ],
      groups: [
        {
          id: 'g-eng',
          name: 'engineering',
          path: '/engineering',
          attributes: { floor: ['3'] },
          realmRoles: ['org-admin'],
          clientRoles: { portal: ['viewer'] },
          subGroups: [{ id: 'g-backend', name: 'backend', path: '/engineering/backend', description: 'APIs', attributes: {}, realmRoles: ['auditor'], clientRoles: {}, subGroups: [] }],
        },
        { id: 'g-sales', name: 'sales', path: '/sales', attributes: {}, realmRoles: [], clientRoles: {}, subGroups: [] },
      ],
    },
    {
      name: 'Globex',
      alias: 'globex',
      enabled: true,
      members: [{ username: 'cid', membershipType: 'UNMANAGED', groups: ['g-x'] }],
      // The same name as Acme's group and as the realm's: each organization's tree is its own.
      groups: [{ id: 'g-x', name: 'engineering', path: '/engineering', subGroups: [] }],
    },
  ],
});

/** Ids the import made (UUIDs) by their first place in the document, so a reference to one still has to match. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
function normalise(document: unknown): unknown {
  const names = new Map<string, string>();
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).filter(([k]) => k !== 'createdTimestamp' && k !== 'realm').map(([k, v]) => [k, walk(v)]));
    if (typeof value === 'string' && UUID.test(value)) {
      if (!names.has(value)) names.set(value, `<id ${names.size}>`);
      return names.get(value);
    }
    return value;
  };
  return walk(document);
}

describe('organizations with their groups: realm import and export on SQLite and PostgreSQL', () => {
  const servers: Record<Kind, { server: RealmgateServer; dispose(): Promise<void> } | undefined> = { sqlite: undefined, postgres: undefined };
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

  const importFile = (kind: Kind, body: Rep) => {
    const ctx = servers[kind]!.server.context;
    return createRealmFromImport(ctx, parseRealmImport(body, () => false));
  };
  async function exportWhole(kind: Kind, realm: Awaited<ReturnType<typeof importFile>>): Promise<Rep> {
    const exporter = await realmExporter(servers[kind]!.server.context, realm);
    const document = await exporter.document({ clients: true, groupsAndRoles: true, secrets: true, organizations: true });
    return { ...document, users: (await exporter.users(null, 100)).users };
  }

  it.each(['sqlite', 'postgres'] as const)('%s: the file\'s organization groups, roles and memberships are stored, exported in Keycloak\'s shape, and the export imports back to the same organizations and memberships', async (kind) => {
    const ctx = servers[kind]!.server.context;
    const realm = await importFile(kind, realmFile(`orgs-${kind}`));
    // Stored: Acme's tree, its roles, Ann in two of its groups, not in Globex's group of the same name.
    const [acme] = await ctx.storage.organizations.list(realm.id, { search: 'Acme', exact: true });
    const tree = await GroupTree.loadOrganization(ctx.storage, realm.id, acme.id);
    expect([...tree.byId.values()].map((g) => tree.path(g.id)).sort()).toEqual(['/engineering', '/engineering/backend', '/sales']);
    const ann = (await ctx.storage.users.byUsername(realm.id, 'ann'))!;
    expect((await ctx.storage.groups.organizationGroupIds(ann.id, acme.id)).map((id) => tree.path(id)).sort()).toEqual(['/engineering', '/engineering/backend']);
    // Her realm group is the realm's, not an organization's.
    expect(await ctx.storage.groups.userGroupIds(ann.id)).toHaveLength(1);

    const first = await exportWhole(kind, realm);
    const organizations = first.organizations as Rep[];
    expect(organizations.map((o) => o.alias)).toEqual(['acme', 'globex']);
    const acmeRep = organizations[0] as { groups: Rep[]; members: { username: string; membershipType: string; groups?: string[] }[] };
    expect(acmeRep).toMatchObject({ name: 'Acme', alias: 'acme', enabled: true, description: 'Acme Corp', attributes: { tier: ['gold'] }, domains: [{ name: 'acme.test', verified: false }] });
    expect(acmeRep.groups).toEqual([
      {
        id: expect.stringMatching(UUID),
        name: 'engineering',
        path: '/engineering',
        attributes: { floor: ['3'] },
        realmRoles: ['org-admin'],
        clientRoles: { portal: ['viewer'] },
        subGroups: [{ id: expect.stringMatching(UUID), name: 'backend', path: '/engineering/backend', description: 'APIs', attributes: {}, realmRoles: ['auditor'], clientRoles: {}, subGroups: [] }],
      },
      { id: expect.stringMatching(UUID), name: 'sales', path: '/sales', attributes: {}, realmRoles: [], clientRoles: {}, subGroups: [] },
    ]);
    const eng = acmeRep.groups[0] as { id: string; subGroups: { id: string }[] };
    // Members name the organization's groups by the exported ids (by path: /engineering, /engineering/backend).
    expect(acmeRep.members).toEqual([
      { username: 'ann', membershipType: 'UNMANAGED', groups: [eng.id, eng.subGroups[0].id] },
      { username: 'bob', membershipType: 'UNMANAGED' },
    ]);
    // The users' own `groups` list realm groups only, as Keycloak's export.
    expect((first.users as { username: string; groups: string[] }[]).find((u) => u.username === 'ann')!.groups).toEqual(['/engineering']);

    // The export, imported as another realm, exports the same organizations and group memberships (the new ids aside).
    const again = await exportWhole(kind, await importFile(kind, { ...first, realm: `orgs-${kind}-again` }));
    expect(normalise(again.organizations)).toEqual(normalise(first.organizations));
    const groupsOf = (doc: Rep) => (doc.users as { username: string; groups: string[] }[]).map((u) => [u.username, u.groups]);
    expect(groupsOf(again)).toEqual(groupsOf(first));
    expect(again.groups).toEqual(first.groups);
  });

  it('SQLite and PostgreSQL export the same organizations', async () => {
    const docs = await Promise.all((['sqlite', 'postgres'] as const).map(async (kind) => exportWhole(kind, await importFile(kind, realmFile('orgs-both')))));
    expect(normalise(docs[1].organizations)).toEqual(normalise(docs[0].organizations));
  });

  it.each(['sqlite', 'postgres'] as const)('%s, hostile file: a member cannot be put into another organization\'s group, a realm group or an unknown one; nothing is written', async (kind) => {
    const ctx = servers[kind]!.server.context;
    const withMember = (groups: string[], name: string) => {
      const file = realmFile(name) as { organizations: { members: { groups?: string[] }[] }[] };
      file.organizations[1].members[0].groups = groups;
      return file as unknown as Rep;
    };
    // Globex's member names Acme's group id, the realm's group, and a made-up id.
    for (const [i, groups] of [['g-eng'], ['/engineering'], ['00000000-0000-4000-8000-000000000000']].entries()) {
      const name = `orgs-hostile-${kind}-${i}`;
      await expect(importFile(kind, withMember(groups, name))).rejects.toThrow(/realm\.organizations\[1\]\.members\[0\]\.groups\[0\]: .* is not a group of this organization/);
      expect(await ctx.storage.realms.byName(name)).toBeNull();
    }
    // Two groups of one organization with one id.
    const twice = realmFile(`orgs-twice-${kind}`) as { organizations: { groups: { id: string }[] }[] };
    twice.organizations[0].groups[1].id = 'g-eng';
    await expect(importFile(kind, twice as unknown as Rep)).rejects.toThrow(/realm\.organizations\[0\]\.groups\[1\]\.id: "g-eng" is given to two groups/);
    // A non-string id.
    const numeric = realmFile(`orgs-numeric-${kind}`) as { organizations: { groups: { id: unknown }[] }[] };
    numeric.organizations[0].groups[0].id = 7;
    expect(() => parseRealmImport(numeric as unknown as Rep, () => false)).toThrow(/groups\[0\]\.id: must be a string/);
  });

  it.each(['sqlite', 'postgres'] as const)('%s: the partial export leaves organizations out, and a partial import reaches the realm\'s groups only', async (kind) => {
    const ctx = servers[kind]!.server.context;
    const realm = await importFile(kind, realmFile(`orgs-partial-${kind}`));
    const partial = await exportRealm(ctx, realm, { clients: true, groupsAndRoles: true });
    expect(partial.organizations).toBeUndefined();
    expect(partial.organizationsEnabled).toBe(true);
    // The partial export's groups are the realm's: none of the organizations' is listed.
    expect((partial.groups as { name: string; subGroups: unknown[] }[]).map((g) => [g.name, g.subGroups.length])).toEqual([['engineering', 0]]);

    const allowed: PartialImportGuard = { addRole: async () => {}, change: async () => {}, compose: async () => {}, grant: async () => {}, changeAccount: async () => {} };
    // A user naming an organization-only path (`/sales` is Acme's) does not join that group: refused, nothing written.
    await expect(partialImport(ctx, realm, parsePartialImport({ ifResourceExists: 'SKIP', users: [{ username: 'eve', enabled: true, groups: ['/sales'] }] }, realm), allowed)).rejects.toThrow(/group "\/sales" does not exist/);
    expect(await ctx.storage.users.byUsername(realm.id, 'eve')).toBeNull();
    // Overwriting the realm's `engineering` leaves the organizations' groups of that name and their members.
    const [acme] = await ctx.storage.organizations.list(realm.id, { search: 'Acme', exact: true });
    const before = await GroupTree.loadOrganization(ctx.storage, realm.id, acme.id);
    const result = await partialImport(ctx, realm, parsePartialImport({ ifResourceExists: 'OVERWRITE', groups: [{ name: 'engineering', subGroups: [{ name: 'new' }] }] }, realm), allowed);
    expect(result.overwritten).toBe(1);
    const after = await GroupTree.loadOrganization(ctx.storage, realm.id, acme.id);
    expect([...after.byId.keys()].sort()).toEqual([...before.byId.keys()].sort());
    const ann = (await ctx.storage.users.byUsername(realm.id, 'ann'))!;
    expect(await ctx.storage.groups.organizationGroupIds(ann.id, acme.id)).toHaveLength(2);
    // Keycloak's PartialImportRepresentation has no organizations: refused by name.
    expect(() => parsePartialImport({ organizations: [] }, realm)).toThrow(/partialImport\.organizations: unrecognized field/);
  });

  it('`realmgate export` writes the organizations with their groups and members (SQLite)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'realmgate-org-export-'));
    try {
      const ctx = servers.sqlite!.server.context;
      await importFile('sqlite', realmFile('orgs-cli'));
      const file = join(dir, 'orgs-cli.json');
      const cli = spawnSync(process.execPath, ['--import', 'tsx', 'packages/server/src/main.ts', 'export', '--realm', 'orgs-cli', '--file', file, '--db-url', ctx.config.dbUrl, '--providers-dir', ctx.config.providersDir], {
        cwd: REPO_ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? dir, REALMGATE_LOG_LEVEL: 'warn' },
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(cli.status, cli.stderr).toBe(0);
      const exported = JSON.parse(readFileSync(file, 'utf8')) as { organizations: { alias: string; groups: { name: string }[]; members: { username: string; groups?: string[] }[] }[] };
      expect(exported.organizations.map((o) => [o.alias, o.groups.map((g) => g.name), o.members.map((m) => [m.username, m.groups?.length ?? 0])])).toEqual([
        ['acme', ['engineering', 'sales'], [['ann', 2], ['bob', 0]]],
        ['globex', ['engineering'], [['cid', 1]]],
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
