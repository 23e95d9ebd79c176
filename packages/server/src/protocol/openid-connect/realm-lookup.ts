import { oauthError } from '../../model/errors.js';
import type { Realm } from '../../model/types.js';
import type { Storage } from '../../storage/index.js';

export async function realmOrError(storage: Storage, name: string): Promise<Realm> {
  const realm = name.length <= 255 ? await storage.realms.cachedByName(name) : null;
  if (!realm || !realm.enabled) throw oauthError.invalid_request('Realm does not exist', { status: 404 });
  return realm;
}
