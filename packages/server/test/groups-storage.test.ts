import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { defaultRealm } from '../src/model/defaults.js';
import type { Group, User } from '../src/model/types.js';
import { databases } from './support/server.js';
import { withStorage } from './support/storage.js';

/** The one query that finds a user's roles through groups (every token runs it): its result, its end, its plan. */
describe.each(databases)('group role resolution on %s', (kind) => {
  it('one query: direct roles, the groups\' and every ancestor\'s; ends on a (corrupted) cycle; indexes serve it', async () => {
    await withStorage(kind, async (storage) => {
      const realmId = randomUUID();
      await storage.realms.insert(defaultRealm(realmId, 'g', Date.now()));
      const role = async (name: string) => {
        const id = randomUUID();
        await storage.roles.insert({ id, realmId, containerId: realmId, clientRole: false, name, description: null });
        return id;
      };
      const group = async (name: string, parentId: string | null): Promise<Group> => {
        const g: Group = { id: randomUUID(), realmId, parentId, name, description: null, attributes: {} };
        await storage.groups.insert(g);
        return g;
      };
      const user: User = {
        id: randomUUID(), realmId, username: 'u', email: null, emailVerified: false, firstName: null, lastName: null,
        enabled: true, createdTimestamp: 0, attributes: {}, serviceAccountClientId: null, passwordHash: null, passwordCreated: null,
      };
      await storage.users.insert(user);
      const [own, top, mid, leaf, other] = [await role('own'), await role('top'), await role('mid'), await role('leaf'), await role('other')];
      const gTop = await group('top', null);
      const gMid = await group('mid', gTop.id);
      const gLeaf = await group('leaf', gMid.id);
      const gOther = await group('other', null);
      await storage.roles.grant(user.id, [own]);
      await storage.groups.grant(gTop.id, [top]);
      await storage.groups.grant(gMid.id, [mid]);
      await storage.groups.grant(gLeaf.id, [leaf]);
      await storage.groups.grant(gOther.id, [other]);
      await storage.groups.join(user.id, [gLeaf.id]);
      expect((await storage.groups.userRoleIdsWithGroups(user.id)).sort()).toEqual([own, top, mid, leaf].sort());

      // A cycle the API refuses to make, written straight into the table: the walk still ends.
      await storage.groups.update({ ...gTop, parentId: gLeaf.id });
      expect((await storage.groups.userRoleIdsWithGroups(user.id)).sort()).toEqual([own, top, mid, leaf].sort());

      // hasMembers and roleIds read every id they are given, in batches: a member of the 1,200th group counts.
      const many: Group[] = Array.from({ length: 1_200 }, (_, i) => ({ id: randomUUID(), realmId, parentId: gOther.id, name: `many-${i}`, description: null, attributes: {} }));
      await storage.transaction(async (trx) => {
        for (const g of many) await storage.groups.insert(g, trx);
      });
      const ids = many.map((g) => g.id);
      expect(await storage.groups.hasMembers(ids)).toBe(false);
      await storage.groups.join(user.id, [ids[1_199]]);
      await storage.groups.grant(ids[1_199], [other]);
      expect(await storage.groups.hasMembers(ids)).toBe(true);
      expect(await storage.groups.roleIds(ids)).toEqual([other]);

      const plan = await storage.transaction(async (trx) => {
        // PostgreSQL would rightly scan near-empty tables; asked not to, it shows whether an index serves each step.
        if (kind === 'postgres') await sql`set local enable_seqscan = off`.execute(trx);
        const { rows } = await sql`${sql.raw(kind === 'sqlite' ? 'explain query plan' : 'explain')} ${storage.groups.userRoleIdsQuery(user.id)}`.execute(trx);
        return JSON.stringify(rows);
      });
      // Every table is reached through its primary key or an index, none read whole.
      if (kind === 'sqlite') {
        expect(plan).not.toMatch(/SCAN (user_group|ug|group_role|realm_group|rg|user_role)\b(?! USING)/);
        // The user's groups (ug), each checked to be a realm group (rg: not an organization's) by its primary key.
        expect(plan).toMatch(/SEARCH (ug|user_group) USING (COVERING )?INDEX/);
        expect(plan).toMatch(/SEARCH rg USING (COVERING )?INDEX/);
        expect(plan).toMatch(/SEARCH (gr|group_role) USING (COVERING )?INDEX/);
      } else {
        expect(plan).not.toMatch(/Seq Scan/);
      }
    });
  });
});
