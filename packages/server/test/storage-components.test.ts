import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Component } from '../src/model/types.js';
import { databases } from './support/server.js';
import { seedRealm, useStorage } from './support/storage.js';

/**
 * Components (user storage, key providers, client registration policies, … kept as data or run) on SQLite and
 * PostgreSQL, without an HTTP server (issue 36): Keycloak's query by parent, type and name, order, config lists kept
 * as written, updates, and deletion of a component with everything under it. federation-admin.test.ts,
 * legacy-user-federation.test.ts and required-actions-kept-as-data.test.ts (HTTP, SQLite) rely on it for PostgreSQL;
 * realm-key-providers.test.ts runs the key providers over HTTP.
 */
describe.each(databases)('components storage on %s', (kind) => {
  const storage = useStorage(kind);

  const component = (realmId: string, parentId: string, name: string, providerType = 'org.keycloak.storage.UserStorageProvider', config: Record<string, string[]> = {}): Component => ({
    id: randomUUID(), realmId, parentId, name, providerId: 'ldap', providerType, subType: null, config,
  });

  it('keeps a component as written and answers Keycloak\'s queries by parent, type and name, in name order (lower-case names: mixed case would depend on the PostgreSQL collation)', async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const r = seed.realm.id;
    const ldap = component(r, r, 'ldap-b', undefined, { connectionUrl: ['ldap://127.0.0.1:389'], multi: ['1', '2', 'ü'], empty: [] });
    const ldap2 = component(r, r, 'ldap-a');
    const policy = { ...component(r, r, 'trusted hosts', 'org.keycloak.services.clientregistration.policy.ClientRegistrationPolicy'), subType: 'anonymous' };
    const mapperUnder = component(r, ldap.id, 'username', 'org.keycloak.storage.ldap.mappers.LDAPStorageMapper');
    for (const c of [ldap, ldap2, policy, mapperUnder]) await s.federation.insertComponent(c);

    expect(await s.federation.component(r, ldap.id)).toEqual(ldap);
    expect(await s.federation.component(r, policy.id)).toEqual(policy);
    expect(await s.federation.component((await seedRealm(s)).realm.id, ldap.id)).toBeNull();
    expect((await s.federation.components(r)).map((c) => c.name)).toEqual(['ldap-a', 'ldap-b', 'trusted hosts', 'username']);
    expect((await s.federation.components(r, { parentId: r })).map((c) => c.name)).toEqual(['ldap-a', 'ldap-b', 'trusted hosts']);
    expect((await s.federation.components(r, { parentId: r, providerType: 'org.keycloak.storage.UserStorageProvider' })).map((c) => c.name)).toEqual(['ldap-a', 'ldap-b']);
    expect((await s.federation.components(r, { parentId: ldap.id })).map((c) => c.id)).toEqual([mapperUnder.id]);
    expect((await s.federation.components(r, { name: 'ldap-a' })).map((c) => c.id)).toEqual([ldap2.id]);
    expect(await s.federation.components(r, { name: 'LDAP-A' })).toEqual([]);

    // Two components of one name are allowed (Keycloak's too); listed by name, then id.
    const twin = component(r, r, 'ldap-a');
    await s.federation.insertComponent(twin);
    expect((await s.federation.components(r, { name: 'ldap-a' })).map((c) => c.id)).toEqual([ldap2.id, twin.id].sort());

    const changed = { ...ldap, name: 'ldap-c', providerId: 'kerberos', subType: 'x', config: { only: ['one'] }, parentId: ldap2.id };
    await s.federation.updateComponent(changed);
    expect(await s.federation.component(r, ldap.id)).toEqual(changed);
  });

  it('deleting a component takes every component under it, at any depth, and only those; a realm deleted takes all', async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const r = seed.realm.id;
    const top = component(r, r, 'top');
    const sibling = component(r, r, 'sibling');
    await s.federation.insertComponent(top);
    await s.federation.insertComponent(sibling);
    // A chain five deep and a wide level of 600 under the top (batched deletes).
    let parent = top.id;
    const chain: string[] = [];
    for (let i = 0; i < 5; i++) {
      const c = component(r, parent, `chain-${i}`);
      await s.federation.insertComponent(c);
      chain.push(c.id);
      parent = c.id;
    }
    await s.transaction(async (trx) => {
      for (let i = 0; i < 600; i++) await s.federation.insertComponent(component(r, chain[0], `wide-${i}`), trx);
    });
    const under = await s.federation.subtree(r, top.id);
    expect(under).toHaveLength(1 + 5 + 600);
    expect(under[0]).toBe(top.id);
    expect(new Set(under).has(sibling.id)).toBe(false);

    await s.federation.deleteComponent(r, top.id);
    expect((await s.federation.components(r)).map((c) => c.name)).toEqual(['sibling']);
    await s.realms.delete(r);
    expect(await s.federation.components(r)).toEqual([]);
  });
});
