import { maxAuthAge, type RequiredActionProvider } from './provider.js';

export const UPDATE_PROFILE = 'UPDATE_PROFILE';

/** The user confirms or corrects their names and e-mail address. */
export const updateProfile: RequiredActionProvider = {
  alias: UPDATE_PROFILE,
  name: 'Update Profile',
  defaults: { priority: 40, enabled: true },
  config: [maxAuthAge],
};
