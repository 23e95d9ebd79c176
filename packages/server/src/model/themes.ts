/** Keycloak's realm fields naming a theme of each type this server themes, kept as realm attributes of those names. */
export const THEME_FIELDS = { loginTheme: 'login', accountTheme: 'account', emailTheme: 'email' } as const;

/** A theme's name (a theme directory's, and a realm theme field's value): no path characters, at most 100 characters. */
export const THEME_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** Keycloak's client attribute naming the login theme of that client's sign-in pages (over the realm's loginTheme). */
export const CLIENT_LOGIN_THEME = 'login_theme';
