import { generateKeyPairSync } from 'node:crypto';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import { SignJWT, importJWK } from 'jose';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProviderFactory } from '@realmgate/spi';
import { signJws } from '../src/protocol/openid-connect/tokens.js';
import { providerContext } from '../src/providers/context.js';
import { openDatabase } from '../src/storage/db.js';
import { ConfigCache, inBackground } from '../src/storage/index.js';
import { STATEMENT_CACHE_SIZE } from '../src/storage/sqlite-driver.js';
import { databases, redisUrl, startServer, tokenRequest, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

/** Polls `check` until it holds or `ms` passed; returns whether it held. */
async function within(ms: number, check: () => Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + ms;
  do {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  } while (Date.now() < deadline);
  return check();
}

/**
 * A warm password grant's statements, the two inserts of the sessions: the user, its credentials' types and its
 * required actions come from the cache once read (ten statements before flows were cached and the snapshot lazy,
 * five before users were cached).
 */
const QUERIES_PER_PASSWORD_GRANT = 2;

async function admin(url: string): Promise<KcAdminClient> {
  const client = await masterAdminClient(url);
  return client;
}

describe('configuration cache across two processes (one PostgreSQL database, one Redis)', () => {
  let a: TestServer;
  let b: TestServer;
  let kcA: KcAdminClient;
  let clientUuid: string;
  let secret: string;
  const grant = (t: TestServer, clientSecret: string) =>
    tokenRequest(t.url, 'cached', { grant_type: 'client_credentials', client_id: 'service', client_secret: clientSecret });

  beforeAll(async () => {
    const shared = { REALMGATE_REDIS_URL: redisUrl };
    a = await startServer({ database: 'postgres', config: shared });
    b = await startServer({ config: { ...shared, REALMGATE_DB_URL: a.server.context.config.dbUrl } });
    kcA = await admin(a.url);
    await kcA.realms.create({ realm: 'cached', enabled: true });
    kcA.setConfig({ realmName: 'cached' });
    ({ id: clientUuid } = await kcA.clients.create({ clientId: 'service', publicClient: false, serviceAccountsEnabled: true, standardFlowEnabled: false }));
    secret = (await kcA.clients.getClientSecret({ id: clientUuid })).value!;
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('answers node B from memory, and refuses the old secret on B within a second of its rotation on A', async () => {
    // B is subscribed to invalidations before it trusts its memory.
    expect(await within(5000, async () => !b.server.context.storage.cache.bypass)).toBe(true);
    expect((await grant(b, secret)).status).toBe(200);
    const before = b.server.context.storage.cache.snapshot().hits;
    expect((await grant(b, secret)).status).toBe(200);
    expect(b.server.context.storage.cache.snapshot().hits).toBeGreaterThan(before);

    const rotated = (await kcA.clients.generateNewClientSecret({ id: clientUuid })).value!;
    expect(rotated).not.toBe(secret);
    expect(await within(1000, async () => (await grant(b, secret)).status === 401)).toBe(true);
    const refused = await grant(b, secret);
    expect(refused.body.error).toBe('unauthorized_client');
    expect((await grant(b, rotated)).status).toBe(200);
    secret = rotated;
  });

  it('refuses a client disabled on A on node B within a second', async () => {
    expect((await grant(b, secret)).status).toBe(200);
    await kcA.clients.update({ id: clientUuid }, { clientId: 'service', enabled: false, publicClient: false, serviceAccountsEnabled: true, standardFlowEnabled: false });
    expect(await within(1000, async () => (await grant(b, secret)).status === 401)).toBe(true);
    expect((await grant(b, secret)).body.error_description).toBe('Client disabled');
    expect((await grant(a, secret)).body.error_description).toBe('Client disabled');
  });

  it("refuses a user's old password, then the user given a required action, on node B within a second of the change on A", async () => {
    const { id: userId } = await kcA.users.create({ username: 'carol', enabled: true, credentials: [{ type: 'password', value: 'carol-password-1', temporary: false }] });
    await kcA.clients.create({ clientId: 'app', publicClient: true, directAccessGrantsEnabled: true, standardFlowEnabled: false });
    const login = (t: TestServer, password: string) => tokenRequest(t.url, 'cached', { grant_type: 'password', client_id: 'app', username: 'Carol', password });
    expect((await login(b, 'carol-password-1')).status).toBe(200);
    // The user, its credentials' types and its required actions come from B's memory: only the two session inserts.
    // Counted on a login during which B trusted its memory throughout and dropped nothing: a Redis hiccup on a loaded
    // machine sends B to the database until its subscription is back, then drops all it held (both by design), and a
    // count taken across that said 17 (a CI run, 2026-11-28). Such a login is taken again (a warm one first).
    // queryCount leaves out background workers' statements (the back-channel logout worker polls each second: a CI
    // run on 2026-11-29 counted 3 when that was not so). Whatever else may fall inside one login now and then, a
    // login's own count is the least of three; a statement added to every login raises that too, so this still fails.
    const cache = b.server.context.storage.cache;
    const counts: number[] = [];
    expect(
      await within(20_000, async () => {
        const dropped = cache.snapshot().invalidations;
        expect((await login(b, 'carol-password-1')).status).toBe(200);
        const before = b.server.context.storage.queryCount;
        expect((await login(b, 'carol-password-1')).status).toBe(200);
        if (cache.bypass || cache.snapshot().invalidations !== dropped) return false;
        counts.push(b.server.context.storage.queryCount - before);
        return counts.length === 3;
      }),
    ).toBe(true);
    expect(Math.min(...counts)).toBe(QUERIES_PER_PASSWORD_GRANT);

    await kcA.users.resetPassword({ id: userId, credential: { type: 'password', value: 'carol-password-2', temporary: false } });
    expect(await within(1000, async () => (await login(b, 'carol-password-1')).status === 400)).toBe(true);
    expect((await login(b, 'carol-password-2')).status).toBe(200);

    await kcA.users.update({ id: userId }, { requiredActions: ['UPDATE_PROFILE'] });
    expect(await within(1000, async () => (await login(b, 'carol-password-2')).status === 400)).toBe(true);
    expect((await login(b, 'carol-password-2')).body.error_description).toBe('Account is not fully set up');
  });
});

describe('configuration cache in one process', () => {
  let t: TestServer;
  let secret: string;

  beforeAll(async () => {
    t = await startServer();
    const kc = await admin(t.url);
    await kc.realms.create({ realm: 'flood', enabled: true });
    kc.setConfig({ realmName: 'flood' });
    const { id } = await kc.clients.create({ clientId: 'service', publicClient: false, serviceAccountsEnabled: true, standardFlowEnabled: false });
    secret = (await kc.clients.getClientSecret({ id })).value!;
  });
  afterAll(async () => {
    await t?.close();
  });

  it("counts a background worker's statements apart from requests' (the back-channel logout worker's poll)", async () => {
    const storage = t.server.context.storage;
    const requests = storage.queryCount;
    const background = storage.backgroundQueryCount;
    // The worker polls its outbox each second; nothing else runs on this server meanwhile.
    expect(await within(5000, async () => storage.backgroundQueryCount > background)).toBe(true);
    expect(storage.queryCount).toBe(requests);
    await inBackground(() => storage.realms.byName('flood'));
    expect(storage.queryCount).toBe(requests);
    await storage.realms.byName('flood');
    expect(storage.queryCount).toBe(requests + 1);
  });

  it('keeps no entry for unknown client ids or wrong secrets, however many', async () => {
    expect((await tokenRequest(t.url, 'flood', { grant_type: 'client_credentials', client_id: 'service', client_secret: secret })).status).toBe(200);
    const cache = t.server.context.storage.cache;
    const entries = cache.snapshot().entries;
    for (let i = 0; i < 300; i++) {
      const unknown = await tokenRequest(t.url, 'flood', { grant_type: 'client_credentials', client_id: `made-up-${i}`, client_secret: 'x' });
      expect(unknown.status).toBe(401);
      const wrong = await tokenRequest(t.url, 'flood', { grant_type: 'client_credentials', client_id: 'service', client_secret: `wrong-${i}` });
      expect(wrong.status).toBe(401);
    }
    // An unknown realm is not kept either.
    for (let i = 0; i < 50; i++) expect((await tokenRequest(t.url, `no-realm-${i}`, { grant_type: 'client_credentials' })).status).toBe(404);
    expect(cache.snapshot().entries).toBe(entries);
    expect((await tokenRequest(t.url, 'flood', { grant_type: 'client_credentials', client_id: 'service', client_secret: secret })).status).toBe(200);
  });

  it('keeps no entry for unknown usernames, however many; the spellings of one username share one entry', async () => {
    const kc = await admin(t.url);
    kc.setConfig({ realmName: 'flood' });
    await kc.users.create({ username: 'dave', enabled: true, credentials: [{ type: 'password', value: 'dave-password-1', temporary: false }] });
    await kc.clients.create({ clientId: 'app', publicClient: true, directAccessGrantsEnabled: true, standardFlowEnabled: false });
    const login = (username: string) => tokenRequest(t.url, 'flood', { grant_type: 'password', client_id: 'app', username, password: 'dave-password-1' });
    expect((await login('dave')).status).toBe(200);
    const cache = t.server.context.storage.cache;
    const entries = cache.snapshot().entries;
    for (const spelling of ['DAVE', 'Dave', 'dAvE']) expect((await login(spelling)).status).toBe(200);
    for (let i = 0; i < 40; i++) expect((await login(`made-up-user-${i}`)).status).toBe(400);
    expect(cache.snapshot().entries).toBe(entries);
  });

  it('reports its hit ratio, hits, misses and entries at /metrics', async () => {
    for (let i = 0; i < 5; i++) await tokenRequest(t.url, 'flood', { grant_type: 'client_credentials', client_id: 'service', client_secret: secret });
    const text = await (await fetch(`${t.url}/metrics`)).text();
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    expect(value('realmgate_config_cache_hit_ratio')).toBeGreaterThan(0);
    expect(value('realmgate_config_cache_hit_ratio')).toBeLessThanOrEqual(1);
    expect(value('realmgate_config_cache_hits_total')).toBeGreaterThan(0);
    expect(value('realmgate_config_cache_misses_total')).toBeGreaterThan(0);
    expect(value('realmgate_config_cache_entries')).toBe(t.server.context.storage.cache.snapshot().entries);
    const { hits, misses } = t.server.context.storage.cache.snapshot();
    expect(value('realmgate_config_cache_hit_ratio')).toBeCloseTo(hits / (hits + misses), 2);
  });
});

describe.each(databases)('what a grant costs the database (%s)', (database) => {
  let t: TestServer;
  let secret: string;
  let kc: KcAdminClient;
  let clientUuid: string;
  const written: string[] = [];

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await admin(t.url);
    await kc.realms.create({ realm: 'cost', enabled: true });
    kc.setConfig({ realmName: 'cost' });
    ({ id: clientUuid } = await kc.clients.create({ clientId: 'service', publicClient: false, serviceAccountsEnabled: true, directAccessGrantsEnabled: true, standardFlowEnabled: false }));
    secret = (await kc.clients.getClientSecret({ id: clientUuid })).value!;
    await kc.users.create({ username: 'alice', email: 'alice@example.test', enabled: true, credentials: [{ type: 'password', value: 'alice-password-1', temporary: false }] });
    const cache = t.server.context.storage.cache;
    const tablesWritten = cache.tablesWritten.bind(cache);
    cache.tablesWritten = (tables) => {
      written.push(...tables);
      tablesWritten(tables);
    };
  });
  afterAll(async () => {
    await t?.close();
  });

  it('client_credentials: no statement at all once the configuration is cached, and nothing written', async () => {
    const storage = t.server.context.storage;
    const grant = () => tokenRequest(t.url, 'cost', { grant_type: 'client_credentials', client_id: 'service', client_secret: secret });
    expect((await grant()).status).toBe(200);
    const queries = storage.queryCount;
    written.length = 0;
    for (let i = 0; i < 20; i++) expect((await grant()).status).toBe(200);
    expect(storage.queryCount - queries).toBe(0);
    expect(written).toEqual([]);
  });

  it('password grant: writes the user session and its client session, nothing else (events are off)', async () => {
    const grant = () => tokenRequest(t.url, 'cost', { grant_type: 'password', client_id: 'service', client_secret: secret, username: 'alice', password: 'alice-password-1' });
    expect((await grant()).status).toBe(200);
    written.length = 0;
    const queries = t.server.context.storage.queryCount;
    expect((await grant()).status).toBe(200);
    expect([...new Set(written)].sort()).toEqual(['client_session', 'user_session']);
    // Written: the two sessions in one transaction. The user's rows and the realm's flows come from the cache, and
    // no listener of the realm reads the LOGIN event's user snapshot.
    expect(t.server.context.storage.queryCount - queries).toBe(QUERIES_PER_PASSWORD_GRANT);
  });

  it("a provider's realm and client lookups (the webhook's, on every event): no statement once cached, a change seen at once", async () => {
    const storage = t.server.context.storage;
    const provider = providerContext(t.server.context, { id: 'cost-probe' } as ProviderFactory, {});
    expect((await provider.realms.get('cost'))?.name).toBe('cost');
    expect((await provider.clients.getByClientId('cost', 'service'))?.id).toBe(clientUuid);
    const queries = storage.queryCount;
    for (let i = 0; i < 5; i++) {
      expect((await provider.realms.get('cost'))?.enabled).toBe(true);
      expect((await provider.clients.getByClientId('cost', 'service'))?.clientId).toBe('service');
    }
    expect(storage.queryCount - queries).toBe(0);

    // What the provider gets is its own copy: changing it changes nothing cached.
    const copy = await provider.clients.getByClientId('cost', 'service');
    copy!.attributes['api.url'] = 'http://127.0.0.1:9/changed-in-memory';
    expect((await provider.clients.getByClientId('cost', 'service'))!.attributes['api.url']).toBeUndefined();

    // A change through the admin API is what the very next lookup sees.
    await kc.clients.update({ id: clientUuid }, { clientId: 'service', attributes: { 'api.url': 'http://127.0.0.1:9/hook', 'api.key': 'k' } });
    expect((await provider.clients.getByClientId('cost', 'service'))!.attributes['api.url']).toBe('http://127.0.0.1:9/hook');
    await kc.clients.update({ id: clientUuid }, { clientId: 'service', enabled: false });
    expect((await provider.clients.getByClientId('cost', 'service'))!.enabled).toBe(false);
    await kc.clients.update({ id: clientUuid }, { clientId: 'service', enabled: true });
  });
});

describe('ConfigCache', () => {
  it('is bounded: the least recently used entry goes first', async () => {
    const cache = new ConfigCache({ maxEntries: 3 });
    for (const k of ['a', 'b', 'c']) await cache.get(k, ['client'], async () => ({ k }));
    await cache.get('a', ['client'], async () => ({ k: 'a2' })); // a is now the most recently used
    await cache.get('d', ['client'], async () => ({ k: 'd' }));
    expect(cache.snapshot().entries).toBe(3);
    expect(await cache.get('a', ['client'], async () => ({ k: 'reloaded' }))).toEqual({ k: 'a' });
    expect(await cache.get('b', ['client'], async () => ({ k: 'reloaded' }))).toEqual({ k: 'reloaded' });
  });

  it('invalidates by table, and never keeps a value whose load raced a write', async () => {
    const cache = new ConfigCache();
    await cache.get('client', ['client'], async () => ({ v: 1 }));
    await cache.get('key', ['realm_key'], async () => ({ v: 1 }));
    cache.tablesWritten(['client']);
    expect(await cache.get('client', ['client'], async () => ({ v: 2 }))).toEqual({ v: 2 });
    expect(await cache.get('key', ['realm_key'], async () => ({ v: 2 }))).toEqual({ v: 1 });
    // Sessions and events change per request and invalidate nothing; an unknown table invalidates everything.
    cache.tablesWritten(['user_session', 'event_entity']);
    expect(await cache.get('key', ['realm_key'], async () => ({ v: 3 }))).toEqual({ v: 1 });
    cache.tablesWritten(['group_role_mapping']);
    expect(await cache.get('key', ['realm_key'], async () => ({ v: 4 }))).toEqual({ v: 4 });

    const raced = await cache.get('raced', ['client'], async () => {
      cache.tablesWritten(['client']);
      return { v: 'old' };
    });
    expect(raced).toEqual({ v: 'old' });
    expect(await cache.get('raced', ['client'], async () => ({ v: 'new' }))).toEqual({ v: 'new' });
    cache.invalidateConfiguration();
    expect(await cache.get('raced', ['client'], async () => ({ v: 'newer' }))).toEqual({ v: 'newer' });
  });

  it('hands out frozen values', async () => {
    const cache = new ConfigCache();
    const value = await cache.get('x', ['client'], async () => ({ list: [1, 2] }));
    expect(Object.isFrozen(value)).toBe(true);
    expect(Object.isFrozen(value!.list)).toBe(true);
  });
});

describe('writes reach the cache through the database driver', () => {
  it('invalidates at once outside a transaction, at COMMIT inside one, never on ROLLBACK', async () => {
    const handle = await openDatabase('sqlite::memory:');
    try {
      const { db, cache } = handle;
      let loads = 0;
      const read = () => cache.get('realms', ['realm'], async () => ({ n: ++loads }));
      await read();
      await sql`update realm set display_name = 'x' where id = 'none'`.execute(db);
      expect(await read()).toEqual({ n: 2 });
      await db.updateTable('realm').set({ display_name: 'y' }).where('id', '=', 'none').execute();
      expect(await read()).toEqual({ n: 3 });

      await db.transaction().execute(async (trx) => {
        await trx.updateTable('realm').set({ display_name: 'z' }).where('id', '=', 'none').execute();
        expect(await read()).toEqual({ n: 3 }); // not committed yet: the cached value is still the database's
      });
      expect(await read()).toEqual({ n: 4 });

      await db
        .transaction()
        .execute(async (trx) => {
          await trx.deleteFrom('realm').where('id', '=', 'none').execute();
          throw new Error('roll back');
        })
        .catch(() => {});
      expect(await read()).toEqual({ n: 4 });
      // Reads and writes to per-request tables leave it alone.
      await db.deleteFrom('user_session').where('id', '=', 'none').execute();
      await db.selectFrom('realm').selectAll().execute();
      expect(await read()).toEqual({ n: 4 });
    } finally {
      await handle.close();
    }
  });
});

describe('SQLite statements prepared once', () => {
  it('prepares a query once however often it runs, and keeps at most STATEMENT_CACHE_SIZE', async () => {
    const handle = await openDatabase('sqlite::memory:');
    try {
      const statements = handle.statements!;
      await sql`create table t (id integer primary key, name text)`.execute(handle.db);
      const query = (i: number) => handle.db.selectFrom('realm').select('id').where('name', '=', `r${i}`).execute();
      await query(0);
      const prepared = statements.prepared;
      for (let i = 1; i <= 500; i++) {
        await query(i);
        await sql`insert into t (name) values (${`n${i}`})`.execute(handle.db);
      }
      // The insert's SQL is prepared once too; nothing else.
      expect(statements.prepared).toBe(prepared + 1);
      for (let i = 0; i < STATEMENT_CACHE_SIZE + 50; i++) await sql.raw(`select ${i} as n`).execute(handle.db);
      expect(statements.size).toBe(STATEMENT_CACHE_SIZE);
    } finally {
      await handle.close();
    }
  });
});

describe('token signing with node:crypto', () => {
  it('gives the same JWS, byte for byte, as jose', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const jwk = privateKey.export({ format: 'jwk' });
    const header = { alg: 'RS256', typ: 'JWT', kid: 'k1' };
    const claims = { jti: 'j', typ: 'Bearer', azp: 'app', realm_access: { roles: ['a'] }, scope: 'profile email' };
    const std = { iss: 'http://127.0.0.1/realms/r', sub: 'u', iat: 1700000000, exp: 1700000300, aud: ['x', 'y'] };
    const ours = await signJws(header, { ...claims, ...std }, privateKey);
    const jose = await new SignJWT(claims)
      .setProtectedHeader(header)
      .setIssuer(std.iss)
      .setSubject(std.sub)
      .setIssuedAt(std.iat)
      .setExpirationTime(std.exp)
      .setAudience(std.aud)
      .sign(await importJWK({ ...jwk, alg: 'RS256' }, 'RS256'));
    expect(ours).toBe(jose);
  });
});
