import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpDatabases, startServer, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

/** Issue 16, point 5: the realm's user profile (`users/profile`, `users/profile/metadata`) with the official admin client. */
describe.each(httpDatabases)('the user profile in the admin API (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'up', enabled: true });
    kc.setConfig({ realmName: 'up' });
  });
  afterAll(() => t?.close());

  it('describes the four attributes with the rules the server enforces', async () => {
    const config = await kc.users.getProfile();
    expect(config.attributes?.map((a) => a.name)).toEqual(['username', 'email', 'firstName', 'lastName']);
    const email = config.attributes!.find((a) => a.name === 'email')!;
    expect(email.validations).toMatchObject({ email: {}, length: { max: 254 } });
    // The rule it states is the one the API applies: one character over the length is refused. (The local part
    // stays within Keycloak's 64 and each label within 63: the domain makes up the length.)
    const over = `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(62)}`;
    expect(over).toHaveLength(255);
    await expect(kc.users.create({ username: 'long-mail', email: over })).rejects.toMatchObject({ response: { status: 400 } });
    await kc.users.create({ username: 'fits', email: over.slice(1) });
    const metadata = await kc.users.getProfileMetadata();
    // The metadata of a user being created (the console's Create user form): its username is given there.
    expect(metadata.attributes?.find((a) => a.name === 'username')).toMatchObject({ required: true, readOnly: false });
  });

  it('accepts its own configuration back and refuses a change, with 400', async () => {
    const config = await kc.users.getProfile();
    expect(await kc.users.updateProfile({ ...config, realm: 'up' } as never)).toEqual(config);
    const changed = { ...config, attributes: [...config.attributes!, { name: 'phone', displayName: 'Phone' }] };
    await expect(kc.users.updateProfile({ ...changed, realm: 'up' } as never)).rejects.toMatchObject({ response: { status: 400 } });
    expect((await kc.users.getProfile()).attributes?.map((a) => a.name)).not.toContain('phone');
  });
});
