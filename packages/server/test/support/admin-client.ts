import type KcAdminClient from '@keycloak/keycloak-admin-client';
import { expect } from 'vitest';

/** Expects the admin client's call to fail with `status` (and a message matching `message`); returns the message. */
export async function rejects(call: Promise<unknown>, status: number, message?: RegExp): Promise<string> {
  const error = (await call.then(
    (value) => {
      throw new Error(`expected HTTP ${status}, the call succeeded with ${JSON.stringify(value)}`);
    },
    (e: unknown) => e,
  )) as { response?: { status: number }; responseData?: { errorMessage?: string } };
  expect(error.response?.status, JSON.stringify(error.responseData)).toBe(status);
  const text = String(error.responseData?.errorMessage);
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
