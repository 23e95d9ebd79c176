/**
 * Keycloak's delete_credential action, asked for only by an application (`kc_action=delete_credential:{id}`, as
 * Keycloak's account console asks to remove an authenticator app, a security key or recovery codes): the user
 * confirms and that credential of theirs is removed. Not in the registry (never a pending action of a user, never
 * listed among a realm's actions): an application-initiated action with Keycloak's default max_auth_age.
 */
export const DELETE_CREDENTIAL = 'delete_credential';

/**
 * The credential id a `kc_action=delete_credential:{id}` names (the authorization endpoint splits the action from its
 * parameter at the first colon), or null when it is not a delete_credential action with an id.
 */
export function deleteCredentialTarget(kcAction: string | undefined, parameter: string | undefined): string | null {
  if (kcAction !== DELETE_CREDENTIAL || !parameter || !/^[0-9a-fA-F-]{36}$/.test(parameter)) return null;
  return parameter.toLowerCase();
}
