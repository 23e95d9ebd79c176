import type { User } from '../../../model/types.js';
import { valueWriter } from './claims.js';
import type { MapperData, MapperImplementation, UserGroupAttributes } from './types.js';

/** A user's attribute values; username, email, firstName and lastName are attributes too (Keycloak's user profile). */
export function userAttributeValues(user: User, name: string): string[] | undefined {
  switch (name) {
    case 'username':
      return [user.username];
    case 'email':
      return user.email ? [user.email] : undefined;
    case 'firstName':
      return user.firstName ? [user.firstName] : undefined;
    case 'lastName':
      return user.lastName ? [user.lastName] : undefined;
    default:
      return Object.hasOwn(user.attributes, name) ? user.attributes[name] : undefined;
  }
}

/**
 * A group's values of an attribute, as Keycloak's KeycloakModelUtils.resolveAttribute(GroupModel…): the group's own;
 * without them (or with `aggregate`) its parent's, up to the top. A corrupted cyclic tree ends at a repeated group.
 */
function groupAttributeValues(tree: UserGroupAttributes, groupId: string, name: string, aggregate: boolean): string[] {
  const values: string[] = [];
  const seen = new Set<string>();
  for (let id: string | null = groupId; id !== null && !seen.has(id); ) {
    seen.add(id);
    const group: UserGroupAttributes['groups'][string] | undefined = Object.hasOwn(tree.groups, id) ? tree.groups[id] : undefined;
    if (!group) break;
    const own = Object.hasOwn(group.attributes, name) && Array.isArray(group.attributes[name]) ? group.attributes[name] : [];
    for (const v of own) if (!values.includes(v)) values.push(v);
    if (values.length > 0 && !aggregate) break;
    id = group.parentId;
  }
  return values;
}

/**
 * Keycloak's KeycloakModelUtils.resolveAttribute(UserModel, name, aggregateAttrs): the user's own values; when the
 * user has none, those of the first of the user's groups (by name) that has some, itself or through a parent.
 * With `aggregate` (`aggregate.attrs`), the user's and every group's and parent's values together, each once.
 */
export function resolveUserAttribute(data: Pick<MapperData, 'user' | 'groupAttributes'>, name: string, aggregate: boolean): string[] | undefined {
  const own = userAttributeValues(data.user, name) ?? [];
  if (own.length > 0 && !aggregate) return own;
  const tree = data.groupAttributes;
  if (!tree) return own.length ? own : undefined;
  const values = [...own];
  for (const groupId of tree.memberOf) {
    const found = groupAttributeValues(tree, groupId, name, aggregate);
    if (found.length === 0) continue;
    if (!aggregate) return found;
    for (const v of found) if (!values.includes(v)) values.push(v);
  }
  return values.length ? values : undefined;
}

/**
 * oidc-usermodel-attribute-mapper: the attribute `user.attribute` into `claim.name`, read through the user's groups
 * as Keycloak does (see resolveUserAttribute); absent everywhere, no claim.
 */
export const userAttributeMapper: MapperImplementation = {
  id: 'oidc-usermodel-attribute-mapper',
  compile(config) {
    const write = valueWriter(config);
    const attribute = config['user.attribute'];
    const aggregate = config['aggregate.attrs'] === 'true';
    if (!write || !attribute) return { apply: () => undefined };
    return {
      // The groups are read only for a user who lacks the attribute (or to aggregate): see loadMapperData.
      needs: { groupAttributes: [{ name: attribute, aggregate }] },
      apply: (claims, data) => write(claims, resolveUserAttribute(data, attribute, aggregate)),
    };
  },
};
