import { asArray, parseRepresentation, type Spec } from '../representations/fields.js';
import { passwordExpired, realmPasswordPolicy } from '../credentials/password-policy.js';
import { badRequest, badRequestError, conflict, notFound } from '../model/errors.js';
import type { Realm, User } from '../model/types.js';
import {
  carriedOut,
  checkRequiredActionConfig,
  DEFAULT_MAX_AUTH_AGE_SECONDS,
  DELETE_CREDENTIAL,
  EMAIL_PENDING_ATTRIBUTE,
  MAX_AUTH_AGE,
  REQUIRED_ACTION_PROVIDERS,
  requiredActionProvider,
  UPDATE_EMAIL,
  UPDATE_PASSWORD,
  VERIFY_EMAIL,
  type RequiredActionProvider,
} from '../required-actions/index.js';
import type { Db, RequiredActionSetting, Storage } from '../storage/index.js';

export { carriedOut };

/** What the admin API, its console and the realm export say of an action kept as data. */
export const NOT_CARRIED_OUT = 'not carried out by this server';

/** Keycloak's RequiredActionProviderRepresentation of one action in a realm. */
export interface RequiredAction {
  alias: string;
  name: string;
  providerId: string;
  enabled: boolean;
  defaultAction: boolean;
  priority: number;
  config: Record<string, string>;
}

/** Keycloak's order (RequiredActionComparator): by priority, then by name; the alias last, so the order is total. */
const byPriority = (a: RequiredAction, b: RequiredAction) =>
  a.priority - b.priority || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) || (a.alias < b.alias ? -1 : a.alias > b.alias ? 1 : 0);

const ownAction = (provider: RequiredActionProvider, s: RequiredActionSetting | undefined): RequiredAction => ({
  alias: provider.alias,
  name: s?.name ?? provider.name,
  providerId: provider.alias,
  enabled: s?.enabled ?? provider.defaults.enabled,
  defaultAction: s?.defaultAction ?? false,
  priority: s?.priority ?? provider.defaults.priority,
  config: s?.config ?? {},
});

/**
 * The realm's registered required actions in Keycloak's order, as Keycloak lists them. Every provider of the
 * registry (required-actions/) is registered in every realm with Keycloak's settings until an administrator (or a
 * realm file) changes them or unregisters it: a stored row overrides the defaults, one marked unregistered removes
 * it. Besides them, the actions a realm file listed that this server has no provider for (Keycloak's
 * webauthn-register, VERIFY_PROFILE, …), kept as data: listed, exported, reordered, never asked of a user.
 */
export async function realmRequiredActions(storage: Storage, realmId: string, db?: Db): Promise<RequiredAction[]> {
  const stored = await storage.credentials.realmRequiredActions(realmId, db);
  const byAlias = new Map(stored.map((s) => [s.alias, s]));
  const own = REQUIRED_ACTION_PROVIDERS.filter((p) => byAlias.get(p.alias)?.registered !== false).map((p) => ownAction(p, byAlias.get(p.alias)));
  const kept = stored
    .filter((s) => !requiredActionProvider(s.alias))
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

const FAILED_TO_FIND = 'Failed to find required action';

export async function realmRequiredAction(storage: Storage, realmId: string, alias: string, db?: Db): Promise<RequiredAction> {
  const action = (await realmRequiredActions(storage, realmId, db)).find((a) => a.alias === alias);
  if (!action) throw notFound(FAILED_TO_FIND);
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
 * The settings (`config`) of a registered action of the registry, checked against its provider's; Keycloak's 400
 * "RequiredAction is not configurable" for an action without settings, an unknown alias included.
 */
function configurable(action: RequiredAction | undefined): RequiredActionProvider {
  const provider = action && requiredActionProvider(action.alias);
  if (!provider || provider.config.length === 0) throw badRequest('RequiredAction is not configurable');
  return provider;
}

/**
 * Keycloak's update of a required action: enabled, default action, priority and settings; a disabled action is no
 * default. Settings are checked against the provider's (`checkRequiredActionConfig`); an action kept as data keeps
 * the realm file's settings (the console sends them back as it read them, which is no change).
 *
 * An action this server does not carry out is never turned on: enabling it, or making it a default action, is
 * refused (400), since an administrator turning on Keycloak's Delete Credential would believe users are now asked
 * for it while nobody ever is. Turning it off, reordering it, and sending back what it already has are
 * accepted; what a realm file set is kept as the file had it (and exported so), but not acted on either way.
 */
export async function updateRequiredAction(storage: Storage, realmId: string, alias: string, change: RequiredActionChange): Promise<RequiredAction> {
  return storage.transaction(async (trx) => {
    const action = await realmRequiredAction(storage, realmId, alias, trx);
    const provider = requiredActionProvider(alias);
    if (change.config !== undefined && !sameConfig(change.config, action.config)) {
      if (!provider) throw badRequest(`requiredAction.config: "${alias}" is ${NOT_CARRIED_OUT}; its settings are kept as data, as the realm file had them, and are not changed here`, 'config');
      checkRequiredActionConfig(configurable(action), change.config);
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
    const updated = { ...action, enabled, defaultAction, priority: change.priority ?? action.priority, config: provider && change.config ? change.config : action.config };
    await storage.credentials.saveRealmRequiredActions(realmId, [updated], trx);
    return updated;
  });
}

/** Keycloak's `GET …/required-actions/{alias}/config`: `{config}` of a configurable action. */
export async function requiredActionConfig(storage: Storage, realmId: string, alias: string): Promise<{ config: Record<string, string> }> {
  const action = (await realmRequiredActions(storage, realmId)).find((a) => a.alias === alias);
  configurable(action);
  return { config: action!.config };
}

/** Keycloak's `PUT …/config` (the settings replace the stored ones) and `DELETE …/config` (`null`: none). */
export async function setRequiredActionConfig(storage: Storage, realmId: string, alias: string, config: Record<string, string> | null): Promise<RequiredAction> {
  return storage.transaction(async (trx) => {
    const action = (await realmRequiredActions(storage, realmId, trx)).find((a) => a.alias === alias);
    const provider = configurable(action);
    if (config) checkRequiredActionConfig(provider, config);
    const updated = { ...action!, config: config ?? {} };
    await storage.credentials.saveRealmRequiredActions(realmId, [updated], trx);
    return updated;
  });
}

/** Keycloak's `GET …/required-actions/{alias}/config-description` (404 for an action without settings). */
export function requiredActionConfigDescription(alias: string) {
  const provider = requiredActionProvider(alias);
  if (!provider || provider.config.length === 0) throw notFound('Could not find configurable RequiredAction provider');
  return {
    properties: provider.config.map((p) => ({ name: p.name, label: p.label, helpText: p.helpText, type: p.type, defaultValue: p.defaultValue, secret: false, required: false, readOnly: false })),
  };
}

/** The registry's providers a realm does not have registered (Keycloak's `unregistered-required-actions`). */
export async function unregisteredRequiredActions(storage: Storage, realmId: string): Promise<{ providerId: string; name: string }[]> {
  const registered = new Set((await realmRequiredActions(storage, realmId)).map((a) => a.alias));
  return REQUIRED_ACTION_PROVIDERS.filter((p) => !registered.has(p.alias)).map((p) => ({ providerId: p.alias, name: p.name }));
}

/**
 * Keycloak's `POST …/register-required-action` `{providerId, name}`: registered after every other action (the
 * greatest priority plus one), enabled, no default action. An action this server does not carry out is registered
 * off (Keycloak would turn it on; here it could never be asked of anyone). 400 for a provider the registry lacks;
 * 409 when the realm has it already.
 */
export async function registerRequiredAction(storage: Storage, realmId: string, providerId: string | undefined, name: string | undefined): Promise<RequiredAction> {
  return storage.transaction(async (trx) => {
    const provider = providerId === undefined ? undefined : requiredActionProvider(providerId);
    if (!provider) throw badRequestError('Required Action Provider with given providerId not found');
    const actions = await realmRequiredActions(storage, realmId, trx);
    if (actions.some((a) => a.alias === provider.alias)) throw conflict('A Required Action Provider with given alias already exists.');
    const priority = Math.min(2147483647, Math.max(0, ...actions.map((a) => a.priority)) + 1);
    const action: RequiredAction = { alias: provider.alias, name: name || provider.name, providerId: provider.alias, enabled: true, defaultAction: false, priority, config: {} };
    await storage.credentials.saveRealmRequiredActions(realmId, [{ ...action, registered: true }], trx);
    return action;
  });
}

/**
 * Keycloak's `DELETE …/required-actions/{alias}`: the realm no longer has the action. Users keep it on their list,
 * as in Keycloak, and are not asked for it while it is unregistered.
 */
export async function unregisterRequiredAction(storage: Storage, realmId: string, alias: string): Promise<void> {
  await storage.transaction(async (trx) => {
    const action = (await realmRequiredActions(storage, realmId, trx)).find((a) => a.alias === alias);
    if (!action) throw notFound(`${FAILED_TO_FIND}.`);
    if (requiredActionProvider(alias)) await storage.credentials.saveRealmRequiredActions(realmId, [{ ...action, registered: false }], trx);
    else await storage.credentials.deleteRealmRequiredAction(realmId, alias, trx);
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
    if (at < 0) throw notFound(`${FAILED_TO_FIND}.`);
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
export async function defaultRequiredActions(storage: Storage, realmId: string, db?: Db): Promise<string[]> {
  return (await realmRequiredActions(storage, realmId, db)).filter((a) => a.enabled && a.defaultAction && carriedOut(a.alias)).map((a) => a.alias);
}

/** The realm's actions that may be asked of a user: registered, enabled, carried out here; in Keycloak's order. */
async function askable(storage: Storage, realmId: string): Promise<string[]> {
  return (await realmRequiredActions(storage, realmId)).filter((a) => a.enabled && carriedOut(a.alias)).map((a) => a.alias);
}

/**
 * The user's required actions that are enabled in the realm and that this server carries out, in the realm's
 * priority order: a disabled or unregistered one is kept on the user but not asked for; one this server does not
 * carry out is never asked for (nobody could do it, so it must not stand between the user and signing in).
 */
export async function pendingRequiredActions(storage: Storage, realmId: string, userId: string): Promise<readonly string[]> {
  const stored = await storage.credentials.cachedRequiredActions(userId);
  if (stored.length === 0) return stored;
  return (await askable(storage, realmId)).filter((alias) => stored.includes(alias));
}

/**
 * What a sign-in must still ask of the user, in the realm's priority order (Keycloak's required actions after its
 * providers' evaluateTriggers): the user's pending actions, VERIFY_EMAIL when the realm verifies addresses and the
 * user's is not (or it is pending and the user has an address), UPDATE_PASSWORD when the password policy says the
 * password has expired, and `added` (what the flow's steps set, e.g. CONFIGURE_TOTP for a user without OTP in a flow
 * that requires it). Each only while it is enabled in the realm; the first one is the next page.
 */
export async function dueRequiredActions(storage: Storage, realm: Realm, user: User, added: readonly string[] = []): Promise<string[]> {
  const stored = await storage.credentials.cachedRequiredActions(user.id);
  const due = new Set([...stored, ...added]);
  if (realm.verifyEmail && !user.emailVerified) due.add(VERIFY_EMAIL);
  if (!user.email) due.delete(VERIFY_EMAIL);
  // An address waiting for its link asks for UPDATE_EMAIL again; while that is asked, it stands for VERIFY_EMAIL
  // (Keycloak's UpdateEmail.evaluateTriggers), when the realm has it enabled.
  if (user.attributes[EMAIL_PENDING_ATTRIBUTE]?.length) due.add(UPDATE_EMAIL);
  if (passwordExpired(realmPasswordPolicy(realm.passwordPolicy), user.passwordCreated, Date.now())) due.add(UPDATE_PASSWORD);
  if (due.size === 0) return [];
  // A flow step sets its action only while the realm has it enabled (else the flow refuses the sign-in), so `added`
  // is judged like the rest.
  const order = await askable(storage, realm.id);
  if (due.has(UPDATE_EMAIL) && order.includes(UPDATE_EMAIL)) due.delete(VERIFY_EMAIL);
  return order.filter((alias) => due.has(alias));
}

/**
 * How many seconds after the last sign-in an application may start `alias` (kc_action) without the user signing in
 * again: the action's fixed age (delete_account: 0), else its max_auth_age setting, else Keycloak's 300. Null when
 * the realm would not run the action (unknown, off): the application is told so at once, no sign-in is asked.
 */
export async function requiredActionMaxAuthAge(storage: Storage, realmId: string, alias: string): Promise<number | null> {
  // delete_credential:{id} (the account console's removal of a credential): Keycloak's default age, not configurable here.
  if (alias === DELETE_CREDENTIAL) return DEFAULT_MAX_AUTH_AGE_SECONDS;
  if (!(await askable(storage, realmId)).includes(alias)) return null;
  const fixed = requiredActionProvider(alias)?.maxAuthAgeSeconds;
  if (fixed !== undefined) return fixed;
  const action = (await realmRequiredActions(storage, realmId)).find((a) => a.alias === alias);
  const value = Number(action?.config[MAX_AUTH_AGE]);
  return action?.config[MAX_AUTH_AGE] !== undefined && Number.isSafeInteger(value) && value >= 0 ? value : DEFAULT_MAX_AUTH_AGE_SECONDS;
}

/**
 * Keycloak's UpdateEmail.isEnabled (the UPDATE_EMAIL feature is on by default in 26.7): the realm has the UPDATE_EMAIL
 * action enabled. Then the e-mail address is changed only through that action: read-only in the account API and the
 * account console, which offers "Update email" (an application-initiated UPDATE_EMAIL) instead.
 */
export async function updateEmailActionEnabled(storage: Storage, realmId: string): Promise<boolean> {
  return (await askable(storage, realmId)).includes(UPDATE_EMAIL);
}

/** `aliases` in the realm's priority order, those not askable there left out (an e-mailed execute-actions link). */
export async function inPriorityOrder(storage: Storage, realmId: string, aliases: readonly string[]): Promise<string[]> {
  return (await askable(storage, realmId)).filter((alias) => aliases.includes(alias));
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
 * of a realm whether or not its provider is deployed. The registry's actions take the file's settings (an action
 * the file leaves out keeps its defaults); any other (Keycloak's webauthn-register, VERIFY_PROFILE, …) is kept as
 * data, enabled or not, and named once in `keptAsData` by its JSON path: listed and exported again as the file had
 * it, never asked of a user. The registry's actions this server does not carry out (delete_account, UPDATE_EMAIL)
 * are named likewise and stored off. Settings (`config`) the provider does not have are kept as data, named too.
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
    const provider = requiredActionProvider(alias);
    if (!provider) {
      keptAsData.push(`${path} ("${alias}" is not carried out here)`);
      // As Keycloak reads the representation (primitive fields): what the entry does not give is false, or 0.
      const enabled = rep.enabled === true;
      return { alias, name: rep.name ?? null, providerId: rep.providerId ?? null, enabled, defaultAction: enabled && rep.defaultAction === true, priority: rep.priority ?? 0, config };
    }
    // The server's own action is on unless the entry turns it off (its defaults, as a realm made here has them).
    const enabled = rep.enabled !== false;
    const defaultAction = enabled && rep.defaultAction === true;
    if (rep.providerId !== undefined && rep.providerId !== alias) notImported.push(`${path}.providerId ("${rep.providerId}" is not installed; "${alias}" is this server's own action)`);
    const unknown = Object.keys(config).filter((key) => !provider.config.some((p) => p.name === key));
    if (unknown.length) keptAsData.push(`${path}.config ("${alias}" has no setting ${unknown.map((k) => `"${k.slice(0, 64)}"`).join(', ')} here)`);
    return { alias, name: rep.name ?? null, providerId: null, enabled, defaultAction, priority: rep.priority ?? provider.defaults.priority, config };
  });
}
