import type KcAdminClient from '@keycloak/keycloak-admin-client';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient, rejects, tokenOfUserWithRoles } from './support/admin-client.js';
import { api, startServer, tokenRequest, type TestServer } from './support/server.js';

const require = createRequire(import.meta.url);
const Config = require('keycloak-connect/middleware/auth-utils/config.js');
const GrantManager = require('keycloak-connect/middleware/auth-utils/grant-manager.js');
const keycloakAdmin = require('keycloak-connect/middleware/admin.js');
const Token = require('keycloak-connect/middleware/auth-utils/token.js');

/** Admin API calls Keycloak 26.7.3 answers and the admin client makes (issue 41), each as Keycloak answers it. */
describe('admin API parity', () => {
  let t: TestServer;
  let kc: KcAdminClient;
  const realm = 'parity';

  beforeAll(async () => {
    t = await startServer();
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm, enabled: true });
    kc.setConfig({ realmName: realm });
  });

  afterAll(async () => {
    await t?.close();
  });

  describe('composite roles by container', () => {
    let parent: { id: string; name: string };
    let client: string;

    beforeAll(async () => {
      await kc.roles.create({ name: 'parent' });
      await kc.roles.create({ name: 'realm-child' });
      await kc.roles.create({ name: 'other-child' });
      ({ id: client } = await kc.clients.create({ clientId: 'composite-app' }));
      await kc.clients.createRole({ id: client, name: 'client-child' });
      const r = await kc.roles.findOneByName({ name: 'parent' });
      parent = { id: r!.id!, name: r!.name! };
      await kc.roles.createComposite({ roleId: parent.id }, [
        (await kc.roles.findOneByName({ name: 'realm-child' }))!,
        (await kc.clients.findRole({ id: client, roleName: 'client-child' }))!,
      ] as never);
      // A grandchild is not a direct composite: Keycloak lists only the role's own children.
      await kc.roles.createComposite({ roleId: (await kc.roles.findOneByName({ name: 'realm-child' }))!.id! }, [(await kc.roles.findOneByName({ name: 'other-child' }))!] as never);
    });

    it("lists the realm roles and one client's roles among the direct composites, by id and by name", async () => {
      const names = (roles: { name?: string }[]) => roles.map((r) => r.name).sort();
      expect(names(await kc.roles.getCompositeRolesForRealm({ id: parent.id }))).toEqual(['realm-child']);
      expect(names(await kc.roles.getCompositeRolesForClient({ id: parent.id, clientId: client }))).toEqual(['client-child']);
      const byName = await api(t.url, 'GET', `/admin/realms/${realm}/roles/parent/composites/realm`, kc.accessToken!);
      expect(names(byName.body as { name: string }[])).toEqual(['realm-child']);
      const clientByName = await api(t.url, 'GET', `/admin/realms/${realm}/roles/parent/composites/clients/${client}`, kc.accessToken!);
      expect(names(clientByName.body as { name: string }[])).toEqual(['client-child']);
    });

    it('answers 404 for a client that does not exist, and 403 to a caller who may not view the role', async () => {
      await rejects(kc.roles.getCompositeRolesForClient({ id: parent.id, clientId: '00000000-0000-4000-8000-000000000000' }), 404);
      const viewClients = await tokenOfUserWithRoles(kc, t.url, 'only-view-clients', ['view-clients']);
      expect((await api(t.url, 'GET', `/admin/realms/${realm}/roles-by-id/${parent.id}/composites/realm`, viewClients)).status).toBe(403);
      expect((await api(t.url, 'GET', `/admin/realms/${realm}/roles/parent/composites/realm`, viewClients)).status).toBe(403);
    });
  });

  describe('revocation: notBefore, logout-all, push-revocation (keycloak-connect at the admin URL)', () => {
    let appId: string;
    let receiver: Server;
    let receiverUrl: string;
    /** keycloak-connect's own admin middleware (k_logout, k_push_not_before) in a plain HTTP server, with its grant manager. */
    let grantManager: { notBefore: number; validateToken(token: unknown, type?: string): Promise<unknown> };
    let failing: Server;
    let failingUrl: string;
    const received: string[] = [];

    const listen = (server: Server) => new Promise<string>((done) => server.listen(0, '127.0.0.1', () => done(`http://127.0.0.1:${(server.address() as { port: number }).port}/`)));
    const grant = async () => {
      const answer = await tokenRequest(t.url, realm, { grant_type: 'password', client_id: 'node-app', client_secret: 'node-app-secret-1', username: 'rita', password: 'Rita-pass-1' });
      expect(answer.status).toBe(200);
      return answer.body as { access_token: string; refresh_token: string };
    };
    const userinfo = (token: string) => fetch(`${t.url}/realms/${realm}/protocol/openid-connect/userinfo`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);
    const refresh = (token: string) => tokenRequest(t.url, realm, { grant_type: 'refresh_token', client_id: 'node-app', client_secret: 'node-app-secret-1', refresh_token: token }).then((r) => r.status);
    /** Seconds pass between a token and a notBefore set after it (notBefore has a resolution of seconds). */
    const nextSecond = () => new Promise((done) => setTimeout(done, 1000 - (Date.now() % 1000) + 20));

    beforeAll(async () => {
      await kc.users.create({ username: 'rita', enabled: true, credentials: [{ type: 'password', value: 'Rita-pass-1', temporary: false }] });
      failing = createServer((_req, res) => res.writeHead(500).end());
      failingUrl = await listen(failing);
      receiver = createServer();
      receiverUrl = await listen(receiver);
      ({ id: appId } = await kc.clients.create({ clientId: 'node-app', secret: 'node-app-secret-1', directAccessGrantsEnabled: true, adminUrl: receiverUrl }));
      await kc.clients.create({ clientId: 'broken-app', adminUrl: failingUrl });
      const installation = (await kc.clients.getInstallationProviders({ id: appId, providerId: 'keycloak-oidc-keycloak-json' })) as unknown as Record<string, unknown>;
      const config = new Config(installation);
      grantManager = new GrantManager(config);
      const middleware = keycloakAdmin({ config, grantManager, unstoreGrant: () => undefined }, '/');
      receiver.on('request', (req: IncomingMessage, res: ServerResponse & { send?: (body: string) => void; status?: (code: number) => ServerResponse }) => {
        received.push(req.url ?? '');
        // The two Express methods the middleware answers with.
        res.send = (body: string) => res.end(body);
        res.status = (code: number) => Object.assign(res, { statusCode: code });
        middleware(req, res, () => res.writeHead(404).end());
      });
    });

    afterAll(async () => {
      receiver?.close();
      failing?.close();
    });

    it("shows and takes the realm's and a client's notBefore: a token issued before it is refused, one after accepted", async () => {
      const before = await grant();
      expect(await userinfo(before.access_token)).toBe(200);
      await nextSecond();
      const notBefore = Math.floor(Date.now() / 1000);
      await kc.realms.update({ realm }, { notBefore });
      expect((await kc.realms.findOne({ realm }))!.notBefore).toBe(notBefore);
      expect(await userinfo(before.access_token)).toBe(401);
      expect(await refresh(before.refresh_token)).toBe(400);
      const after = await grant();
      expect(await userinfo(after.access_token)).toBe(200);
      await kc.realms.update({ realm }, { notBefore: 0 });
      await nextSecond();
      const clientNotBefore = Math.floor(Date.now() / 1000);
      await kc.clients.update({ id: appId }, { ...(await kc.clients.findOne({ id: appId }))!, notBefore: clientNotBefore });
      expect((await kc.clients.findOne({ id: appId }))!.notBefore).toBe(clientNotBefore);
      expect(await userinfo(after.access_token)).toBe(401);
      expect(await userinfo((await grant()).access_token)).toBe(200);
    });

    it("pushes the client's notBefore to keycloak-connect at its admin URL, signed by the realm's key", async () => {
      const { notBefore } = (await kc.clients.findOne({ id: appId }))!;
      expect(notBefore).toBeGreaterThan(0);
      received.length = 0;
      expect(await kc.clients.pushRevocation({ id: appId })).toEqual({ successRequests: [receiverUrl] });
      expect(received).toEqual(['/k_push_not_before']);
      expect(grantManager.notBefore).toBe(notBefore);
      // A failing admin URL is listed as failed.
      const [broken] = await kc.clients.find({ clientId: 'broken-app' });
      expect(await kc.clients.pushRevocation({ id: broken.id! })).toEqual({ failedRequests: [failingUrl] });
    });

    it('logs every session out, refuses every earlier token and tells keycloak-connect; only a holder of manage-users may', async () => {
      const live = await grant();
      const refused = await tokenOfUserWithRoles(kc, t.url, 'realm-manager-only', ['manage-realm']);
      expect((await api(t.url, 'POST', `/admin/realms/${realm}/logout-all`, refused)).status).toBe(403);
      expect(await userinfo(live.access_token)).toBe(200);
      await nextSecond();
      received.length = 0;
      const answer = (await kc.realms.logoutAll({ realm })) as unknown as { successRequests?: string[]; failedRequests?: string[] };
      expect(answer).toEqual({ successRequests: [receiverUrl], failedRequests: [failingUrl] });
      expect(received).toEqual(['/k_logout']);
      const { notBefore } = (await kc.realms.findOne({ realm }))!;
      expect(notBefore).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000) - 5);
      expect(grantManager.notBefore).toBe(notBefore);
      expect(await userinfo(live.access_token)).toBe(401);
      expect(await refresh(live.refresh_token)).toBe(400);
      expect((await kc.realms.getClientSessionStats({ realm })).filter((s) => s.clientId === 'node-app')).toEqual([]);
      // keycloak-connect itself now refuses the older token.
      await expect(grantManager.validateToken(new Token(live.access_token, 'node-app'), 'Bearer')).rejects.toThrow(/stale token/);
    });

    it("verifies as the realm's JWS: the action, the client, a short expiry", async () => {
      const tokens: string[] = [];
      const capture = createServer((req, res) => {
        let body = '';
        req.on('data', (chunk) => (body += chunk));
        req.on('end', () => {
          tokens.push(body);
          res.writeHead(204).end();
        });
      });
      const captureUrl = await listen(capture);
      try {
        const { id } = await kc.clients.create({ clientId: 'captured', adminUrl: captureUrl });
        await kc.clients.update({ id }, { ...(await kc.clients.findOne({ id }))!, notBefore: 1234 });
        await kc.clients.pushRevocation({ id });
        const { payload } = await jwtVerify(tokens[0], createRemoteJWKSet(new URL(`${t.url}/realms/${realm}/protocol/openid-connect/certs`)));
        expect(payload).toMatchObject({ action: 'PUSH_NOT_BEFORE', resource: 'captured', notBefore: 1234 });
        expect(payload.expiration as number).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 30);
      } finally {
        capture.close();
      }
    });

    it('lists the clients with sessions and their counts, as strings', async () => {
      await grant();
      const stats = await kc.realms.getClientSessionStats({ realm });
      expect(stats.find((s) => s.clientId === 'node-app')).toEqual({ id: appId, clientId: 'node-app', active: '1', offline: '0' });
    });
  });

  describe('organization identity providers', () => {
    let orgId: string;
    let otherOrg: string;

    beforeAll(async () => {
      await kc.realms.update({ realm }, { organizationsEnabled: true });
      ({ id: orgId } = (await kc.organizations.create({ name: 'Acme', domains: [{ name: 'acme.example' }] })) as { id: string });
      ({ id: otherOrg } = (await kc.organizations.create({ name: 'Globex', domains: [{ name: 'globex.example' }] })) as { id: string });
      for (const alias of ['acme-sso', 'spare-sso']) {
        await kc.identityProviders.create({ alias, providerId: 'oidc', enabled: true, config: { clientId: 'x', clientSecret: 'upstream-secret', authorizationUrl: 'http://127.0.0.1:9/auth', tokenUrl: 'http://127.0.0.1:9/token' } });
      }
    });

    it("associates a realm's provider with one organization, lists it with its secret masked, and lets it go", async () => {
      await kc.organizations.linkIdp({ orgId, alias: 'acme-sso' });
      const listed = await kc.organizations.listIdentityProviders({ orgId });
      expect(listed.map((p) => p.alias)).toEqual(['acme-sso']);
      expect(listed[0]).toMatchObject({ organizationId: orgId });
      expect(JSON.stringify(listed)).not.toContain('upstream-secret');
      const one = await api(t.url, 'GET', `/admin/realms/${realm}/organizations/${orgId}/identity-providers/acme-sso`, kc.accessToken!);
      expect(one.status).toBe(200);
      expect((await kc.identityProviders.findOne({ alias: 'acme-sso' }))!.organizationId).toBe(orgId);
      // Twice: a conflict; to another organization: refused; an unknown alias: 400, as Keycloak.
      await rejects(kc.organizations.linkIdp({ orgId, alias: 'acme-sso' }), 409);
      await rejects(kc.organizations.linkIdp({ orgId: otherOrg, alias: 'acme-sso' }), 400);
      await rejects(kc.organizations.linkIdp({ orgId, alias: 'no-such-idp' }), 400);
      expect((await api(t.url, 'GET', `/admin/realms/${realm}/organizations/${orgId}/identity-providers/spare-sso`, kc.accessToken!)).status).toBe(404);
      await kc.organizations.unLinkIdp({ orgId, alias: 'acme-sso' });
      expect(await kc.organizations.listIdentityProviders({ orgId })).toEqual([]);
      expect((await kc.identityProviders.findOne({ alias: 'acme-sso' }))!.organizationId).toBeUndefined();
      await rejects(kc.organizations.unLinkIdp({ orgId, alias: 'acme-sso' }), 404);
    });

    it('keeps the provider, unlinked, when its organization is deleted; a view-realm holder may not link', async () => {
      const { id: doomed } = (await kc.organizations.create({ name: 'Doomed', domains: [{ name: 'doomed.example' }] })) as { id: string };
      await kc.organizations.linkIdp({ orgId: doomed, alias: 'spare-sso' });
      const viewer = await tokenOfUserWithRoles(kc, t.url, 'org-viewer', ['view-realm']);
      expect((await api(t.url, 'POST', `/admin/realms/${realm}/organizations/${orgId}/identity-providers`, viewer, 'acme-sso')).status).toBe(403);
      await kc.organizations.delById({ id: doomed });
      const kept = await kc.identityProviders.findOne({ alias: 'spare-sso' });
      expect(kept?.alias).toBe('spare-sso');
      expect(kept!.organizationId).toBeUndefined();
    });
  });
});
