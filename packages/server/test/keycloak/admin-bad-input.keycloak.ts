import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { addUser, startBoth, type Both, type Side, type SideName } from './both.js';
import { compareOnBoth, errorShape, type DiffCase } from './compare.js';

/**
 * Issue 41 part 1 (admin): bad input on every admin resource the admin console uses, sent to Keycloak 26.7.3 and to
 * Realmgate alike: a required field missing, an id that names nothing (404), a name taken (409), a field of the
 * wrong type, a body that is not JSON. Compared per row: the status, the names of the error body's fields (never its
 * text), and whether the request wrote something (a listing counted before and after).
 */

/** What the rows' paths name on each side (`{client}` in a path is the id of `app`, and so on). */
type Ids = Record<'client' | 'scope' | 'group' | 'user' | 'flow' | 'org' | 'component' | 'mapper', string>;
const idsOf = new Map<SideName, Ids>();

const UNKNOWN = randomUUID();
const BAD_JSON = Symbol('not JSON');

interface Row {
  resource: string;
  what: string;
  method: string;
  /** Below /admin/realms/{realm} unless it starts with `/admin`; `{name}` is replaced by the side's id of it. */
  path: string;
  body?: unknown;
  /** A GET (same path rules) whose answer's length tells whether the request wrote something. */
  count?: string;
}

/** A raw admin call: the body sent as is when it is a string (bad JSON), as JSON otherwise. */
async function send(side: Side, method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const ids = idsOf.get(side.name)!;
  const filled = path.replace(/\{(\w+)\}/g, (_, name: keyof Ids) => ids[name]);
  const url = filled.startsWith('/admin') ? `${side.url}${filled}` : `${side.url}/admin/realms/${side.realm}${filled}`;
  const token = await (await side.admin()).getAccessToken();
  const response = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : body === BAD_JSON ? '{"name": ' : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: compared as its type
  }
  return { status: response.status, body: parsed };
}

async function sizeOf(side: Side, path: string): Promise<number> {
  const { status, body } = await send(side, 'GET', path);
  if (status !== 200) throw new Error(`${side.name}: GET ${path} answered ${status}`);
  return Array.isArray(body) ? body.length : Object.keys(body as object).length;
}

const created = (resource: string, what: string, path: string, body: unknown, count = path): Row => ({ resource, what, method: 'POST', path, body, count });

const rows: Row[] = [
  // realms
  created('realms', 'a realm without a name', '/admin/realms', {}, '/admin/realms'),
  created('realms', 'a realm whose name is taken', '/admin/realms', { realm: 'master' }, '/admin/realms'),
  { resource: 'realms', what: 'an unknown realm', method: 'GET', path: `/admin/realms/no-such-realm-${UNKNOWN}` },
  { resource: 'realms', what: 'a lifespan that is not a number', method: 'PUT', path: '', body: { accessTokenLifespan: 'long' } },
  { resource: 'realms', what: 'an update that is not JSON', method: 'PUT', path: '', body: BAD_JSON },
  // clients
  created('clients', 'a client without a clientId', '/clients', { name: 'nameless' }),
  created('clients', 'a client whose clientId is taken', '/clients', { clientId: 'app' }),
  created('clients', 'redirectUris that is not a list', '/clients', { clientId: 'wrong-type', redirectUris: 5 }),
  created('clients', 'a client that is not JSON', '/clients', BAD_JSON),
  { resource: 'clients', what: 'an unknown client', method: 'GET', path: `/clients/${UNKNOWN}` },
  { resource: 'clients', what: 'an update of an unknown client', method: 'PUT', path: `/clients/${UNKNOWN}`, body: { clientId: 'ghost' } },
  { resource: 'clients', what: 'a delete of an unknown client', method: 'DELETE', path: `/clients/${UNKNOWN}` },
  // client scopes
  created('client scopes', 'a client scope without a name', '/client-scopes', { protocol: 'openid-connect' }),
  created('client scopes', 'a client scope whose name is taken', '/client-scopes', { name: 'scope1', protocol: 'openid-connect' }),
  { resource: 'client scopes', what: 'an unknown client scope', method: 'GET', path: `/client-scopes/${UNKNOWN}` },
  { resource: 'client scopes', what: 'an unknown default client scope of a client', method: 'PUT', path: `/clients/{client}/default-client-scopes/${UNKNOWN}` },
  // roles
  created('roles', 'a realm role without a name', '/roles', { description: 'nameless' }),
  created('roles', 'a realm role whose name is taken', '/roles', { name: 'role1' }),
  created('roles', 'a client role whose name is taken', '/clients/{client}/roles', { name: 'client-role1' }),
  { resource: 'roles', what: 'an unknown realm role', method: 'GET', path: `/roles/no-such-role-${UNKNOWN}` },
  { resource: 'roles', what: 'an unknown role by id', method: 'GET', path: `/roles-by-id/${UNKNOWN}` },
  { resource: 'roles', what: 'an unknown role added to a user', method: 'POST', path: '/users/{user}/role-mappings/realm', body: [{ id: UNKNOWN, name: 'ghost' }], count: '/users/{user}/role-mappings/realm' },
  // groups
  created('groups', 'a group without a name', '/groups', {}),
  created('groups', 'a group whose name is taken', '/groups', { name: 'group1' }),
  created('groups', 'a subgroup whose name is taken', '/groups/{group}/children', { name: 'child1' }, '/groups/{group}/children'),
  { resource: 'groups', what: 'an unknown group', method: 'GET', path: `/groups/${UNKNOWN}` },
  { resource: 'groups', what: 'a user joining an unknown group', method: 'PUT', path: `/users/{user}/groups/${UNKNOWN}` },
  // users
  created('users', 'a user without a username', '/users', { enabled: true }),
  created('users', 'a user whose username is taken', '/users', { username: 'user1' }),
  created('users', 'a user whose e-mail is taken', '/users', { username: 'other-user', email: 'user1@example.test' }),
  created('users', 'a user with an e-mail that is not one', '/users', { username: 'bad-email', email: 'not an e-mail' }),
  created('users', 'enabled that is not a boolean', '/users', { username: 'wrong-type', enabled: 'maybe' }),
  created('users', 'a user that is not JSON', '/users', BAD_JSON),
  { resource: 'users', what: 'an unknown user', method: 'GET', path: `/users/${UNKNOWN}` },
  { resource: 'users', what: 'an update of an unknown user', method: 'PUT', path: `/users/${UNKNOWN}`, body: { firstName: 'x' } },
  // credentials
  { resource: 'credentials', what: 'a password reset without a value', method: 'PUT', path: '/users/{user}/reset-password', body: { type: 'password', temporary: false }, count: '/users/{user}/credentials' },
  { resource: 'credentials', what: 'a password reset of an unknown user', method: 'PUT', path: `/users/${UNKNOWN}/reset-password`, body: { type: 'password', value: 'Diff-x-1', temporary: false } },
  { resource: 'credentials', what: 'a delete of an unknown credential', method: 'DELETE', path: `/users/{user}/credentials/${UNKNOWN}`, count: '/users/{user}/credentials' },
  // identity providers and their mappers
  created('identity providers', 'a provider without an alias', '/identity-provider/instances', { providerId: 'oidc' }),
  created('identity providers', 'a provider whose alias is taken', '/identity-provider/instances', { alias: 'idp1', providerId: 'oidc', config: { clientId: 'x', clientSecret: 'y', authorizationUrl: 'http://127.0.0.1:1/auth', tokenUrl: 'http://127.0.0.1:1/token' } }),
  created('identity providers', 'a provider of an unknown type', '/identity-provider/instances', { alias: 'odd', providerId: 'no-such-provider' }),
  { resource: 'identity providers', what: 'an unknown provider', method: 'GET', path: `/identity-provider/instances/no-such-idp-${UNKNOWN}` },
  created('identity providers', 'a mapper of an unknown provider', `/identity-provider/instances/no-such-idp-${UNKNOWN}/mappers`, { name: 'm', identityProviderAlias: 'ghost', identityProviderMapper: 'hardcoded-role-idp-mapper', config: {} }, '/identity-provider/instances/idp1/mappers'),
  created('identity providers', 'a mapper of an unknown type', '/identity-provider/instances/idp1/mappers', { name: 'odd', identityProviderAlias: 'idp1', identityProviderMapper: 'no-such-mapper', config: {} }, '/identity-provider/instances/idp1/mappers'),
  { resource: 'identity providers', what: 'an unknown mapper', method: 'GET', path: `/identity-provider/instances/idp1/mappers/${UNKNOWN}` },
  // authentication: flows, executions, required actions
  created('authentication', 'a flow without an alias', '/authentication/flows', { providerId: 'basic-flow', topLevel: true }),
  created('authentication', 'a flow whose alias is taken', '/authentication/flows', { alias: 'browser', providerId: 'basic-flow', topLevel: true }),
  { resource: 'authentication', what: 'an unknown flow', method: 'GET', path: `/authentication/flows/${UNKNOWN}` },
  { resource: 'authentication', what: 'a copy without a new name', method: 'POST', path: '/authentication/flows/browser/copy', body: {}, count: '/authentication/flows' },
  { resource: 'authentication', what: 'a copy to a taken name', method: 'POST', path: '/authentication/flows/browser/copy', body: { newName: 'direct grant' }, count: '/authentication/flows' },
  { resource: 'authentication', what: 'an execution added to an unknown flow', method: 'POST', path: `/authentication/flows/no-such-flow-${UNKNOWN}/executions/execution`, body: { provider: 'auth-cookie' } },
  { resource: 'authentication', what: 'an unknown execution', method: 'GET', path: `/authentication/executions/${UNKNOWN}` },
  { resource: 'authentication', what: 'an unknown authenticator config', method: 'GET', path: `/authentication/config/${UNKNOWN}` },
  { resource: 'authentication', what: 'an unknown required action registered', method: 'POST', path: '/authentication/register-required-action', body: { providerId: 'no-such-action', name: 'x' }, count: '/authentication/required-actions' },
  { resource: 'authentication', what: 'a delete of an unknown required action', method: 'DELETE', path: '/authentication/required-actions/NO_SUCH_ACTION' },
  // components and user federation
  created('components', 'a component of an unknown provider', '/components', { name: 'odd', providerId: 'no-such-provider', providerType: 'org.keycloak.keys.KeyProvider', config: {} }),
  created('components', 'a key provider whose priority is not a number', '/components', { name: 'bad-priority', providerId: 'rsa-generated', providerType: 'org.keycloak.keys.KeyProvider', config: { priority: ['high'] } }),
  created('components', 'an LDAP federation without a connection URL', '/components', { name: 'ldap', providerId: 'ldap', providerType: 'org.keycloak.storage.UserStorageProvider', config: { vendor: ['other'], editMode: ['READ_ONLY'] } }),
  { resource: 'components', what: 'an unknown component', method: 'GET', path: `/components/${UNKNOWN}` },
  { resource: 'components', what: 'an update of an unknown component', method: 'PUT', path: `/components/${UNKNOWN}`, body: { name: 'ghost', providerId: 'rsa-generated', providerType: 'org.keycloak.keys.KeyProvider', config: {} } },
  // organizations
  created('organizations', 'an organization without a name', '/organizations', { domains: [{ name: 'nameless.test' }] }),
  created('organizations', 'an organization whose name is taken', '/organizations', { name: 'org1', domains: [{ name: 'other.test' }] }),
  created('organizations', 'an organization whose domain is taken', '/organizations', { name: 'org2', domains: [{ name: 'org1.test' }] }),
  { resource: 'organizations', what: 'an unknown organization', method: 'GET', path: `/organizations/${UNKNOWN}` },
  { resource: 'organizations', what: 'an unknown user as a member', method: 'POST', path: '/organizations/{org}/members', body: UNKNOWN, count: '/organizations/{org}/members' },
  // client policies
  { resource: 'client policies', what: 'a profile with an unknown executor', method: 'PUT', path: '/client-policies/profiles', body: { profiles: [{ name: 'odd', executors: [{ executor: 'no-such-executor', configuration: {} }] }] }, count: '/client-policies/profiles' },
  { resource: 'client policies', what: 'a policy naming an unknown profile', method: 'PUT', path: '/client-policies/policies', body: { policies: [{ name: 'odd', enabled: true, conditions: [], profiles: ['no-such-profile'] }] }, count: '/client-policies/policies' },
  { resource: 'client policies', what: 'policies that are not JSON', method: 'PUT', path: '/client-policies/policies', body: BAD_JSON, count: '/client-policies/policies' },
  // protocol mappers
  created('protocol mappers', 'a client mapper without a name', '/clients/{client}/protocol-mappers/models', { protocol: 'openid-connect', protocolMapper: 'oidc-hardcoded-claim-mapper', config: {} }),
  created('protocol mappers', 'a client mapper whose name is taken', '/clients/{client}/protocol-mappers/models', { name: 'mapper1', protocol: 'openid-connect', protocolMapper: 'oidc-hardcoded-claim-mapper', config: {} }),
  created('protocol mappers', 'a client mapper of an unknown type', '/clients/{client}/protocol-mappers/models', { name: 'odd', protocol: 'openid-connect', protocolMapper: 'no-such-mapper', config: {} }),
  created('protocol mappers', 'a scope mapper whose name is taken', '/client-scopes/{scope}/protocol-mappers/models', { name: 'scope-mapper1', protocol: 'openid-connect', protocolMapper: 'oidc-hardcoded-claim-mapper', config: {} }),
  { resource: 'protocol mappers', what: 'an unknown mapper', method: 'GET', path: `/clients/{client}/protocol-mappers/models/${UNKNOWN}` },
  // localization
  { resource: 'localization', what: 'texts that are not strings', method: 'POST', path: '/localization/en', body: { greeting: 5, other: { nested: true } }, count: '/localization/en' },
  { resource: 'localization', what: 'texts that are not JSON', method: 'POST', path: '/localization/en', body: BAD_JSON, count: '/localization/en' },
  { resource: 'localization', what: 'a delete of an unknown text', method: 'DELETE', path: '/localization/en/no-such-key', count: '/localization/en' },
];

const HARDCODED_CLAIM = { protocol: 'openid-connect', protocolMapper: 'oidc-hardcoded-claim-mapper', config: { 'claim.name': 'c', 'claim.value': 'v', 'jsonType.label': 'String', 'access.token.claim': 'true' } };

async function setUp(side: Side): Promise<void> {
  const kc = await side.admin();
  await kc.realms.update({ realm: side.realm }, { organizationsEnabled: true });
  const client = (await kc.clients.create({ clientId: 'app', secret: 'app-secret-1', redirectUris: ['http://127.0.0.1:59999/cb'] })).id;
  await kc.clients.createRole({ id: client, name: 'client-role1' });
  await kc.clients.addProtocolMapper({ id: client }, { name: 'mapper1', ...HARDCODED_CLAIM });
  const mapper = (await kc.clients.listProtocolMappers({ id: client })).find((m) => m.name === 'mapper1')!.id!;
  const scope = (await kc.clientScopes.create({ name: 'scope1', protocol: 'openid-connect' })).id;
  await kc.clientScopes.addProtocolMapper({ id: scope }, { name: 'scope-mapper1', ...HARDCODED_CLAIM });
  await kc.roles.create({ name: 'role1' });
  const group = (await kc.groups.create({ name: 'group1' })).id;
  await kc.groups.createChildGroup({ id: group }, { name: 'child1' });
  const user = await addUser(side, 'user1');
  await kc.identityProviders.create({ alias: 'idp1', providerId: 'oidc', config: { clientId: 'x', clientSecret: 'y', authorizationUrl: 'http://127.0.0.1:1/auth', tokenUrl: 'http://127.0.0.1:1/token' } });
  const flow = (await kc.authenticationManagement.getFlows()).find((f) => f.alias === 'browser')!.id!;
  const org = (await kc.organizations.create({ name: 'org1', domains: [{ name: 'org1.test', verified: false }] })).id;
  const component = (await kc.components.find({ type: 'org.keycloak.keys.KeyProvider' }))[0].id!;
  await kc.realms.addLocalization({ realm: side.realm, selectedLocale: 'en', key: 'existing' }, 'text');
  idsOf.set(side.name, { client, scope, group, user, flow, org, component, mapper });
}

/** Each row as a compared case: status and body keys of the answer, and whether its listing changed. */
const cases: DiffCase<void>[] = rows.map((row) => ({
  name: `admin bad input: ${row.resource}: ${row.what}`,
  async observe(side) {
    const before = row.count ? await sizeOf(side, row.count) : 0;
    const answer = await send(side, row.method, row.path, row.body);
    const written = row.count ? (await sizeOf(side, row.count)) !== before : false;
    return { ...errorShape(answer), ...(row.count ? { written } : {}) };
  },
}));

describe(`admin bad input against Keycloak 26.7.3: ${rows.length} rows over ${new Set(rows.map((r) => r.resource)).size} resources`, () => {
  let both: Both;

  beforeAll(async () => {
    both = await startBoth(setUp);
  });

  afterAll(async () => {
    await both?.close();
  });

  for (const row of cases) it(row.name, () => compareOnBoth(both, row, undefined).then(() => {}));
});
