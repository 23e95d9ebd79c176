import { maxAuthAge, type RequiredActionProvider } from './provider.js';

export const UPDATE_PASSWORD = 'UPDATE_PASSWORD';

/** The user chooses a new password (a temporary one, an expired one, or at the application's request). */
export const updatePassword: RequiredActionProvider = {
  alias: UPDATE_PASSWORD,
  name: 'Update Password',
  defaults: { priority: 57, enabled: true },
  config: [maxAuthAge],
};
