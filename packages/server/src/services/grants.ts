import type { Storage } from '../storage/index.js';

/**
 * Revokes what a user granted a client, as Keycloak's UserConsentManager.revokeConsentToClient: the consent and the
 * client's offline tokens go together (an offline session holds one client here, opened per grant, so the session
 * goes with it). Returns how many were revoked (0: the user had granted the client nothing). The admin API's
 * DELETE /users/{id}/consents/{client} and the account API's DELETE /account/applications/{clientId}/consent.
 */
export async function revokeClientGrants(storage: Storage, realmId: string, userId: string, clientId: string): Promise<number> {
  let revoked = (await storage.consents.delete(userId, clientId)) ? 1 : 0;
  for (const session of await storage.sessions.forUser(realmId, userId, true)) {
    const clientSessions = await storage.sessions.clientSessionsOf([session.id]);
    if (!clientSessions.some((cs) => cs.clientId === clientId)) continue;
    await storage.sessions.delete(session.id);
    revoked++;
  }
  return revoked;
}
