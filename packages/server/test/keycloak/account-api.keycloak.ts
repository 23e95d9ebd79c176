import { afterAll, beforeAll, describe, it } from 'vitest';
import { FormClient, firstForm, pkce } from '../support/forms.js';
import { addUser, addWebClient, askingForm, CALLBACK, USER_PASSWORD, startBoth, type Both, type Side } from './both.js';
import { compareOnBoth, errorShape, type DiffCase } from './compare.js';

/**
 * Issue 41: the account REST API (/realms/{realm}/account/…) on Keycloak 26.7.3 and on Realmgate with a user's
 * token, and its refusals. What is compared: statuses, the names of an error body's fields, the names of a
 * representation's fields (never values that differ by nature: ids, times, addresses), and the few values a client
 * reads (a granted scope's name and display text, a credential type's category).
 *
 * Realm (alike on both): `web` (public, password grant), `narrow` (public, password grant, full scope off: its
 * tokens carry no `account` roles), `shop` (public, code flow, consent required; the user consents through the
 * consent page), a group `team`, an OIDC identity provider `corp` (never contacted), the user `alice` in `team`.
 */

const json = { accept: 'application/json' };
/** `shop` itself is listed on its consent screen, with a text of its own (Keycloak's client-as-scope consent line). */
const SHOP_ON_CONSENT_SCREEN = { 'display.on.consent.screen': 'true', 'consent.screen.text': 'Shop things' };

async function tokenOf(side: Side, clientId: string, username = 'alice'): Promise<string> {
  const response = await fetch(`${side.url}/realms/${side.realm}/protocol/openid-connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', client_id: clientId, username, password: USER_PASSWORD, scope: 'openid' }),
  });
  const body = (await response.json()) as { access_token?: string };
  if (!body.access_token) throw new Error(`${side.name}: no token for ${clientId}: ${JSON.stringify(body)}`);
  return body.access_token;
}

interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

async function account(side: Side, path: string, token: string | null, init: { method?: string; body?: unknown; raw?: string } = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...json };
  if (token) headers.authorization = `Bearer ${token}`;
  if (init.body !== undefined || init.raw !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${side.url}/realms/${side.realm}/account${path}`, {
    method: init.method ?? 'GET',
    headers,
    body: init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body)),
  });
  const text = await response.text();
  let body: unknown = text || undefined;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // kept as text
  }
  return { status: response.status, body, headers: response.headers };
}

const keysOf = (value: unknown): string[] => (value && typeof value === 'object' && !Array.isArray(value) ? Object.keys(value).sort() : [typeof value]);

/** A list answer: its status and the field names of its entries, each entry named by `by`. */
function listShape(answer: Answer, by: string): { status: number; entries: Record<string, string[]> | string } {
  if (!Array.isArray(answer.body)) return { status: answer.status, entries: typeof answer.body };
  return { status: answer.status, entries: Object.fromEntries(answer.body.map((entry: any) => [String(entry[by]), keysOf(entry)])) };
}

/** A refusal as compared: status, error field names, and whether a WWW-Authenticate header came. */
const refusal = (answer: Answer) => ({ ...errorShape(answer), challenge: answer.headers.has('www-authenticate') });

/** alice signs in to `shop` in a browser without JavaScript and answers Yes on the consent page. */
async function consentToShop(side: Side): Promise<string> {
  const browser = new FormClient(side.url);
  const query = new URLSearchParams({ client_id: 'shop', redirect_uri: CALLBACK, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 'st' });
  let page = await browser.get(`/realms/${side.realm}/protocol/openid-connect/auth?${query}`);
  const follow = async () => {
    for (let hops = 0; hops < 10 && page.location && !page.location.startsWith(CALLBACK); hops++) page = await browser.get(new URL(page.location, `${side.url}/`).href);
  };
  const login = askingForm(page.text);
  if (!login) throw new Error(`${side.name}: no login page`);
  const hidden = Object.fromEntries(login.inputs.filter((i) => i.type === 'hidden').map((i) => [i.name, i.value]));
  page = await browser.post(new URL(login.action, `${side.url}/`).href, { ...hidden, username: 'alice', password: USER_PASSWORD });
  await follow();
  if (page.location?.startsWith(CALLBACK)) return 'no consent page';
  if (!/<form\b/.test(page.text)) throw new Error(`${side.name}: no consent form (${page.status} ${page.location} ${page.text.slice(0, 300)})`);
  const form = firstForm(page.text);
  page = await browser.post(new URL(form.action, `${side.url}/`).href, { ...form.hidden, accept: 'Yes' });
  await follow();
  return page.location?.startsWith(CALLBACK) && new URL(page.location).searchParams.has('code') ? 'signed-in' : `status:${page.status}`;
}

interface Tokens {
  web: string;
}
const tokens = new Map<string, Tokens>();
const web = (side: Side) => tokens.get(side.name)!.web;

type Row = DiffCase<void>;

const rows: Row[] = [
  {
    name: 'account: the profile (GET, with its metadata)',
    async observe(side) {
      const plain = await account(side, '', web(side));
      const withMetadata = await account(side, '?userProfileMetadata=true', web(side));
      return {
        status: plain.status,
        keys: keysOf(plain.body),
        metadata: { status: withMetadata.status, keys: keysOf(withMetadata.body?.userProfileMetadata), attributes: (withMetadata.body?.userProfileMetadata?.attributes ?? []).map((a: any) => a.name) },
      };
    },
  },
  {
    name: 'account: the profile updated (POST), then read again',
    async observe(side) {
      const current = (await account(side, '', web(side))).body;
      const answer = await account(side, '', web(side), { method: 'POST', body: { ...current, firstName: 'Alicia' } });
      const after = (await account(side, '', web(side))).body;
      return { status: answer.status, body: answer.body === undefined ? 'none' : keysOf(answer.body), firstName: after.firstName };
    },
  },
  {
    name: 'account: the profile with bad input (POST)',
    async observe(side) {
      const current = (await account(side, '', web(side))).body;
      const badEmail = await account(side, '', web(side), { method: 'POST', body: { ...current, email: 'not-an-email' } });
      const noEmail = await account(side, '', web(side), { method: 'POST', body: { ...current, email: '' } });
      const otherName = await account(side, '', web(side), { method: 'POST', body: { ...current, username: 'someone-else' } });
      const notJson = await account(side, '', web(side), { method: 'POST', raw: '{not json' });
      const numberName = await account(side, '', web(side), { method: 'POST', body: { ...current, firstName: 5 } });
      const listName = await account(side, '', web(side), { method: 'POST', body: { ...current, firstName: ['a', 'b'] } });
      const after = (await account(side, '', web(side))).body;
      return {
        badEmail: { ...errorShape(badEmail), field: badEmail.body?.field ?? null, errorMessage: badEmail.body?.errorMessage ?? null },
        noEmail: { ...errorShape(noEmail), field: noEmail.body?.field ?? null, errorMessage: noEmail.body?.errorMessage ?? null },
        otherName: { ...errorShape(otherName), field: otherName.body?.field ?? null, errorMessage: otherName.body?.errorMessage ?? null },
        notJson: errorShape(notJson),
        numberName: errorShape(numberName),
        listName: errorShape(listName),
        kept: { username: after.username, email: after.email },
      };
    },
  },
  {
    name: 'account: credentials',
    async observe(side) {
      const answer = await account(side, '/credentials', web(side));
      const byType = Array.isArray(answer.body) ? Object.fromEntries(answer.body.map((c: any) => [c.type, { keys: keysOf(c), category: c.category, userCredentialMetadatas: (c.userCredentialMetadatas ?? []).length }])) : typeof answer.body;
      const password = await account(side, '/credentials?type=password', web(side));
      const deleteUnknown = await account(side, '/credentials/00000000-0000-0000-0000-000000000000', web(side), { method: 'DELETE' });
      return { status: answer.status, byType, password: listShape(password, 'type'), deleteUnknown: errorShape(deleteUnknown) };
    },
  },
  {
    name: 'account: sessions and devices, one signed out',
    async observe(side) {
      const other = await tokenOf(side, 'web');
      const sessions = await account(side, '/sessions', web(side));
      const devices = await account(side, '/sessions/devices', web(side));
      const mine = (sessions.body as any[]).find((s) => s.current);
      const theOther = (sessions.body as any[]).find((s) => !s.current);
      const deleted = await account(side, `/sessions/${theOther?.id}`, web(side), { method: 'DELETE' });
      const unknown = await account(side, '/sessions/no-such-session', web(side), { method: 'DELETE' });
      const otherAfter = await account(side, '', other);
      const left = await account(side, '/sessions', web(side));
      return {
        status: sessions.status,
        count: (sessions.body as any[]).length,
        session: keysOf(mine),
        sessionClient: keysOf(mine?.clients?.[0]),
        devices: { status: devices.status, count: (devices.body as any[]).length, keys: keysOf(devices.body?.[0]), session: keysOf((devices.body as any[]).flatMap((d) => d.sessions).find((s: any) => s.id === mine?.id)) },
        deleted: deleted.status,
        unknown: unknown.status,
        otherTokenAfter: otherAfter.status,
        left: (left.body as any[]).length,
      };
    },
  },
  {
    name: 'account: all other sessions signed out (DELETE /sessions)',
    async observe(side) {
      const other = await tokenOf(side, 'web');
      const answer = await account(side, '/sessions', web(side), { method: 'DELETE' });
      return { status: answer.status, otherTokenAfter: (await account(side, '', other)).status, mine: (await account(side, '', web(side))).status };
    },
  },
  {
    name: 'account: applications, with a consent given on the consent page',
    async observe(side) {
      const consented = await consentToShop(side);
      const answer = await account(side, '/applications', web(side));
      const shop = (answer.body as any[]).find((a) => a.clientId === 'shop');
      const web_ = (answer.body as any[]).find((a) => a.clientId === 'web');
      return {
        consented,
        status: answer.status,
        clients: (answer.body as any[]).map((a) => a.clientId).sort(),
        web: keysOf(web_),
        shop: keysOf(shop),
        shopConsentRequired: shop?.userConsentRequired ?? null,
        consent: keysOf(shop?.consent),
        grantedScopes: (shop?.consent?.grantedScopes ?? []).map((s: any) => ({ keys: keysOf(s), name: s.name, displayText: s.displayText ?? null })).sort((a: any, b: any) => String(a.name).localeCompare(String(b.name))),
      };
    },
  },
  {
    name: 'account: consent revoked (DELETE /applications/{clientId}/consent)',
    async observe(side) {
      const revoked = await account(side, '/applications/shop/consent', web(side), { method: 'DELETE' });
      const again = await account(side, '/applications/shop/consent', web(side), { method: 'DELETE' });
      const unknown = await account(side, '/applications/no-such-client/consent', web(side), { method: 'DELETE' });
      const after = await account(side, '/applications', web(side));
      const shop = (after.body as any[]).find((a) => a.clientId === 'shop');
      return { revoked: revoked.status, again: again.status, unknown: errorShape(unknown), shopAfter: shop ? { consent: shop.consent ? 'kept' : 'gone', inUse: shop.inUse } : 'not listed' };
    },
  },
  {
    name: 'account: linked accounts',
    async observe(side) {
      const answer = await account(side, '/linked-accounts', web(side));
      const unknown = await account(side, '/linked-accounts/no-such-provider', web(side), { method: 'DELETE' });
      const notLinked = await account(side, '/linked-accounts/corp', web(side), { method: 'DELETE' });
      return { ...listShape(answer, 'providerAlias'), unknown: errorShape(unknown), notLinked: errorShape(notLinked) };
    },
  },
  {
    name: 'account: groups',
    async observe(side) {
      const answer = await account(side, '/groups', web(side));
      return listShape(answer, 'name');
    },
  },
  {
    name: 'account: refusals (no token, a token without account roles, a token of another realm, not a token)',
    async observe(side) {
      const narrow = await tokenOf(side, 'narrow');
      const master = await (await side.admin()).getAccessToken();
      return {
        noToken: { profile: refusal(await account(side, '', null)), sessions: refusal(await account(side, '/sessions', null)) },
        withoutRoles: {
          profile: refusal(await account(side, '', narrow)),
          update: refusal(await account(side, '', narrow, { method: 'POST', body: { username: 'alice', email: 'alice@example.test' } })),
          applications: refusal(await account(side, '/applications', narrow)),
          credentials: refusal(await account(side, '/credentials', narrow)),
          revoke: refusal(await account(side, '/applications/shop/consent', narrow, { method: 'DELETE' })),
        },
        otherRealm: refusal(await account(side, '', master ?? 'none')),
        notAToken: refusal(await account(side, '', 'not-a-token')),
      };
    },
  },
];

describe('the account REST API against Keycloak 26.7.3 (issue 41)', () => {
  let both: Both;

  beforeAll(async () => {
    both = await startBoth(async (side) => {
      const kc = await side.admin();
      await addWebClient(side);
      await kc.clients.create({ clientId: 'narrow', publicClient: true, directAccessGrantsEnabled: true, standardFlowEnabled: false, fullScopeAllowed: false });
      await kc.clients.create({ clientId: 'shop', name: 'Shop', publicClient: true, standardFlowEnabled: true, redirectUris: [CALLBACK], consentRequired: true, attributes: SHOP_ON_CONSENT_SCREEN });
      const { id: groupId } = await kc.groups.create({ name: 'team' });
      await kc.identityProviders.create({
        alias: 'corp',
        providerId: 'oidc',
        enabled: true,
        config: { clientId: 'rg', clientSecret: 'secret', authorizationUrl: 'http://127.0.0.1:59998/auth', tokenUrl: 'http://127.0.0.1:59998/token', clientAuthMethod: 'client_secret_post' },
      });
      const userId = await addUser(side, 'alice');
      await kc.users.addToGroup({ id: userId, groupId });
      tokens.set(side.name, { web: await tokenOf(side, 'web') });
    });
  });

  afterAll(async () => {
    await both?.close();
  });

  for (const row of rows) it(row.name, () => compareOnBoth(both, row, undefined).then(() => {}));
});
