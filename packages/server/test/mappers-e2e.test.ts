import KcAdminClient from '@keycloak/keycloak-admin-client';
import type ClientRepresentation from '@keycloak/keycloak-admin-client/lib/defs/clientRepresentation.js';
import type ProtocolMapperRepresentation from '@keycloak/keycloak-admin-client/lib/defs/protocolMapperRepresentation.js';
import { decodeJwt, type JWTPayload } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpDatabases, eventually, startServer, startServerPair, type TestServer } from './support/server.js';
import { masterAdminClient, rejects } from './support/admin-client.js';
import { FormClient, inputValue, pkce } from './support/forms.js';
import { ALICE } from './support/alice.js';

/**
 * Client scopes and protocol mappers as a Keycloak user sets them up: the official admin client configures, openid-client
 * fetches tokens, userinfo and introspection, and the claims are checked where each mapper's flags put them. One server
 * (SQLite: HTTP behaviour, issue 36), a realm per test (the pure mapper tests: protocol-mappers.test.ts).
 */

const insecure = { execute: [oidc.allowInsecureRequests] };
const PASSWORD = 'wonderland-42';

type Flags = { access?: boolean; id?: boolean; userinfo?: boolean; introspection?: boolean };
/** The four destination flags; an absent one stays out of the config (introspection then follows the access token). */
function flags({ access, id, userinfo, introspection }: Flags): Record<string, string> {
  const config: Record<string, string> = {};
  if (access !== undefined) config['access.token.claim'] = String(access);
  if (id !== undefined) config['id.token.claim'] = String(id);
  if (userinfo !== undefined) config['userinfo.token.claim'] = String(userinfo);
  if (introspection !== undefined) config['introspection.token.claim'] = String(introspection);
  return config;
}
const EVERYWHERE = flags({ access: true, id: true, userinfo: true, introspection: true });

function mapper(name: string, type: string, config: Record<string, string>): ProtocolMapperRepresentation {
  return { name, protocol: 'openid-connect', protocolMapper: type, config };
}

interface Issued {
  scope: string | undefined;
  access: JWTPayload;
  id: JWTPayload;
  userinfo: Record<string, unknown>;
  introspection: Record<string, unknown>;
}

interface Realm {
  name: string;
  /** The `app` client's internal id. */
  client: string;
  userId: string;
  config: oidc.Configuration;
  issue(scope?: string): Promise<Issued>;
  accessToken(scope?: string): Promise<JWTPayload>;
}

let realmCount = 0;

/**
 * A new realm with the confidential client `app` (password grant) and alice; `app` has only the `basic` default scope
 * unless `client` says otherwise, so the claims a test checks come from its own mappers.
 */
async function makeRealm(kc: KcAdminClient, url: string, client: ClientRepresentation = {}, tokenUrl = url): Promise<Realm> {
  const name = `m${++realmCount}`;
  kc.setConfig({ realmName: 'master' });
  await kc.realms.create({ realm: name, enabled: true });
  kc.setConfig({ realmName: name });
  const { id } = await kc.clients.create({
    clientId: 'app',
    publicClient: false,
    directAccessGrantsEnabled: true,
    defaultClientScopes: ['basic'],
    optionalClientScopes: [],
    ...client,
    // It introspects its own tokens: Keycloak 26.6.2+ needs the audience check off for that.
    attributes: { 'allow.token.introspection.without.audience.check': 'true', ...client.attributes },
  });
  const secret = (await kc.clients.getClientSecret({ id })).value!;
  const { id: userId } = await kc.users.create(ALICE);
  const config = await oidc.discovery(new URL(`${tokenUrl}/realms/${name}`), 'app', secret, undefined, insecure);
  const grant = (scope: string) => oidc.genericGrantRequest(config, 'password', { username: ALICE.username, password: PASSWORD, scope });
  return {
    name,
    client: id,
    userId,
    config,
    async issue(scope = 'openid') {
      const tokens = await grant(scope);
      // Raw userinfo: openid-client insists on `sub`, which a client without `basic` does not get in its token.
      const response = await fetch(`${tokenUrl}/realms/${name}/protocol/openid-connect/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
      expect(response.status).toBe(200);
      const userinfo = (await response.json()) as Record<string, unknown>;
      const introspection = (await oidc.tokenIntrospection(config, tokens.access_token)) as Record<string, unknown>;
      expect(introspection.active).toBe(true);
      return { scope: tokens.scope, access: decodeJwt(tokens.access_token), id: decodeJwt(tokens.id_token!), userinfo, introspection };
    },
    async accessToken(scope = 'openid') {
      return decodeJwt((await grant(scope)).access_token);
    },
  };
}

/** Where `claim` is, of the four places, and its value in each. */
function where(issued: Issued, claim: string) {
  const pick = (doc: Record<string, unknown>) => doc[claim];
  return { access: pick(issued.access), id: pick(issued.id), userinfo: pick(issued.userinfo), introspection: pick(issued.introspection) };
}

/** A client scope of the current realm, with the given attributes; its id. */
async function createScope(kc: KcAdminClient, name: string, attributes: Record<string, string> = {}): Promise<string> {
  await kc.clientScopes.create({ name, protocol: 'openid-connect', attributes });
  return (await kc.clientScopes.findOneByName({ name }))!.id!;
}

describe.each(httpDatabases)('mappers end to end (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
  });
  afterAll(() => t?.close());

  describe('each mapper type, in the places its flags name', () => {
    it('oidc-audience-mapper: a client audience and a custom one, on a client scope', async () => {
      const r = await makeRealm(kc, t.url);
      await kc.clients.create({ clientId: 'orders-api', publicClient: false });
      const scopeId = await createScope(kc, 'audiences');
      await kc.clientScopes.addProtocolMapper({ id: scopeId }, mapper('orders', 'oidc-audience-mapper', { 'included.client.audience': 'orders-api', ...flags({ access: true, id: false, introspection: true }) }));
      await kc.clientScopes.addProtocolMapper({ id: scopeId }, mapper('custom', 'oidc-audience-mapper', { 'included.custom.audience': 'https://api.example', ...flags({ access: true, introspection: false }) }));
      await kc.clients.addDefaultClientScope({ id: r.client, clientScopeId: scopeId });
      let issued = await r.issue();
      expect(issued.access.aud).toEqual(expect.arrayContaining(['orders-api', 'https://api.example']));
      expect(issued.id.aud).toBe('app');
      // The ID token's audience is the client, plus what an audience mapper marked for it adds.
      await kc.clients.addProtocolMapper({ id: r.client }, mapper('id audience', 'oidc-audience-mapper', { 'included.custom.audience': 'id-reader', ...flags({ access: false, id: true }) }));
      issued = await r.issue();
      expect(issued.id.aud).toEqual(['app', 'id-reader']);
      expect(issued.access.aud).not.toContain('id-reader');
      expect(issued.userinfo.aud).toBeUndefined();
      const introspected = ([] as unknown[]).concat(issued.introspection.aud ?? []);
      expect(introspected).toContain('orders-api');
      expect(introspected).not.toContain('https://api.example');
    });

    it('oidc-hardcoded-claim-mapper: String, long, boolean and JSON; dotted names nest, \\. keeps a dot', async () => {
      const r = await makeRealm(kc, t.url);
      await kc.clients.addMultipleProtocolMappers({ id: r.client }, [
        mapper('string', 'oidc-hardcoded-claim-mapper', { 'claim.name': 'org.team.name', 'claim.value': 'blue', 'jsonType.label': 'String', ...flags({ access: true }) }),
        mapper('long', 'oidc-hardcoded-claim-mapper', { 'claim.name': 'answer', 'claim.value': '42', 'jsonType.label': 'long', ...flags({ access: false, id: true }) }),
        mapper('boolean', 'oidc-hardcoded-claim-mapper', { 'claim.name': 'is_cool', 'claim.value': 'true', 'jsonType.label': 'boolean', ...flags({ userinfo: true }) }),
        mapper('json', 'oidc-hardcoded-claim-mapper', { 'claim.name': 'blob', 'claim.value': '{"a":[1,2],"b":{"c":true}}', 'jsonType.label': 'JSON', ...flags({ access: false, introspection: true }) }),
        mapper('escaped', 'oidc-hardcoded-claim-mapper', { 'claim.name': 'www\\.example\\.com.tier', 'claim.value': 'gold', 'jsonType.label': 'String', ...EVERYWHERE }),
      ]);
      const issued = await r.issue();
      // String, access only: the introspection follows the access token when its flag is absent.
      expect(where(issued, 'org')).toEqual({ access: { team: { name: 'blue' } }, id: undefined, userinfo: undefined, introspection: { team: { name: 'blue' } } });
      expect(where(issued, 'answer')).toEqual({ access: undefined, id: 42, userinfo: undefined, introspection: undefined });
      expect(where(issued, 'is_cool')).toEqual({ access: undefined, id: undefined, userinfo: true, introspection: undefined });
      expect(where(issued, 'blob')).toEqual({ access: undefined, id: undefined, userinfo: undefined, introspection: { a: [1, 2], b: { c: true } } });
      const escaped = { tier: 'gold' };
      expect(where(issued, 'www.example.com')).toEqual({ access: escaped, id: escaped, userinfo: escaped, introspection: escaped });
      expect(issued.access.www).toBeUndefined();
    });

    it('oidc-usermodel-attribute-mapper: a multivalued attribute, as a list or its first value', async () => {
      const r = await makeRealm(kc, t.url);
      await kc.users.update({ id: r.userId }, { ...ALICE, attributes: { shoe: ['42', '43'], team: ['blue'] } });
      const scopeId = await createScope(kc, 'attributes');
      await kc.clientScopes.addMultipleProtocolMappers({ id: scopeId }, [
        mapper('shoes', 'oidc-usermodel-attribute-mapper', { 'user.attribute': 'shoe', 'claim.name': 'shoes', 'jsonType.label': 'long', multivalued: 'true', ...EVERYWHERE }),
        mapper('shoe', 'oidc-usermodel-attribute-mapper', { 'user.attribute': 'shoe', 'claim.name': 'shoe', 'jsonType.label': 'String', ...flags({ access: true, id: false, userinfo: false }) }),
        mapper('team', 'oidc-usermodel-attribute-mapper', { 'user.attribute': 'team', 'claim.name': 'team', 'jsonType.label': 'String', multivalued: 'true', ...flags({ id: true }) }),
        mapper('missing', 'oidc-usermodel-attribute-mapper', { 'user.attribute': 'nothing', 'claim.name': 'nothing', ...EVERYWHERE }),
      ]);
      await kc.clients.addDefaultClientScope({ id: r.client, clientScopeId: scopeId });
      const issued = await r.issue();
      expect(where(issued, 'shoes')).toEqual({ access: [42, 43], id: [42, 43], userinfo: [42, 43], introspection: [42, 43] });
      expect(where(issued, 'shoe')).toEqual({ access: '42', id: undefined, userinfo: undefined, introspection: '42' });
      expect(where(issued, 'team')).toEqual({ access: undefined, id: ['blue'], userinfo: undefined, introspection: undefined });
      expect(where(issued, 'nothing')).toEqual({ access: undefined, id: undefined, userinfo: undefined, introspection: undefined });
    });

    it('oidc-usermodel-property-mapper: the user\'s properties', async () => {
      const r = await makeRealm(kc, t.url);
      await kc.clients.addMultipleProtocolMappers({ id: r.client }, [
        mapper('mail', 'oidc-usermodel-property-mapper', { 'user.attribute': 'email', 'claim.name': 'mail', 'jsonType.label': 'String', ...flags({ access: true, userinfo: true }) }),
        mapper('login', 'oidc-usermodel-property-mapper', { 'user.attribute': 'username', 'claim.name': 'login', 'jsonType.label': 'String', ...flags({ id: true, introspection: true }) }),
      ]);
      const issued = await r.issue();
      expect(where(issued, 'mail')).toEqual({ access: 'alice@example.com', id: undefined, userinfo: 'alice@example.com', introspection: 'alice@example.com' });
      expect(where(issued, 'login')).toEqual({ access: undefined, id: 'alice', userinfo: undefined, introspection: 'alice' });
    });

    it('oidc-usermodel-realm-role-mapper with a role prefix', async () => {
      const r = await makeRealm(kc, t.url);
      await kc.roles.create({ name: 'viewer' });
      const viewer = (await kc.roles.findOneByName({ name: 'viewer' }))!;
      await kc.users.addRealmRoleMappings({ id: r.userId, roles: [{ id: viewer.id!, name: 'viewer' }] });
      await kc.clients.addProtocolMapper({ id: r.client }, mapper('realm roles', 'oidc-usermodel-realm-role-mapper', { 'claim.name': 'my.roles', 'usermodel.realmRoleMapping.rolePrefix': 'realm_', multivalued: 'true', 'jsonType.label': 'String', ...flags({ access: true, id: true, userinfo: false }) }));
      const issued = await r.issue();
      const roles = (issued.access.my as { roles: string[] }).roles;
      expect(roles).toEqual(expect.arrayContaining(['realm_viewer', 'realm_offline_access', 'realm_uma_authorization', `realm_default-roles-${r.name}`]));
      expect(roles.every((role) => role.startsWith('realm_'))).toBe(true);
      expect((issued.id.my as { roles: string[] }).roles.sort()).toEqual([...roles].sort());
      expect(issued.userinfo.my).toBeUndefined();
      expect((issued.introspection.my as { roles: string[] }).roles.sort()).toEqual([...roles].sort());
    });

    it('oidc-usermodel-client-role-mapper: ${client_id} in the claim name, the clientId filter and a prefix', async () => {
      const r = await makeRealm(kc, t.url);
      const held: [string, string][] = [['orders-api', 'reader'], ['orders-api', 'writer'], ['billing.svc', 'payer']];
      const clients = new Map<string, string>();
      for (const clientId of ['orders-api', 'billing.svc']) clients.set(clientId, (await kc.clients.create({ clientId, publicClient: false })).id);
      for (const [clientId, role] of held) {
        const id = clients.get(clientId)!;
        await kc.clients.createRole({ id, name: role });
        const found = (await kc.clients.findRole({ id, roleName: role }))!;
        await kc.users.addClientRoleMappings({ id: r.userId, clientUniqueId: id, roles: [{ id: found.id!, name: role }] });
      }
      const scopeId = await createScope(kc, 'client-roles');
      await kc.clientScopes.addMultipleProtocolMappers({ id: scopeId }, [
        mapper('per client', 'oidc-usermodel-client-role-mapper', { 'claim.name': 'apps.${client_id}.roles', multivalued: 'true', 'jsonType.label': 'String', ...flags({ access: true, id: false, userinfo: true }) }),
        mapper('orders only', 'oidc-usermodel-client-role-mapper', { 'claim.name': 'orders_roles', 'usermodel.clientRoleMapping.clientId': 'orders-api', 'usermodel.clientRoleMapping.rolePrefix': 'ord_', multivalued: 'true', 'jsonType.label': 'String', ...flags({ id: true }) }),
      ]);
      await kc.clients.addDefaultClientScope({ id: r.client, clientScopeId: scopeId });
      const issued = await r.issue();
      const sorted = (apps: unknown) => Object.fromEntries(Object.entries(apps as Record<string, { roles: string[] }>).map(([k, v]) => [k, [...v.roles].sort()]));
      // The client id's dot is kept: one key per client.
      const perClient = { 'orders-api': ['reader', 'writer'], 'billing.svc': ['payer'] };
      // Every client's roles the user holds: the default roles' account roles too.
      expect(sorted(issued.access.apps)).toEqual({ ...perClient, account: ['manage-account', 'manage-account-links', 'view-profile'] });
      expect(sorted(issued.userinfo.apps)).toEqual(sorted(issued.access.apps));
      expect(sorted(issued.introspection.apps)).toEqual(sorted(issued.access.apps));
      expect(issued.id.apps).toBeUndefined();
      expect([...(issued.id.orders_roles as string[])].sort()).toEqual(['ord_reader', 'ord_writer']);
      expect(issued.access.orders_roles).toBeUndefined();
    });

    it('oidc-group-membership-mapper: full paths or names, for a user in a subgroup', async () => {
      const r = await makeRealm(kc, t.url);
      const { id: eng } = await kc.groups.create({ name: 'eng' });
      const { id: backend } = await kc.groups.createChildGroup({ id: eng }, { name: 'backend' });
      await kc.users.addToGroup({ id: r.userId, groupId: backend });
      await kc.clients.addMultipleProtocolMappers({ id: r.client }, [
        mapper('paths', 'oidc-group-membership-mapper', { 'claim.name': 'group_paths', 'full.path': 'true', ...EVERYWHERE }),
        mapper('names', 'oidc-group-membership-mapper', { 'claim.name': 'group_names', 'full.path': 'false', ...flags({ access: true, id: false, userinfo: false, introspection: false }) }),
      ]);
      const issued = await r.issue();
      expect(where(issued, 'group_paths')).toEqual({ access: ['/eng/backend'], id: ['/eng/backend'], userinfo: ['/eng/backend'], introspection: ['/eng/backend'] });
      expect(where(issued, 'group_names')).toEqual({ access: ['backend'], id: undefined, userinfo: undefined, introspection: undefined });
    });

    it('oidc-full-name-mapper, oidc-usersessionmodel-note-mapper and oidc-address-mapper', async () => {
      const r = await makeRealm(kc, t.url);
      const address = { street: ['Main St 1'], locality: ['Springfield'], postal_code: ['12345'], country: ['DE'], homeRegion: ['Bavaria'] };
      await kc.users.update({ id: r.userId }, { ...ALICE, attributes: address });
      const scopeId = await createScope(kc, 'person');
      await kc.clientScopes.addMultipleProtocolMappers({ id: scopeId }, [
        mapper('full name', 'oidc-full-name-mapper', flags({ access: false, id: true, userinfo: true })),
        mapper('login time', 'oidc-usersessionmodel-note-mapper', { 'user.session.note': 'AUTH_TIME', 'claim.name': 'login_time', 'jsonType.label': 'long', ...flags({ access: true, id: true, userinfo: false }) }),
        mapper('address', 'oidc-address-mapper', { 'user.attribute.region': 'homeRegion', ...flags({ access: true, id: false, userinfo: true, introspection: true }) }),
      ]);
      await kc.clients.addDefaultClientScope({ id: r.client, clientScopeId: scopeId });
      const before = Math.floor(Date.now() / 1000);
      const issued = await r.issue();
      expect(where(issued, 'name')).toEqual({ access: undefined, id: 'Alice Liddell', userinfo: 'Alice Liddell', introspection: undefined });
      const login = where(issued, 'login_time');
      expect(login.access).toBeTypeOf('number');
      expect(login.access as number).toBeGreaterThanOrEqual(before - 1);
      expect(login).toEqual({ access: login.access, id: login.access, userinfo: undefined, introspection: login.access });
      const expected = { street_address: 'Main St 1', locality: 'Springfield', region: 'Bavaria', postal_code: '12345', country: 'DE' };
      expect(where(issued, 'address')).toEqual({ access: expected, id: undefined, userinfo: expected, introspection: expected });
    });
  });

  it('mappers writing one claim: multivalued lists merge, a later single value overwrites, client before scope', async () => {
    const r = await makeRealm(kc, t.url);
    await kc.users.update({ id: r.userId }, { ...ALICE, attributes: { tags: ['a', 'b'], extra: ['c'] } });
    await kc.roles.create({ name: 'viewer' });
    const viewer = (await kc.roles.findOneByName({ name: 'viewer' }))!;
    await kc.users.addRealmRoleMappings({ id: r.userId, roles: [{ id: viewer.id!, name: 'viewer' }] });
    const scopeId = await createScope(kc, 'later');
    await kc.clients.addMultipleProtocolMappers({ id: r.client }, [
      mapper('tags', 'oidc-usermodel-attribute-mapper', { 'user.attribute': 'tags', 'claim.name': 'tags', multivalued: 'true', ...EVERYWHERE }),
      mapper('extra', 'oidc-usermodel-attribute-mapper', { 'user.attribute': 'extra', 'claim.name': 'tags', multivalued: 'true', ...EVERYWHERE }),
      mapper('first', 'oidc-hardcoded-claim-mapper', { 'claim.name': 'winner', 'claim.value': 'client', ...EVERYWHERE }),
      mapper('roles as text', 'oidc-usermodel-realm-role-mapper', { 'claim.name': 'role_text', 'usermodel.realmRoleMapping.rolePrefix': 'x_', ...EVERYWHERE }),
    ]);
    await kc.clientScopes.addProtocolMapper({ id: scopeId }, mapper('second', 'oidc-hardcoded-claim-mapper', { 'claim.name': 'winner', 'claim.value': 'scope', ...EVERYWHERE }));
    await kc.clients.addDefaultClientScope({ id: r.client, clientScopeId: scopeId });
    const issued = await r.issue();
    for (const doc of [issued.access, issued.id, issued.userinfo, issued.introspection]) {
      expect([...(doc.tags as string[])].sort()).toEqual(['a', 'b', 'c']);
      expect(doc.winner).toBe('scope');
      // Not multivalued: the role list as one string.
      expect(doc.role_text).toBeTypeOf('string');
      expect(doc.role_text).toMatch(/x_viewer/);
    }
  });

  it('the authorization code flow and a refresh: the scopes asked for at /auth, mappers applied again on refresh', async () => {
    const callback = 'https://app.example/cb';
    const r = await makeRealm(kc, t.url, { redirectUris: [callback], standardFlowEnabled: true });
    const hidden = await createScope(kc, 'hidden', { 'include.in.token.scope': 'false' });
    await kc.clientScopes.addMultipleProtocolMappers({ id: hidden }, [
      mapper('tier', 'oidc-hardcoded-claim-mapper', { 'claim.name': 'tier', 'claim.value': 'gold', ...EVERYWHERE }),
      mapper('login time', 'oidc-usersessionmodel-note-mapper', { 'user.session.note': 'AUTH_TIME', 'claim.name': 'login_time', 'jsonType.label': 'long', ...EVERYWHERE }),
    ]);
    await kc.clients.addOptionalClientScope({ id: r.client, clientScopeId: hidden });
    const browser = new FormClient(t.url);
    const { verifier, challenge } = pkce();
    const query = new URLSearchParams({ client_id: 'app', redirect_uri: callback, response_type: 'code', scope: 'openid hidden', code_challenge: challenge, code_challenge_method: 'S256', state: 's1' });
    const page = await browser.get(`/realms/${r.name}/protocol/openid-connect/auth?${query}`);
    const signedIn = await browser.post(`/realms/${r.name}/login-actions/authenticate`, { username: ALICE.username, password: PASSWORD, session_code: inputValue(page.text, 'session_code')! });
    expect(signedIn.status).toBe(302);
    const tokens = await oidc.authorizationCodeGrant(r.config, new URL(signedIn.location!), { pkceCodeVerifier: verifier, expectedState: 's1' });
    expect(tokens.scope).toBe('openid');
    const access = decodeJwt(tokens.access_token);
    expect(access.tier).toBe('gold');
    expect(access.login_time).toBe(access.auth_time);
    expect(decodeJwt(tokens.id_token!)).toMatchObject({ tier: 'gold', login_time: access.auth_time });

    // A refresh keeps what the login asked for, and runs the mappers as they are now.
    const [tier] = (await kc.clientScopes.listProtocolMappers({ id: hidden })).filter((m) => m.name === 'tier');
    await kc.clientScopes.updateProtocolMapper({ id: hidden, mapperId: tier.id! }, { ...tier, config: { ...tier.config, 'claim.value': 'platinum' } });
    const refreshed = await oidc.refreshTokenGrant(r.config, tokens.refresh_token!);
    const again = decodeJwt(refreshed.access_token);
    expect(again).toMatchObject({ tier: 'platinum', login_time: access.auth_time, sub: r.userId });
    expect(decodeJwt(refreshed.id_token!).tier).toBe('platinum');
  });

  it('a service account\'s token: the client\'s mappers on its service-account user; no ID token', async () => {
    const r = await makeRealm(kc, t.url, { serviceAccountsEnabled: true });
    const account = await kc.clients.getServiceAccountUser({ id: r.client });
    await kc.users.update({ id: account.id! }, { ...account, attributes: { team: ['robots'] } });
    await kc.clients.addMultipleProtocolMappers({ id: r.client }, []);
    await kc.clients.addMultipleProtocolMappers({ id: r.client }, [
      mapper('team', 'oidc-usermodel-attribute-mapper', { 'user.attribute': 'team', 'claim.name': 'team', ...EVERYWHERE }),
      mapper('kind', 'oidc-hardcoded-claim-mapper', { 'claim.name': 'kind', 'claim.value': 'machine', ...EVERYWHERE }),
    ]);
    const tokens = await oidc.clientCredentialsGrant(r.config);
    expect(tokens.id_token).toBeUndefined();
    const access = decodeJwt(tokens.access_token);
    expect(access).toMatchObject({ team: 'robots', kind: 'machine', sub: account.id, client_id: 'app' });
    const introspection = (await oidc.tokenIntrospection(r.config, tokens.access_token)) as Record<string, unknown>;
    expect(introspection).toMatchObject({ active: true, team: 'robots', kind: 'machine', client_id: 'app' });
  });

  describe('default and optional scopes of a client', () => {
    it('without basic the access token has no sub; userinfo and introspection still answer for it', async () => {
      const r = await makeRealm(kc, t.url, { defaultClientScopes: undefined, optionalClientScopes: undefined });
      const basic = (await kc.clientScopes.findOneByName({ name: 'basic' }))!;
      expect((await kc.clients.listDefaultClientScopes({ id: r.client })).map((s) => s.name)).toContain('basic');
      await kc.clients.delDefaultClientScope({ id: r.client, clientScopeId: basic.id! });
      expect((await kc.clients.listDefaultClientScopes({ id: r.client })).map((s) => s.name)).not.toContain('basic');
      const issued = await r.issue();
      expect(issued.access.sub).toBeUndefined();
      expect(issued.access.auth_time).toBeUndefined();
      expect(issued.access.preferred_username).toBe('alice');
      // The ID token's sub is the token's mechanics, not basic's.
      expect(issued.id.sub).toBe(r.userId);
      // Userinfo always answers sub (Keycloak writes the user's id when no mapper did).
      expect(issued.userinfo).toMatchObject({ sub: r.userId, preferred_username: 'alice', email: 'alice@example.com' });
      expect(issued.introspection).toMatchObject({ active: true, preferred_username: 'alice', client_id: 'app' });
      expect(issued.introspection.sub).toBeUndefined();
    });

    it('phone as a default scope and profile removed change the token; a hidden optional scope applies but is not in scope', async () => {
      const r = await makeRealm(kc, t.url, { defaultClientScopes: undefined, optionalClientScopes: undefined });
      await kc.users.update({ id: r.userId }, { ...ALICE, attributes: { phoneNumber: ['+49 1'] } });
      const before = await r.issue();
      expect(before.scope).toBe('openid email profile');
      expect(before.access.preferred_username).toBe('alice');
      expect(before.access.phone_number).toBeUndefined();

      const phone = (await kc.clientScopes.findOneByName({ name: 'phone' }))!;
      const profile = (await kc.clientScopes.findOneByName({ name: 'profile' }))!;
      await kc.clients.addDefaultClientScope({ id: r.client, clientScopeId: phone.id! });
      await kc.clients.delDefaultClientScope({ id: r.client, clientScopeId: profile.id! });
      expect((await kc.clients.listOptionalClientScopes({ id: r.client })).map((s) => s.name)).not.toContain('phone');

      const hidden = await createScope(kc, 'hidden', { 'include.in.token.scope': 'false' });
      await kc.clientScopes.addProtocolMapper({ id: hidden }, mapper('secret tier', 'oidc-hardcoded-claim-mapper', { 'claim.name': 'tier', 'claim.value': 'gold', 'jsonType.label': 'String', ...EVERYWHERE }));
      await kc.clients.addOptionalClientScope({ id: r.client, clientScopeId: hidden });

      const after = await r.issue();
      expect(after.scope).toBe('openid email phone');
      expect(after.access.scope).toBe('openid email phone');
      expect(after.access).toMatchObject({ phone_number: '+49 1', email: 'alice@example.com' });
      expect(after.access.preferred_username).toBeUndefined();
      expect(after.access.given_name).toBeUndefined();
      expect(after.id.preferred_username).toBeUndefined();
      expect(after.userinfo.preferred_username).toBeUndefined();
      expect(after.userinfo.phone_number).toBe('+49 1');
      expect(after.access.tier).toBeUndefined();

      const asked = await r.issue('openid hidden');
      expect(asked.scope).toBe('openid email phone');
      expect(asked.access.scope).toBe('openid email phone');
      expect(asked.access.tier).toBe('gold');
      expect(asked.id.tier).toBe('gold');
      // Userinfo and introspection re-apply the scopes the token's scope names, as Keycloak: not this one.
      expect(asked.userinfo.tier).toBeUndefined();
    });
  });

  describe('the admin API refuses bad mappers', () => {
    it('unknown type, reserved claim, wrong-typed config, duplicate name; a refused batch stores nothing', async () => {
      const r = await makeRealm(kc, t.url);
      const scopeId = await createScope(kc, 'checked');
      const good = mapper('good', 'oidc-hardcoded-claim-mapper', { 'claim.name': 'ok', 'claim.value': 'yes', ...EVERYWHERE });
      await kc.clientScopes.addProtocolMapper({ id: scopeId }, good);
      await kc.clients.addProtocolMapper({ id: r.client }, good);

      const bad: [ProtocolMapperRepresentation, RegExp][] = [
        [mapper('unknown', 'oidc-no-such-mapper', {}), /oidc-no-such-mapper|protocolMapper/],
        [mapper('sub', 'oidc-hardcoded-claim-mapper', { 'claim.name': 'sub', 'claim.value': 'x' }), /claim\.name/],
        [mapper('iss', 'oidc-usermodel-property-mapper', { 'claim.name': 'iss.nested', 'user.attribute': 'email' }), /claim\.name/],
        [mapper('long', 'oidc-hardcoded-claim-mapper', { 'claim.name': 'n', 'claim.value': 'many', 'jsonType.label': 'long' }), /claim\.value/],
        [mapper('flag', 'oidc-hardcoded-claim-mapper', { 'claim.name': 'n', 'claim.value': '1', 'access.token.claim': 'yes' }), /access\.token\.claim/],
        // Numbers and booleans are taken as their text (as Keycloak's JSON reading does); an object is not a string.
        [{ ...mapper('object', 'oidc-hardcoded-claim-mapper', {}), config: { 'claim.name': 'n', 'claim.value': { a: 1 } as unknown as string } }, /config/],
        [mapper('type', 'oidc-hardcoded-claim-mapper', { 'claim.name': 'n', 'claim.value': '1', 'jsonType.label': 'float' }), /jsonType\.label/],
      ];
      for (const [representation, message] of bad) {
        await rejects(kc.clientScopes.addProtocolMapper({ id: scopeId }, representation), 400, message);
        await rejects(kc.clients.addProtocolMapper({ id: r.client }, representation), 400, message);
      }
      await rejects(kc.clientScopes.addProtocolMapper({ id: scopeId }, good), 409);
      await rejects(kc.clients.addProtocolMapper({ id: r.client }, { ...good, config: { ...good.config, 'claim.value': 'other' } }), 409);

      // add-models: all or nothing, whether the bad one is invalid or a duplicate (of a stored one or of its neighbour).
      const fresh = (name: string) => mapper(name, 'oidc-hardcoded-claim-mapper', { 'claim.name': name, 'claim.value': 'v', ...EVERYWHERE });
      const batches: [ProtocolMapperRepresentation[], number][] = [
        [[fresh('a1'), fresh('a2'), mapper('bad', 'oidc-hardcoded-claim-mapper', { 'claim.name': 'iss', 'claim.value': 'x' })], 400],
        [[fresh('b1'), good], 409],
        [[fresh('c1'), fresh('c1')], 409],
      ];
      for (const [batch, status] of batches) {
        await rejects(kc.clientScopes.addMultipleProtocolMappers({ id: scopeId }, batch), status);
        await rejects(kc.clients.addMultipleProtocolMappers({ id: r.client }, batch), status);
      }
      expect((await kc.clientScopes.listProtocolMappers({ id: scopeId })).map((m) => m.name)).toEqual(['good']);
      expect((await kc.clients.listProtocolMappers({ id: r.client })).map((m) => m.name)).toEqual(['good']);
      expect((await r.issue()).access.ok).toBe('yes');
    });
  });

  describe('fullScopeAllowed: false and client scopes\' role scope mappings', () => {
    it('a scope\'s role is in the token only when that scope applies', async () => {
      const r = await makeRealm(kc, t.url, { fullScopeAllowed: false, defaultClientScopes: ['basic', 'roles'] });
      const roles = new Map<string, { id: string; name: string }>();
      for (const name of ['viewer', 'editor', 'unscoped']) {
        await kc.roles.create({ name });
        const role = (await kc.roles.findOneByName({ name }))!;
        roles.set(name, { id: role.id!, name });
      }
      await kc.users.addRealmRoleMappings({ id: r.userId, roles: [...roles.values()] });
      const byDefault = await createScope(kc, 'sees');
      const optional = await createScope(kc, 'edits');
      await kc.clientScopes.addRealmScopeMappings({ id: byDefault }, [roles.get('viewer')!]);
      await kc.clientScopes.addRealmScopeMappings({ id: optional }, [roles.get('editor')!]);
      await kc.clients.addDefaultClientScope({ id: r.client, clientScopeId: byDefault });
      await kc.clients.addOptionalClientScope({ id: r.client, clientScopeId: optional });

      const realmRoles = (token: JWTPayload) => [...((token.realm_access as { roles?: string[] } | undefined)?.roles ?? [])].sort();
      expect(realmRoles(await r.accessToken('openid'))).toEqual(['viewer']);
      expect(realmRoles(await r.accessToken('openid edits'))).toEqual(['editor', 'viewer']);
      // The introspection of a token answers what the token's scopes allow.
      const issued = await r.issue('openid edits');
      expect([...((issued.introspection.realm_access as { roles: string[] }).roles)].sort()).toEqual(['editor', 'viewer']);

      // Not linked to the client any more: its role mapping no longer counts.
      await kc.clients.delDefaultClientScope({ id: r.client, clientScopeId: byDefault });
      expect(realmRoles(await r.accessToken('openid'))).toEqual([]);
      expect(realmRoles(await r.accessToken('openid edits'))).toEqual(['editor']);
    });
  });

  describe('changing a mapper', () => {
    it('the next token shows the change at once', async () => {
      const r = await makeRealm(kc, t.url);
      const scopeId = await createScope(kc, 'live');
      await kc.clientScopes.addProtocolMapper({ id: scopeId }, mapper('tier', 'oidc-hardcoded-claim-mapper', { 'claim.name': 'tier', 'claim.value': 'silver', ...EVERYWHERE }));
      await kc.clients.addDefaultClientScope({ id: r.client, clientScopeId: scopeId });
      expect((await r.accessToken()).tier).toBe('silver');
      const [stored] = await kc.clientScopes.listProtocolMappers({ id: scopeId });
      await kc.clientScopes.updateProtocolMapper({ id: scopeId, mapperId: stored.id! }, { ...stored, config: { ...stored.config, 'claim.value': 'gold' } });
      expect((await r.accessToken()).tier).toBe('gold');
      await kc.clientScopes.updateProtocolMapper({ id: scopeId, mapperId: stored.id! }, { ...stored, config: { ...stored.config, 'claim.value': 'gold', 'access.token.claim': 'false' } });
      expect((await r.accessToken()).tier).toBeUndefined();
      await kc.clientScopes.delProtocolMapper({ id: scopeId, mapperId: stored.id! });
      expect((await r.issue()).id.tier).toBeUndefined();

      // A client's own mapper too.
      await kc.clients.addProtocolMapper({ id: r.client }, mapper('own', 'oidc-hardcoded-claim-mapper', { 'claim.name': 'own', 'claim.value': 'one', ...EVERYWHERE }));
      expect((await r.accessToken()).own).toBe('one');
      const [own] = await kc.clients.listProtocolMappers({ id: r.client });
      await kc.clients.updateProtocolMapper({ id: r.client, mapperId: own.id! }, { ...own, config: { ...own.config, 'claim.value': 'two' } });
      expect((await r.accessToken()).own).toBe('two');
    });

    it('the next token follows what the mappers read: groups, attributes, client ids, a scope\'s roles', async () => {
      const r = await makeRealm(kc, t.url, { fullScopeAllowed: false, defaultClientScopes: ['basic', 'roles'] });
      const { id: eng } = await kc.groups.create({ name: 'eng' });
      const { id: backend } = await kc.groups.createChildGroup({ id: eng }, { name: 'backend' });
      const { id: ops } = await kc.groups.create({ name: 'ops' });
      await kc.users.addToGroup({ id: r.userId, groupId: backend });
      const { id: api } = await kc.clients.create({ clientId: 'orders-api', publicClient: false });
      await kc.clients.createRole({ id: api, name: 'reader' });
      const reader = (await kc.clients.findRole({ id: api, roleName: 'reader' }))!;
      await kc.users.addClientRoleMappings({ id: r.userId, clientUniqueId: api, roles: [{ id: reader.id!, name: 'reader' }] });
      await kc.roles.create({ name: 'viewer' });
      const viewer = (await kc.roles.findOneByName({ name: 'viewer' }))!;
      await kc.users.addRealmRoleMappings({ id: r.userId, roles: [{ id: viewer.id!, name: 'viewer' }] });
      const scopeId = await createScope(kc, 'reads');
      await kc.clientScopes.addMultipleProtocolMappers({ id: scopeId }, [
        mapper('groups', 'oidc-group-membership-mapper', { 'claim.name': 'groups', 'full.path': 'true', ...EVERYWHERE }),
        mapper('team', 'oidc-usermodel-attribute-mapper', { 'user.attribute': 'team', 'claim.name': 'team', ...EVERYWHERE }),
        mapper('apps', 'oidc-usermodel-client-role-mapper', { 'claim.name': 'apps.${client_id}', multivalued: 'true', ...EVERYWHERE }),
      ]);
      await kc.clientScopes.addClientScopeMappings({ id: scopeId, client: api }, [{ id: reader.id!, name: 'reader' }]);
      await kc.clients.addDefaultClientScope({ id: r.client, clientScopeId: scopeId });
      const first = await r.accessToken();
      expect(first).toMatchObject({ groups: ['/eng/backend'], apps: { 'orders-api': ['reader'] } });
      expect(first.team).toBeUndefined();
      expect(first.realm_access).toBeUndefined();

      await kc.groups.update({ id: eng }, { name: 'engineering' });
      expect((await r.accessToken()).groups).toEqual(['/engineering/backend']);
      await kc.groups.updateChildGroup({ id: ops }, { id: backend, name: 'backend' });
      expect((await r.accessToken()).groups).toEqual(['/ops/backend']);
      await kc.users.update({ id: r.userId }, { ...ALICE, attributes: { team: ['blue'] } });
      expect((await r.accessToken()).team).toBe('blue');
      await kc.clients.update({ id: api }, { ...(await kc.clients.findOne({ id: api })), clientId: 'orders' });
      expect((await r.accessToken()).apps).toEqual({ orders: ['reader'] });
      await kc.clientScopes.addRealmScopeMappings({ id: scopeId }, [{ id: viewer.id!, name: 'viewer' }]);
      expect((await r.accessToken()).realm_access).toEqual({ roles: ['viewer'] });
      await kc.clientScopes.delRealmScopeMappings({ id: scopeId }, [{ id: viewer.id!, name: 'viewer' }]);
      expect((await r.accessToken()).realm_access).toBeUndefined();
      // A client PUT replaces the representation (README): the whole of it, changed.
      await kc.clients.update({ id: r.client }, { ...(await kc.clients.findOne({ id: r.client })), fullScopeAllowed: true });
      expect((await r.accessToken()).realm_access).toEqual({ roles: expect.arrayContaining(['viewer', 'offline_access']) });
      await kc.groups.del({ id: ops });
      expect((await r.accessToken()).groups ?? []).toEqual([]);
    });

    it('a scope renamed, hidden from the token scope, or deleted: the next token follows', async () => {
      const r = await makeRealm(kc, t.url);
      const scopeId = await createScope(kc, 'extra');
      await kc.clientScopes.addProtocolMapper({ id: scopeId }, mapper('tier', 'oidc-hardcoded-claim-mapper', { 'claim.name': 'tier', 'claim.value': 'gold', ...EVERYWHERE }));
      await kc.clients.addOptionalClientScope({ id: r.client, clientScopeId: scopeId });
      expect(await r.accessToken('openid extra')).toMatchObject({ scope: 'openid extra', tier: 'gold' });
      await kc.clientScopes.update({ id: scopeId }, { name: 'bonus', protocol: 'openid-connect', attributes: {} });
      expect(await r.accessToken('openid bonus')).toMatchObject({ scope: 'openid bonus', tier: 'gold' });
      const refused = await oidc.genericGrantRequest(r.config, 'password', { username: ALICE.username, password: PASSWORD, scope: 'openid extra' }).catch((e: unknown) => e);
      expect(refused).toMatchObject({ error: 'invalid_scope' });
      await kc.clientScopes.update({ id: scopeId }, { name: 'bonus', protocol: 'openid-connect', attributes: { 'include.in.token.scope': 'false' } });
      expect(await r.accessToken('openid bonus')).toMatchObject({ scope: 'openid', tier: 'gold' });
      await kc.clientScopes.del({ id: scopeId });
      expect((await r.accessToken()).tier).toBeUndefined();
      expect(await oidc.genericGrantRequest(r.config, 'password', { username: ALICE.username, password: PASSWORD, scope: 'openid bonus' }).catch((e: unknown) => e)).toMatchObject({ error: 'invalid_scope' });
    });
  });
});

describe('two nodes sharing one database and Redis', () => {
  let pair: Awaited<ReturnType<typeof startServerPair>>;
  beforeAll(async () => {
    pair = await startServerPair();
  });
  afterAll(() => pair?.close());

  it('a mapper changed on one node changes the other node\'s next token within 1 s', async () => {
    const kc = await masterAdminClient(pair.a.url);
    const r = await makeRealm(kc, pair.a.url, {}, pair.b.url);
    const scopeId = await createScope(kc, 'shared');
    await kc.clientScopes.addProtocolMapper({ id: scopeId }, mapper('tier', 'oidc-hardcoded-claim-mapper', { 'claim.name': 'tier', 'claim.value': 'silver', ...EVERYWHERE }));
    await kc.clients.addDefaultClientScope({ id: r.client, clientScopeId: scopeId });
    // Node b reads (and caches) the scope set first.
    await eventually(async () => (await r.accessToken()).tier === 'silver', 2000);
    expect((await r.accessToken()).tier).toBe('silver');
    const [stored] = await kc.clientScopes.listProtocolMappers({ id: scopeId });
    await kc.clientScopes.updateProtocolMapper({ id: scopeId, mapperId: stored.id! }, { ...stored, config: { ...stored.config, 'claim.value': 'gold' } });
    await eventually(async () => (await r.accessToken()).tier === 'gold', 1000);
    // And a client's own mapper added on a.
    await kc.clients.addProtocolMapper({ id: r.client }, mapper('own', 'oidc-hardcoded-claim-mapper', { 'claim.name': 'own', 'claim.value': 'one', ...EVERYWHERE }));
    await eventually(async () => (await r.accessToken()).own === 'one', 1000);
    // What a mapper reads, changed on a: a group's name.
    await kc.clients.addProtocolMapper({ id: r.client }, mapper('groups', 'oidc-group-membership-mapper', { 'claim.name': 'groups', 'full.path': 'true', ...EVERYWHERE }));
    const { id: group } = await kc.groups.create({ name: 'eng' });
    await kc.users.addToGroup({ id: r.userId, groupId: group });
    await eventually(async () => JSON.stringify((await r.accessToken()).groups) === '["/eng"]', 1000);
    await kc.groups.update({ id: group }, { name: 'engineering' });
    await eventually(async () => JSON.stringify((await r.accessToken()).groups) === '["/engineering"]', 1000);
  });
});
