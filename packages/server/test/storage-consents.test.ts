import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isUniqueViolation } from '../src/storage/index.js';
import { databases } from './support/server.js';
import { seedRealm, useStorage } from './support/storage.js';

/**
 * The consents repository's contract on SQLite and PostgreSQL, without an HTTP server (issue 36): what is kept (scope
 * names, millisecond dates past 2^31, none), order, one consent per user and client, revocation, and that a consent
 * goes with its user, its client and its realm. user-consents.test.ts (HTTP, SQLite) relies on it for PostgreSQL.
 */
describe.each(databases)('consents storage on %s', (kind) => {
  const storage = useStorage(kind);

  it('keeps granted scopes and dates as written, lists each user\'s by client, one per user and client', async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const [ann, ben, nobody] = [await seed.user('ann'), await seed.user('ben'), await seed.user('nobody')];
    const [c1, c2] = [await seed.client('app-one'), await seed.client('app-two')];
    const [first, second] = [c1, c2].sort((a, b) => (a.id < b.id ? -1 : 1));
    // Dates beyond 32 bits (milliseconds), a consent without dates, scopes with unicode and none.
    await s.consents.insert(seed.realm.id, { userId: ann.id, clientId: second.id, grantedClientScopes: ['profile', 'émail'], createdDate: 1_732_000_000_123, lastUpdatedDate: 4_102_444_800_000 });
    await s.consents.insert(seed.realm.id, { userId: ann.id, clientId: first.id, grantedClientScopes: [], createdDate: null, lastUpdatedDate: null });
    await s.consents.insert(seed.realm.id, { userId: ben.id, clientId: first.id, grantedClientScopes: ['openid'], createdDate: 1, lastUpdatedDate: 2 });

    const byUser = await s.consents.ofUsers([ann.id, ben.id, nobody.id]);
    expect([...byUser.keys()].sort()).toEqual([ann.id, ben.id].sort());
    expect(byUser.get(ann.id)).toEqual([
      { userId: ann.id, clientId: first.id, grantedClientScopes: [], createdDate: null, lastUpdatedDate: null },
      { userId: ann.id, clientId: second.id, grantedClientScopes: ['profile', 'émail'], createdDate: 1_732_000_000_123, lastUpdatedDate: 4_102_444_800_000 },
    ]);
    expect(byUser.get(ben.id)).toEqual([{ userId: ben.id, clientId: first.id, grantedClientScopes: ['openid'], createdDate: 1, lastUpdatedDate: 2 }]);
    expect(typeof byUser.get(ann.id)![1].createdDate).toBe('number');
    expect(await s.consents.ofUsers([])).toEqual(new Map());

    const again = await s.consents.insert(seed.realm.id, { userId: ben.id, clientId: first.id, grantedClientScopes: [], createdDate: null, lastUpdatedDate: null }).then(() => null, (e: unknown) => e);
    expect(isUniqueViolation(again)).toBe(true);
  });

  it('reads the consents of more than 500 users at once (batched)', async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const client = await seed.client('batch');
    const ids: string[] = [];
    await s.transaction(async (trx) => {
      for (let i = 0; i < 620; i++) {
        const user = { id: randomUUID(), realmId: seed.realm.id, username: `u${i}`, email: null, emailVerified: false, firstName: null, lastName: null, enabled: true, createdTimestamp: 0, attributes: {}, serviceAccountClientId: null, passwordHash: null, passwordCreated: null };
        await s.users.insert(user, trx);
        await s.consents.insert(seed.realm.id, { userId: user.id, clientId: client.id, grantedClientScopes: [`s${i}`], createdDate: i, lastUpdatedDate: i }, trx);
        ids.push(user.id);
      }
    });
    const byUser = await s.consents.ofUsers(ids);
    expect(byUser.size).toBe(620);
    expect(byUser.get(ids[619])).toEqual([{ userId: ids[619], clientId: client.id, grantedClientScopes: ['s619'], createdDate: 619, lastUpdatedDate: 619 }]);
  });

  it('revokes one (true once, then false); a consent goes with its user, its client and its realm', async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const [ann, ben] = [await seed.user('ann'), await seed.user('ben')];
    const [c1, c2] = [await seed.client('one'), await seed.client('two')];
    for (const u of [ann, ben]) for (const c of [c1, c2]) await s.consents.insert(seed.realm.id, { userId: u.id, clientId: c.id, grantedClientScopes: ['x'], createdDate: 5, lastUpdatedDate: 6 });
    expect(await s.consents.delete(ann.id, c1.id)).toBe(true);
    expect(await s.consents.delete(ann.id, c1.id)).toBe(false);
    expect((await s.consents.ofUsers([ann.id])).get(ann.id)?.map((c) => c.clientId)).toEqual([c2.id]);
    await s.clients.delete(c2.id);
    expect((await s.consents.ofUsers([ann.id])).get(ann.id)).toBeUndefined();
    expect((await s.consents.ofUsers([ben.id])).get(ben.id)?.map((c) => c.clientId)).toEqual([c1.id]);
    await s.users.delete(ben.id);
    expect((await s.consents.ofUsers([ben.id])).size).toBe(0);

    const other = await seedRealm(s);
    const [u, c] = [await other.user('u'), await other.client('c')];
    await s.consents.insert(other.realm.id, { userId: u.id, clientId: c.id, grantedClientScopes: [], createdDate: null, lastUpdatedDate: null });
    await s.realms.delete(other.realm.id);
    expect((await s.consents.ofUsers([u.id])).size).toBe(0);
  });
});
