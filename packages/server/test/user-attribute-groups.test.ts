import KcAdminClient from '@keycloak/keycloak-admin-client';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClientScopeSet, ProtocolMapper, User } from '../src/model/types.js';
import { needsOf, scopePlan } from '../src/protocol/openid-connect/mappers/index.js';
import type { UserGroupAttributes } from '../src/protocol/openid-connect/mappers/types.js';
import { resolveUserAttribute } from '../src/protocol/openid-connect/mappers/user-attribute.js';
import { httpDatabases, startServer, tokenRequest, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

/**
 * oidc-usermodel-attribute-mapper reads a user attribute through the user's groups, as Keycloak 26's
 * KeycloakModelUtils.resolveAttribute: the user's own values first; else the first of the user's groups (by name)
 * that has the attribute, itself or through its parents; with `aggregate.attrs`, all of them together. The groups
 * are read only when a mapper needs them: one query for the realm's group attribute names, one per user when one
 * of them is wanted, both cached until a group is written.
 */

const user = (attributes: Record<string, string[]> = {}): User =>
  ({ id: 'u1', realmId: 'r1', username: 'svc', email: null, firstName: null, lastName: null, enabled: true, emailVerified: false, attributes }) as unknown as User;

/** /Org (bpn, region) › /Org/Team (team); /Another (bpn); /Zeta › /Zeta/Child (nothing); the user in Team, Another, Child. */
const TREE: UserGroupAttributes = {
  memberOf: ['another', 'child', 'team'],
  groups: {
    org: { parentId: null, attributes: { bpn: ['BPNL-ORG'], region: ['eu'] } },
    team: { parentId: 'org', attributes: { team: ['a'], region: ['eu', 'de'] } },
    another: { parentId: null, attributes: { bpn: ['BPNL-ANOTHER'] } },
    zeta: { parentId: null, attributes: { zone: ['z'] } },
    child: { parentId: 'zeta', attributes: {} },
  },
};

describe("Keycloak's resolveAttribute", () => {
  it("the user's own values win, without aggregate", () => {
    expect(resolveUserAttribute({ user: user({ bpn: ['OWN'] }), groupAttributes: TREE }, 'bpn', false)).toEqual(['OWN']);
    // username, email… are attributes too.
    expect(resolveUserAttribute({ user: user(), groupAttributes: TREE }, 'username', false)).toEqual(['svc']);
  });

  it("without them, the first group by name that has the attribute (Another before Team's parent Org)", () => {
    expect(resolveUserAttribute({ user: user(), groupAttributes: TREE }, 'bpn', false)).toEqual(['BPNL-ANOTHER']);
    // A group's own values before its parent's; through a parent when the group has none.
    expect(resolveUserAttribute({ user: user(), groupAttributes: TREE }, 'region', false)).toEqual(['eu', 'de']);
    expect(resolveUserAttribute({ user: user(), groupAttributes: TREE }, 'zone', false)).toEqual(['z']);
    expect(resolveUserAttribute({ user: user(), groupAttributes: TREE }, 'missing', false)).toBeUndefined();
  });

  it('with aggregate.attrs, the user and every group and parent, each value once', () => {
    expect(resolveUserAttribute({ user: user({ bpn: ['OWN'] }), groupAttributes: TREE }, 'bpn', true)).toEqual(['OWN', 'BPNL-ANOTHER', 'BPNL-ORG']);
    expect(resolveUserAttribute({ user: user(), groupAttributes: TREE }, 'region', true)).toEqual(['eu', 'de']);
  });

  it('ends on a cyclic tree and reads nothing from the prototype', () => {
    const cyclic: UserGroupAttributes = { memberOf: ['a'], groups: { a: { parentId: 'b', attributes: {} }, b: { parentId: 'a', attributes: {} } } };
    expect(resolveUserAttribute({ user: user(), groupAttributes: cyclic }, 'bpn', true)).toBeUndefined();
    expect(resolveUserAttribute({ user: user(), groupAttributes: TREE }, '__proto__', true)).toBeUndefined();
    expect(resolveUserAttribute({ user: user(), groupAttributes: TREE }, 'constructor', false)).toBeUndefined();
    const odd = { memberOf: ['x'], groups: { x: { parentId: null, attributes: { bpn: 'not-a-list' as unknown as string[] } } } };
    expect(resolveUserAttribute({ user: user(), groupAttributes: odd }, 'bpn', false)).toBeUndefined();
  });

  it("says which attributes it needs, joined across the plan's mappers and documents", () => {
    const mapper = (name: string, attribute: string, aggregate: boolean, targets: Record<string, string>): ProtocolMapper => ({
      id: name,
      name,
      protocol: 'openid-connect',
      protocolMapper: 'oidc-usermodel-attribute-mapper',
      config: { 'user.attribute': attribute, 'claim.name': attribute, 'aggregate.attrs': String(aggregate), ...targets },
    });
    const set: ClientScopeSet = {
      defaultScopes: [],
      optionalScopes: [],
      clientMappers: [mapper('a', 'bpn', false, { 'access.token.claim': 'true' }), mapper('b', 'region', true, { 'id.token.claim': 'true' })],
    };
    const plan = scopePlan(set, 'openid');
    expect(plan.needs.access.groupAttributes).toEqual([{ name: 'bpn', aggregate: false }]);
    expect(needsOf(plan, ['access', 'id']).groupAttributes).toEqual([{ name: 'bpn', aggregate: false }, { name: 'region', aggregate: true }]);
    expect(plan.needs.access.groupAttributes).toHaveLength(1);
  });
});

describe.each(httpDatabases)('group attributes in tokens (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  const REALM = 'groupattrs';
  const secrets = new Map<string, string>();
  /** The mapper-data cache keys asked for (each a query when not cached). */
  const asked: string[] = [];

  const grant = (clientId: string) => tokenRequest(t.url, REALM, { grant_type: 'client_credentials', client_id: clientId, client_secret: secrets.get(clientId)! });
  const claims = async (clientId: string) => {
    const response = await grant(clientId);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return decodeJwt(response.body.access_token as string) as Record<string, unknown>;
  };

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    const cache = t.server.context.storage.cache;
    const get = cache.get.bind(cache);
    cache.get = ((key: string, deps: readonly string[], load: () => Promise<unknown>) => {
      if (key.startsWith('mapper-group-attribute')) asked.push(key.split('\0')[0]);
      return get(key, deps, load);
    }) as typeof cache.get;

    // BPDM's shape: a scope `bpn` mapping the user attribute bpn, service accounts in a group that has it.
    await kc.realms.create({
      realm: REALM,
      enabled: true,
      clientScopes: [
        {
          name: 'bpn',
          protocol: 'openid-connect',
          protocolMappers: [
            { name: 'bpn', protocol: 'openid-connect', protocolMapper: 'oidc-usermodel-attribute-mapper', config: { 'user.attribute': 'bpn', 'claim.name': 'bpn', 'jsonType.label': 'String', 'access.token.claim': 'true' } },
            { name: 'bpns', protocol: 'openid-connect', protocolMapper: 'oidc-usermodel-attribute-mapper', config: { 'user.attribute': 'bpn', 'claim.name': 'bpns', 'jsonType.label': 'String', multivalued: 'true', 'aggregate.attrs': 'true', 'access.token.claim': 'true' } },
          ],
        },
      ],
      groups: [
        { name: 'Operator', attributes: { bpn: ['BPNL00000000OPER'] }, subGroups: [{ name: 'Pool', attributes: {} }] },
        { name: 'Another', attributes: { bpn: ['BPNL0000000ANOTH'] } },
        { name: 'Plain' },
      ],
      clients: ['pool', 'gate', 'own', 'loner'].map((clientId) => ({ clientId, publicClient: false, serviceAccountsEnabled: true, standardFlowEnabled: false, secret: `${clientId}-secret-1`, defaultClientScopes: ['bpn'] })),
      users: [
        { username: 'service-account-pool', serviceAccountClientId: 'pool', enabled: true, groups: ['/Operator/Pool'] },
        { username: 'service-account-gate', serviceAccountClientId: 'gate', enabled: true, groups: ['/Operator', '/Another'] },
        { username: 'service-account-own', serviceAccountClientId: 'own', enabled: true, groups: ['/Operator'], attributes: { bpn: ['BPNL000000000OWN'] } },
        { username: 'service-account-loner', serviceAccountClientId: 'loner', enabled: true, groups: ['/Plain'] },
      ],
    });
    for (const id of ['pool', 'gate', 'own', 'loner']) secrets.set(id, `${id}-secret-1`);
    kc.setConfig({ realmName: REALM });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("a member of a subgroup gets its parent's attribute; with aggregate.attrs, all of them", async () => {
    expect(await claims('pool')).toMatchObject({ bpn: 'BPNL00000000OPER', bpns: ['BPNL00000000OPER'] });
  });

  it('several groups: the first by name, or all aggregated', async () => {
    const c = await claims('gate');
    expect(c.bpn).toBe('BPNL0000000ANOTH');
    expect(c.bpns).toEqual(['BPNL0000000ANOTH', 'BPNL00000000OPER']);
  });

  it("the user's own value wins; aggregated, it comes first", async () => {
    expect(await claims('own')).toMatchObject({ bpn: 'BPNL000000000OWN', bpns: ['BPNL000000000OWN', 'BPNL00000000OPER'] });
  });

  it('no group with the attribute: no claim', async () => {
    const c = await claims('loner');
    expect(c.bpn).toBeUndefined();
    expect(c.bpns).toBeUndefined();
  });

  it('a change of a group attribute or of a membership is in the next token', async () => {
    const groupNamed = async (name: string) => (await kc.groups.find()).find((g) => g.name === name)!;
    const operator = await groupNamed('Operator');
    await kc.groups.update({ id: operator.id! }, { name: 'Operator', attributes: { bpn: ['BPNL0000000NEWOP'] } });
    expect((await claims('pool')).bpn).toBe('BPNL0000000NEWOP');
    const plain = await groupNamed('Plain');
    const loner = await kc.clients.getServiceAccountUser({ id: (await kc.clients.find({ clientId: 'loner' }))[0].id! });
    await kc.users.addToGroup({ id: loner.id!, groupId: operator.id! });
    expect((await claims('loner')).bpn).toBe('BPNL0000000NEWOP');
    await kc.users.delFromGroup({ id: loner.id!, groupId: operator.id! });
    expect((await claims('loner')).bpn).toBeUndefined();
    await kc.groups.update({ id: plain.id! }, { name: 'Plain', attributes: { bpn: ['BPNL00000000PLAI'] } });
    expect((await claims('loner')).bpn).toBe('BPNL00000000PLAI');
  });

  it('once cached, a token reads nothing from the database; a user with the attribute never reads the groups', async () => {
    const storage = t.server.context.storage;
    await grant('pool');
    const queries = storage.queryCount;
    for (let i = 0; i < 10; i++) expect((await grant('pool')).status).toBe(200);
    expect(storage.queryCount - queries).toBe(0);
    // `own` has bpn itself; only its aggregating mapper reads the groups. Without that mapper, no group read.
    const scope = (await kc.clientScopes.findOneByName({ name: 'bpn' }))!;
    const aggregating = (await kc.clientScopes.listProtocolMappers({ id: scope.id! })).find((m) => m.name === 'bpns')!;
    await kc.clientScopes.delProtocolMapper({ id: scope.id!, mapperId: aggregating.id! });
    asked.length = 0;
    expect((await claims('own')).bpn).toBe('BPNL000000000OWN');
    expect(asked).toEqual([]);
  });

  it("a realm whose groups have no attributes never reads a user's groups for the built-in profile mappers", async () => {
    kc.setConfig({ realmName: 'master' });
    await kc.realms.create({
      realm: 'plain-groups',
      enabled: true,
      groups: [{ name: 'Staff' }],
      users: [{ username: 'pat', enabled: true, groups: ['/Staff'], credentials: [{ type: 'password', value: 'Pat-pass-1', temporary: false }] }],
    });
    kc.setConfig({ realmName: REALM });
    asked.length = 0;
    // The profile scope's attribute mappers (website, locale, zoneinfo…) ask for attributes pat lacks.
    const response = await tokenRequest(t.url, 'plain-groups', { grant_type: 'password', client_id: 'admin-cli', username: 'pat', password: 'Pat-pass-1', scope: 'openid profile' });
    expect(response.status).toBe(200);
    expect(asked).toEqual(['mapper-group-attribute-names']);
  });
});
