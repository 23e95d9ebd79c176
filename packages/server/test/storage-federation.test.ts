import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { IdentityProvider } from '../src/model/types.js';
import { isUniqueViolation } from '../src/storage/index.js';
import { databases } from './support/server.js';
import { seedRealm, useStorage } from './support/storage.js';

/**
 * Identity providers, their mappers and users' links to them (federated identities) on SQLite and PostgreSQL, without
 * an HTTP server (issue 36): the search (substring, prefix, exact, LIKE wildcards taken literally), paging, unique
 * aliases, mapper names and links, the stored upstream token, and what goes with a provider, a user or a realm.
 * federated-identities.test.ts and federation-admin.test.ts (HTTP, SQLite) rely on it for PostgreSQL.
 */
describe.each(databases)('identity providers and federated identities storage on %s', (kind) => {
  const storage = useStorage(kind);

  const provider = (realmId: string, alias: string, rest: Record<string, unknown> = {}): IdentityProvider => ({
    internalId: randomUUID(), realmId, alias, providerId: 'oidc', enabled: true, displayName: null,
    config: { clientId: 'c', authorizationUrl: 'https://upstream.example/auth' }, rest,
  });

  it('keeps a provider as written, searches and pages by alias, refuses a second alias in one realm', async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const rich = { ...provider(seed.realm.id, 'github-main', { trustEmail: true, firstBrokerLoginFlowAlias: 'first broker login', nested: { a: [1, 'ü'] } }), displayName: 'GitHub “main”', enabled: false, providerId: 'keycloak-oidc' };
    const others = ['gitlab', 'a_b', 'axb', '100%', 'org-idp'].map((alias) => provider(seed.realm.id, alias, alias === 'org-idp' ? { organizationId: 'org-1' } : {}));
    for (const p of [rich, ...others]) await s.federation.insertProvider(p);

    expect(await s.federation.providerByAlias(seed.realm.id, 'github-main')).toEqual(rich);
    expect(await s.federation.providerByAlias(seed.realm.id, 'GITHUB-MAIN')).toBeNull();
    const aliases = async (query: Partial<Parameters<typeof s.federation.providers>[1]> = {}) =>
      (await s.federation.providers(seed.realm.id, { first: 0, max: 100, ...query })).map((p) => p.alias);
    expect(await aliases()).toEqual(['100%', 'a_b', 'axb', 'github-main', 'gitlab', 'org-idp']);
    expect(await aliases({ search: 'GIT' })).toEqual(['github-main', 'gitlab']);
    expect(await aliases({ search: 'git*' })).toEqual(['github-main', 'gitlab']);
    expect(await aliases({ search: 'hub*' })).toEqual([]);
    expect(await aliases({ search: '"gitlab"' })).toEqual(['gitlab']);
    expect(await aliases({ search: '"GITLAB"' })).toEqual([]);
    // LIKE's wildcards in a search are plain characters.
    expect(await aliases({ search: 'a_b' })).toEqual(['a_b']);
    expect(await aliases({ search: '%' })).toEqual(['100%']);
    expect(await aliases({ realmOnly: true })).toEqual(['100%', 'a_b', 'axb', 'github-main', 'gitlab']);
    expect(await aliases({ first: 1, max: 2 })).toEqual(['a_b', 'axb']);
    expect(await s.federation.providers((await seedRealm(s)).realm.id)).toEqual([]);

    const again = await s.federation.insertProvider(provider(seed.realm.id, 'gitlab')).then(() => null, (e: unknown) => e);
    expect(isUniqueViolation(again)).toBe(true);
    const other = await seedRealm(s);
    await s.federation.insertProvider(provider(other.realm.id, 'gitlab'));

    const changed = { ...rich, alias: 'github', enabled: true, displayName: null, config: { clientId: 'd' }, rest: { trustEmail: false } };
    await s.federation.updateProvider(changed);
    expect(await s.federation.providerByAlias(seed.realm.id, 'github')).toEqual(changed);
    expect(await s.federation.providerByAlias(seed.realm.id, 'github-main')).toBeNull();
  });

  it('mappers by provider alias then name, a name once per provider, updated and deleted', async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const [a, b] = [provider(seed.realm.id, 'b-idp'), provider(seed.realm.id, 'a-idp')];
    await s.federation.insertProvider(a);
    await s.federation.insertProvider(b);
    const m = (name: string) => ({ id: randomUUID(), name, identityProviderAlias: '', identityProviderMapper: 'hardcoded-role-idp-mapper', config: { role: 'x', syncMode: 'INHERIT' } });
    const [m1, m2, m3] = [m('zz'), m('aa'), m('mm')];
    await s.federation.insertMapper(seed.realm.id, a.internalId, m1);
    await s.federation.insertMapper(seed.realm.id, a.internalId, m2);
    await s.federation.insertMapper(seed.realm.id, b.internalId, m3);
    await s.federation.insertMapper(seed.realm.id, b.internalId, m('aa'));
    expect((await s.federation.mappers(seed.realm.id)).map((x) => `${x.identityProviderAlias}/${x.name}`)).toEqual(['a-idp/aa', 'a-idp/mm', 'b-idp/aa', 'b-idp/zz']);
    expect(await s.federation.mappers(seed.realm.id, a.internalId)).toEqual([
      { ...m2, identityProviderAlias: 'b-idp' },
      { ...m1, identityProviderAlias: 'b-idp' },
    ]);
    const dup = await s.federation.insertMapper(seed.realm.id, a.internalId, m('zz')).then(() => null, (e: unknown) => e);
    expect(isUniqueViolation(dup)).toBe(true);
    await s.federation.updateMapper(a.internalId, { ...m1, name: 'renamed', config: { role: 'y' } });
    // The update names its provider: another provider's id changes nothing.
    await s.federation.updateMapper(b.internalId, { ...m2, name: 'not-here' });
    expect((await s.federation.mappers(seed.realm.id, a.internalId)).map((x) => [x.name, x.config])).toEqual([['aa', m2.config], ['renamed', { role: 'y' }]]);
    await s.federation.deleteMapper(b.internalId, m2.id);
    expect(await s.federation.mappers(seed.realm.id, a.internalId)).toHaveLength(2);
    await s.federation.deleteMapper(a.internalId, m2.id);
    expect((await s.federation.mappers(seed.realm.id, a.internalId)).map((x) => x.name)).toEqual(['renamed']);
  });

  it('links: one per user and provider, found by the upstream id, token and username updated, removed by alias', async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const [idpB, idpA] = [provider(seed.realm.id, 'bbb'), provider(seed.realm.id, 'aaa')];
    await s.federation.insertProvider(idpB);
    await s.federation.insertProvider(idpA);
    const [ann, ben] = [await seed.user('ann'), await seed.user('ben')];
    await s.federation.addLink(seed.realm.id, ann.id, idpB.internalId, { userId: 'up-1', userName: 'ann@up' });
    await s.federation.addLink(seed.realm.id, ann.id, idpA.internalId, { userId: 'up-2', userName: null });
    await s.federation.addLink(seed.realm.id, ben.id, idpB.internalId, { userId: 'up-3', userName: 'bén' });
    expect(await s.federation.links(ann.id)).toEqual([
      { identityProvider: 'aaa', userId: 'up-2', userName: null },
      { identityProvider: 'bbb', userId: 'up-1', userName: 'ann@up' },
    ]);
    const many = await s.federation.linksOf([ann.id, ben.id, randomUUID()]);
    expect([...many.keys()].sort()).toEqual([ann.id, ben.id].sort());
    expect(many.get(ben.id)).toEqual([{ identityProvider: 'bbb', userId: 'up-3', userName: 'bén' }]);
    expect(await s.federation.userIdByLink(idpB.internalId, 'up-3')).toBe(ben.id);
    expect(await s.federation.userIdByLink(idpA.internalId, 'up-3')).toBeNull();
    expect((await s.federation.linksTo(idpB.internalId)).sort((x, y) => x.link.userId.localeCompare(y.link.userId))).toEqual([
      { userId: ann.id, link: { userId: 'up-1', userName: 'ann@up' } },
      { userId: ben.id, link: { userId: 'up-3', userName: 'bén' } },
    ]);
    const dup = await s.federation.addLink(seed.realm.id, ann.id, idpB.internalId, { userId: 'up-9', userName: null }).then(() => null, (e: unknown) => e);
    expect(isUniqueViolation(dup)).toBe(true);

    // The stored token (storeToken): none, set with the username, kept when only the username changes, cleared.
    expect(await s.federation.linkToken(ann.id, idpB.internalId)).toBeNull();
    const token = JSON.stringify({ access_token: 'x'.repeat(4000), refresh_token: 'ü' });
    await s.federation.updateLink(ann.id, idpB.internalId, { token, userName: 'ann2' });
    expect(await s.federation.linkToken(ann.id, idpB.internalId)).toBe(token);
    await s.federation.updateLink(ann.id, idpB.internalId, { userName: null });
    await s.federation.updateLink(ann.id, idpB.internalId, {});
    expect(await s.federation.linkToken(ann.id, idpB.internalId)).toBe(token);
    expect((await s.federation.links(ann.id))[1]).toEqual({ identityProvider: 'bbb', userId: 'up-1', userName: null });
    await s.federation.updateLink(ann.id, idpB.internalId, { token: null });
    expect(await s.federation.linkToken(ann.id, idpB.internalId)).toBeNull();

    expect(await s.federation.removeLink(seed.realm.id, ann.id, 'aaa')).toBe(true);
    expect(await s.federation.removeLink(seed.realm.id, ann.id, 'aaa')).toBe(false);
    expect(await s.federation.removeLink(seed.realm.id, ann.id, 'no-such')).toBe(false);
    expect((await s.federation.links(ann.id)).map((l) => l.identityProvider)).toEqual(['bbb']);
  });

  it('a provider deleted takes its mappers and links; a user deleted takes theirs; a realm deleted takes everything', async () => {
    const s = storage();
    const seed = await seedRealm(s);
    const [gone, kept] = [provider(seed.realm.id, 'gone'), provider(seed.realm.id, 'kept')];
    await s.federation.insertProvider(gone);
    await s.federation.insertProvider(kept);
    const [ann, ben] = [await seed.user('ann'), await seed.user('ben')];
    for (const p of [gone, kept]) {
      await s.federation.insertMapper(seed.realm.id, p.internalId, { id: randomUUID(), name: 'm', identityProviderAlias: '', identityProviderMapper: 't', config: {} });
      await s.federation.addLink(seed.realm.id, ann.id, p.internalId, { userId: `ann-${p.alias}`, userName: null });
    }
    await s.federation.addLink(seed.realm.id, ben.id, kept.internalId, { userId: 'ben', userName: null });
    await s.federation.deleteProvider(gone.internalId);
    expect((await s.federation.mappers(seed.realm.id)).map((m) => m.identityProviderAlias)).toEqual(['kept']);
    expect((await s.federation.links(ann.id)).map((l) => l.identityProvider)).toEqual(['kept']);
    expect(await s.federation.userIdByLink(gone.internalId, 'ann-gone')).toBeNull();
    await s.users.delete(ann.id);
    expect((await s.federation.linksTo(kept.internalId)).map((l) => l.userId)).toEqual([ben.id]);
    await s.realms.delete(seed.realm.id);
    expect(await s.federation.providers(seed.realm.id)).toEqual([]);
    expect(await s.federation.linksTo(kept.internalId)).toEqual([]);
    expect(await s.federation.mappers(seed.realm.id)).toEqual([]);
  });
});
