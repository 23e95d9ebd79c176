import { valueWriter } from './claims.js';
import type { MapperImplementation } from './types.js';

/** oidc-usersessionmodel-note-mapper: the session note `user.session.note` into `claim.name`; no note, no claim. */
export const sessionNoteMapper: MapperImplementation = {
  id: 'oidc-usersessionmodel-note-mapper',
  compile(config) {
    const write = valueWriter({ ...config, multivalued: 'false' });
    const note = config['user.session.note'];
    return {
      apply(claims, data) {
        if (write && note && Object.hasOwn(data.notes, note)) write(claims, [data.notes[note]]);
      },
    };
  },
};
