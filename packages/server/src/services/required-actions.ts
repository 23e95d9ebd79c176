import { asArray, parseRepresentation, type Spec } from '../representations/fields.js';
import { SUPPORTED_REQUIRED_ACTIONS } from '../representations/user.js';
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

/** Whether this server carries out the required action of this alias (the others of a realm are kept as data). */
export const carriedOut = (alias: string): alias is RequiredActionAlias => (SUPPORTED_REQUIRED_ACTIONS as readonly string[]).includes(alias);

/** What the admin API, its console and the realm export say of an action kept as data. */
export const NOT_CARRIED_OUT = 'not carried out by this server';

/** Keycloak's RequiredActionProviderRepresentation of one action in a realm. */
export interface RequiredAction extends RequiredActionSetting {
  name: string;
  providerId: string;
  config: Record<string, string>;
}

/** Keycloak's order (RequiredActionComparator): by priority, then by name; the alias last, so the order is total. */
const byPriority = (a: RequiredAction, b: RequiredAction) =>
  a.priority - b.priority || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) || (a.alias < b.alias ? -1 : a.alias > b.alias ? 1 : 0);

/**
 * The realm's required actions in Keycloak's order, as Keycloak lists them. Every action this server has is
 * registered in every realm, enabled and not a default action until an administrator (or a realm file) changes it.
 * Besides them, the actions a realm file listed that this server does not carry out (Keycloak's
 * TERMS_AND_CONDITIONS, webauthn-register, …), kept as data: listed, exported, reordered, never asked of a user.
 */
export async function realmRequiredActions(storage: Storage, realmId: string, db?: Db): Promise<RequiredAction[]> {
  const stored = await storage.credentials.realmRequiredActions(realmId, db);
  const byAlias = new Map(stored.map((s) => [s.alias, s]));
  const own = SUPPORTED_REQUIRED_ACTIONS.map((alias): RequiredAction => {
    const s = byAlias.get(alias);
    return {
      alias,
      name: s?.name ?? BUILT_IN[alias].name,
      providerId: alias,
      enabled: s?.enabled ?? true,
      defaultAction: s?.defaultAction ?? false,
      priority: s?.priority ?? BUILT_IN[alias].priority,
      config: s?.config ?? {},
    };
  });
  const kept = stored
    .filter((s) => !carriedOut(s.alias))
    .map((s): RequiredAction => ({
      alias: s.alias,
      name: s.name ?? s.alias,
      providerId: s.providerId ?? s.alias,
      enabled: s.enabled,
      defaultAction: s.defaultAction,
      priority: s.priority,
      config: s.config ?? {},
    }));
  return [...own, ...kept].sort(byPriority);
}

export async function realmRequiredAction(storage: Storage, realmId: string, alias: string): Promise<RequiredAction> {
  const action = (await realmRequiredActions(storage, realmId)).find((a) => a.alias === alias);
  if (!action) throw notFound('Failed to find required action');
  return action;
}

const sameConfig = (a: Record<string, string>, b: Record<string, string>) => {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
};

export interface RequiredActionChange {
  enabled?: boolean;
  defaultAction?: boolean;
  priority?: number;
  config?: Record<string, string>;
}

/**
 * Keycloak's update of a required action: enabled, default action and priority; a disabled action is no default.
 * Its settings (`config`) are not changed here: the server's own actions have none, and those kept as data keep the
 * realm file's (the console sends them back as it read them, which is no change).
 *
 * An action this server does not carry out is never turned on: enabling it, or making it a default action, is
 * refused (400), since an administrator turning on Keycloak's Terms and Conditions would believe users now have to
 * accept terms while nobody is ever asked. Turning it off, reordering it, and sending back what it already has are
 * accepted; what a realm file set is kept as the file had it (and exported so), but not acted on either way.
 */
export async function updateRequiredAction(storage: Storage, realmId: string, alias: string, change: RequiredActionChange): Promise<RequiredAction> {
  return storage.transaction(async (trx) => {
    const action = (await realmRequiredActions(storage, realmId, trx)).find((a) => a.alias === alias);
    if (!action) throw notFound('Failed to find required action');
    if (change.config !== undefined && !sameConfig(change.config, action.config)) {
      throw carriedOut(alias)
        ? badRequest('requiredAction.config: the required actions of this server have no settings', 'config')
        : badRequest(`requiredAction.config: "${alias}" is ${NOT_CARRIED_OUT}; its settings are kept as data, as the realm file had them, and are not changed here`, 'config');
    }
    if (!carriedOut(alias)) {
      if (change.enabled === true && !action.enabled) {
        throw badRequest(`requiredAction.enabled: "${alias}" is ${NOT_CARRIED_OUT} (kept as data): enabled, it would still never be asked of any user, so it cannot be enabled here`, 'enabled');
      }
      if (change.defaultAction === true && !action.defaultAction) {
        throw badRequest(`requiredAction.defaultAction: "${alias}" is ${NOT_CARRIED_OUT} (kept as data): new users would never be asked for it, so it cannot be a default action here`, 'defaultAction');
      }
    }
    const enabled = change.enabled ?? action.enabled;
    const defaultAction = enabled && (change.defaultAction ?? action.defaultAction);
    const updated = { ...action, enabled, defaultAction, priority: change.priority ?? action.priority };
    await storage.credentials.saveRealmRequiredActions(realmId, [updated], trx);
    return updated;
  });
}

/**
 * Moves the action past its neighbour in Keycloak's order, over all of the realm's actions (those kept as data
 * too): -1 raises, +1 lowers; false when it is already at that end. As Keycloak, the two swap priorities, and the
 * others keep theirs; when that would not change the order (equal priorities), the list is numbered afresh.
 */
export async function moveRequiredAction(storage: Storage, realmId: string, alias: string, direction: -1 | 1): Promise<boolean> {
  return storage.transaction(async (trx) => {
    const actions = await realmRequiredActions(storage, realmId, trx);
    const at = actions.findIndex((a) => a.alias === alias);
    if (at < 0) throw notFound('Failed to find required action');
    const other = actions[at + direction];
    if (!other) return false;
    const me = actions[at];
    const wanted = [...actions];
    [wanted[at], wanted[at + direction]] = [other, me];
    const swapped = [
      { ...me, priority: other.priority },
      { ...other, priority: me.priority },
    ];
    const after = actions.map((a) => swapped.find((s) => s.alias === a.alias) ?? a).sort(byPriority);
    if (after.every((a, i) => a.alias === wanted[i].alias)) {
      await storage.credentials.saveRealmRequiredActions(realmId, swapped, trx);
    } else {
      await storage.credentials.saveRealmRequiredActions(realmId, wanted.map((a, i) => ({ ...a, priority: (i + 1) * 10 })), trx);
    }
    return true;
  });
}

/** The enabled default actions this server carries out: every new user of the realm gets them, as in Keycloak. */
export async function defaultRequiredActions(storage: Storage, realmId: string, db?: Db): Promise<RequiredActionAlias[]> {
  return (await realmRequiredActions(storage, realmId, db)).filter((a) => a.enabled && a.defaultAction).map((a) => a.alias).filter(carriedOut);
}

/**
 * The user's required actions that are enabled in the realm and that this server carries out: a disabled one is
 * kept on the user but not asked for; one this server does not carry out is never asked for (nobody could do it,
 * so it must not stand between the user and signing in).
 */
export async function pendingRequiredActions(storage: Storage, realmId: string, userId: string): Promise<readonly string[]> {
  const stored = await storage.credentials.cachedRequiredActions(userId);
  if (stored.length === 0) return stored;
  const enabled = new Set((await realmRequiredActions(storage, realmId)).filter((a) => a.enabled && carriedOut(a.alias)).map((a) => a.alias));
  return stored.filter((action) => enabled.has(action));
}

/** More than any Keycloak realm has (it registers about fifteen): a file listing more is refused, not stored. */
const MAX_IMPORTED_ACTIONS = 1000;

const importSpec: Spec = {
  alias: { type: 'string', min: 1, max: 255 },
  name: { type: 'string', max: 255 },
  providerId: { type: 'string', min: 1, max: 255 },
  enabled: { type: 'boolean' },
  defaultAction: { type: 'boolean' },
  priority: { type: 'integer', min: -2147483648, max: 2147483647 },
  config: { type: 'stringMap', max: 4096 },
};

/**
 * A realm file's `requiredActions`: every entry is stored, as Keycloak keeps every RequiredActionProviderRepresentation
 * of a realm whether or not its provider is deployed. The server's own actions take the file's settings; any other
 * (Keycloak's TERMS_AND_CONDITIONS, webauthn-register, delete_account, …) is kept as data, enabled or not, and named
 * once in `keptAsData` by its JSON path: listed and exported again as the file had it, never asked of a user. The
 * server's own action with settings (`config`, e.g. Keycloak's max_auth_age) keeps them as data too, named likewise.
 * An entry that is not Keycloak's representation (a field of the wrong type, an alias twice, …) is refused, naming
 * its path, before anything is written.
 */
export function parseRequiredActions(value: unknown, notImported: string[], keptAsData: string[]): RequiredActionSetting[] {
  const entries = asArray(value, 'realm.requiredActions');
  if (entries.length > MAX_IMPORTED_ACTIONS) throw badRequest(`realm.requiredActions: must have at most ${MAX_IMPORTED_ACTIONS} entries`);
  const seen = new Set<string>();
  return entries.map((entry, i): RequiredActionSetting => {
    const path = `realm.requiredActions[${i}]`;
    const rep = parseRepresentation(entry, importSpec, [], path) as {
      alias?: string;
      name?: string;
      providerId?: string;
      enabled?: boolean;
      defaultAction?: boolean;
      priority?: number;
      config?: Record<string, string>;
    };
    const alias = rep.alias;
    if (alias === undefined) throw badRequest(`${path}.alias: is required`, 'alias');
    if (seen.has(alias)) throw badRequest(`${path}.alias: "${alias}" is listed twice`, 'alias');
    seen.add(alias);
    const config = rep.config ?? {};
    if (!carriedOut(alias)) {
      keptAsData.push(`${path} ("${alias}" is not carried out here)`);
      // As Keycloak reads the representation (primitive fields): what the entry does not give is false, or 0.
      const enabled = rep.enabled === true;
      return { alias, name: rep.name ?? null, providerId: rep.providerId ?? null, enabled, defaultAction: enabled && rep.defaultAction === true, priority: rep.priority ?? 0, config };
    }
    // The server's own action is on unless the entry turns it off (its defaults, as a realm made here has them).
    const enabled = rep.enabled !== false;
    const defaultAction = enabled && rep.defaultAction === true;
    if (rep.providerId !== undefined && rep.providerId !== alias) notImported.push(`${path}.providerId ("${rep.providerId}" is not installed; "${alias}" is this server's own action)`);
    if (Object.keys(config).length) keptAsData.push(`${path}.config ("${alias}" has no settings here)`);
    return { alias, name: rep.name ?? null, providerId: null, enabled, defaultAction, priority: rep.priority ?? BUILT_IN[alias].priority, config };
  });
}
