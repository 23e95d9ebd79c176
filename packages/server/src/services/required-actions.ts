import { asArray, parseRepresentation, type Spec } from '../admin/representations/fields.js';
import { SUPPORTED_REQUIRED_ACTIONS } from '../admin/representations/user.js';
import { badRequest, notFound } from '../model/errors.js';
import type { Db, RequiredActionSetting, Storage } from '../storage/index.js';

export type RequiredActionAlias = (typeof SUPPORTED_REQUIRED_ACTIONS)[number];

/** Keycloak's names and default priorities of the required actions this server carries out. */
const BUILT_IN: Record<RequiredActionAlias, { name: string; priority: number }> = {
  CONFIGURE_TOTP: { name: 'Configure OTP', priority: 10 },
  UPDATE_PASSWORD: { name: 'Update Password', priority: 30 },
  UPDATE_PROFILE: { name: 'Update Profile', priority: 40 },
  VERIFY_EMAIL: { name: 'Verify Email', priority: 50 },
};

/** Keycloak's RequiredActionProviderRepresentation of one action in a realm. */
export interface RequiredAction extends RequiredActionSetting {
  name: string;
  providerId: string;
  config: Record<string, string>;
}

/**
 * The realm's required actions, in priority order (alias breaks ties), as Keycloak lists them: every action this
 * server has is registered in every realm, enabled and not a default action until an administrator changes it.
 */
export async function realmRequiredActions(storage: Storage, realmId: string, db?: Db): Promise<RequiredAction[]> {
  const stored = new Map((await storage.credentials.realmRequiredActions(realmId, db)).map((s) => [s.alias, s]));
  return SUPPORTED_REQUIRED_ACTIONS.map((alias) => ({
    alias,
    name: BUILT_IN[alias].name,
    providerId: alias,
    enabled: stored.get(alias)?.enabled ?? true,
    defaultAction: stored.get(alias)?.defaultAction ?? false,
    priority: stored.get(alias)?.priority ?? BUILT_IN[alias].priority,
    config: {},
  })).sort((a, b) => a.priority - b.priority || (a.alias < b.alias ? -1 : 1));
}

export async function realmRequiredAction(storage: Storage, realmId: string, alias: string): Promise<RequiredAction> {
  const action = (await realmRequiredActions(storage, realmId)).find((a) => a.alias === alias);
  if (!action) throw notFound('Failed to find required action');
  return action;
}

/** Keycloak's update of a required action: enabled, default action and priority; a disabled action is no default. */
export async function updateRequiredAction(storage: Storage, realmId: string, alias: string, change: Partial<Pick<RequiredActionSetting, 'enabled' | 'defaultAction' | 'priority'>>): Promise<RequiredAction> {
  return storage.transaction(async (trx) => {
    const action = (await realmRequiredActions(storage, realmId, trx)).find((a) => a.alias === alias);
    if (!action) throw notFound('Failed to find required action');
    const enabled = change.enabled ?? action.enabled;
    const defaultAction = enabled && (change.defaultAction ?? action.defaultAction);
    const updated = { ...action, enabled, defaultAction, priority: change.priority ?? action.priority };
    await storage.credentials.saveRealmRequiredActions(realmId, [updated], trx);
    return updated;
  });
}

/** Swaps the action with its neighbour in priority order (-1 raises, +1 lowers); false when it is already at that end. */
export async function moveRequiredAction(storage: Storage, realmId: string, alias: string, direction: -1 | 1): Promise<boolean> {
  return storage.transaction(async (trx) => {
    const actions = await realmRequiredActions(storage, realmId, trx);
    const at = actions.findIndex((a) => a.alias === alias);
    if (at < 0) throw notFound('Failed to find required action');
    const other = actions[at + direction];
    if (!other) return false;
    [actions[at], actions[at + direction]] = [other, actions[at]];
    // Numbered afresh in the new order, so equal priorities cannot keep two actions in place.
    await storage.credentials.saveRealmRequiredActions(realmId, actions.map((a, i) => ({ ...a, priority: (i + 1) * 10 })), trx);
    return true;
  });
}

/** The enabled default actions: every new user of the realm gets them, as in Keycloak. */
export async function defaultRequiredActions(storage: Storage, realmId: string, db?: Db): Promise<RequiredActionAlias[]> {
  return (await realmRequiredActions(storage, realmId, db)).filter((a) => a.enabled && a.defaultAction).map((a) => a.alias as RequiredActionAlias);
}

/** The user's required actions that are enabled in the realm: a disabled one is kept on the user but not asked for. */
export async function pendingRequiredActions(storage: Storage, realmId: string, userId: string): Promise<string[]> {
  const stored = await storage.credentials.requiredActions(userId);
  if (stored.length === 0) return stored;
  const enabled = new Set((await realmRequiredActions(storage, realmId)).filter((a) => a.enabled).map((a) => a.alias as string));
  return stored.filter((action) => enabled.has(action));
}

const importSpec: Spec = {
  alias: { type: 'string', min: 1, max: 255 },
  enabled: { type: 'boolean' },
  defaultAction: { type: 'boolean' },
  priority: { type: 'integer', min: -2147483648, max: 2147483647 },
  config: { type: 'stringMap', max: 4096 },
};

/**
 * A realm file's `requiredActions`: the settings of the actions this server has. Every Keycloak export lists
 * Keycloak's others too (terms and conditions, WebAuthn …): an enabled one is named in `notImported`, as the file
 * asks for something this server does not do; a disabled one asks for nothing and is passed over.
 */
export function parseRequiredActions(value: unknown, notImported: string[]): RequiredActionSetting[] {
  return asArray(value, 'realm.requiredActions').flatMap((entry, i) => {
    const path = `realm.requiredActions[${i}]`;
    const rep = parseRepresentation(entry, importSpec, ['name', 'providerId'], path);
    if (typeof rep.alias !== 'string') throw badRequest(`${path}.alias: is required`, 'alias');
    const alias = rep.alias;
    if (!(SUPPORTED_REQUIRED_ACTIONS as readonly string[]).includes(alias)) {
      if (rep.enabled !== false) notImported.push(path);
      return [];
    }
    const builtIn = BUILT_IN[alias as RequiredActionAlias];
    const enabled = rep.enabled !== false;
    return [{ alias, enabled, defaultAction: enabled && rep.defaultAction === true, priority: (rep.priority as number | undefined) ?? builtIn.priority }];
  });
}
