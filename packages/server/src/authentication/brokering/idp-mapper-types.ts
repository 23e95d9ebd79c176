import { IDP_MAPPER_TYPES } from './idp-mappers.js';
import { OIDC_PROVIDER_IDS } from './upstream-oidc.js';

/**
 * The identity-provider mapper types as Keycloak's `…/identity-provider/instances/{alias}/mapper-types` describes
 * them to the console (its Add mapper form): id, name, category, help, and the config entries with Keycloak's
 * names and kinds, for the provider kinds each applies to. The help texts are this server's.
 */

interface MapperProperty {
  name: string;
  label: string;
  helpText: string;
  type: 'String' | 'boolean' | 'List' | 'Role' | 'Group' | 'Map' | 'UserProfileAttributeList';
  defaultValue?: string;
  options?: string[];
  secret: boolean;
}

interface MapperType {
  id: (typeof IDP_MAPPER_TYPES)[number];
  name: string;
  category: string;
  helpText: string;
  properties: MapperProperty[];
  /** The provider kinds it applies to: `*` any. */
  providers: readonly string[] | '*';
}

const property = (name: string, label: string, helpText: string, type: MapperProperty['type'], extra: { defaultValue?: string; options?: string[] } = {}): MapperProperty => ({ name, label, helpText, type, ...extra, secret: false });

const OIDC = [...OIDC_PROVIDER_IDS];
const role = property('role', 'Role', 'The role given to the user.', 'Role');
const jsonAttribute = (provider: string, id: MapperType['id']): MapperType => ({
  id,
  name: 'Attribute Importer',
  category: 'Attribute Importer',
  helpText: 'Copies a field of the provider’s user profile to a user attribute.',
  providers: [provider],
  properties: [
    property('jsonField', 'Social Profile JSON Field Path', 'The profile field: `a.b` for a nested one, `a[0]` for an array’s item.', 'String'),
    property('userAttribute', 'User Attribute Name', 'The user attribute the value is stored in.', 'UserProfileAttributeList'),
  ],
});

const TYPES: readonly MapperType[] = [
  { id: 'oidc-hardcoded-role-idp-mapper', name: 'Hardcoded Role', category: 'Role Importer', helpText: 'Gives every user who signs in through this provider a role.', providers: '*', properties: [role] },
  {
    id: 'hardcoded-attribute-idp-mapper',
    name: 'Hardcoded Attribute',
    category: 'Attribute Importer',
    helpText: 'Sets a user attribute to a fixed value for every user who signs in through this provider.',
    providers: '*',
    properties: [property('attribute', 'User Attribute', 'The attribute to set.', 'UserProfileAttributeList'), property('attribute.value', 'User Attribute Value', 'The value it is set to.', 'String')],
  },
  {
    id: 'oidc-user-attribute-idp-mapper',
    name: 'Attribute Importer',
    category: 'Attribute Importer',
    helpText: 'Copies a claim of the ID token or user info to a user attribute.',
    providers: OIDC,
    properties: [property('claim', 'Claim', 'The claim’s name; a dot reaches into a nested claim (escape a literal dot with a backslash).', 'String'), property('user.attribute', 'User Attribute Name', 'The user attribute the value is stored in.', 'UserProfileAttributeList')],
  },
  {
    id: 'oidc-role-idp-mapper',
    name: 'Claim to Role',
    category: 'Role Importer',
    helpText: 'Gives a role when a claim has a value.',
    providers: OIDC,
    properties: [property('claim', 'Claim', 'The claim’s name; a dot reaches into a nested claim.', 'String'), property('claim.value', 'Claim Value', 'The value the claim must have.', 'String'), role],
  },
  {
    id: 'oidc-advanced-role-idp-mapper',
    name: 'Advanced Claim to Role',
    category: 'Role Importer',
    helpText: 'Gives a role when every listed claim has its value.',
    providers: OIDC,
    properties: [
      property('claims', 'Claims', 'The claims and the value each must have.', 'Map'),
      property('are.claim.values.regex', 'Regex Claim Values', 'Read the values as regular expressions.', 'boolean', { defaultValue: 'false' }),
      role,
    ],
  },
  {
    id: 'oidc-username-idp-mapper',
    name: 'Username Template Importer',
    category: 'Preprocessor',
    helpText: 'Makes the username from a template of the provider’s alias and claims.',
    providers: OIDC,
    properties: [
      property('template', 'Template', '${ALIAS} and ${CLAIM.<name>}, each optionally followed by | lowercase or | uppercase.', 'String', { defaultValue: '${ALIAS}.${CLAIM.preferred_username}' }),
      property('target', 'Target', 'Where the name goes: the local username, or the link’s user id or username at the provider.', 'List', { defaultValue: 'LOCAL', options: ['LOCAL', 'BROKER_ID', 'BROKER_USERNAME'] }),
    ],
  },
  { id: 'oidc-hardcoded-group-idp-mapper', name: 'Hardcoded Group', category: 'Group Importer', helpText: 'Puts every user who signs in through this provider in a group.', providers: OIDC, properties: [property('group', 'Group', 'The group.', 'Group')] },
  jsonAttribute('github', 'github-user-attribute-mapper'),
  jsonAttribute('google', 'google-user-attribute-mapper'),
  jsonAttribute('microsoft', 'microsoft-user-attribute-mapper'),
  jsonAttribute('facebook', 'facebook-user-attribute-mapper'),
  jsonAttribute('linkedin-openid-connect', 'linkedin-user-attribute-mapper'),
];

/** The mapper types for a provider of this kind, by id, as Keycloak's mapper-types answers them. */
export function idpMapperTypes(providerId: string): Record<string, Omit<MapperType, 'providers'>> {
  return Object.fromEntries(TYPES.filter((type) => type.providers === '*' || type.providers.includes(providerId)).map(({ providers: _, ...type }) => [type.id, type]));
}
