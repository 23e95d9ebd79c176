import type { ConfigProperty, FormActionFactory, FormProtectorFactory, Requirement } from '@realmgate/spi';
import type { ProviderRegistry } from '../providers/registry.js';
import type { FlowType } from './model.js';

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

/**
 * Keycloak's providers that the built-in flows name, with its display names and help texts. The login and
 * reset pages do their work themselves, so their steps accept only REQUIRED; reCAPTCHA and terms and
 * conditions are not implemented here and stay DISABLED (listed so Keycloak's structure and exports carry over).
 */
const builtInProviders: readonly AuthProvider[] = [
  builtIn('auth-cookie', 'authenticator', 'Cookie', 'Validates the SSO cookie set by the auth server.', ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
  builtIn('auth-username-password-form', 'authenticator', 'Username Password Form', 'Validates a username and password from login form.', ['REQUIRED']),
  builtIn('auth-username-form', 'authenticator', 'Username Form', 'Selects a user from his username.', ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
  builtIn('auth-password-form', 'authenticator', 'Password Form', 'Validates a password from login form.', ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
  builtIn('reset-credentials-choose-user', 'authenticator', 'Choose User', 'Choose a user to reset credentials for', ['REQUIRED']),
  builtIn('reset-credential-email', 'authenticator', 'Send Reset Email', 'Send email to user and wait for response.', ['REQUIRED']),
  builtIn('reset-password', 'authenticator', 'Reset Password', 'Asks the user for a new password after the e-mailed link was followed.', ['REQUIRED']),
  builtIn('direct-grant-validate-username', 'authenticator', 'Username Validation', "Validates the username supplied as a 'username' form parameter in direct grant request", ['REQUIRED']),
  builtIn('direct-grant-validate-password', 'authenticator', 'Password', "Validates the password supplied as a 'password' form parameter in direct grant request", ['REQUIRED']),
  builtIn('direct-grant-validate-otp', 'authenticator', 'OTP', "Checks the one-time code sent as the 'totp' form parameter of a direct grant request", ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
  builtIn('auth-otp-form', 'authenticator', 'OTP Form', 'Asks for a one-time code from an authenticator app on a page of its own.', ['REQUIRED', 'ALTERNATIVE', 'DISABLED']),
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

  constructor(private readonly providers: ProviderRegistry) {}

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
