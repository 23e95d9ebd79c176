/** The user the token tests sign in as: every profile and e-mail field set, so each mapper has something to write. */
export const ALICE = {
  username: 'alice',
  email: 'alice@example.com',
  firstName: 'Alice',
  lastName: 'Liddell',
  emailVerified: true,
  enabled: true,
  credentials: [{ type: 'password', value: 'wonderland-42' }],
};
