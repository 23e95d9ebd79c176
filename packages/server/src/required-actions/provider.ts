/**
 * A required-action provider: what one of Keycloak's required actions is, independent of any realm. A realm
 * registers providers (its RequiredActionProviderRepresentation: enabled, default action, priority, config); a user
 * holds the aliases of the actions still asked of them. The pages that carry an action out live in pages/; this
 * layer says what the action is and when it is due.
 */
export interface RequiredActionConfigProperty {
  name: string;
  label: string;
  helpText: string;
  type: 'String' | 'boolean';
  /** As Keycloak 26.7.3's config-description answers it (a number, a string or a boolean). */
  defaultValue: string | number | boolean;
  /** The values a PUT may store: a whole number at least 0, or `true`/`false`. */
  value: 'seconds' | 'boolean';
}

export interface RequiredActionProvider {
  /** Keycloak's provider id, which is also the alias a realm registers it under. */
  alias: string;
  name: string;
  /** Keycloak 26.7.3's settings of the action in a new realm. */
  defaults: { priority: number; enabled: boolean };
  /** Its settings (`required-actions/{alias}/config`); empty: not configurable (Keycloak's 400/404). */
  config: readonly RequiredActionConfigProperty[];
  /** A max_auth_age the action fixes whatever its settings say (Keycloak's getMaxAuthAge: 0 for delete_account). */
  maxAuthAgeSeconds?: number;
}

/**
 * Keycloak's max_auth_age: how long after the last sign-in an application-initiated action (`kc_action`) may run
 * without signing in again. Keycloak answers its default as the number 300.
 */
export const MAX_AUTH_AGE = 'max_auth_age';
export const DEFAULT_MAX_AUTH_AGE_SECONDS = 300;

export const maxAuthAge: RequiredActionConfigProperty = {
  name: MAX_AUTH_AGE,
  label: 'Maximum Age of Authentication',
  helpText:
    'Seconds since the last sign-in during which an application may start this action (kc_action) without the user signing in again. Used only for application-initiated actions.',
  type: 'String',
  defaultValue: DEFAULT_MAX_AUTH_AGE_SECONDS,
  value: 'seconds',
};

export const emailResendCooldown: RequiredActionConfigProperty = {
  name: 'emailResendCooldownSeconds',
  label: 'Cooldown Between Email Resend (seconds)',
  helpText: 'Seconds to wait before another verification e-mail may be sent.',
  type: 'String',
  defaultValue: '30',
  value: 'seconds',
};
