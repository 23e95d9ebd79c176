/**
 * Issue 33, points 5 and 6: the clients that sign administrators in are changed only by a realm administrator
 * (manage-clients alone could point the admin console's redirect URIs at an attacker and collect an administrator's
 * code), and a client's secret goes only to callers who could change its service account (view-clients alone
 * could read the secret of a client whose service account is realm administrator and become one).
 */
import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient, realmManagement, tokenOfUserWithRoles } from './support/admin-client.js';
import { adminToken, api, startServer, type TestServer } from './support/server.js';

const ATTACKER = 'https://attacker.example/*';
const REFUSED = /signs administrators in: only a realm administrator/;

describe('administration clients and client secrets', () => {
  let t: TestServer;
  let kc: KcAdminClient;
  let superAdmin: string;
  /** Tokens of acme users holding only these realm-management roles. */
  let manageClients: string;
  let viewClients: string;
  let realmAdmin: string;
  /** A master user holding master-realm's and acme-realm's manage-clients (not the master admin role). */
  let masterManageClients: string;
  const clientIds = new Map<string, string>();

  const path = (realm: string, clientId: string, rest = '') => `/admin/realms/${realm}/clients/${clientIds.get(`${realm}/${clientId}`)}${rest}`;
  const get = (token: string, realm: string, clientId: string, rest = '') => api(t.url, 'GET', path(realm, clientId, rest), token);
  /** PUTs the client's current representation (as the super admin reads it) with `change` applied. */
  async function putChanged(token: string, realm: string, clientId: string, change: Record<string, unknown>) {
    const current = (await get(superAdmin, realm, clientId)).body as Record<string, unknown>;
    return api(t.url, 'PUT', path(realm, clientId), token, { ...current, ...change });
  }
  const redirectUrisOf = async (realm: string, clientId: string) => ((await get(superAdmin, realm, clientId)).body as { redirectUris: string[] }).redirectUris;

  async function tokenOfMasterUser(username: string, roles: { client: string; role: string }[]): Promise<string> {
    kc.setConfig({ realmName: 'master' });
    const password = `${username}-Pass-1`;
    const { id } = await kc.users.create({ username, enabled: true, credentials: [{ type: 'password', value: password, temporary: false }] });
    for (const { client, role } of roles) {
      const [c] = await kc.clients.find({ clientId: client });
      const r = await kc.clients.findRole({ id: c.id!, roleName: role });
      await kc.users.addClientRoleMappings({ id, clientUniqueId: c.id!, roles: [{ id: r!.id!, name: r!.name! }] });
    }
    const answer = await fetch(`${t.url}/realms/master/protocol/openid-connect/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'password', client_id: 'admin-cli', username, password }),
    });
    return ((await answer.json()) as { access_token: string }).access_token;
  }

  beforeAll(async () => {
    t = await startServer();
    kc = await masterAdminClient(t.url);
    superAdmin = await adminToken(t.url);
    await kc.realms.create({ realm: 'acme', enabled: true });
    kc.setConfig({ realmName: 'acme' });
    manageClients = await tokenOfUserWithRoles(kc, t.url, 'mc', ['manage-clients']);
    viewClients = await tokenOfUserWithRoles(kc, t.url, 'vc', ['view-clients']);
    realmAdmin = await tokenOfUserWithRoles(kc, t.url, 'ra', ['realm-admin']);
    // robot's service account is realm administrator; worker's holds nothing administrative.
    await kc.clients.create({ clientId: 'robot', publicClient: false, serviceAccountsEnabled: true, secret: 'robot-secret-0123456789' });
    await kc.clients.create({ clientId: 'worker', publicClient: false, serviceAccountsEnabled: true, secret: 'worker-secret-0123456789' });
    // Keycloak's broker client (a realm file brings it; new realms here have none).
    await kc.clients.create({ clientId: 'broker', publicClient: false, bearerOnly: true });
    await kc.clients.create({ clientId: 'app', publicClient: true, redirectUris: ['https://app.example/*'] });
    for (const c of await kc.clients.find()) clientIds.set(`acme/${c.clientId}`, c.id!);
    const robotAccount = await kc.clients.getServiceAccountUser({ id: clientIds.get('acme/robot')! });
    const { management, roles } = await realmManagement(kc);
    await kc.users.addClientRoleMappings({ id: robotAccount.id!, clientUniqueId: management, roles: [roles.get('realm-admin')!] as never });
    masterManageClients = await tokenOfMasterUser('mmc', [
      { client: 'master-realm', role: 'manage-clients' },
      { client: 'acme-realm', role: 'manage-clients' },
    ]);
    for (const c of await kc.clients.find()) clientIds.set(`master/${c.clientId}`, c.id!);
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('point 5: a manage-clients administrator cannot re-point an administration client', () => {
    for (const clientId of ['security-admin-console', 'admin-cli', 'account-console', 'broker', 'realm-management']) {
      it(`refuses an attacker's redirect URI on ${clientId}: 403, nothing changed`, async () => {
        const before = await redirectUrisOf('acme', clientId);
        const answer = await putChanged(manageClients, 'acme', clientId, { redirectUris: [...before, ATTACKER] });
        expect(answer.status).toBe(403);
        expect(answer.body.errorMessage).toMatch(REFUSED);
        expect(await redirectUrisOf('acme', clientId)).toEqual(before);
      });
    }

    for (const clientId of ['security-admin-console', 'admin-cli', 'master-realm', 'acme-realm']) {
      it(`in master: refuses an attacker's redirect URI on ${clientId} to a master manage-clients holder`, async () => {
        const before = await redirectUrisOf('master', clientId);
        const answer = await putChanged(masterManageClients, 'master', clientId, { redirectUris: [...before, ATTACKER] });
        expect(answer.status).toBe(403);
        expect(await redirectUrisOf('master', clientId)).toEqual(before);
      });
    }

    it('refuses web origins, the public/confidential switch, flows and full scope on security-admin-console and broker', async () => {
      for (const change of [{ webOrigins: ['https://attacker.example'] }, { publicClient: false }, { implicitFlowEnabled: true }, { directAccessGrantsEnabled: true }, { fullScopeAllowed: false }, { rootUrl: 'https://attacker.example' }, { attributes: { 'post.logout.redirect.uris': ATTACKER } }]) {
        const answer = await putChanged(manageClients, 'acme', 'security-admin-console', change);
        expect(answer.status, JSON.stringify(change)).toBe(403);
      }
      expect((await putChanged(manageClients, 'acme', 'broker', { publicClient: true })).status).toBe(403);
      expect((await api(t.url, 'POST', path('acme', 'broker', '/client-secret'), manageClients)).status).toBe(403);
      expect((await api(t.url, 'DELETE', path('acme', 'security-admin-console'), manageClients)).status).toBe(403);
    });

    it('refuses protocol mappers, client scopes and scope mappings of security-admin-console', async () => {
      const mapper = { name: 'leak', protocol: 'openid-connect', protocolMapper: 'oidc-audience-mapper', config: { 'included.custom.audience': 'https://attacker.example', 'access.token.claim': 'true' } };
      expect((await api(t.url, 'POST', path('acme', 'security-admin-console', '/protocol-mappers/models'), manageClients, mapper)).status).toBe(403);
      expect((await api(t.url, 'POST', path('acme', 'security-admin-console', '/protocol-mappers/add-models'), manageClients, [mapper])).status).toBe(403);
      expect((await putChanged(manageClients, 'acme', 'security-admin-console', { protocolMappers: [mapper] })).status).toBe(403);
      const mappers = (await get(superAdmin, 'acme', 'security-admin-console', '/protocol-mappers/models')).body as { id: string; name: string }[];
      expect(mappers.map((m) => m.name)).not.toContain('leak');
      if (mappers.length > 0) expect((await api(t.url, 'DELETE', path('acme', 'security-admin-console', `/protocol-mappers/models/${mappers[0].id}`), manageClients)).status).toBe(403);

      const [scope] = (await api(t.url, 'GET', '/admin/realms/acme/client-scopes', superAdmin)).body as { id: string }[];
      expect((await api(t.url, 'PUT', path('acme', 'security-admin-console', `/default-client-scopes/${scope.id}`), manageClients)).status).toBe(403);
      expect((await api(t.url, 'DELETE', path('acme', 'security-admin-console', `/optional-client-scopes/${scope.id}`), manageClients)).status).toBe(403);

      const account = clientIds.get('acme/account')!;
      const accountRoles = (await api(t.url, 'GET', `/admin/realms/acme/clients/${account}/roles`, superAdmin)).body as { id: string; name: string }[];
      const scopeMapping = path('acme', 'security-admin-console', `/scope-mappings/clients/${account}`);
      expect((await api(t.url, 'POST', scopeMapping, manageClients, accountRoles.slice(0, 1))).status).toBe(403);
    });

    it('lets a manage-clients administrator change an ordinary client and the name of an administration client', async () => {
      expect((await putChanged(manageClients, 'acme', 'app', { redirectUris: ['https://app.example/*', 'https://app.example/other/*'] })).status).toBe(204);
      expect((await putChanged(manageClients, 'acme', 'account-console', { description: 'The account console' })).status).toBe(204);
      const mapper = { name: 'aud', protocol: 'openid-connect', protocolMapper: 'oidc-audience-mapper', config: { 'included.custom.audience': 'api', 'access.token.claim': 'true' } };
      expect((await api(t.url, 'POST', path('acme', 'app', '/protocol-mappers/models'), manageClients, mapper)).status).toBe(201);
    });

    it('lets a realm administrator change them (and the master administrator those of master)', async () => {
      const before = await redirectUrisOf('acme', 'security-admin-console');
      expect((await putChanged(realmAdmin, 'acme', 'security-admin-console', { redirectUris: [...before, 'https://console.acme.example/*'] })).status).toBe(204);
      expect(await redirectUrisOf('acme', 'security-admin-console')).toContain('https://console.acme.example/*');
      const mapper = { name: 'aud', protocol: 'openid-connect', protocolMapper: 'oidc-audience-mapper', config: { 'included.custom.audience': 'api', 'access.token.claim': 'true' } };
      expect((await api(t.url, 'POST', path('acme', 'security-admin-console', '/protocol-mappers/models'), realmAdmin, mapper)).status).toBe(201);
      expect((await putChanged(realmAdmin, 'acme', 'security-admin-console', { redirectUris: before })).status).toBe(204);
      const masterBefore = await redirectUrisOf('master', 'admin-cli');
      expect((await putChanged(superAdmin, 'master', 'admin-cli', { redirectUris: ['http://127.0.0.1/cb'] })).status).toBe(204);
      expect((await putChanged(superAdmin, 'master', 'admin-cli', { redirectUris: masterBefore })).status).toBe(204);
    });
  });

  describe("point 6: a client's secret goes only to callers who could change its service account", () => {
    it('view-clients does not get the secret of a client whose service account is realm administrator', async () => {
      expect((await get(viewClients, 'acme', 'robot', '/client-secret')).status).toBe(403);
      const rep = (await get(viewClients, 'acme', 'robot')).body as Record<string, unknown>;
      expect(rep.clientId).toBe('robot');
      expect(rep).not.toHaveProperty('secret');
      const list = (await api(t.url, 'GET', '/admin/realms/acme/clients', viewClients)).body as Record<string, unknown>[];
      expect(list.find((c) => c.clientId === 'robot')).not.toHaveProperty('secret');
      const installation = (await get(viewClients, 'acme', 'robot', '/installation/providers/keycloak-oidc-keycloak-json')).body as Record<string, unknown>;
      expect(installation.resource).toBe('robot');
      expect(installation).not.toHaveProperty('credentials');
      expect(JSON.stringify(list)).not.toContain('robot-secret');
    });

    it('manage-clients neither regenerates nor sets that secret', async () => {
      expect((await api(t.url, 'POST', path('acme', 'robot', '/client-secret'), manageClients)).status).toBe(403);
      const rep = (await get(manageClients, 'acme', 'robot')).body as Record<string, unknown>;
      expect((await api(t.url, 'PUT', path('acme', 'robot'), manageClients, { ...rep, secret: 'chosen-by-the-caller' })).status).toBe(403);
      // The representation it read, saved back (no secret in it), keeps the secret.
      expect((await api(t.url, 'PUT', path('acme', 'robot'), manageClients, { ...rep, description: 'a robot' })).status).toBe(204);
      expect(((await get(superAdmin, 'acme', 'robot', '/client-secret')).body as { value: string }).value).toBe('robot-secret-0123456789');
      const refused = await tokenWithSecret('robot', 'chosen-by-the-caller');
      expect(refused).toBe(401);
    });

    it('view-clients gets the secret of a client whose service account holds no administrative role', async () => {
      expect(((await get(viewClients, 'acme', 'worker', '/client-secret')).body as { value: string }).value).toBe('worker-secret-0123456789');
      expect(((await get(viewClients, 'acme', 'worker')).body as { secret: string }).secret).toBe('worker-secret-0123456789');
    });

    it('a realm administrator gets both', async () => {
      expect(((await get(realmAdmin, 'acme', 'robot', '/client-secret')).body as { value: string }).value).toBe('robot-secret-0123456789');
      expect(((await get(realmAdmin, 'acme', 'robot')).body as { secret: string }).secret).toBe('robot-secret-0123456789');
    });
  });

  async function tokenWithSecret(clientId: string, secret: string): Promise<number> {
    const answer = await fetch(`${t.url}/realms/acme/protocol/openid-connect/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret }),
    });
    return answer.status;
  }
});
