import type { FastifyInstance } from 'fastify';
import { badRequest } from '../model/errors.js';
import { profileMetadata, userProfileConfig } from '../model/user-profile.js';
import { type AdminRequest } from './routing.js';

/**
 * The realm's user profile at Keycloak's admin paths: its configuration (UPConfig) and the metadata forms are
 * built from. Realmgate's profile is fixed (username, email, first and last name with the rules every entry point
 * enforces), so a PUT of another configuration is refused rather than stored without effect.
 */
export function userProfileRoutes(app: FastifyInstance): void {
  app.get('/realms/:realm/users/profile', async () => {
    return userProfileConfig();
  });

  app.get('/realms/:realm/users/profile/metadata', async () => {
    // As Keycloak's: the form of a user being created (the console's Create user page is built from it).
    return profileMetadata({ newUser: true });
  });

  app.put('/realms/:realm/users/profile', async (request: AdminRequest) => {
    checkProfileConfig(request.body);
    return userProfileConfig();
  });
}

/**
 * A user profile configuration given to change the realm's (`PUT …/users/profile`, the console's `upConfig` of `PUT
 * …/ui-ext`): the configuration as it is (what GET answered) is accepted unchanged, so a tool that PUTs back what it
 * read works; any other is refused (400).
 */
export function checkProfileConfig(config: unknown): void {
  if (JSON.stringify(config) === JSON.stringify(userProfileConfig())) return;
  throw badRequest('The user profile cannot be changed in Realmgate: username, email, firstName and lastName are fixed');
}
