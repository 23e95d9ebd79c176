/** Request body limits, read where routes are made and where a refusal explains itself (errors.ts). */
export const JSON_BODY_LIMIT = 1024 * 1024;
export const FORM_BODY_LIMIT = 64 * 1024;
/** A realm file sent to the admin API (`POST /admin/realms`, `partialImport`): Keycloak's default body limit, 10 MiB. */
export const REALM_IMPORT_BODY_LIMIT = 10 * 1024 * 1024;
/** A realm file `--import-realm` reads at start-up; larger is refused unread (Keycloak exports with users run to a few MB). */
export const REALM_FILE_LIMIT = 32 * 1024 * 1024;

/** A limit as people read it: `10 MiB`, `64 KiB`. */
export const sizeInWords = (bytes: number) => (bytes >= 1024 * 1024 ? `${+(bytes / (1024 * 1024)).toFixed(1)} MiB` : `${+(bytes / 1024).toFixed(1)} KiB`);
