import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Group } from '../src/model/types.js';
import { isUniqueViolation } from '../src/storage/index.js';
import { databases } from './support/server.js';
import { seedRealm, useStorage } from './support/storage.js';

/**
 * The groups repository's contract on SQLite and PostgreSQL, without an HTTP server (issue 36): the tree, sibling
 * names, attributes, role mappings, members, default groups, and what goes when a group, a role or a user goes. The
 * HTTP files (groups.test.ts, user-attribute-groups.test.ts, groups-permissions.test.ts) run on SQLite and rely on this
 * file for PostgreSQL; groups-storage.test.ts covers the token's role query and its plan.
 */
describe.each(databases)('groups storage on %s', (kind) => {
  const storage = useStorage(kind);

  const newGroup = (realmId: string, name: string, parentId: string | null = null, attributes: Record<string, string[]> = {}): Group => ({
    id: randomUUID(), realmId, parentId, name, description: null, attributes,
  });

  it('keeps the tree: parents, names in order, description and attributes (unicode, many values) as written', async () => {
    const s = storage();
    const { realm } = await seedRealm(s);
    const top = newGroup(realm.id, 'zeta', null, { colour: ['grün', '紫'], empty: [], many: Array.from({ length: 50 }, (_, i) => `v${i}`) });
    const child = { ...newGroup(realm.id, 'child', top.id), description: 'a “sub” group' };
    const alpha = newGroup(realm.id, 'alpha');
    for (const g of [top, child, alpha]) await s.groups.insert(g);

    expect(await s.groups.byId(realm.id, top.id)).toEqual(top);
    expect(await s.groups.byId(realm.id, child.id)).toEqual(child);
    // Ordered by name (lower case only: mixed case would depend on the PostgreSQL database's collation).
    expect((await s.groups.tree(realm.id)).map((g) => g.name)).toEqual(['alpha', 'child', 'zeta']);
    // Another realm's id finds nothing.
    const other = await seedRealm(s);
    expect(await s.groups.byId(other.realm.id, top.id)).toBeNull();
    expect(await s.groups.tree(other.realm.id)).toEqual([]);

    // Update: name, description, attributes and parent (moved to the top level and back under another).
    await s.groups.update({ ...child, name: 'moved', parentId: null, attributes: { k: ['v'] }, description: null });
    expect(await s.groups.byId(realm.id, child.id)).toEqual({ ...child, name: 'moved', parentId: null, attributes: { k: ['v'] }, description: null });
    await s.groups.update({ ...child, parentId: alpha.id });
    expect((await s.groups.byId(realm.id, child.id))?.parentId).toBe(alpha.id);
  });

  it('refuses a second sibling of one name, at the top level and under a parent, as a unique violation; allows it elsewhere', async () => {
    const s = storage();
    const { realm } = await seedRealm(s);
    const a = newGroup(realm.id, 'same');
    const b = newGroup(realm.id, 'other');
    await s.groups.insert(a);
    await s.groups.insert(b);
    const topAgain = await s.groups.insert(newGroup(realm.id, 'same')).then(() => null, (e: unknown) => e);
    expect(isUniqueViolation(topAgain)).toBe(true);
    await s.groups.insert(newGroup(realm.id, 'same', a.id));
    await s.groups.insert(newGroup(realm.id, 'same', b.id));
    const underAgain = await s.groups.insert(newGroup(realm.id, 'same', a.id)).then(() => null, (e: unknown) => e);
    expect(isUniqueViolation(underAgain)).toBe(true);
    // Renaming onto a sibling's name is refused too.
    const renamed = await s.groups.update({ ...b, name: 'same' }).then(() => null, (e: unknown) => e);
    expect(isUniqueViolation(renamed)).toBe(true);
    // Another realm may have the same name; a failed insert inside a transaction leaves nothing behind.
    const other = await seedRealm(s);
    await s.groups.insert(newGroup(other.realm.id, 'same'));
    const fresh = newGroup(realm.id, 'fresh');
    await expect(
      s.transaction(async (trx) => {
        await s.groups.insert(fresh, trx);
        await s.groups.insert(newGroup(realm.id, 'same'), trx);
      }),
    ).rejects.toSatisfy(isUniqueViolation);
    expect(await s.groups.byId(realm.id, fresh.id)).toBeNull();
  });

  it('role mappings: grant twice is once, revoke, roles mapped with their names, groups of a role in pages', async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const [r1, r2] = [await seed.role('r-one'), await seed.role('r-two')];
    const groups = ['g-c', 'g-a', 'g-b'].map((n) => newGroup(seed.realm.id, n));
    for (const g of groups) await s.groups.insert(g);
    await s.groups.grant(groups[0].id, [r1.id, r1.id, r2.id]);
    await s.groups.grant(groups[0].id, [r1.id]);
    await s.groups.grant(groups[1].id, [r1.id]);
    await s.groups.grant(groups[2].id, [r1.id]);
    await s.groups.grant(groups[2].id, []);
    expect((await s.groups.roleIds([groups[0].id])).sort()).toEqual([r1.id, r2.id].sort());
    expect(await s.groups.mappedRoles([groups[0].id])).toEqual([
      { group_id: groups[0].id, name: 'r-one', client_role: expect.anything(), container_id: seed.realm.id },
      { group_id: groups[0].id, name: 'r-two', client_role: expect.anything(), container_id: seed.realm.id },
    ]);
    expect((await s.groups.mappedRoles([groups[0].id])).map((r) => Number(r.client_role))).toEqual([0, 0]);
    expect((await s.groups.withRole(seed.realm.id, r1.id, 0, 10)).map((g) => g.name)).toEqual(['g-a', 'g-b', 'g-c']);
    expect((await s.groups.withRole(seed.realm.id, r1.id, 1, 1)).map((g) => g.name)).toEqual(['g-b']);
    await s.groups.revoke(groups[0].id, [r1.id]);
    await s.groups.revoke(groups[0].id, []);
    expect(await s.groups.roleIds([groups[0].id])).toEqual([r2.id]);
    // A role deleted takes its mappings with it (foreign key, on both).
    await s.roles.delete(r2.id);
    expect(await s.groups.roleIds([groups[0].id])).toEqual([]);
  });

  it('members: join twice is once, pages by username, leave; a user deleted leaves every group', async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const g = newGroup(seed.realm.id, 'members');
    const h = newGroup(seed.realm.id, 'others');
    await s.groups.insert(g);
    await s.groups.insert(h);
    const users = [await seed.user('carol'), await seed.user('alice'), await seed.user('bob')];
    for (const u of users) await s.groups.join(u.id, [g.id, g.id]);
    await s.groups.join(users[0].id, [g.id, h.id]);
    await s.groups.join(users[0].id, []);
    expect((await s.groups.members(g.id, 0, 10)).map((u) => u.username)).toEqual(['alice', 'bob', 'carol']);
    expect((await s.groups.members(g.id, 1, 1)).map((u) => u.username)).toEqual(['bob']);
    expect((await s.groups.userGroupIds(users[0].id)).sort()).toEqual([g.id, h.id].sort());
    expect(await s.groups.hasMembers([h.id])).toBe(true);
    await s.groups.leave(users[0].id, h.id);
    expect(await s.groups.hasMembers([h.id])).toBe(false);
    expect(await s.groups.userGroupIds(users[0].id)).toEqual([g.id]);
    await s.users.delete(users[0].id);
    expect((await s.groups.members(g.id, 0, 10)).map((u) => u.username)).toEqual(['alice', 'bob']);
  });

  it('default groups: added twice is once, removed; deleting groups takes their memberships, mappings and default entries', async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const role = await seed.role('mapped');
    const user = await seed.user('member');
    const parent = newGroup(seed.realm.id, 'parent');
    const child = newGroup(seed.realm.id, 'child', parent.id);
    const kept = newGroup(seed.realm.id, 'kept');
    for (const g of [parent, child, kept]) await s.groups.insert(g);
    await s.groups.addDefault(seed.realm.id, child.id);
    await s.groups.addDefault(seed.realm.id, child.id);
    await s.groups.addDefault(seed.realm.id, kept.id);
    expect((await s.groups.defaultGroupIds(seed.realm.id)).sort()).toEqual([child.id, kept.id].sort());
    await s.groups.removeDefault(seed.realm.id, kept.id);
    expect(await s.groups.defaultGroupIds(seed.realm.id)).toEqual([child.id]);

    await s.groups.join(user.id, [child.id, kept.id]);
    await s.groups.grant(child.id, [role.id]);
    await s.groups.deleteMany([parent.id, child.id]);
    expect((await s.groups.tree(seed.realm.id)).map((g) => g.name)).toEqual(['kept']);
    expect(await s.groups.defaultGroupIds(seed.realm.id)).toEqual([]);
    expect(await s.groups.userGroupIds(user.id)).toEqual([kept.id]);
    expect(await s.groups.roleIds([child.id])).toEqual([]);
    expect(await s.groups.withRole(seed.realm.id, role.id, 0, 10)).toEqual([]);
  });

  it('lockTree inside a transaction, and a realm deleted takes its groups with it', async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const g = newGroup(seed.realm.id, 'locked');
    await s.transaction(async (trx) => {
      await s.groups.lockTree(seed.realm.id, trx);
      await s.groups.insert(g, trx);
    });
    expect(await s.groups.byId(seed.realm.id, g.id)).toEqual(g);
    await s.realms.delete(seed.realm.id);
    expect(await s.groups.tree(seed.realm.id)).toEqual([]);
  });
});
