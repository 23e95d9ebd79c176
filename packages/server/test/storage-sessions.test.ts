import { randomUUID } from 'node:crypto';
import { CompiledQuery } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { ClientSession, UserSession } from '../src/model/types.js';
import { isUniqueViolation } from '../src/storage/index.js';
import { databases } from './support/server.js';
import { seedRealm, useStorage } from './support/storage.js';

/**
 * The sessions repository's contract on SQLite and PostgreSQL, without an HTTP server (issue 36): sessions and client
 * sessions as written (millisecond times past 2^31, the offline flag), their lists and pages, what goes with a
 * session, a client, a user and a realm, revoked token ids, and the refresh-token families by Keycloak's reuse rule,
 * concurrent uses included (conditional writes, each database's own locking). refresh-tokens.test.ts (HTTP, SQLite)
 * relies on it for PostgreSQL.
 */
describe.each(databases)('sessions storage on %s', (kind) => {
  const storage = useStorage(kind);

  const session = (realmId: string, userId: string, started: number, offline = false): UserSession => ({ id: randomUUID(), realmId, userId, ipAddress: '127.0.0.1', started, lastRefresh: started, offline });
  const clientSession = (sessionId: string, clientId: string, scope = 'openid'): ClientSession => ({ id: randomUUID(), sessionId, clientId, refreshTokenId: null, scope, started: 4_102_444_800_000 });

  it('keeps sessions as written; lists a user\'s SSO or offline ones, newest first; a page of a client\'s or a realm\'s', async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const [ann, Bob] = [await seed.user('ann'), await seed.user('Bob-Builder')];
    const app = await seed.client('app');
    const old = session(seed.realm.id, ann.id, 1_000);
    const newer = session(seed.realm.id, ann.id, 4_102_444_800_000);
    const offline = session(seed.realm.id, ann.id, 2_000, true);
    const bobs = session(seed.realm.id, Bob.id, 3_000);
    for (const x of [old, newer, offline, bobs]) await s.sessions.create(x);
    await s.sessions.createBrowserSession(session(seed.realm.id, Bob.id, 500), 'cookie-hash');

    expect(await s.sessions.byId(newer.id)).toEqual(newer);
    expect(await s.sessions.byId(offline.id)).toEqual(offline);
    expect(await s.sessions.byId(randomUUID())).toBeNull();
    expect(await s.sessions.browserSession(old.id)).toBeNull();
    expect((await s.sessions.forUser(seed.realm.id, ann.id)).map((x) => x.id)).toEqual([newer.id, old.id]);
    expect((await s.sessions.forUser(seed.realm.id, ann.id, true)).map((x) => x.id)).toEqual([offline.id]);

    for (const x of [old, newer, offline, bobs]) await s.sessions.upsertClientSession(clientSession(x.id, app.id));
    expect((await s.sessions.forClient(app.id, false)).map((x) => x.id)).toEqual([newer.id, bobs.id, old.id]);
    expect((await s.sessions.forClient(app.id, false, { first: 1, max: 1 })).map((x) => x.id)).toEqual([bobs.id]);
    expect((await s.sessions.forClient(app.id, true)).map((x) => x.id)).toEqual([offline.id]);

    const page = await s.sessions.forRealm(seed.realm.id, { first: 0, max: 10 });
    expect(page.map((x) => x.started)).toEqual([4_102_444_800_000, 3_000, 2_000, 1_000, 500]);
    expect((await s.sessions.forRealm(seed.realm.id, { offline: false, first: 1, max: 2 })).map((x) => x.id)).toEqual([bobs.id, old.id]);
    // The username filter ignores case and takes LIKE's wildcards as text.
    expect((await s.sessions.forRealm(seed.realm.id, { username: 'bOB-b', first: 0, max: 10 })).map((x) => x.userId)).toEqual([Bob.id, Bob.id]);
    expect(await s.sessions.forRealm(seed.realm.id, { username: '%', first: 0, max: 10 })).toEqual([]);
    expect(await s.sessions.forRealm(seed.realm.id, { username: '_nn', first: 0, max: 10 })).toEqual([]);

    await s.sessions.touch(old.id, 4_102_444_900_000);
    expect((await s.sessions.byId(old.id))?.lastRefresh).toBe(4_102_444_900_000);
  });

  it('one client session per session and client: a second write updates its token and scope; it goes with its session and its client', async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const ann = await seed.user('ann');
    const [app, other] = [await seed.client('app'), await seed.client('other')];
    const sso = session(seed.realm.id, ann.id, 10);
    await s.sessions.create(sso);
    const first = clientSession(sso.id, app.id);
    await s.sessions.upsertClientSession(first);
    await s.sessions.upsertClientSession({ ...clientSession(sso.id, app.id, 'openid email'), refreshTokenId: 'rt-2' });
    expect(await s.sessions.clientSession(sso.id, app.id)).toEqual({ ...first, refreshTokenId: 'rt-2', scope: 'openid email' });
    await s.sessions.upsertClientSession(clientSession(sso.id, other.id));
    expect((await s.sessions.clientSessionsOf([sso.id])).map((c) => c.clientId).sort()).toEqual([app.id, other.id].sort());
    expect(await s.sessions.clientSessionsOf([])).toEqual([]);

    await s.sessions.deleteClientSession(first.id);
    expect(await s.sessions.clientSession(sso.id, app.id)).toBeNull();
    expect(await s.sessions.byId(sso.id)).not.toBeNull();
    await s.clients.delete(other.id);
    expect(await s.sessions.clientSessionsOf([sso.id])).toEqual([]);

    await s.sessions.upsertClientSession(clientSession(sso.id, app.id));
    await s.sessions.delete(sso.id);
    expect(await s.sessions.clientSession(sso.id, app.id)).toBeNull();
    // A client session of a session that does not exist is refused.
    await expect(s.sessions.upsertClientSession(clientSession(randomUUID(), app.id))).rejects.toThrow();
  });

  it('sessions go with their user (deleteForUser, or the user deleted) and their realm', async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const [ann, ben, cy] = [await seed.user('ann'), await seed.user('ben'), await seed.user('cy')];
    const [a1, a2, b1, c1] = [session(seed.realm.id, ann.id, 1), session(seed.realm.id, ann.id, 2, true), session(seed.realm.id, ben.id, 3), session(seed.realm.id, cy.id, 4)];
    for (const x of [a1, a2, b1, c1]) await s.sessions.create(x);
    await s.sessions.deleteForUser(ann.id);
    expect([await s.sessions.byId(a1.id), await s.sessions.byId(a2.id)]).toEqual([null, null]);
    await s.users.delete(ben.id);
    expect(await s.sessions.byId(b1.id)).toBeNull();
    expect(await s.sessions.byId(c1.id)).toEqual(c1);
    await s.realms.delete(seed.realm.id);
    expect(await s.sessions.byId(c1.id)).toBeNull();
  });

  it('revoked token ids: kept once (a second revocation is no error), purged after their expiry', async () => {
    const s = storage();
    const [jti, later] = [randomUUID(), randomUUID()];
    expect(await s.sessions.isRevoked(jti)).toBe(false);
    await s.sessions.revokeToken(jti, 1_000);
    await s.sessions.revokeToken(jti, 1_000);
    await s.sessions.revokeToken(later, 4_102_444_800_000);
    expect([await s.sessions.isRevoked(jti), await s.sessions.isRevoked(later)]).toEqual([true, true]);
    await s.sessions.purgeExpired(1_001);
    expect([await s.sessions.isRevoked(jti), await s.sessions.isRevoked(later)]).toEqual([false, true]);
  });

  /** A client session to rotate refresh tokens in. */
  async function family() {
    const s = storage();
    const seed = await seedRealm(s);
    const user = await seed.user('rita');
    const app = await seed.client('app');
    const sso = session(seed.realm.id, user.id, 1);
    await s.sessions.create(sso);
    const cs = clientSession(sso.id, app.id);
    await s.sessions.upsertClientSession(cs);
    return { s, cs };
  }

  it("refresh-token families by Keycloak's rule: the used token may be used maxReuse more times, an older one is stale", async () => {
    const { s, cs } = await family();
    const use = (presented: string, next: string, maxReuse: number, reuseId = 'family') => s.sessions.useRefreshToken(cs.id, reuseId, presented, next, maxReuse);
    // maxReuse 0: one use of each token, the one issued last next.
    expect(await use('rt1', 'rt2', 0)).toBe('ok');
    expect(await use('rt1', 'rt2b', 0)).toBe('reuse_exceeded');
    expect(await use('rt2', 'rt3', 0)).toBe('ok');
    expect(await use('rt1', 'rt4', 0)).toBe('stale');
    expect(await use('rt3', 'rt4', 0)).toBe('ok');
    // Another family of the same client session is counted on its own.
    expect(await use('tab-b1', 'tab-b2', 0, 'other-tab')).toBe('ok');
    expect(await use('rt4', 'rt5', 0)).toBe('ok');
    // maxReuse 2: the token used last works two more times.
    expect(await use('rt5', 'x1', 2)).toBe('ok');
    expect(await use('rt5', 'x2', 2)).toBe('ok');
    expect(await use('rt5', 'x3', 2)).toBe('ok');
    expect(await use('rt5', 'x4', 2)).toBe('reuse_exceeded');
  });

  it('of ten concurrent first uses of a token one succeeds, and of ten concurrent uses of the next one; none after the client session went', async () => {
    const { s, cs } = await family();
    const tenAtOnce = (presented: string) => Promise.all(Array.from({ length: 10 }, (_, i) => s.sessions.useRefreshToken(cs.id, 'family', presented, `${presented}-next-${i}`, 0)));
    const first = await tenAtOnce('rt1');
    expect(first.filter((r) => r === 'ok')).toHaveLength(1);
    expect(first.filter((r) => r !== 'ok' && r !== 'reuse_exceeded')).toEqual([]);
    const issued = `rt1-next-${first.indexOf('ok')}`;
    const second = await tenAtOnce(issued);
    expect(second.filter((r) => r === 'ok')).toHaveLength(1);
    expect(second.filter((r) => r !== 'ok' && r !== 'reuse_exceeded')).toEqual([]);

    // The client session ended (a refused reuse detaches it): a family's first use answers reuse_exceeded, no error.
    const { s: s2, cs: gone } = await family();
    await s2.sessions.deleteClientSession(gone.id);
    expect(await s2.sessions.useRefreshToken(gone.id, 'family', 'rt1', 'rt2', 0)).toBe('reuse_exceeded');
  });

  it('a session id is one session', async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const ann = await seed.user('ann');
    const x = session(seed.realm.id, ann.id, 1);
    await s.sessions.create(x);
    const again = await s.sessions.create({ ...x, started: 2 }).then(() => null, (e: unknown) => e);
    expect(isUniqueViolation(again)).toBe(true);
  });

  it("the broker indexes hold brokered sessions only, and byBroker's queries still take them", async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const ann = await seed.user('ann');
    const plain = session(seed.realm.id, ann.id, 1);
    const brokered = { ...session(seed.realm.id, ann.id, 2), brokerSessionId: 'up.sid-1', brokerUserId: 'up.sub-1' };
    for (const x of [plain, brokered]) await s.sessions.create(x);
    expect((await s.sessions.byBroker(seed.realm.id, { sessionId: 'up.sid-1' })).map((x) => x.id)).toEqual([brokered.id]);
    expect((await s.sessions.byBroker(seed.realm.id, { userId: 'up.sub-1' })).map((x) => x.id)).toEqual([brokered.id]);

    for (const [index, by] of [['user_session_broker_session', { sessionId: 'up.sid-1' }], ['user_session_broker_user', { userId: 'up.sub-1' }]] as const) {
      const query = s.sessions.byBrokerQuery(seed.realm.id, by).compile();
      if (kind === 'sqlite') {
        const definition = await s.db.executeQuery<{ sql: string }>(CompiledQuery.raw('select sql from sqlite_master where name = ?', [index]));
        expect(definition.rows[0]?.sql.toLowerCase()).toMatch(/ where .* is not null$/);
        const plan = await s.db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]));
        expect(plan.rows.map((r) => r.detail).join('\n')).toContain(`USING INDEX ${index} `);
      } else {
        const definition = await s.db.executeQuery<{ indexdef: string }>(CompiledQuery.raw('select indexdef from pg_indexes where indexname = $1', [index]));
        expect(definition.rows[0]?.indexdef).toMatch(/ WHERE \(.* IS NOT NULL\)$/);
        // A table this small is read whole unless sequential scans are priced out, so only an index this query can
        // use shows up in the plan.
        const plan = await s.db.transaction().execute(async (trx) => {
          await trx.executeQuery(CompiledQuery.raw('set local enable_seqscan = off'));
          return trx.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`explain ${query.sql}`, [...query.parameters]));
        });
        expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).toContain(`using ${index} on user_session`);
      }
    }
  });
});
