import type KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../support/browser.js';
import { addUser, addWebClient, askingForm, ChromiumVisitor, configureOtp, passwordGrant, startBoth, USER_PASSWORD, Visitor, type Both, type Side, type SideName } from './both.js';
import { compareOnBoth, errorShape, oauthShape, type DiffCase } from './compare.js';
import { fromBase32, CodeSource } from '../support/totp.js';
import { decodeEntities } from '../support/forms.js';

/**
 * Issue 35's "Tests that must exist", each run on Keycloak 26.7.3 and on Realmgate and compared (issue 41's
 * harness): the flows Keycloak's console builds, required actions in priority order, and bad input on the flow
 * admin API. What is compared: which page a user sees (by its fields), statuses and error field names.
 *
 * Users: `holder` has the role needs-otp and an authenticator app, `plain` an app and no role, `fresh` the role and
 * no app, `bare` neither.
 */

interface Realm {
  apps: Map<string, CodeSource>;
  clients: Map<string, string>;
}

const contexts = new Map<SideName, Realm>();
const ctx = (side: Side) => contexts.get(side.name)!;

// ---------------------------------------------------------------------------------------------------------------
// Flow building, as the console does it (the official admin client's calls)

const admin = (side: Side): Promise<KcAdminClient> => side.admin();

async function executions(side: Side, flow: string) {
  return (await admin(side)).authenticationManagement.getExecutions({ flow });
}

/**
 * The sub-flow of `flow` (at any depth) that holds the step `provider` directly: found by what it holds, since the
 * built-in flows are not alike (Keycloak's browser flow has an Organization sub-flow first).
 */
async function subFlowHolding(side: Side, flow: string, provider: string): Promise<string> {
  const all = await executions(side, flow);
  const at = all.findIndex((e) => e.providerId === provider);
  const parent = all.slice(0, Math.max(at, 0)).reverse().find((e) => e.authenticationFlow && e.level === all[at].level! - 1);
  if (at < 0 || !parent) throw new Error(`${side.name}: no sub-flow of ${flow} holds ${provider}`);
  return parent.displayName!;
}

async function setRequirement(side: Side, flow: string, which: string, requirement: string): Promise<void> {
  const execution = (await executions(side, flow)).find((e) => e.level === 0 && (e.providerId === which || e.displayName === which));
  if (!execution) throw new Error(`${side.name}: no ${which} in ${flow}`);
  await (await admin(side)).authenticationManagement.updateExecution({ flow }, { ...execution, requirement });
}

async function addSubFlow(side: Side, flow: string, alias: string, requirement: string): Promise<void> {
  await (await admin(side)).authenticationManagement.addFlowToFlow({ flow, alias, type: 'basic-flow', provider: 'registration-page-form', description: '' });
  await setRequirement(side, flow, alias, requirement);
}

async function addStep(side: Side, flow: string, provider: string, requirement: string): Promise<string> {
  await (await admin(side)).authenticationManagement.addExecutionToFlow({ flow, provider });
  await setRequirement(side, flow, provider, requirement);
  return (await executions(side, flow)).find((e) => e.level === 0 && e.providerId === provider)!.id!;
}

async function flowId(side: Side, alias: string): Promise<string> {
  return (await (await admin(side)).authenticationManagement.getFlows()).find((f) => f.alias === alias)!.id!;
}

async function bindBrowser(side: Side, alias: string): Promise<void> {
  await (await admin(side)).realms.update({ realm: side.realm }, { browserFlow: alias });
}

/**
 * `role browser`: a copy of browser whose built-in second-factor sub-flow is DISABLED and in whose forms sub-flow a
 * new CONDITIONAL sub-flow `role otp` asks for the OTP form when the user has the role needs-otp.
 */
async function buildRoleBrowser(side: Side): Promise<void> {
  await (await admin(side)).authenticationManagement.copyFlow({ flow: 'browser', newName: 'role browser' });
  const forms = await subFlowHolding(side, 'role browser', 'auth-username-password-form');
  await setRequirement(side, forms, await subFlowHolding(side, 'role browser', 'auth-otp-form'), 'DISABLED');
  await addSubFlow(side, forms, 'role otp', 'CONDITIONAL');
  const condition = await addStep(side, 'role otp', 'conditional-user-role', 'REQUIRED');
  await addStep(side, 'role otp', 'auth-otp-form', 'REQUIRED');
  await (await admin(side)).authenticationManagement.createConfig({ id: condition, alias: 'needs-otp role', config: { condUserRole: 'needs-otp', negate: 'false' } });
}

/** `pair browser`: a username form, then a REQUIRED sub-flow of two ALTERNATIVEs, the password form and the OTP form. */
async function buildPairBrowser(side: Side): Promise<void> {
  await (await admin(side)).authenticationManagement.createFlow({ alias: 'pair browser', providerId: 'basic-flow', topLevel: true, builtIn: false, description: '' });
  await addStep(side, 'pair browser', 'auth-username-form', 'REQUIRED');
  await addSubFlow(side, 'pair browser', 'pair', 'REQUIRED');
  await addStep(side, 'pair', 'auth-password-form', 'ALTERNATIVE');
  await addStep(side, 'pair', 'auth-otp-form', 'ALTERNATIVE');
}

/** `otp grant`: a copy of direct grant whose OTP sub-flow is REQUIRED (its condition DISABLED), web's override. */
async function buildOtpGrant(side: Side): Promise<void> {
  await (await admin(side)).authenticationManagement.copyFlow({ flow: 'direct grant', newName: 'otp grant' });
  const otp = await subFlowHolding(side, 'otp grant', 'direct-grant-validate-otp');
  await setRequirement(side, 'otp grant', otp, 'REQUIRED');
  await setRequirement(side, otp, 'conditional-user-configured', 'DISABLED');
  const kc = await admin(side);
  const web = ctx(side).clients.get('web')!;
  const client = await kc.clients.findOne({ id: web });
  await kc.clients.update({ id: web }, { ...client, authenticationFlowBindingOverrides: { direct_grant: await flowId(side, 'otp grant') } });
}

// ---------------------------------------------------------------------------------------------------------------
// A user going through the pages: answers each page by its fields until signed in (or a page it cannot answer)

const NEW_PASSWORD = 'Diff-new-password-8';

function answer(side: Side, visitor: Visitor, username: string): Record<string, string> | null {
  const form = askingForm(visitor.last.text);
  const names = new Set(form?.inputs.map((i) => i.name) ?? []);
  if (names.has('password-new')) return { 'password-new': NEW_PASSWORD, 'password-confirm': NEW_PASSWORD };
  if (names.has('otp')) return { otp: ctx(side).apps.get(username)!.next() };
  if (names.has('totp')) {
    const raw = form!.inputs.find((i) => i.name === 'totpSecret')?.value;
    const shown = /id="kc-totp-secret-key"[^>]*>([^<]*)</.exec(visitor.last.text)?.[1];
    const key = raw ? Buffer.from(raw, 'utf8') : fromBase32(decodeEntities(shown ?? '').replace(/\s/g, ''));
    return { totp: new CodeSource(key, { window: 3 }).next(), userLabel: 'phone' };
  }
  if (names.has('email') || names.has('firstName')) return {}; // a profile page: its filled-in values kept
  if (!names.has('password') && !names.has('username')) return null;
  return { ...(names.has('username') ? { username } : {}), ...(names.has('password') ? { password: USER_PASSWORD } : {}) };
}


/** Signs in and answers every page; the pages seen, in order (the last is where it ended). */
async function walk(side: Side, username: string, open: Record<string, string> = {}): Promise<string[]> {
  const visitor = new Visitor(side);
  const pages = [await visitor.open(open)];
  // Until a page that asks nothing, a page it cannot answer, or the same page twice in a row (an answer refused).
  for (let step = 0; step < 8 && pages[pages.length - 1].startsWith('fields:'); step++) {
    const fields = answer(side, visitor, username);
    if (!fields) break;
    pages.push(await visitor.submit(fields));
    if (pages[pages.length - 1] === pages[pages.length - 2]) break;
  }
  return pages;
}

// ---------------------------------------------------------------------------------------------------------------

type Row = DiffCase<void>;

/** A flow's executions as the console lists them: depth, requirement and step (sub-flows by their place only). */
async function shapeOf(side: Side, flow: string): Promise<string[]> {
  return (await executions(side, flow)).map((e) => `${e.level} ${e.requirement} ${e.authenticationFlow ? '(sub-flow)' : e.providerId}`);
}

/**
 * The required actions both servers register, compared one by one (order, priority, defaults); the others only by
 * name, so an action one side lacks is one difference, not a shifted list.
 */
const BOTH_HAVE = ['TERMS_AND_CONDITIONS', 'UPDATE_PROFILE', 'VERIFY_EMAIL', 'CONFIGURE_TOTP', 'UPDATE_PASSWORD', 'delete_account', 'UPDATE_EMAIL', 'update_user_locale'];
const otherActions = (all: { alias?: string }[]) => all.map((a) => a.alias!).filter((alias) => !BOTH_HAVE.includes(alias)).sort();

const rows: Row[] = [
  {
    name: 'the built-in browser and direct grant flows of a new realm',
    async observe(side) {
      return { browser: await shapeOf(side, 'browser'), directGrant: await shapeOf(side, 'direct grant') };
    },
  },
  {
    name: 'conditional sub-flow by role: the role and an app → asked for a code',
    async observe(side) {
      await buildRoleBrowser(side);
      await bindBrowser(side, 'role browser');
      return walk(side, 'holder');
    },
  },
  {
    name: 'in Chromium: conditional sub-flow by role, the role holder and a user without the role',
    async observe(side) {
      const seenBy = async (username: string) => {
        const context = await browser.newContext();
        try {
          const visitor = new ChromiumVisitor(side, await context.newPage());
          const pages = [await visitor.open(), await visitor.submit({ username, password: USER_PASSWORD })];
          if (pages[1] === 'fields:otp') pages.push(await visitor.submit({ otp: ctx(side).apps.get(username)!.next() }));
          return pages;
        } finally {
          await context.close();
        }
      };
      return { holder: await seenBy('holder'), plain: await seenBy('plain') };
    },
  },
  { name: 'conditional sub-flow by role: an app, no role → not asked', observe: (side) => walk(side, 'plain') },
  { name: 'conditional sub-flow by role: the role, no app', observe: (side) => walk(side, 'fresh') },
  {
    name: 'a step set to DISABLED: the OTP form of the role sub-flow',
    async observe(side) {
      await setRequirement(side, 'role otp', 'auth-otp-form', 'DISABLED');
      return { holder: await walk(side, 'holder'), plain: await walk(side, 'plain') };
    },
  },
  {
    name: 'an ALTERNATIVE sub-flow beside a REQUIRED step',
    async observe(side) {
      await setRequirement(side, 'role otp', 'auth-otp-form', 'REQUIRED');
      await setRequirement(side, await subFlowHolding(side, 'role browser', 'auth-username-password-form'), 'role otp', 'ALTERNATIVE');
      return walk(side, 'holder');
    },
  },
  {
    name: 'an ALTERNATIVE pair: password form or OTP form after the username',
    async observe(side) {
      await buildPairBrowser(side);
      await bindBrowser(side, 'pair browser');
      return { holder: await walk(side, 'holder'), bare: await walk(side, 'bare') };
    },
  },
  {
    name: 'a direct-grant copy with OTP REQUIRED as one client’s override',
    async observe(side) {
      await bindBrowser(side, 'browser');
      await buildOtpGrant(side);
      const app = ctx(side).apps.get('holder')!;
      return {
        webHolderWrongPassword: oauthShape(await passwordGrant(side, 'holder', { password: 'not-the-password' })),
        webHolderNoCode: oauthShape(await passwordGrant(side, 'holder')),
        webHolderWrongCode: oauthShape(await passwordGrant(side, 'holder', { totp: '000000' === app.next() ? '111111' : '000000' })),
        webHolderCode: oauthShape(await passwordGrant(side, 'holder', { totp: app.next() })),
        webBareNoApp: oauthShape(await passwordGrant(side, 'bare')),
        otherBare: oauthShape(await passwordGrant(side, 'bare', { client_id: 'other' })),
        otherHolderNoCode: oauthShape(await passwordGrant(side, 'holder', { client_id: 'other' })),
      };
    },
  },
  {
    name: 'required actions shown in priority order',
    async observe(side) {
      const kc = await admin(side);
      const id = await addUser(side, 'actions1', { requiredActions: ['UPDATE_PASSWORD', 'CONFIGURE_TOTP', 'UPDATE_PROFILE'] });
      const all = await kc.authenticationManagement.getRequiredActions();
      const listed = all.filter((a) => BOTH_HAVE.includes(a.alias!)).map((a) => ({ alias: a.alias, priority: a.priority, enabled: a.enabled, defaultAction: a.defaultAction }));
      const pages = await walk(side, 'actions1');
      const left = (await kc.users.findOne({ id }))!.requiredActions;
      return { listed, others: otherActions(all), pages, left };
    },
  },
  {
    name: 'required actions reordered by raise and lower priority',
    async observe(side) {
      const kc = await admin(side);
      for (let i = 0; i < 3; i++) await kc.authenticationManagement.raiseRequiredActionPriority({ alias: 'UPDATE_PASSWORD' });
      await kc.authenticationManagement.lowerRequiredActionPriority({ alias: 'UPDATE_PROFILE' });
      await addUser(side, 'actions2', { requiredActions: ['UPDATE_PASSWORD', 'CONFIGURE_TOTP', 'UPDATE_PROFILE'] });
      const all = await kc.authenticationManagement.getRequiredActions();
      return { order: all.map((a) => a.alias!).filter((alias) => BOTH_HAVE.includes(alias)), pages: await walk(side, 'actions2') };
    },
  },
  {
    name: 'bad input: an execution with an unknown provider id',
    async observe(side) {
      const before = (await executions(side, 'role browser')).length;
      const answer = await side.call('POST', '/authentication/flows/role%20browser/executions/execution', { provider: 'no-such-authenticator' });
      return { ...errorShape(answer), written: (await executions(side, 'role browser')).length !== before };
    },
  },
  {
    name: 'bad input: a condition outside a conditional sub-flow',
    async observe(side) {
      const before = (await executions(side, 'pair browser')).length;
      const answer = await side.call('POST', '/authentication/flows/pair%20browser/executions/execution', { provider: 'conditional-user-role' });
      return { ...errorShape(answer), written: (await executions(side, 'pair browser')).length !== before };
    },
  },
  {
    name: 'bad input: an unknown required-action alias',
    async observe(side) {
      return {
        get: errorShape(await side.call('GET', '/authentication/required-actions/NO_SUCH_ACTION')),
        put: errorShape(await side.call('PUT', '/authentication/required-actions/NO_SUCH_ACTION', { alias: 'NO_SUCH_ACTION', name: 'x', enabled: true })),
        raise: errorShape(await side.call('POST', '/authentication/required-actions/NO_SUCH_ACTION/raise-priority')),
        userWithIt: errorShape(await side.call('POST', '/users', { username: 'unknown-action', enabled: true, requiredActions: ['NO_SUCH_ACTION'] })),
      };
    },
  },
  {
    name: 'bad input: a config on a step that takes none',
    async observe(side) {
      const cookie = (await executions(side, 'role browser')).find((e) => e.providerId === 'auth-cookie')!;
      const answer = await side.call('POST', `/authentication/executions/${cookie.id}/config`, { alias: 'cookie config', config: { anything: 'x' } });
      const after = (await executions(side, 'role browser')).find((e) => e.providerId === 'auth-cookie')!;
      return { ...errorShape(answer), written: Boolean(after.authenticationConfig) };
    },
  },
];

let browser: Browser;

describe('flows against Keycloak 26.7.3 (issue 35, compared)', () => {
  let both: Both;

  beforeAll(async () => {
    browser = await launchBrowser();
    both = await startBoth(async (side) => {
      const kc = await admin(side);
      const clients = new Map([['web', await addWebClient(side)]]);
      clients.set('other', (await kc.clients.create({ clientId: 'other', publicClient: true, directAccessGrantsEnabled: true, standardFlowEnabled: false })).id);
      await kc.roles.create({ name: 'needs-otp' });
      const role = await kc.roles.findOneByName({ name: 'needs-otp' });
      const ids = new Map<string, string>();
      for (const username of ['holder', 'plain', 'fresh', 'bare']) ids.set(username, await addUser(side, username));
      for (const username of ['holder', 'fresh']) await kc.users.addRealmRoleMappings({ id: ids.get(username)!, roles: [{ id: role!.id!, name: role!.name! }] });
      const apps = new Map<string, CodeSource>();
      for (const username of ['holder', 'plain']) apps.set(username, await configureOtp(side, ids.get(username)!, username));
      contexts.set(side.name, { apps, clients });
    });
  });

  afterAll(async () => {
    await browser?.close();
    await both?.close();
  });

  for (const row of rows) it(row.name, () => compareOnBoth(both, row, undefined).then(() => {}));
});

