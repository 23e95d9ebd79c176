/**
 * Keycloak's default user-profile rules, shared by the admin API, registration and the account pages.
 * Usernames and person names refuse the characters Keycloak's prohibited-characters validators refuse.
 */
export const usernamePattern = /^[^\s<>&"'$%!#?§;*~/\\|^=[\]{}()\u0000-\u001f]+$/u;
export const personNamePattern = /^[^<>&"$%!#?§;*~/\\|^=[\]{}()\u0000-\u001f]*$/u;
/**
 * local@label.label…: no empty domain labels (`a@b..c`), no spaces or characters that break headers;
 * a trailing dot (the DNS root) is allowed, as mail systems allow it.
 */
export const emailPattern = /^[^\s@<>()[\]\\,;:"]+@(?:[^\s@<>()[\]\\,;:".]+\.)+[^\s@<>()[\]\\,;:".]+\.?$/;
