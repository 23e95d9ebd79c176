import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CLIENT_REGISTRATION_POLICY_TYPE, defaultRegistrationPolicies } from '../src/model/client-registration.js';
import { migrations } from '../src/storage/migrations.js';
import type { Storage } from '../src/storage/index.js';
import { databases } from './support/server.js';
import { seedRealm, useStorage, withStorage } from './support/storage.js';

/**
 * Dynamic client registration's storage (issue 40, item 7) on SQLite and PostgreSQL: initial access tokens (a use
 * taken atomically, never below zero), the registration access token replaced only while it is the one shown, rows
 * going with their client and realm, and migration 0028 giving every realm without policies Keycloak's defaults.
 */
describe.each(databases)('client registration storage on %s', (kind) => {
  const storage = useStorage(kind);

  it('takes the uses of an initial access token once each, also when requests race for the last', async () => {
    const s = storage();
    const { realm } = await seedRealm(s);
    const id = randomUUID();
    await s.clientRegistration.insertInitialAccess({ id, realmId: realm.id, tokenHash: `h-${id}`, timestamp: 1000, expiration: 60, count: 3, remainingCount: 3 });
    expect(await s.clientRegistration.initialAccessByHash(realm.id, `h-${id}`)).toEqual({ id, realmId: realm.id, tokenHash: `h-${id}`, timestamp: 1000, expiration: 60, count: 3, remainingCount: 3 });
    expect(await s.clientRegistration.initialAccessByHash((await seedRealm(s)).realm.id, `h-${id}`)).toBeNull();
    const taken = await Promise.all(Array.from({ length: 5 }, () => s.clientRegistration.takeInitialAccessUse(id)));
    expect(taken.filter(Boolean)).toHaveLength(3);
    expect((await s.clientRegistration.initialAccesses(realm.id)).map((m) => m.remainingCount)).toEqual([0]);
    expect(await s.clientRegistration.deleteInitialAccess(realm.id, id)).toBe(true);
    expect(await s.clientRegistration.deleteInitialAccess(realm.id, id)).toBe(false);
  });

  it('replaces a registration access token only while it is the one shown; the row goes with its client', async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const client = await seed.client('registered');
    await s.clientRegistration.setRegistrationToken({ clientId: client.id, realmId: seed.realm.id, tokenHash: 'one', registrationAuth: 'anonymous' });
    const rotations = await Promise.all([s.clientRegistration.rotateRegistrationToken(client.id, 'one', 'two'), s.clientRegistration.rotateRegistrationToken(client.id, 'one', 'three')]);
    expect(rotations.filter(Boolean)).toHaveLength(1);
    const now = await s.clientRegistration.registrationToken(client.id);
    expect(['two', 'three']).toContain(now?.tokenHash);
    expect(now?.registrationAuth).toBe('anonymous');
    expect(await s.clientRegistration.rotateRegistrationToken(client.id, 'one', 'four')).toBe(false);
    await s.clients.delete(client.id);
    expect(await s.clientRegistration.registrationToken(client.id)).toBeNull();
  });

  it("migration 0028 gives each realm without policies Keycloak's defaults and leaves a realm's own alone", async () => {
    await withStorage(kind, async (s: Storage) => {
      const bare = (await seedRealm(s)).realm;
      const own = (await seedRealm(s)).realm;
      await s.federation.insertComponent({ id: randomUUID(), realmId: own.id, parentId: own.id, name: 'Mine', providerId: 'max-clients', providerType: CLIENT_REGISTRATION_POLICY_TYPE, subType: 'anonymous', config: { 'max-clients': ['5'] } });
      // As the database was before 0028: its tables gone, then the migration run again.
      await s.db.schema.dropTable('client_registration_token').execute();
      await s.db.schema.dropTable('client_initial_access').execute();
      await migrations['0028-client-registration'].up(s.db as never);
      const policies = async (realmId: string) => (await s.federation.components(realmId, { parentId: realmId, providerType: CLIENT_REGISTRATION_POLICY_TYPE })).map((c) => `${c.subType}/${c.name}/${c.providerId}`).sort();
      expect(await policies(bare.id)).toEqual(defaultRegistrationPolicies().map((p) => `${p.subType}/${p.name}/${p.providerId}`).sort());
      expect(await policies(own.id)).toEqual(['anonymous/Mine/max-clients']);
      const trusted = (await s.federation.components(bare.id, { name: 'Trusted Hosts' }))[0];
      expect(trusted.config).toEqual({ 'trusted-hosts': [], 'host-sending-registration-request-must-match': ['true'], 'client-uris-must-match': ['true'] });
      expect(await s.clientRegistration.initialAccesses(bare.id)).toEqual([]);
    });
  });
});
