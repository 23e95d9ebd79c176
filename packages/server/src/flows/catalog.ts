import type { ConfigProperty, FormActionFactory, FormProtectorFactory, Requirement } from '@realmgate/spi';
import type { FlowExtensions, FlowType } from './model.js';

/** What a provider does in a flow, which decides where it may be added and which admin list shows it. */
export type ProviderRole = 'authenticator' | 'form' | 'form-action' | 'client-authenticator' | 'form-protector';

export interface AuthProvider {
  id: string;
  role: ProviderRole;
  displayName: string;
  description: string;
  requirementChoices: readonly Requirement[];
  configProperties: readonly ConfigProperty[];
  /** The provider's own check of an authenticatorConfig before it is stored (SPI `validateConfig`). */
  validateConfig?: (config: Readonly<Record<string, string>>) => string[];
}

const builtIn = (id: string, role: ProviderRole, displayName: string, description: string, requirementChoices: Requirement[]): AuthProvider => ({
  id,
  role,
  displayName,
  description,
  requirementChoices,
  configProperties: [],
});

/** reset-otp's choices (Keycloak's ResetOTP config values). */
export const RESET_OTP_REMOVE_ONE = 'Remove one OTP';
export const RESET_OTP_REMOVE_ALL = 'Remove all OTPs';

/**
 * The steps of Keycloak's `first broker login` flow (and the other idp-* authenticators Keycloak offers for it),
 * under its provider ids, display names and config keys: known here so the admin API and console list them, flow
 * copies can hold them and realm files import them. Running them is identity brokering's part: its runtime
 * authenticators are registered by provider id beside the browser's (authentication/), and this list is the one
 * place their catalog entries live.
 */
export const firstBrokerLoginProviders: readonly AuthProvider[] = [
  {
    ...builtIn('idp-review-profile', 'authenticator', 'Review Profile', "Shows the profile data the identity provider sent, for the user to review and complete.", ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
    configProperties: [
      {
        name: 'update.profile.on.first.login',
        label: 'Update profile on first login',
        type: 'List',
        defaultValue: 'missing',
        helpText: '"on": always ask the user to review the profile; "missing": only when a required field is missing; "off": never.',
      },
    ],
    validateConfig: (config) => {
      const value = config['update.profile.on.first.login'];
      return value === undefined || ['on', 'missing', 'off'].includes(value) ? [] : ['update.profile.on.first.login: "on", "missing" or "off"'];
    },
  },
  {
    ...builtIn('idp-create-user-if-unique', 'authenticator', 'Create User If Unique', 'Creates the user when no account with the same e-mail or username exists yet.', ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
    configProperties: [
      { name: 'require.password.update.after.registration', label: 'Require password update after registration', type: 'boolean', defaultValue: 'false', helpText: 'Whether the user created this way must set a password (UPDATE_PASSWORD).' },
    ],
  },
  builtIn('idp-confirm-link', 'authenticator', 'Confirm link existing account', 'Asks the user whether to link the identity provider to the existing account with the same e-mail or username.', ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
  builtIn('idp-email-verification', 'authenticator', 'Verify existing account by Email', 'Proves the user owns the existing account with a link e-mailed to its address before linking.', ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
  builtIn('idp-username-password-form', 'authenticator', 'Username Password Form for identity provider reauthentication', "Proves the user owns the existing account by its password; the username is the one the identity provider's data matched.", ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
  builtIn('idp-auto-link', 'authenticator', 'Automatically set existing user', 'Links the existing account without asking the user to prove they own it.', ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
  builtIn('idp-detect-existing-broker-user', 'authenticator', 'Detect existing broker user', 'Continues with the existing account of the same e-mail or username, and fails when there is none.', ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
];

/**
 * Keycloak's providers that the built-in flows name, with its display names and help texts, each with the
 * requirements it may take here (the password steps and choose-user only REQUIRED: no copy signs anyone in without
 * them); reCAPTCHA and terms and conditions are not implemented here and stay DISABLED (listed so Keycloak's
 * structure and exports carry over).
 */
const builtInProviders: readonly AuthProvider[] = [
  builtIn('auth-cookie', 'authenticator', 'Cookie', 'Validates the SSO cookie set by the auth server.', ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
  builtIn('auth-username-password-form', 'authenticator', 'Username Password Form', 'Validates a username and password from login form.', ['REQUIRED']),
  builtIn('auth-username-form', 'authenticator', 'Username Form', 'Selects a user from his username.', ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
  builtIn('auth-password-form', 'authenticator', 'Password Form', 'Validates a password from login form.', ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
  builtIn('reset-credentials-choose-user', 'authenticator', 'Choose User', 'Choose a user to reset credentials for', ['REQUIRED']),
  builtIn('reset-credential-email', 'authenticator', 'Send Reset Email', 'Send email to user and wait for response.', ['REQUIRED', 'DISABLED']),
  builtIn('reset-password', 'authenticator', 'Reset Password', 'Sets the Update Password required action if execution is REQUIRED.  Will also set it if execution is OPTIONAL and the password is currently configured for it.', ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
  {
    ...builtIn('reset-otp', 'authenticator', 'Reset OTP', 'Removes existing OTP configurations (if chosen) and sets the Configure OTP required action.', ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
    configProperties: [
      {
        name: 'action_on_otp_reset_flag',
        label: 'Action on OTP reset',
        type: 'List',
        defaultValue: RESET_OTP_REMOVE_ONE,
        helpText: `What happens to the user's OTP credentials: "${RESET_OTP_REMOVE_ONE}" keeps them (the user sets up a new app beside them), "${RESET_OTP_REMOVE_ALL}" removes them all first.`,
      },
    ],
    validateConfig: (config) => {
      const action = config.action_on_otp_reset_flag;
      return action === undefined || action === RESET_OTP_REMOVE_ONE || action === RESET_OTP_REMOVE_ALL ? [] : [`action_on_otp_reset_flag: "${RESET_OTP_REMOVE_ONE}" or "${RESET_OTP_REMOVE_ALL}"`];
    },
  },
  builtIn('direct-grant-validate-username', 'authenticator', 'Username Validation', "Validates the username supplied as a 'username' form parameter in direct grant request", ['REQUIRED']),
  builtIn('direct-grant-validate-password', 'authenticator', 'Password', "Validates the password supplied as a 'password' form parameter in direct grant request", ['REQUIRED']),
  builtIn('direct-grant-validate-otp', 'authenticator', 'OTP', "Checks the one-time code sent as the 'totp' form parameter of a direct grant request", ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
  builtIn('auth-otp-form', 'authenticator', 'OTP Form', 'Asks for a one-time code from an authenticator app on a page of its own.', ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
  builtIn('webauthn-authenticator', 'authenticator', 'WebAuthn Authenticator', 'Authenticator for WebAuthn. Usually used for WebAuthn two-factor authentication', ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
  builtIn('webauthn-authenticator-passwordless', 'authenticator', 'WebAuthn Passwordless Authenticator', 'Authenticator for Passwordless WebAuthn authentication', ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
  builtIn('auth-recovery-authn-code-form', 'authenticator', 'Recovery Authentication Code Form', 'Validates a Recovery Authentication Code', ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
  builtIn('conditional-user-configured', 'authenticator', 'Condition - user configured', 'Runs the subflow only when the user has set up what its authenticators check (an OTP credential).', ['REQUIRED', 'DISABLED']),
  {
    ...builtIn('conditional-user-role', 'authenticator', 'Condition - user role', 'Flow is executed only if user has the given role.', ['REQUIRED', 'DISABLED']),
    configProperties: [
      { name: 'condUserRole', label: 'User role', type: 'String', helpText: 'Role the user should have to execute this flow. Click "Select Role" button to browse roles, or just type it in the textbox. To specify an application role the syntax is appname.approle, i.e. myapp.myrole' },
      { name: 'negate', label: 'Negate output', type: 'boolean', defaultValue: 'false', helpText: 'Apply a NOT to the check result. When this is true, then the condition will evaluate to true just if user does NOT have the specified role. When this is false, the condition will evaluate to true just if user has the specified role' },
    ],
  },
  {
    ...builtIn('conditional-user-attribute', 'authenticator', 'Condition - user attribute', 'Flow is executed only if the user attribute exists and has the expected value', ['REQUIRED', 'DISABLED']),
    configProperties: [
      { name: 'attribute_name', label: 'Attribute name', type: 'String', helpText: 'Name of the attribute to check' },
      { name: 'attribute_expected_value', label: 'Expected attribute value', type: 'String', helpText: 'Expected value in the attribute' },
      { name: 'regex', label: 'Regex', type: 'boolean', defaultValue: 'false', helpText: 'Check equality with regex' },
      { name: 'not', label: 'Negate output', type: 'boolean', defaultValue: 'false', helpText: 'Return false if attribute matches' },
      { name: 'include_group_attributes', label: 'Include group attributes', type: 'boolean', defaultValue: 'false', helpText: "Also look for the attribute on the user's groups (and the groups above them)." },
    ],
  },
  // BROKERING (issue 37): the browser flow's step that sends the user to an identity provider (authentication/brokering/redirector.ts).
  {
    ...builtIn('identity-provider-redirector', 'authenticator', 'Identity Provider Redirector', 'Redirects to default Identity Provider or Identity Provider specified with kc_idp_hint query parameter', ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
    configProperties: [{ name: 'defaultProvider', label: 'Default Identity Provider', type: 'String', helpText: 'To automatically redirect to an identity provider set to the alias of the identity provider' }],
  },
  builtIn('registration-page-form', 'form', 'Registration Page', 'This is the controller for the registration page', ['REQUIRED', 'DISABLED']),
  builtIn(
    'registration-user-creation',
    'form-action',
    'Registration User Profile Creation',
    'Validates the username and user profile of the new user: names, e-mail (format and uniqueness) and username.',
    ['REQUIRED', 'DISABLED'],
  ),
  builtIn('registration-password-action', 'form-action', 'Password Validation', 'Validates that password matches password confirmation field.', ['REQUIRED', 'DISABLED']),
  builtIn('registration-recaptcha-action', 'form-action', 'reCAPTCHA', 'Google reCAPTCHA; not available in Realmgate, so it stays disabled.', ['DISABLED']),
  builtIn('registration-terms-and-conditions', 'form-action', 'Terms and conditions', 'Terms and conditions; not available in Realmgate, so it stays disabled.', ['DISABLED']),
  builtIn(
    'client-secret',
    'client-authenticator',
    'Client Id and Secret',
    "Validates client based on 'client_id' and 'client_secret' sent either in request parameters or in 'Authorization: Basic' header",
    ['ALTERNATIVE', 'REQUIRED', 'DISABLED'],
  ),
  builtIn('client-jwt', 'client-authenticator', 'Signed Jwt', 'Validates a client by a JWT it signs with its private key (private_key_jwt).', ['ALTERNATIVE', 'REQUIRED', 'DISABLED']),
  builtIn('client-secret-jwt', 'client-authenticator', 'Signed Jwt with Client Secret', 'Validates a client by a JWT it MACs with its secret (client_secret_jwt).', ['ALTERNATIVE', 'REQUIRED', 'DISABLED']),
  builtIn('client-x509', 'client-authenticator', 'X509 Certificate', "Validates a client by the subject DN of the X.509 certificate of its mutual-TLS connection, forwarded by a trusted proxy.", ['ALTERNATIVE', 'REQUIRED', 'DISABLED']),
  ...firstBrokerLoginProviders,
];

const placements: Record<FlowType, readonly ProviderRole[]> = {
  'basic-flow': ['authenticator', 'form-protector'],
  'form-flow': ['form-action', 'form-protector'],
  'client-flow': ['client-authenticator'],
};

/** Keycloak's choices for an execution that runs a subflow, by the subflow's type. */
export function subflowRequirementChoices(type: FlowType): readonly Requirement[] {
  switch (type) {
    case 'basic-flow':
      return ['REQUIRED', 'ALTERNATIVE', 'DISABLED', 'CONDITIONAL'];
    case 'form-flow':
      return ['REQUIRED', 'DISABLED'];
    case 'client-flow':
      return ['ALTERNATIVE', 'REQUIRED', 'DISABLED'];
  }
}

const fromFactory = (factory: FormActionFactory | FormProtectorFactory): AuthProvider => ({
  id: factory.id,
  role: factory.kind,
  displayName: factory.displayName,
  description: factory.helpText ?? '',
  requirementChoices: factory.requirementChoices,
  configProperties: factory.configProperties ?? [],
  ...(factory.validateConfig ? { validateConfig: (config: Readonly<Record<string, string>>) => factory.validateConfig!(config) } : {}),
});

/** Every provider a flow execution can name: the built-in ones and the installed form actions and protectors. */
export class ProviderCatalog {
  private readonly builtIns = new Map(builtInProviders.map((p) => [p.id, p]));

  constructor(private readonly providers: FlowExtensions) {}

  get(id: string): AuthProvider | undefined {
    const known = this.builtIns.get(id);
    if (known) return known;
    const factory = this.installed().find((f) => f.id === id);
    return factory ? fromFactory(factory) : undefined;
  }

  isBuiltIn(id: string): boolean {
    return this.builtIns.has(id);
  }

  /** Providers in the given roles, built-in first, in a stable order. */
  list(...roles: ProviderRole[]): AuthProvider[] {
    return [...builtInProviders, ...this.installed().map(fromFactory)].filter((p) => roles.includes(p.role));
  }

  /** Whether a provider of this role may be added to a flow of this type (a form action only to a form). */
  fits(provider: AuthProvider, type: FlowType): boolean {
    return placements[type].includes(provider.role);
  }

  /**
   * Installed ids that shadow a built-in one or each other (a form action and a protector share the id
   * space of executions); the server refuses to start with any, as with duplicate provider ids.
   */
  clashingIds(): string[] {
    const seen = new Set(this.builtIns.keys());
    const clashes: string[] = [];
    for (const factory of this.installed()) {
      if (seen.has(factory.id)) clashes.push(factory.id);
      seen.add(factory.id);
    }
    return clashes;
  }

  private installed(): (FormActionFactory | FormProtectorFactory)[] {
    return this.providers
      .list()
      .map((entry) => entry.factory)
      .filter((f): f is FormActionFactory | FormProtectorFactory => f.kind === 'form-action' || f.kind === 'form-protector');
  }
}
