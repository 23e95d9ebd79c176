import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { defaultRealm } from '../src/model/defaults.js';
import type { User } from '../src/model/types.js';
import { databases } from './support/server.js';
import { withStorage } from './support/storage.js';

describe.each(databases)('UserRepository.insertMany on %s', (kind) => {
  it('inserts more rows than one statement holds, in one transaction, each readable as inserted', async () => {
    await withStorage(kind, async (storage) => {
      await storage.realms.insert(defaultRealm(randomUUID(), 'bulk', Date.now()));
      const realm = (await storage.realms.byName('bulk'))!;
      const users: User[] = Array.from({ length: 2_345 }, (_, i): User => ({
        id: randomUUID(),
        realmId: realm.id,
        username: `user-${i}`,
        email: `user-${i}@example.test`,
        emailVerified: i % 2 === 0,
        firstName: i === 7 ? 'Seven' : null,
        lastName: null,
        enabled: true,
        createdTimestamp: 1_700_000_000_000 + i,
        attributes: i === 7 ? { team: ['blue'] } : {},
        serviceAccountClientId: null,
        passwordHash: 'precomputed-hash',
        passwordCreated: 1_700_000_000_000,
        passwordLabel: i === 7 ? 'My password' : null,
        passwordCredentialId: null,
      }));
      await storage.transaction((trx) => storage.users.insertMany(users, trx));
      expect(await storage.users.count(realm.id, {})).toBe(2_345);
      expect(await storage.users.byUsername(realm.id, 'user-7')).toEqual(users[7]);
      expect(await storage.users.byEmail(realm.id, 'user-2344@example.test')).toEqual(users[2344]);
      await storage.users.insertMany([]);
    });
  });

  it('inserts nothing of a batch whose transaction fails', async () => {
    await withStorage(kind, async (storage) => {
      await storage.realms.insert(defaultRealm(randomUUID(), 'bulk', Date.now()));
      const realm = (await storage.realms.byName('bulk'))!;
      const user = (i: number): User => ({
        id: randomUUID(), realmId: realm.id, username: `dup-${i % 1500}`, email: null, emailVerified: false, firstName: null, lastName: null,
        enabled: true, createdTimestamp: 0, attributes: {}, serviceAccountClientId: null, passwordHash: null, passwordCreated: null,
      });
      // Rows 1500.. repeat usernames of the first statement: the second statement fails, the first is rolled back.
      await expect(storage.transaction((trx) => storage.users.insertMany(Array.from({ length: 1_600 }, (_, i) => user(i)), trx))).rejects.toThrow();
      expect(await storage.users.count(realm.id, {})).toBe(0);
    });
  });

  it("finds a client's service-account user through an index (migration 0007)", async () => {
    await withStorage(kind, async (storage) => {
      const plan = await storage.transaction(async (trx) => {
        // PostgreSQL would rightly scan an empty table; asked not to, it shows whether an index exists.
        if (kind === 'postgres') await sql`set local enable_seqscan = off`.execute(trx);
        const query = trx.selectFrom('user_entity').selectAll().where('service_account_client_id', '=', 'some-client').compile();
        const { rows } = await sql.raw(`${kind === 'sqlite' ? 'explain query plan' : 'explain'} ${query.sql.replace('?', "'some-client'").replace('$1', "'some-client'")}`).execute(trx);
        return JSON.stringify(rows);
      });
      expect(plan).toContain('user_service_account');
    });
  });

  it('stores usernames and e-mail addresses lower-case, so an exact search compares the indexed column', async () => {
    await withStorage(kind, async (storage) => {
      await storage.realms.insert(defaultRealm(randomUUID(), 'bulk', Date.now()));
      const realm = (await storage.realms.byName('bulk'))!;
      const user: User = {
        id: randomUUID(), realmId: realm.id, username: 'Mixed.Case', email: 'Mixed.Case@Example.TEST', emailVerified: false, firstName: 'Ann', lastName: null,
        enabled: true, createdTimestamp: 0, attributes: {}, serviceAccountClientId: null, passwordHash: null, passwordCreated: null,
      };
      await storage.users.insert(user);
      await storage.users.update({ ...user, email: 'Other.Case@Example.TEST' });
      const stored = (await storage.users.byId(realm.id, user.id))!;
      expect([stored.username, stored.email]).toEqual(['mixed.case', 'other.case@example.test']);
      expect((await storage.users.search(realm.id, { email: 'OTHER.case@example.test', exact: true })).map((u) => u.id)).toEqual([user.id]);
      expect((await storage.users.search(realm.id, { username: 'MIXED.CASE', exact: true })).map((u) => u.id)).toEqual([user.id]);
      expect((await storage.users.search(realm.id, { firstName: 'ANN', exact: true })).map((u) => u.id)).toEqual([user.id]);
      // Enough rows, analysed, for PostgreSQL's planner to choose between its indexes as it would in use.
      const others = Array.from({ length: 2_000 }, (_, i): User => ({ ...user, id: randomUUID(), username: `other-${i}`, email: `other-${i}@example.test` }));
      await storage.transaction((trx) => storage.users.insertMany(others, trx));
      if (kind === 'postgres') await sql`analyze user_entity`.execute(storage.db);
      for (const field of ['username', 'email'] as const) {
        const plan = await storage.transaction(async (trx) => {
          if (kind === 'postgres') await sql`set local enable_seqscan = off`.execute(trx);
          const query = storage.users.searchQuery(realm.id, { [field]: 'Someone', exact: true }).compile();
          let text = query.sql;
          query.parameters.forEach((value, i) => {
            text = text.replace(kind === 'sqlite' ? '?' : new RegExp(`\\$${i + 1}\\b`), typeof value === 'string' ? `'${value}'` : String(value));
          });
          const { rows } = await sql.raw(`${kind === 'sqlite' ? 'explain query plan' : 'explain'} ${text}`).execute(trx);
          return JSON.stringify(rows);
        });
        // The (realm_id, username) and (realm_id, email) indexes serve both columns, not realm_id alone and a filter on lower().
        expect(plan).not.toMatch(/lower\(/i);
        expect(plan).toMatch(new RegExp(kind === 'sqlite' ? `INDEX [^"]*\\(realm_id=\\? AND ${field}=\\?\\)` : `Index Cond: \\(\\(realm_id = [^)]*\\) AND \\(${field} = `));
      }
      // Keycloak's `search` in its prefix and exact forms: every one of the four fields from an index (migration
      // 0013), never a scan of the realm's users; the substring form (*value*) scans, as Keycloak's own does.
      for (const search of ['other-4', '"other-42"']) {
        const plan = await storage.transaction(async (trx) => {
          if (kind === 'postgres') await sql`set local enable_seqscan = off`.execute(trx);
          const query = storage.users.searchQuery(realm.id, { search }).compile();
          let text = query.sql;
          query.parameters.forEach((value, i) => {
            text = text.replace(kind === 'sqlite' ? '?' : new RegExp(`\\$${i + 1}\\b`), typeof value === 'string' ? `'${value}'` : String(value));
          });
          const { rows } = await sql.raw(`${kind === 'sqlite' ? 'explain query plan' : 'explain'} ${text}`).execute(trx);
          return JSON.stringify(rows);
        });
        if (kind === 'sqlite') {
          expect(plan, search).toContain('MULTI-INDEX OR');
          expect(plan, search).not.toMatch(/SCAN user_entity(?! USING)/);
        } else {
          expect(plan, search).toContain('BitmapOr');
          expect(plan, search).not.toContain('Seq Scan');
        }
        for (const index of kind === 'sqlite' ? ['user_search_first_name', 'user_search_last_name'] : ['user_search_username', 'user_search_email', 'user_search_first_name', 'user_search_last_name']) {
          expect(plan, search).toContain(index);
        }
      }
      const found = async (search: string) => (await storage.users.search(realm.id, { search, max: 1000 })).map((u) => u.username).sort();
      expect(await found('other-199')).toEqual(['other-199', 'other-1990', 'other-1991', 'other-1992', 'other-1993', 'other-1994', 'other-1995', 'other-1996', 'other-1997', 'other-1998', 'other-1999']);
      expect(await found('"OTHER-199"')).toEqual(['other-199']);
      expect(await storage.users.count(realm.id, { search: 'ann' })).toBe(2_001); // the first name of every one
      expect(await found('*her-1999*')).toEqual(['other-1999']);
      expect(await found('other_1')).toEqual([]); // _ is not a wildcard
    });
  });
});
