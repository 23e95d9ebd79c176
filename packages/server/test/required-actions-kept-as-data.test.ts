/**
 * Issue 16, point 2: the required actions of a realm file that this server does not carry out (Keycloak's
 * delete_credential, VERIFY_PROFILE, …) are kept as data, as Keycloak keeps every
 * RequiredActionProviderRepresentation of a realm: stored by the realm import and named once each by JSON path in
 * `keptAsData` (the answer and the log), listed by the admin API and the console's Required actions tab, exported
 * back as the file had them. They are never carried out: nobody is asked for one at sign-in, and the admin API
 * refuses to turn one on (enabled or default action), since an operator would believe it now works. Turning one
 * off and reordering work over the whole list. A hostile file is refused naming the path, nothing imported; a
 * view-realm-only administrator changes nothing. With the official admin client, on SQLite
 * (issue 36: the kept actions' rows on PostgreSQL are checked by storage-import-export.test.ts, whose files hold them).
 */
import KcAdminClient from '@keycloak/keycloak-admin-client';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient, realmManagement, rejects } from './support/admin-client.js';
import { REPO_ROOT, api, httpDatabases, startServer, tokenRequest, type TestServer } from './support/server.js';

const FILE = join(import.meta.dirname, 'fixtures/keycloak-exports/keycloak-26.7.3-full-export.json');
const REALM = 'kc26-full';
const R = `/admin/realms/${REALM}/authentication`;
const PASSWORD = 'Kept-as-data-1';
/** What this server carries out (required-actions/ of issue 35). */
const OWN = new Set(['CONFIGURE_TOTP', 'UPDATE_PASSWORD', 'UPDATE_PROFILE', 'VERIFY_EMAIL', 'TERMS_AND_CONDITIONS', 'update_user_locale', 'delete_account', 'UPDATE_EMAIL', 'webauthn-register', 'webauthn-register-passwordless', 'CONFIGURE_RECOVERY_AUTHN_CODES', 'idp_link']);
/** The registry's providers that have settings (config-description). */
const CONFIGURABLE = new Set(['CONFIGURE_TOTP', 'UPDATE_PASSWORD', 'UPDATE_PROFILE', 'VERIFY_EMAIL', 'TERMS_AND_CONDITIONS', 'update_user_locale', 'UPDATE_EMAIL', 'webauthn-register', 'webauthn-register-passwordless', 'CONFIGURE_RECOVERY_AUTHN_CODES', 'idp_link']);
const KEPT = 'realm import: parts of the file are kept as data, not used for sign-in';
const NOT_IMPORTED = 'realm import: parts of the file are not imported';

type Action = Awaited<ReturnType<KcAdminClient['authenticationManagement']['getRequiredActions']>>[number];
const file = () => JSON.parse(readFileSync(FILE, 'utf8')) as Record<string, any>;
/** Keycloak 26.7.3's list: the twelve this server carries out, two more. */
const fileActions = file().requiredActions as Action[];
const keptPaths = fileActions.flatMap((a, i) => (OWN.has(a.alias!) ? [] : [`realm.requiredActions[${i}] ("${a.alias}" is not carried out here)`]));

describe.each(httpDatabases)('required actions kept as data (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  let admin: string;
  let created: { status: number; body: any };
  const order = async () => (await kc.authenticationManagement.getRequiredActions()).map((a) => a.alias);
  const byAlias = async (alias: string) => kc.authenticationManagement.getRequiredActionForAlias({ alias }) as Promise<Action>;
  const grant = (username: string, realm = REALM) => tokenRequest(t.url, realm, { grant_type: 'password', client_id: 'admin-cli', username, password: PASSWORD });

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    admin = (await kc.getAccessToken())!;
    created = await api(t.url, 'POST', '/admin/realms', admin, file());
    kc.setConfig({ realmName: REALM });
    const { management, roles } = await realmManagement(kc);
    for (const [username, role] of [['viewer', 'view-realm'], ['plain', null]] as const) {
      const { id } = await kc.users.create({ username, enabled: true, credentials: [{ type: 'password', value: PASSWORD, temporary: false }] });
      if (role) await kc.users.addClientRoleMappings({ id, clientUniqueId: management, roles: [roles.get(role)!] });
    }
  }, 120_000);
  afterAll(() => t?.close());

  it('the import stores every entry; each one not carried out is named once by JSON path in keptAsData, in the answer and the log', async () => {
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(keptPaths).toHaveLength(2);
    expect(created.body.keptAsData.filter((p: string) => p.startsWith('realm.requiredActions'))).toEqual(keptPaths);
    expect(created.body.notImported.filter((p: string) => p.includes('requiredActions'))).toEqual([]);
    const logged = t.logs.filter((l) => l.msg === KEPT && l.realm === REALM);
    expect(logged).toHaveLength(1);
    expect((logged[0].keptAsData as string[]).filter((p) => p.startsWith('realm.requiredActions'))).toEqual(keptPaths);
    expect((t.logs.find((l) => l.msg === NOT_IMPORTED && l.realm === REALM)?.notImported as string[] | undefined)?.some((p) => p.includes('requiredActions')) ?? false).toBe(false);
  });

  it('the admin API lists all of them as the file had them, in priority order; each is found by alias; none is left to register', async () => {
    expect(await kc.authenticationManagement.getRequiredActions()).toEqual(fileActions);
    expect(await byAlias('idp_link')).toEqual(fileActions.find((a) => a.alias === 'idp_link'));
    expect(await byAlias('delete_credential')).toMatchObject({ name: 'Delete Credential', providerId: 'delete_credential', enabled: true, defaultAction: false, priority: 110, config: {} });
    expect(await kc.authenticationManagement.getUnregisteredRequiredActions()).toEqual([]);
    expect((await api(t.url, 'GET', `${R}/required-actions/NO_SUCH_ACTION`, admin)).status).toBe(404);
  });

  it("the console's Required actions tab lists the same actions in the same order, those kept as data saying so in their name", async () => {
    const listed = (await api(t.url, 'GET', `/admin/realms/${REALM}/ui-ext/authentication-management/required-actions`, admin)).body as (Action & { configurable: boolean })[];
    expect(listed.map((a) => a.alias)).toEqual(fileActions.map((a) => a.alias));
    for (const [i, action] of listed.entries()) {
      const own = OWN.has(action.alias!);
      expect(action).toEqual({ ...fileActions[i], name: own ? fileActions[i].name : `${fileActions[i].name} (not carried out by this server)`, configurable: CONFIGURABLE.has(action.alias!) });
    }
  });

  it('the partial export and the CLI export write them back as the file had them; imported again, the same list', async () => {
    const exported = await kc.realms.export({ realm: REALM, exportClients: false, exportGroupsAndRoles: false });
    expect(exported.requiredActions).toEqual(fileActions);
    const dir = mkdtempSync(join(tmpdir(), 'required-actions-export-'));
    try {
      const out = join(dir, 'kc26.json');
      const cli = spawnSync(process.execPath, ['--import', 'tsx', 'packages/server/src/main.ts', 'export', '--realm', REALM, '--file', out, '--db-url', t.server.context.config.dbUrl, '--providers-dir', t.server.context.config.providersDir], {
        cwd: REPO_ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? dir, REALMGATE_LOG_LEVEL: 'warn' },
        encoding: 'utf8',
        timeout: 120_000,
      });
      expect(cli.status, cli.stderr).toBe(0);
      expect(JSON.parse(readFileSync(out, 'utf8')).requiredActions).toEqual(fileActions);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const again = await api(t.url, 'POST', '/admin/realms', admin, { realm: 'again', enabled: true, requiredActions: exported.requiredActions });
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(again.body.keptAsData).toEqual(keptPaths);
    expect((await kc.realms.export({ realm: 'again' })).requiredActions).toEqual(fileActions);
  }, 180_000);

  it('one kept as data is never turned on: enabling it or making it a default action is refused (400, naming why); nothing changes', async () => {
    const before = await kc.authenticationManagement.getRequiredActions();
    const webauthn = await byAlias('delete_credential');
    await rejects(kc.authenticationManagement.updateRequiredAction({ alias: 'delete_credential' }, { ...webauthn, defaultAction: true }), 400, /requiredAction\.defaultAction: "delete_credential" is not carried out by this server/);
    const config = await api(t.url, 'PUT', `${R}/required-actions/delete_credential`, admin, { ...webauthn, config: { max_auth_age: '60' } });
    expect(config.status).toBe(400);
    expect(config.body.errorMessage).toContain('requiredAction.config');
    expect(await kc.authenticationManagement.getRequiredActions()).toEqual(before);
    // What the console sends back as it read it (its name with the note included) changes nothing and is accepted.
    const listed = (await api(t.url, 'GET', `/admin/realms/${REALM}/ui-ext/authentication-management/required-actions`, admin)).body as (Action & { configurable?: boolean })[];
    const { configurable: _, ...asRead } = listed.find((a) => a.alias === 'delete_credential')!;
    await kc.authenticationManagement.updateRequiredAction({ alias: 'delete_credential' }, asRead);
    expect(await kc.authenticationManagement.getRequiredActions()).toEqual(before);
  });

  it('one kept as data is turned off and reordered like the others; the export says so; once off, it stays off', async () => {
    const webauthn = await byAlias('delete_credential');
    await kc.authenticationManagement.updateRequiredAction({ alias: 'delete_credential' }, { ...webauthn, enabled: false, priority: 5 });
    expect(await byAlias('delete_credential')).toEqual({ ...webauthn, enabled: false, priority: 5 });
    expect((await order())[0]).toBe('delete_credential');
    await rejects(kc.authenticationManagement.updateRequiredAction({ alias: 'delete_credential' }, { ...webauthn, enabled: true, priority: 5 }), 400, /not carried out/);
    const exported = await kc.realms.export({ realm: REALM });
    expect(exported.requiredActions![0]).toEqual({ ...webauthn, enabled: false, priority: 5 });
    // Back where the file had it, still off.
    await kc.authenticationManagement.updateRequiredAction({ alias: 'delete_credential' }, { ...webauthn, enabled: false });
    expect(await order()).toEqual(fileActions.map((a) => a.alias));
  });

  it('raise and lower priority work over the whole list, across the actions kept as data, swapping neighbours as Keycloak', async () => {
    const aliases = fileActions.map((a) => a.alias!);
    const swap = (list: string[], i: number) => [...list.slice(0, i), list[i + 1], list[i], ...list.slice(i + 2)];
    // update_user_locale (last) up past CONFIGURE_RECOVERY_AUTHN_CODES (kept).
    await kc.authenticationManagement.raiseRequiredActionPriority({ alias: 'update_user_locale' });
    let expected = swap(aliases, aliases.length - 2);
    expect(await order()).toEqual(expected);
    // UPDATE_PROFILE up past TERMS_AND_CONDITIONS (first): now at the top.
    await kc.authenticationManagement.raiseRequiredActionPriority({ alias: 'UPDATE_PROFILE' });
    expected = swap(expected, 0);
    expect(await order()).toEqual(expected);
    // TERMS_AND_CONDITIONS down past VERIFY_EMAIL.
    await kc.authenticationManagement.lowerRequiredActionPriority({ alias: 'TERMS_AND_CONDITIONS' });
    expected = swap(expected, 1);
    expect(await order()).toEqual(expected);
    // At either end nothing changes.
    await kc.authenticationManagement.raiseRequiredActionPriority({ alias: 'UPDATE_PROFILE' });
    await kc.authenticationManagement.lowerRequiredActionPriority({ alias: expected.at(-1)! });
    expect(await order()).toEqual(expected);
    // As Keycloak, the two swap their priorities and the others keep theirs.
    const now = await kc.authenticationManagement.getRequiredActions();
    expect(now.find((a) => a.alias === 'UPDATE_PROFILE')!.priority).toBe(20);
    expect(now.find((a) => a.alias === 'TERMS_AND_CONDITIONS')!.priority).toBe(50);
    expect(now.find((a) => a.alias === 'update_user_locale')!.priority).toBe(130);
    expect(now.find((a) => a.alias === 'delete_credential')!.priority).toBe(110);
    // Back as the file had them.
    await kc.authenticationManagement.raiseRequiredActionPriority({ alias: 'TERMS_AND_CONDITIONS' });
    await kc.authenticationManagement.lowerRequiredActionPriority({ alias: 'UPDATE_PROFILE' });
    await kc.authenticationManagement.lowerRequiredActionPriority({ alias: 'update_user_locale' });
    const priorities = (list: Action[]) => list.map((a) => [a.alias, a.priority]);
    expect(priorities(await kc.authenticationManagement.getRequiredActions())).toEqual(priorities(fileActions));
  });

  it('never carried out: one enabled and a default action in the file asks nothing of new or imported users; a user is never locked out by one', async () => {
    const actions = fileActions.map((a) => (a.alias === 'VERIFY_PROFILE' ? { ...a, enabled: true, defaultAction: true } : a));
    const user = (username: string, requiredActions: string[]) => ({ username, enabled: true, requiredActions, credentials: [{ type: 'password', value: PASSWORD, temporary: false }] });
    // A user's pending action this server does not carry out is refused by the admin API, naming it (as before; the
    // --import-realm test below: imported without it, named in notImported); nothing of the file is imported.
    const refused = await api(t.url, 'POST', '/admin/realms', admin, { realm: 'terms', enabled: true, requiredActions: actions, users: [user('agreed-in-keycloak', ['VERIFY_PROFILE'])] });
    expect(refused.status).toBe(400);
    expect(refused.body.errorMessage).toContain('realm.users[0].requiredActions[0]: "VERIFY_PROFILE" is not supported');
    expect((await api(t.url, 'GET', '/admin/realms/terms', admin)).status).toBe(404);
    const made = await api(t.url, 'POST', '/admin/realms', admin, { realm: 'terms', enabled: true, requiredActions: actions, users: [user('agreed-in-keycloak', []), user('must-update', ['UPDATE_PASSWORD'])] });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    kc.setConfig({ realmName: 'terms' });
    try {
      // Stored as the file had it, enabled and a default action: data, never asked of anyone.
      expect(await byAlias('VERIFY_PROFILE')).toMatchObject({ enabled: true, defaultAction: true });
      expect((await grant('agreed-in-keycloak', 'terms')).status).toBe(200);
      expect((await grant('must-update', 'terms')).body).toMatchObject({ error: 'invalid_grant', error_description: 'Account is not fully set up' });
      // A new user gets the default actions this server carries out, and not this one.
      const { id } = await kc.users.create({ username: 'newcomer', enabled: true, credentials: [{ type: 'password', value: PASSWORD, temporary: false }] });
      expect((await kc.users.findOne({ id }))?.requiredActions).toEqual([]);
      expect((await grant('newcomer', 'terms')).status).toBe(200);
      // Even if a user held it (a row written by other means), nothing is asked: no one could carry it out.
      await t.server.context.storage.credentials.setRequiredActions(id, ['VERIFY_PROFILE', 'delete_credential']);
      expect((await grant('newcomer', 'terms')).status).toBe(200);
      // The admin API does not give a user one either (it names the action).
      await rejects(kc.users.update({ id }, { requiredActions: ['VERIFY_PROFILE'] }), 400, /VERIFY_PROFILE/);
      // Turned off, it is stored off; turned on again, refused.
      const terms = await byAlias('VERIFY_PROFILE');
      await kc.authenticationManagement.updateRequiredAction({ alias: 'VERIFY_PROFILE' }, { ...terms, enabled: false });
      expect(await byAlias('VERIFY_PROFILE')).toMatchObject({ enabled: false, defaultAction: false });
      await rejects(kc.authenticationManagement.updateRequiredAction({ alias: 'VERIFY_PROFILE' }, terms), 400, /not carried out by this server/);
    } finally {
      kc.setConfig({ realmName: REALM });
    }
  });

  it('settings of the server’s own action in a file (Keycloak’s max_auth_age) are its settings; one it does not have is kept as data and named; a providerId that is not its own is named as not imported', async () => {
    const made = await api(t.url, 'POST', '/admin/realms', admin, {
      realm: 'own-config',
      requiredActions: [
        { alias: 'UPDATE_PASSWORD', name: 'Update Password', providerId: 'UPDATE_PASSWORD', enabled: true, defaultAction: false, priority: 30, config: { max_auth_age: '300', 'keycloak.future': 'x' } },
        { alias: 'VERIFY_EMAIL', name: 'Verify Email', providerId: 'custom-verify', enabled: true, defaultAction: false, priority: 50, config: {} },
        { alias: 'custom-minimal' },
      ],
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body.keptAsData).toEqual(['realm.requiredActions[0].config ("UPDATE_PASSWORD" has no setting "keycloak.future" here)', 'realm.requiredActions[2] ("custom-minimal" is not carried out here)']);
    // An entry giving only its alias reads as Keycloak reads it (false, 0); its name and providerId are its alias.
    const minimal = (await api(t.url, 'GET', '/admin/realms/own-config/authentication/required-actions/custom-minimal', admin)).body;
    expect(minimal).toEqual({ alias: 'custom-minimal', name: 'custom-minimal', providerId: 'custom-minimal', enabled: false, defaultAction: false, priority: 0, config: {} });
    expect(made.body.notImported).toEqual(['realm.requiredActions[1].providerId ("custom-verify" is not installed; "VERIFY_EMAIL" is this server\'s own action)']);
    const exported = (await api(t.url, 'POST', '/admin/realms/own-config/partial-export', admin)).body;
    expect(exported.requiredActions.find((a: Action) => a.alias === 'UPDATE_PASSWORD')).toMatchObject({ config: { max_auth_age: '300', 'keycloak.future': 'x' } });
    // Sent back as read, accepted; max_auth_age changed, accepted; a setting it does not have, refused.
    const path = '/admin/realms/own-config/authentication/required-actions/UPDATE_PASSWORD';
    const read = (await api(t.url, 'GET', path, admin)).body;
    expect((await api(t.url, 'PUT', path, admin, { ...read, priority: 31 })).status).toBe(204);
    expect((await api(t.url, 'PUT', path, admin, { ...read, config: { max_auth_age: '60' } })).status).toBe(204);
    expect((await api(t.url, 'PUT', path, admin, { ...read, config: { max_auth_age: '60', 'keycloak.future': 'y' } })).status).toBe(400);
  });

  it('a hostile realm file is refused with 400 naming the path, and nothing of it is imported', async () => {
    const cases: [label: string, requiredActions: unknown, path: string][] = [
      ['an alias of 10,000 characters', [{ alias: 'x'.repeat(10_000), enabled: false }], 'realm.requiredActions[0].alias: must be at most 255 characters'],
      ['config a string', [{ alias: 'delete_account', config: 'not a map' }], 'realm.requiredActions[0].config'],
      ['config an array', [{ alias: 'delete_account', config: [['a', 'b']] }], 'realm.requiredActions[0].config'],
      ['config with nested objects', [{ alias: 'delete_account', config: { a: { b: 'c' } } }], 'realm.requiredActions[0].config'],
      ['a __proto__ key in config', JSON.parse('[{"alias":"delete_account","config":{"__proto__":{"polluted":"yes"}}}]'), 'realm.requiredActions[0].config'],
      ['a __proto__ key in the entry', JSON.parse('[{"alias":"delete_account","__proto__":{"enabled":true}}]'), 'realm.requiredActions[0].__proto__'],
      ['a priority with a fraction', [{ alias: 'VERIFY_EMAIL', priority: 1.5 }], 'realm.requiredActions[0].priority: must be an integer'],
      ['a priority as text', [{ alias: 'delete_account', priority: '20' }], 'realm.requiredActions[0].priority: must be an integer'],
      ['a priority past a Java int', [{ alias: 'delete_account', priority: 2 ** 40 }], 'realm.requiredActions[0].priority'],
      ['enabled as text', [{ alias: 'delete_account', enabled: 'true' }], 'realm.requiredActions[0].enabled'],
      ['no alias', [{ name: 'Terms and Conditions' }], 'realm.requiredActions[0].alias: is required'],
      ['an alias twice', [{ alias: 'idp_link' }, { alias: 'idp_link' }], 'realm.requiredActions[1].alias: "idp_link" is listed twice'],
      ['an entry not an object', ['delete_account'], 'realm.requiredActions[0]: must be a JSON object'],
      ['not a list', { delete_account: {} }, 'realm.requiredActions: must be an array'],
      ['too many entries', Array.from({ length: 1001 }, (_, i) => ({ alias: `action-${i}` })), 'realm.requiredActions: must have at most 1000 entries'],
      ['a NUL in the name', [{ alias: 'delete_account', name: 'Terms\u0000' }], 'realm.requiredActions[0].name'],
    ];
    for (const [label, requiredActions, path] of cases) {
      const response = await api(t.url, 'POST', '/admin/realms', admin, { realm: 'hostile', enabled: true, requiredActions, users: [{ username: 'someone', enabled: true }] });
      expect(response.status, label).toBe(400);
      // A field of the wrong type is answered as Keycloak's JSON reader does: the path in error_description.
      expect(response.body.errorMessage ?? response.body.error_description, label).toContain(path);
      expect((await api(t.url, 'GET', '/admin/realms/hostile', admin)).status, label).toBe(404);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('hostile admin API bodies are refused naming the field; a made-up alias is not found', async () => {
    const before = await kc.authenticationManagement.getRequiredActions();
    for (const [body, field] of [
      [{ priority: 1.5 }, 'priority'],
      [{ priority: '10' }, 'priority'],
      [{ enabled: 'yes' }, 'enabled'],
      [JSON.parse('{"config":{"__proto__":{"x":"y"}}}'), 'config'],
      [{ config: 'x' }, 'config'],
      [{ surprise: true }, 'surprise'],
    ] as const) {
      const response = await api(t.url, 'PUT', `${R}/required-actions/delete_account`, admin, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(String(response.body.errorMessage ?? response.body.error_description), JSON.stringify(body)).toContain(field);
    }
    expect((await api(t.url, 'PUT', `${R}/required-actions/${'x'.repeat(300)}`, admin, { enabled: false })).status).toBe(404);
    expect((await api(t.url, 'POST', `${R}/required-actions/${'x'.repeat(300)}/raise-priority`, admin)).status).toBe(404);
    // An alias of 10,000 characters does not even reach the route (the URI is too long, or the parameter is).
    expect([404, 414]).toContain((await api(t.url, 'PUT', `${R}/required-actions/${'x'.repeat(10_000)}`, admin, { enabled: false })).status);
    expect(await kc.authenticationManagement.getRequiredActions()).toEqual(before);
  });

  it('a view-realm-only administrator reads them but changes none (403); a user without a role reads nothing', async () => {
    const before = await kc.authenticationManagement.getRequiredActions();
    const token = async (username: string) => (await grant(username)).body.access_token as string;
    const viewer = await token('viewer');
    expect((await api(t.url, 'GET', `${R}/required-actions`, viewer)).body).toEqual(before);
    expect((await api(t.url, 'GET', `${R}/required-actions/delete_account`, viewer)).status).toBe(200);
    const webauthn = before.find((a) => a.alias === 'delete_credential')!;
    for (const [method, path, body] of [
      ['PUT', `${R}/required-actions/delete_credential`, { ...webauthn, enabled: false }],
      ['PUT', `${R}/required-actions/delete_account`, { enabled: true, defaultAction: true }],
      ['PUT', `${R}/required-actions/update_user_locale`, { priority: 1 }],
      ['POST', `${R}/required-actions/update_user_locale/raise-priority`, undefined],
      ['POST', `${R}/required-actions/delete_account/lower-priority`, undefined],
    ] as const) {
      expect((await api(t.url, method, path, viewer, body)).status, `${method} ${path}`).toBe(403);
    }
    const plain = await token('plain');
    expect((await api(t.url, 'GET', `${R}/required-actions`, plain)).status).toBe(403);
    expect((await api(t.url, 'GET', `/admin/realms/${REALM}/ui-ext/authentication-management/required-actions`, plain)).status).toBe(403);
    expect((await api(t.url, 'PUT', `${R}/required-actions/delete_credential`, plain, { enabled: false })).status).toBe(403);
    expect(await kc.authenticationManagement.getRequiredActions()).toEqual(before);
  });
});

describe('required actions kept as data through --import-realm', () => {
  it('a Keycloak 26 export is imported with its whole list, each action kept as data named in the log; a hostile file is refused by path, nothing of it imported', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'required-actions-import-'));
    // Keycloak's user `alice` with a pending action this server does not carry out.
    const kc26 = file();
    const alice = (kc26.users as { username: string; requiredActions?: string[] }[]).findIndex((u) => u.username === 'alice');
    kc26.users[alice].requiredActions = ['VERIFY_PROFILE'];
    writeFileSync(join(dir, 'kc26.json'), JSON.stringify(kc26));
    writeFileSync(join(dir, 'hostile.json'), JSON.stringify({ realm: 'hostile', enabled: true, requiredActions: [{ alias: 'delete_account', config: 'not a map' }] }));
    const t = await startServer({ config: { REALMGATE_IMPORT_REALM: dir } });
    try {
      const kc = await masterAdminClient(t.url, REALM);
      expect(await kc.authenticationManagement.getRequiredActions()).toEqual(fileActions);
      const kept = t.logs.filter((l) => l.msg === KEPT && l.realm === REALM);
      expect(kept).toHaveLength(1);
      expect((kept[0].keptAsData as string[]).filter((p) => p.startsWith('realm.requiredActions'))).toEqual(keptPaths);
      // alice's pending VERIFY_PROFILE is not imported, and named; she signs in with her Keycloak password.
      const notImported = t.logs.find((l) => l.msg === NOT_IMPORTED && l.realm === REALM)?.notImported as string[];
      expect(notImported).toContain(`realm.users[${alice}].requiredActions[0] ("VERIFY_PROFILE" is not supported)`);
      expect(notImported.filter((p) => p.startsWith('realm.requiredActions'))).toEqual([]);
      const [stored] = await kc.users.find({ username: 'alice', exact: true });
      expect(stored.requiredActions).toEqual([]);
      expect((await tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'web-app', username: 'alice', password: 'Alice-pass-1' })).status).toBe(200);
      const refused = t.logs.find((l) => l.msg === 'realm import: file refused, the others are imported');
      expect(String(refused?.error)).toContain('realm.requiredActions[0].config');
      expect(await t.server.context.storage.realms.byName('hostile')).toBeFalsy();
    } finally {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
