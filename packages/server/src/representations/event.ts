import type { AdminEventTable, EventTable } from '../storage/index.js';

export const eventRep = (e: EventTable) => ({
  id: e.id,
  time: e.time,
  type: e.type,
  realmId: e.realm_id,
  clientId: e.client_id ?? undefined,
  userId: e.user_id ?? undefined,
  sessionId: e.session_id ?? undefined,
  ipAddress: e.ip_address ?? undefined,
  error: e.error ?? undefined,
  details: JSON.parse(e.details) as Record<string, string>,
});

export const adminEventRep = (e: AdminEventTable) => ({
  id: e.id,
  time: e.time,
  realmId: e.realm_id,
  authDetails: { realmId: e.auth_realm_id, clientId: e.auth_client_id, userId: e.auth_user_id, ipAddress: e.auth_ip_address },
  operationType: e.operation_type,
  resourceType: e.resource_type,
  resourcePath: e.resource_path,
  ...(e.representation ? { representation: e.representation } : {}),
  ...(e.error ? { error: e.error } : {}),
});
