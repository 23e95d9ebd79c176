/**
 * The JSON body of a delivery (SPEC 5). Every field is always present so receivers can rely on one
 * shape: scalars are null when unknown, lists and maps are empty.
 */
import type { AdminEvent, RealmInfo, UserEvent, UserSnapshot } from '@realmgate/spi';

export interface WebhookPayload {
  type: string;
  user_id: string | null;
  user_name: string | null;
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  email_verified: boolean | null;
  /** Epoch milliseconds. */
  created_timestamp: number | null;
  user_ip: string | null;
  user_agent: string | null;
  delete_by_admin: boolean;
  /** Realm roles mapped directly to the user. */
  user_roles: string[];
  organizations: { id: string; name: string; alias: string }[];
  attributes: Record<string, string[]>;
  realm: { id: string; name: string; display_name: string | null };
  /** The event's error; non-null only on REGISTER_ERROR. */
  error: string | null;
  /** The event's details (form values); non-null only on REGISTER_ERROR. */
  details: Record<string, string> | null;
}

/** Where the request came from, after the client's `trusted.proxy.count` rule. */
export interface Origin {
  userIp: string | null;
  userAgent: string | null;
}

export function userEventPayload(event: UserEvent, origin: Origin): WebhookPayload {
  if (event.type === 'REGISTER_ERROR') {
    // No user exists: what the form carried, under Keycloak's detail names.
    return {
      ...emptyUser(event.type, event.realm, origin),
      email: event.details.email ?? null,
      first_name: event.details.first_name ?? null,
      last_name: event.details.last_name ?? null,
      error: event.error,
      details: event.details,
    };
  }
  if (event.user) return fromSnapshot(event.type, event.user, event.realm, origin, false);
  // A user event whose user is gone by the time the host took the snapshot: what the event itself says.
  return {
    ...emptyUser(event.type, event.realm, origin),
    user_id: event.userId,
    user_name: event.details.username ?? null,
  };
}

/** DELETE_ACCOUNT for an administrator's deletion of a user (admin event USER DELETE). */
export function adminDeletePayload(event: AdminEvent, origin: Origin): WebhookPayload {
  if (event.user) return fromSnapshot('DELETE_ACCOUNT', event.user, event.realm, origin, true);
  return {
    ...emptyUser('DELETE_ACCOUNT', event.realm, origin),
    user_id: /^users\/([^/]+)$/.exec(event.resourcePath)?.[1] ?? null,
    delete_by_admin: true,
  };
}

function fromSnapshot(type: string, user: UserSnapshot, realm: RealmInfo, origin: Origin, byAdmin: boolean): WebhookPayload {
  return {
    type,
    user_id: user.id,
    user_name: user.username,
    email: user.email,
    first_name: user.firstName,
    last_name: user.lastName,
    email_verified: user.emailVerified,
    created_timestamp: user.createdTimestamp,
    user_ip: origin.userIp,
    user_agent: origin.userAgent,
    delete_by_admin: byAdmin,
    user_roles: user.realmRoles,
    organizations: user.organizations.map(({ id, name, alias }) => ({ id, name, alias })),
    attributes: user.attributes,
    realm: realmOf(realm),
    error: null,
    details: null,
  };
}

function emptyUser(type: string, realm: RealmInfo, origin: Origin): WebhookPayload {
  return {
    type,
    user_id: null,
    user_name: null,
    email: null,
    first_name: null,
    last_name: null,
    email_verified: null,
    created_timestamp: null,
    user_ip: origin.userIp,
    user_agent: origin.userAgent,
    delete_by_admin: false,
    user_roles: [],
    organizations: [],
    attributes: {},
    realm: realmOf(realm),
    error: null,
    details: null,
  };
}

function realmOf(realm: RealmInfo): WebhookPayload['realm'] {
  return { id: realm.id, name: realm.name, display_name: realm.displayName };
}
