import KcAdminClient from '@keycloak/keycloak-admin-client';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpDatabases, startServer, tokenRequest, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

/**
 * Issue 41: Keycloak 26.7's `oidc-organization-group-membership-mapper` in tokens. Under the claim of the client's
 * organization membership mapper, each organization of the user gets `groups` (paths of the organization's groups the
 * user is directly in) and, with `addGroupRoleMappings`, the roles mapped to those groups (composites expanded).
 * An organization's group roles still never reach the token's own `realm_access` (organization-groups.test.ts).
 */
describe.each(httpDatabases)('organization group membership mapper (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  let token: string;
  let appId: string;
  const orgApi = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${t.url}/admin/realms/og/organizations${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    expect(response.status, text).toBeLessThan(300);
    return text ? JSON.parse(text) : undefined;
  };
  const signIn = async (username: string) => {
    const answer = await tokenRequest(t.url, 'og', { grant_type: 'password', client_id: 'app', username, password: `${username}-Pass-1`, scope: 'openid' });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return { access: decodeJwt(answer.body.access_token as string) as Record<string, unknown>, id: decodeJwt(answer.body.id_token as string) as Record<string, unknown> };
  };

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    token = (await kc.getAccessToken())!;
    await kc.realms.create({ realm: 'og', enabled: true, organizationsEnabled: true });
    kc.setConfig({ realmName: 'og' });
    appId = (await kc.clients.create({ clientId: 'app', publicClient: true, directAccessGrantsEnabled: true, redirectUris: ['http://127.0.0.1/cb'] })).id;
    const api = (await kc.clients.create({ clientId: 'orders-api', publicClient: false, secret: 'orders-secret-1' })).id;
    await kc.clients.createRole({ id: api, name: 'reader' });
    await kc.roles.create({ name: 'engineer' });
    await kc.roles.create({ name: 'builder', composite: false });
    const engineer = (await kc.roles.findOneByName({ name: 'engineer' }))!;
    const builder = (await kc.roles.findOneByName({ name: 'builder' }))!;
    await kc.roles.createComposite({ roleId: engineer.id! }, [builder as never]);
    const reader = (await kc.clients.findRole({ id: api, roleName: 'reader' }))!;
    const users: Record<string, string> = {};
    for (const name of ['ann', 'bob', 'cid']) {
      users[name] = (await kc.users.create({ username: name, enabled: true, credentials: [{ type: 'password', value: `${name}-Pass-1`, temporary: false }] })).id;
    }
    const acme = (await kc.organizations.create({ name: 'Acme', alias: 'acme', domains: [{ name: 'acme.example' }] })).id;
    const globex = (await kc.organizations.create({ name: 'Globex', alias: 'globex', domains: [{ name: 'globex.example' }] })).id;
    await kc.organizations.addMember({ orgId: acme, userId: users.ann });
    await kc.organizations.addMember({ orgId: globex, userId: users.ann });
    await kc.organizations.addMember({ orgId: acme, userId: users.bob });
    const eng = (await orgApi('POST', `/${acme}/groups`, { name: 'engineering' })).id as string;
    const backend = (await orgApi('POST', `/${acme}/groups/${eng}/children`, { name: 'backend' })).id as string;
    const gx = (await orgApi('POST', `/${globex}/groups`, { name: 'ops' })).id as string;
    await orgApi('POST', `/${acme}/groups/${backend}/role-mappings/realm`, [{ id: engineer.id, name: 'engineer' }]);
    await orgApi('POST', `/${acme}/groups/${backend}/role-mappings/clients/${api}`, [{ id: reader.id, name: 'reader' }]);
    // The parent's roles are not the member's: Keycloak's mapper reads the groups the user is in.
    await orgApi('POST', `/${acme}/groups/${eng}/role-mappings/realm`, [{ id: builder.id, name: 'builder' }]);
    await orgApi('PUT', `/${acme}/groups/${backend}/members/${users.ann}`);
    await orgApi('PUT', `/${globex}/groups/${gx}/members/${users.ann}`);
  }, 60_000);
  afterAll(() => t?.close());

  const addMapper = (name: string, protocolMapper: string, config: Record<string, string>) =>
    kc.clients.addProtocolMapper({ id: appId }, { name, protocol: 'openid-connect', protocolMapper, config: { 'access.token.claim': 'true', 'id.token.claim': 'true', 'introspection.token.claim': 'true', ...config } });

  it('without the organization membership mapper it writes nothing; with it, each organization carries the paths of the user\'s groups', async () => {
    await addMapper('org groups', 'oidc-organization-group-membership-mapper', {});
    const alone = await signIn('ann');
    expect(alone.access.organization).toBeUndefined();

    await addMapper('org', 'oidc-organization-membership-mapper', { 'claim.name': 'organization', multivalued: 'true' });
    const ann = await signIn('ann');
    expect(ann.access.organization).toEqual({ acme: { groups: ['/engineering/backend'] }, globex: { groups: ['/ops'] } });
    expect(ann.id.organization).toEqual(ann.access.organization);
    // A member in no group of the organization: an empty list. Not a member: no claim.
    expect((await signIn('bob')).access.organization).toEqual({ acme: { groups: [] } });
    expect((await signIn('cid')).access.organization).toBeUndefined();
    // The organization's roles do not leak into the token's own roles.
    expect(JSON.stringify(ann.access.realm_access ?? {})).not.toContain('engineer');
  });

  it('addGroupRoleMappings: the roles mapped to the groups the user is in, composites expanded, by realm and client', async () => {
    const [mapper] = (await kc.clients.listProtocolMappers({ id: appId })).filter((m) => m.protocolMapper === 'oidc-organization-group-membership-mapper');
    await kc.clients.updateProtocolMapper({ id: appId, mapperId: mapper.id! }, { ...mapper, config: { ...mapper.config, addGroupRoleMappings: 'true' } });
    const ann = await signIn('ann');
    expect(ann.access.organization).toEqual({
      acme: { groups: ['/engineering/backend'], realm_access: { roles: ['builder', 'engineer'] }, resource_access: { 'orders-api': { roles: ['reader'] } } },
      globex: { groups: ['/ops'] },
    });
    // Builder came through engineer (composite), not through the parent group: Bob's groups give him none.
    expect((await signIn('bob')).access.organization).toEqual({ acme: { groups: [] } });
  });

  it('a disabled organization or a realm with organizations off writes nothing for it', async () => {
    const [globex] = await kc.organizations.find({ search: 'Globex', exact: true });
    await kc.organizations.updateById({ id: globex.id! }, { ...globex, enabled: false });
    expect(Object.keys((await signIn('ann')).access.organization as object)).toEqual(['acme']);
    await kc.realms.update({ realm: 'og' }, { organizationsEnabled: false });
    expect((await signIn('ann')).access.organization).toBeUndefined();
    await kc.realms.update({ realm: 'og' }, { organizationsEnabled: true });
  });
});
