import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ClientScope, ProtocolMapper } from '../src/model/types.js';
import { isUniqueViolation } from '../src/storage/index.js';
import { databases } from './support/server.js';
import { seedRealm, useStorage } from './support/storage.js';

/**
 * Client scopes, protocol mappers (scopes' and clients'), the realm's and clients' default and optional scopes, and
 * the scopes' role scope mappings on SQLite and PostgreSQL, without an HTTP server (issue 36). client-scopes-admin.test.ts,
 * client-scope-tokens.test.ts and protocol-mappers.test.ts (HTTP, SQLite) rely on it for PostgreSQL.
 */
describe.each(databases)('client scopes storage on %s', (kind) => {
  const storage = useStorage(kind);

  const mapper = (name: string, config: Record<string, string> = {}): ProtocolMapper => ({ id: randomUUID(), name, protocol: 'openid-connect', protocolMapper: 'oidc-usermodel-attribute-mapper', config });
  const scope = (realmId: string, name: string, protocolMappers: ProtocolMapper[] = [], attributes: Record<string, string> = {}): ClientScope => ({
    id: randomUUID(), realmId, name, description: null, protocol: 'openid-connect', attributes, protocolMappers,
  });

  it('keeps a scope and its mappers as written (mappers in the order added), by id, ids, name and list; a name once per realm', async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const r = seed.realm.id;
    const rich = { ...scope(r, 'profile-x', [mapper('zeta', { 'claim.name': 'ü', 'jsonType.label': 'String' }), mapper('alpha')], { 'include.in.token.scope': 'true', 'display.on.consent.screen': 'false' }), description: '“quoted”', protocol: 'saml' };
    const plain = scope(r, 'a-scope');
    await s.clientScopes.insert(rich);
    await s.clientScopes.insert(plain);

    expect(await s.clientScopes.byId(r, rich.id)).toEqual(rich);
    expect(await s.clientScopes.byName(r, 'profile-x')).toEqual(rich);
    expect(await s.clientScopes.byName(r, 'PROFILE-X')).toBeNull();
    expect(await s.clientScopes.byIds(r, [rich.id, plain.id, randomUUID()])).toEqual([plain, rich]);
    expect(await s.clientScopes.byIds(r, [])).toEqual([]);
    expect((await s.clientScopes.list(r)).map((x) => x.name)).toEqual(['a-scope', 'profile-x']);
    expect(await s.clientScopes.names(r)).toEqual(new Map([[rich.id, 'profile-x'], [plain.id, 'a-scope']]));
    const other = await seedRealm(s);
    expect(await s.clientScopes.byId(other.realm.id, rich.id)).toBeNull();
    await s.clientScopes.insert(scope(other.realm.id, 'profile-x'));

    const dup = await s.clientScopes.insert(scope(r, 'a-scope')).then(() => null, (e: unknown) => e);
    expect(isUniqueViolation(dup)).toBe(true);
    const changed = { ...rich, name: 'renamed', description: null, protocol: 'openid-connect', attributes: { k: 'v' } };
    await s.clientScopes.update(changed);
    expect(await s.clientScopes.byId(r, rich.id)).toEqual(changed);
  });

  it('mappers: added after the others, a name once per owner, read, updated and deleted per owner; clients have their own', async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const r = seed.realm.id;
    const sc = scope(r, 'with-mappers', [mapper('first')]);
    await s.clientScopes.insert(sc);
    const client = await seed.client('app');
    const [m2, m3] = [mapper('b-second'), mapper('a-third')];
    await s.clientScopes.insertMappers(r, { clientScopeId: sc.id }, [m2]);
    await s.clientScopes.insertMappers(r, { clientScopeId: sc.id }, [m3]);
    await s.clientScopes.insertMappers(r, { clientScopeId: sc.id }, []);
    expect((await s.clientScopes.mappers(sc.id)).map((m) => m.name)).toEqual(['first', 'b-second', 'a-third']);
    const own = mapper('first');
    await s.clientScopes.insertMappers(r, { clientId: client.id }, [own]);
    const byOwner = await s.clientScopes.mappersByOwner([sc.id, client.id, randomUUID()]);
    expect(byOwner.get(client.id)).toEqual([own]);
    expect(byOwner.get(sc.id)).toHaveLength(3);
    expect(byOwner.size).toBe(2);
    expect(await s.clientScopes.mapper(sc.id, m2.id)).toEqual(m2);
    expect(await s.clientScopes.mapper(client.id, m2.id)).toBeNull();

    const dup = await s.clientScopes.insertMappers(r, { clientScopeId: sc.id }, [mapper('a-third')]).then(() => null, (e: unknown) => e);
    expect(isUniqueViolation(dup)).toBe(true);
    await s.clientScopes.updateMapper(sc.id, { ...m2, name: 'updated', config: { x: 'y' }, protocolMapper: 'oidc-hardcoded-claim-mapper' });
    await s.clientScopes.updateMapper(client.id, { ...m3, name: 'not-mine' });
    expect((await s.clientScopes.mappers(sc.id)).map((m) => m.name)).toEqual(['first', 'updated', 'a-third']);
    expect(await s.clientScopes.mapper(sc.id, m2.id)).toEqual({ ...m2, name: 'updated', config: { x: 'y' }, protocolMapper: 'oidc-hardcoded-claim-mapper' });
    await s.clientScopes.deleteMapper(client.id, m3.id);
    await s.clientScopes.deleteMapper(sc.id, m2.id);
    expect((await s.clientScopes.mappers(sc.id)).map((m) => m.name)).toEqual(['first', 'a-third']);
    // A mapper added after a deletion still comes last.
    await s.clientScopes.insertMappers(r, { clientScopeId: sc.id }, [mapper('0-last')]);
    expect((await s.clientScopes.mappers(sc.id)).map((m) => m.name)).toEqual(['first', 'a-third', '0-last']);
    // A client deleted takes its own mappers.
    await s.clients.delete(client.id);
    expect(await s.clientScopes.mappers(client.id)).toEqual([]);
  });

  it('realm and client links: default or optional, moved between them, unlinked; role scope mappings; deletion cascades', async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const r = seed.realm.id;
    const [a, b] = [scope(r, 'a', [mapper('m')]), scope(r, 'b')];
    await s.clientScopes.insert(a);
    await s.clientScopes.insert(b);
    const [c1, c2] = [await seed.client('one'), await seed.client('two')];
    const byScope = (links: { scopeId: string; defaultScope: boolean }[]) => [...links].sort((x, y) => (x.scopeId < y.scopeId ? -1 : 1));

    await s.clientScopes.linkToRealm(r, a.id, true);
    await s.clientScopes.linkToRealm(r, b.id, false);
    await s.clientScopes.linkToRealm(r, b.id, true);
    expect(byScope(await s.clientScopes.realmLinks(r))).toEqual(byScope([{ scopeId: a.id, defaultScope: true }, { scopeId: b.id, defaultScope: true }]));
    await s.clientScopes.unlinkFromRealm(r, a.id);
    expect(await s.clientScopes.realmLinks(r)).toEqual([{ scopeId: b.id, defaultScope: true }]);

    await s.clientScopes.linkToClient(c1.id, [{ scopeId: a.id, defaultScope: true }, { scopeId: b.id, defaultScope: false }]);
    await s.clientScopes.linkToClient(c1.id, [{ scopeId: a.id, defaultScope: false }]);
    await s.clientScopes.linkToClient(c2.id, [{ scopeId: b.id, defaultScope: true }]);
    expect(byScope(await s.clientScopes.clientLinks(c1.id))).toEqual(byScope([{ scopeId: a.id, defaultScope: false }, { scopeId: b.id, defaultScope: false }]));
    const many = await s.clientScopes.clientLinksMany([c1.id, c2.id, randomUUID()]);
    expect(many.size).toBe(2);
    expect(many.get(c2.id)).toEqual([{ scopeId: b.id, defaultScope: true }]);
    await s.clientScopes.unlinkFromClient(c1.id, b.id);
    expect(await s.clientScopes.clientLinks(c1.id)).toEqual([{ scopeId: a.id, defaultScope: false }]);

    const [r1, r2] = [await seed.role('one'), await seed.role('two')];
    await s.clientScopes.addRoles(a.id, [r1.id, r1.id, r2.id]);
    await s.clientScopes.addRoles(a.id, [r1.id]);
    await s.clientScopes.addRoles(b.id, [r2.id]);
    await s.clientScopes.addRoles(b.id, []);
    expect((await s.clientScopes.roleIds([a.id, b.id])).sort()).toEqual([r1.id, r2.id].sort());
    await s.clientScopes.removeRoles(a.id, [r2.id]);
    await s.clientScopes.removeRoles(a.id, []);
    expect(await s.clientScopes.roleIds([a.id])).toEqual([r1.id]);
    await s.roles.delete(r1.id);
    expect(await s.clientScopes.roleIds([a.id])).toEqual([]);

    // A scope deleted takes its mappers, its role mappings and its links to the realm and to clients.
    await s.clientScopes.addRoles(a.id, [r2.id]);
    await s.clientScopes.linkToRealm(r, a.id, false);
    await s.clientScopes.delete(a.id);
    expect(await s.clientScopes.byId(r, a.id)).toBeNull();
    expect(await s.clientScopes.mappers(a.id)).toEqual([]);
    expect(await s.clientScopes.roleIds([a.id])).toEqual([]);
    expect(await s.clientScopes.realmLinks(r)).toEqual([{ scopeId: b.id, defaultScope: true }]);
    expect(await s.clientScopes.clientLinks(c1.id)).toEqual([]);
    // A client deleted takes its links; a realm deleted takes its scopes.
    await s.clients.delete(c2.id);
    expect(await s.clientScopes.clientLinks(c2.id)).toEqual([]);
    await s.realms.delete(r);
    expect(await s.clientScopes.list(r)).toEqual([]);
    expect(await s.clientScopes.realmLinks(r)).toEqual([]);
  });
});
