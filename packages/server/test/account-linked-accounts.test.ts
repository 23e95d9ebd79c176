import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient } from './support/admin-client.js';
import { api, eventually, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 37, point 4: the account REST API's linked accounts as Keycloak's LinkedAccountsResource answers them: the
 * realm's enabled providers with whether the caller is linked (`linked=true|false`, search, paging), each as its
 * `showInAccountConsole` says; a link removed by its user (REMOVE_FEDERATED_IDENTITY), never the last way to sign
 * in; another user's link untouched; a caller with only view-profile reads but does not remove.
 */

const REALM = 'linked';
const PASSWORD = 'Linked-accounts-1';

describe('account REST API: linked accounts', () => {
  let t: TestServer;
  let kc: KcAdminClient;

  beforeAll(async () => {
    t = await startServer();
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: REALM, enabled: true, eventsEnabled: true });
    kc.setConfig({ realmName: REALM });
    const oidc = { clientId: 'c', clientSecret: 's', authorizationUrl: 'http://127.0.0.1:9/auth', tokenUrl: 'http://127.0.0.1:9/token' };
    await kc.identityProviders.create({ alias: 'corp', displayName: 'Corporate', providerId: 'oidc', enabled: true, config: { ...oidc, guiOrder: '2' } });
    await kc.identityProviders.create({ alias: 'github', providerId: 'github', enabled: true, config: { clientId: 'c', clientSecret: 's', guiOrder: '1' } });
    await kc.identityProviders.create({ alias: 'partner', providerId: 'oidc', enabled: true, config: { ...oidc, showInAccountConsole: 'WHEN_LINKED' } });
    await kc.identityProviders.create({ alias: 'hidden', providerId: 'oidc', enabled: true, config: { ...oidc, showInAccountConsole: 'NEVER' } });
    await kc.identityProviders.create({ alias: 'off', providerId: 'oidc', enabled: false, config: oidc });
  });
  afterAll(() => t?.close());

  async function user(username: string, links: string[]) {
    const { id } = await kc.users.create({ username, enabled: true, credentials: [{ type: 'password', value: PASSWORD, temporary: false }] });
    for (const alias of links) await kc.users.addToFederatedIdentity({ id, federatedIdentityId: alias, federatedIdentity: { identityProvider: alias, userId: `${username}-${alias}`, userName: `${username}@${alias}` } });
    const token = (await tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'admin-cli', username, password: PASSWORD })).body.access_token as string;
    return { id, token };
  }
  const account = (token: string, method: string, path: string) => api(t.url, method, `/realms/${REALM}/account/linked-accounts${path}`, token, undefined, { accept: 'application/json' });

  it('lists the enabled providers with whether the user is linked, in guiOrder, each as showInAccountConsole says', async () => {
    const { token } = await user('ann', ['corp', 'partner', 'hidden']);
    const all = (await account(token, 'GET', '')).body as { providerAlias: string; connected: boolean; social: boolean; displayName: string; linkedUsername?: string }[];
    expect(all.map((a) => [a.providerAlias, a.connected])).toEqual([['github', false], ['corp', true], ['partner', true]]);
    expect(all[0]).toMatchObject({ social: true, displayName: 'GitHub', providerName: 'github', guiOrder: '1' });
    expect(all[1]).toMatchObject({ social: false, displayName: 'Corporate', linkedUsername: 'ann@corp' });
    expect(((await account(token, 'GET', '?linked=true')).body as { providerAlias: string }[]).map((a) => a.providerAlias)).toEqual(['corp', 'partner']);
    expect(((await account(token, 'GET', '?linked=false')).body as { providerAlias: string }[]).map((a) => a.providerAlias)).toEqual(['github']);
    expect(((await account(token, 'GET', '?search=Corp*')).body as { providerAlias: string }[]).map((a) => a.providerAlias)).toEqual(['corp']);
    expect(((await account(token, 'GET', '?linked=true&first=1&max=1')).body as { providerAlias: string }[]).map((a) => a.providerAlias)).toEqual(['partner']);
    expect((await account(token, 'GET', '?linked=true&max=-1')).status).toBe(400);
  });

  it('a link is removed by its user (REMOVE_FEDERATED_IDENTITY); another user’s link of the same provider stays', async () => {
    const ben = await user('ben', ['corp', 'github']);
    const cid = await user('cid', ['corp']);
    expect((await account(ben.token, 'DELETE', '/corp')).status).toBe(204);
    expect((await kc.users.listFederatedIdentities({ id: ben.id })).map((l) => l.identityProvider)).toEqual(['github']);
    expect((await kc.users.listFederatedIdentities({ id: cid.id })).map((l) => l.identityProvider)).toEqual(['corp']);
    const [event] = await eventually(async () => {
      const list = await kc.realms.findEvents({ realm: REALM, type: 'REMOVE_FEDERATED_IDENTITY' as never, user: ben.id });
      return list.length ? list : null;
    });
    expect(event.details).toMatchObject({ identity_provider: 'corp', identity_provider_identity: 'ben@corp' });
    // Not linked (any more), or no such provider: 400, nothing changes.
    expect((await account(ben.token, 'DELETE', '/corp')).status).toBe(400);
    expect((await account(ben.token, 'DELETE', '/no-such')).body).toMatchObject({ errorMessage: 'identityProviderNotFoundMessage' });
    expect((await kc.users.listFederatedIdentities({ id: ben.id })).map((l) => l.identityProvider)).toEqual(['github']);
  });

  it('the last way to sign in is kept: a user without a password or a passkey cannot remove their only link', async () => {
    const dee = await user('dee', ['github']);
    const [password] = await kc.users.getCredentials({ id: dee.id });
    await kc.users.deleteCredential({ id: dee.id, credentialId: password.id! });
    const refused = await account(dee.token, 'DELETE', '/github');
    expect(refused.status).toBe(400);
    expect(refused.body.errorMessage).toContain('last');
    expect((await kc.users.listFederatedIdentities({ id: dee.id })).map((l) => l.identityProvider)).toEqual(['github']);
    // A passkey is a way in too: with one, the last link goes.
    await t.server.context.storage.credentials.insert({ id: crypto.randomUUID(), userId: dee.id, type: 'webauthn-passwordless', userLabel: 'laptop', secretData: {}, credentialData: {}, createdDate: Date.now(), priority: 10 });
    expect((await account(dee.token, 'DELETE', '/github')).status).toBe(204);
    expect(await kc.users.listFederatedIdentities({ id: dee.id })).toEqual([]);
  });

  it('a caller holding only view-profile reads the links but removes none (403)', async () => {
    const eve = await user('eve', ['corp', 'github']);
    const narrow = (await kc.clients.create({ clientId: 'profile-viewer', publicClient: true, directAccessGrantsEnabled: true, fullScopeAllowed: false })).id;
    const accountClient = (await kc.clients.find({ clientId: 'account' }))[0];
    const viewProfile = await kc.clients.findRole({ id: accountClient.id!, roleName: 'view-profile' });
    await kc.clients.addClientScopeMappings({ id: narrow, client: accountClient.id! }, [viewProfile!]);
    const token = (await tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'profile-viewer', username: 'eve', password: PASSWORD })).body.access_token as string;
    expect((await account(token, 'GET', '?linked=true')).status).toBe(200);
    expect((await account(token, 'DELETE', '/corp')).status).toBe(403);
    expect((await kc.users.listFederatedIdentities({ id: eve.id })).map((l) => l.identityProvider).sort()).toEqual(['corp', 'github']);
  });
});
