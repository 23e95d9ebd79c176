import type KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emailPattern } from '../src/model/user-profile.js';
import { masterAdminClient } from './support/admin-client.js';
import { httpDatabases, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Keycloak's e-mail rule (org.keycloak.utils.EmailValidationUtil, the user profile's `email` validator): a domain
 * without a dot is an address (`admin@localhost`, as JHipster's realm has it), and what Keycloak refuses is
 * refused: spaces, a second `@`, dots out of place, a `-` at a label's edge, `_` in the domain, over 64 characters
 * before the `@`, a label over 63, a domain over 255, a trailing dot. Control characters and quoting stay refused
 * here (src/model/user-profile.ts says why).
 */

const label = (c: string, n = 63) => c.repeat(n);

const ACCEPTED = [
  'admin@localhost',
  'user@localhost',
  'a@b',
  'first.last@example.com',
  "o'neil+news@mail-server.example.co.uk",
  'Mixed.Case@Example.COM',
  "!#$%&'*+/=?^_`{|}~-@example.com",
  'ünïcode@bücher.example',
  'x@xn--bcher-kva.example',
  'a@127.0.0.1',
  `${'l'.repeat(64)}@localhost`,
  `a@${label('d')}`,
  // 255 characters of domain: four labels.
  `a@${label('b')}.${label('c')}.${label('d')}.${label('e', 63)}`,
];

const REFUSED: [string, string][] = [
  ['a b@example.com', 'a space'],
  ['a@exa mple.com', 'a space in the domain'],
  [' a@example.com', 'a leading space'],
  ['a@example.com ', 'a trailing space'],
  ['a@b@example.com', 'two @'],
  ['@example.com', 'no local part'],
  ['a@', 'no domain'],
  ['aexample.com', 'no @'],
  ['.a@example.com', 'a leading dot'],
  ['a.@example.com', 'a dot before the @'],
  ['a..b@example.com', 'two dots'],
  ['a@.example.com', 'an empty first label'],
  ['a@example..com', 'an empty label'],
  ['a@example.com.', 'a trailing dot (Keycloak refuses it)'],
  ['a@-example.com', 'a label starting with -'],
  ['a@example-.com', 'a label ending with -'],
  ['a@exa_mple.com', '_ in the domain'],
  ['a\u0000@example.com', 'NUL'],
  ['a@example.com\r\nBcc: victim@example.com', 'a header injection'],
  ['a\t@example.com', 'a tab'],
  ['a\u0085@example.com', 'a C1 control'],
  ['a\u00a0b@example.com', 'a no-break space'],
  ['a@example.com\u2028', 'a line separator'],
  ['"a b"@example.com', 'a quoted local part'],
  ['a@[127.0.0.1]', 'an address literal'],
  ['a<b>@example.com', 'angle brackets'],
  ['a,b@example.com', 'a comma'],
  ['a;b@example.com', 'a semicolon'],
  ['a:b@example.com', 'a colon'],
  ['a(b)@example.com', 'parentheses'],
  ['a\\b@example.com', 'a backslash'],
  [`${'l'.repeat(65)}@localhost`, 'a local part of 65'],
  [`a@${label('d', 64)}`, 'a label of 64'],
  [`a@${label('b')}.${label('c')}.${label('d')}.${label('e', 64)}`, 'a domain of 256'],
];

describe("Keycloak's e-mail rule", () => {
  it.each(ACCEPTED)('takes %s', (email) => {
    expect(emailPattern.test(email)).toBe(true);
  });

  it.each(REFUSED)('refuses %j (%s)', (email) => {
    expect(emailPattern.test(email)).toBe(false);
  });

  it('answers in linear time on hostile input', () => {
    // Linear matching takes milliseconds, backtracking ages: the test's timeout catches that (the time itself is a
    // benchmark's business, not an assertion's).
    for (const input of [`${'a'.repeat(200_000)}@x!`, `a@${'b-'.repeat(100_000)}!`, `a@${'b'.repeat(300_000)}.`, `${'a.'.repeat(100_000)}@x`]) {
      expect(emailPattern.test(input), input.slice(0, 12)).toBe(false);
    }
  });
});

describe.each(httpDatabases)('e-mail addresses through the admin API (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url, 'mail');
    await kc.realms.create({ realm: 'mail', enabled: true });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('creates a user with admin@localhost, who signs in and gets the address in the token', async () => {
    const { id } = await kc.users.create({ username: 'jhipster-admin', email: 'admin@localhost', enabled: true, emailVerified: true, credentials: [{ type: 'password', value: 'Admin-pass-1', temporary: false }] });
    expect((await kc.users.findOne({ id }))?.email).toBe('admin@localhost');
    const response = await tokenRequest(t.url, 'mail', { grant_type: 'password', client_id: 'admin-cli', username: 'jhipster-admin', password: 'Admin-pass-1', scope: 'openid' });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    const claims = JSON.parse(Buffer.from((response.body.access_token as string).split('.')[1], 'base64url').toString());
    expect(claims.email).toBe('admin@localhost');
    // Changed to another dotless address and back through PUT.
    await kc.users.update({ id }, { email: 'root@intranet' });
    expect((await kc.users.findOne({ id }))?.email).toBe('root@intranet');
  });

  it('refuses with 400 naming the field what Keycloak refuses, and stores nothing', async () => {
    const hostile = ['a b@localhost', 'a@b@localhost', 'a@localhost.', 'a@localhost\r\nBcc: x@y', 'a..b@localhost', `${'l'.repeat(65)}@localhost`, 'a@exa_mple.com', '"q"@localhost'];
    for (const [i, email] of hostile.entries()) {
      await expect(kc.users.create({ username: `hostile-${i}`, email, enabled: true }), email).rejects.toMatchObject({ response: { status: 400 } });
    }
    expect(await kc.users.find({ search: 'hostile' })).toEqual([]);
    const [user] = await kc.users.find({ username: 'jhipster-admin', exact: true });
    await expect(kc.users.update({ id: user.id! }, { email: 'two@@localhost' })).rejects.toMatchObject({ response: { status: 400 } });
    expect((await kc.users.findOne({ id: user.id! }))?.email).toBe('root@intranet');
  });

  it('imports a realm whose users have addresses without a dot (POST /admin/realms, as JHipster exports it)', async () => {
    kc.setConfig({ realmName: 'master' });
    try {
      await kc.realms.create({
        realm: 'dotless',
        enabled: true,
        users: [
          { username: 'admin', email: 'admin@localhost', enabled: true },
          { username: 'user', email: 'user@localhost', enabled: true },
        ],
      });
      kc.setConfig({ realmName: 'dotless' });
      expect((await kc.users.find({ email: 'user@localhost', exact: true })).map((u) => u.username)).toEqual(['user']);
    } finally {
      kc.setConfig({ realmName: 'mail' });
    }
  });
});
