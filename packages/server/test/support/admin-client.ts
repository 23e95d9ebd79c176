import KcAdminClient from '@keycloak/keycloak-admin-client';
import { expect } from 'vitest';
import { ADMIN_PASSWORD, ADMIN_USERNAME, adminToken, startServer, type DatabaseKind, type TestServer } from './server.js';

/** Expects the admin client's call to fail with `status` (and a message matching `message`); returns the message. */
export async function rejects(call: Promise<unknown>, status: number, message?: RegExp): Promise<string> {
  const error = (await call.then(
    (value) => {
      throw new Error(`expected HTTP ${status}, the call succeeded with ${JSON.stringify(value)}`);
    },
    (e: unknown) => e,
  )) as { response?: { status: number }; responseData?: { errorMessage?: string; error_description?: string; error?: string } };
  expect(error.response?.status, JSON.stringify(error.responseData)).toBe(status);
  // Whichever of Keycloak's error bodies came (its admin console reads them in this order).
  const data = error.responseData;
  const text = String(data?.errorMessage ?? data?.error_description ?? data?.error);
  if (message) expect(text).toMatch(message);
  return text;
}

/** The realm-management client of the admin client's current realm: its id and its roles by name. */
export async function realmManagement(kc: KcAdminClient): Promise<{ management: string; roles: Map<string, { id: string; name: string }> }> {
  const [rm] = await kc.clients.find({ clientId: 'realm-management' });
  const roles = new Map<string, { id: string; name: string }>();
  for (const role of await kc.clients.listRoles({ id: rm.id! })) roles.set(role.name!, { id: role.id!, name: role.name! });
  return { management: rm.id!, roles };
}

/** The official admin client signed in as the master administrator of a test server (its calls go to `realm`). */
export async function masterAdminClient(url: string, realm = 'master'): Promise<KcAdminClient> {
  const kc = new KcAdminClient({ baseUrl: url, realmName: 'master' });
  await kc.auth({ username: ADMIN_USERNAME, password: ADMIN_PASSWORD, grantType: 'password', clientId: 'admin-cli' });
  kc.setConfig({ realmName: realm });
  return kc;
}

/**
 * A new user of the admin client's current realm holding only these realm-management roles (none: an ordinary user),
 * and an admin-cli access token of theirs, for "the role below gets 403" checks.
 */
export async function tokenOfUserWithRoles(kc: KcAdminClient, url: string, username: string, roleNames: string[]): Promise<string> {
  const password = `${username}-Pass-1`;
  const { id } = await kc.users.create({ username, enabled: true, credentials: [{ type: 'password', value: password, temporary: false }] });
  if (roleNames.length) {
    const { management, roles } = await realmManagement(kc);
    await kc.users.addClientRoleMappings({ id, clientUniqueId: management, roles: roleNames.map((name) => roles.get(name)!) as never });
  }
  const realm = kc.realmName;
  const answer = await fetch(`${url}/realms/${realm}/protocol/openid-connect/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'password', client_id: 'admin-cli', username, password }),
  });
  return ((await answer.json()) as { access_token: string }).access_token;
}

/** A test server with the master administrator's admin client and bearer token. */
export async function startAdminServer(database: DatabaseKind): Promise<{ t: TestServer; kc: KcAdminClient; token: string }> {
  const t = await startServer({ database });
  return { t, kc: await masterAdminClient(t.url), token: await adminToken(t.url) };
}
