import { randomUUID } from 'node:crypto';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import type { Page } from 'playwright-core';
import { inject } from 'vitest';
import { decodeEntities, FormClient, pkce, type FormResponse } from '../support/forms.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startServer, type TestServer } from '../support/server.js';
import { CodeSource, fromBase32 } from '../support/totp.js';

/**
 * The "both" API of the differential suite: a Keycloak 26.7.3 (started by global-setup.ts) and a Realmgate (started
 * here), each a Side; a realm set up alike on both through the official admin client, and the same HTTP steps on
 * both. What a step returns is an observation (statuses, error fields, which page came), compared by compare.ts.
 */

export type SideName = 'keycloak' | 'realmgate';
export const SIDES: SideName[] = ['keycloak', 'realmgate'];

export interface Side {
  name: SideName;
  url: string;
  /** The test realm (the same name on both). */
  realm: string;
  /** The official admin client, signed in to master as the administrator, its calls going to the test realm. */
  admin(): Promise<KcAdminClient>;
  /** A raw admin call below /admin/realms/{realm}: status and parsed body. */
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
}

export interface Both {
  keycloak: Side;
  realmgate: Side;
  /** Runs `step` on both sides (Keycloak first, then Realmgate: never at once, so nothing races). */
  run<T>(step: (side: Side) => Promise<T>): Promise<Record<SideName, T>>;
  close(): Promise<void>;
}

/** The master administrator's admin client; Keycloak's master tokens live 60 s, so it signs in again when older. */
function adminClientOf(url: string, username: string, password: string, realm: string): () => Promise<KcAdminClient> {
  let client: KcAdminClient | null = null;
  let signedInAt = 0;
  return async () => {
    if (!client || Date.now() - signedInAt > 30_000) {
      client = new KcAdminClient({ baseUrl: url, realmName: 'master' });
      await client.auth({ username, password, grantType: 'password', clientId: 'admin-cli' });
      signedInAt = Date.now();
    }
    client.setConfig({ realmName: realm });
    return client;
  };
}

function sideOf(name: SideName, url: string, username: string, password: string, realm: string): Side {
  const admin = adminClientOf(url, username, password, realm);
  return {
    name,
    url,
    realm,
    admin,
    async call(method, path, body) {
      const token = await (await admin()).getAccessToken();
      const response = await fetch(`${url}/admin/realms/${realm}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        // not JSON: kept as text
      }
      return { status: response.status, body: parsed };
    },
  };
}

/** A Realmgate beside the run's Keycloak, and a fresh realm of the same name on each (`setup` run on both). */
export async function startBoth(setup: (side: Side) => Promise<void> = async () => {}): Promise<Both> {
  const keycloak = inject('keycloak');
  const realm = `diff-${randomUUID().slice(0, 8)}`;
  let realmgate: TestServer | null = await startServer({ config: { REALMGATE_BRUTE_FORCE_IP_MAX_FAILURES: '100000' } });
  const sides = {
    keycloak: sideOf('keycloak', keycloak.url, keycloak.adminUsername, keycloak.adminPassword, realm),
    realmgate: sideOf('realmgate', realmgate.url, ADMIN_USERNAME, ADMIN_PASSWORD, realm),
  };
  const both: Both = {
    ...sides,
    async run(step) {
      return { keycloak: await step(sides.keycloak), realmgate: await step(sides.realmgate) };
    },
    async close() {
      // Keycloak's database is kept between runs: the test realm goes, so it does not grow (kept on request, to
      // look at it in Keycloak's console after a failure).
      if (!process.env.REALMGATE_KEYCLOAK_KEEP_REALMS) await (await sides.keycloak.admin()).realms.del({ realm }).catch(() => {});
      await realmgate?.close();
      realmgate = null;
    },
  };
  try {
    await both.run(async (side) => {
      const kc = await side.admin();
      // Keycloak takes an OTP policy only whole (otpPolicyType with it); a look-ahead alone is ignored.
      await kc.realms.create({ realm, enabled: true, ...OTP_POLICY });
      await setup(side);
    });
  } catch (error) {
    await both.close();
    throw error;
  }
  return both;
}

// ---------------------------------------------------------------------------------------------------------------
// Realm contents set up alike

/** The OTP look-ahead of the test realms: codes of three steps either side of now pass, so a test never runs out. */
export const LOOK_AHEAD = 3;
const OTP_POLICY = { otpPolicyType: 'totp', otpPolicyAlgorithm: 'HmacSHA1', otpPolicyDigits: 6, otpPolicyPeriod: 30, otpPolicyInitialCounter: 0, otpPolicyCodeReusable: false, otpPolicyLookAheadWindow: LOOK_AHEAD };
// A port Chromium allows (it refuses port 9 before any route); nothing listens there: neither client follows it.
export const CALLBACK = 'http://127.0.0.1:59999/cb';
export const USER_PASSWORD = 'Diff-user-password-7';

/** A public client `web` allowed the code flow (to CALLBACK) and the password grant. */
export async function addWebClient(side: Side): Promise<string> {
  const { id } = await (await side.admin()).clients.create({ clientId: 'web', publicClient: true, directAccessGrantsEnabled: true, redirectUris: [CALLBACK], standardFlowEnabled: true });
  return id;
}

/** A user with a password (and whatever else `extra` says); returns its id. */
export async function addUser(side: Side, username: string, extra: Record<string, unknown> = {}): Promise<string> {
  const { id } = await (await side.admin()).users.create({
    username,
    enabled: true,
    email: `${username}@example.test`,
    emailVerified: true,
    firstName: 'Diff',
    lastName: username,
    credentials: [{ type: 'password', value: USER_PASSWORD, temporary: false }],
    ...extra,
  });
  return id;
}

// ---------------------------------------------------------------------------------------------------------------
// Pages: what a user sees, told apart by the names of the fields the page asks for (never by its text)

export interface Input {
  name: string;
  type: string;
  value: string;
}
export interface Form {
  action: string;
  inputs: Input[];
}

/** The forms of a page, with their inputs. */
export function formsOf(html: string): Form[] {
  const forms: Form[] = [];
  for (const form of html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/g)) {
    const action = decodeEntities(/\baction="([^"]*)"/.exec(form[1])?.[1] ?? '');
    const inputs: Input[] = [];
    for (const tag of form[2].matchAll(/<(input|select|textarea)\b[^>]*>/g)) {
      const name = /\bname="([^"]*)"/.exec(tag[0])?.[1];
      if (!name) continue;
      const type = tag[1] === 'input' ? (/\btype="([^"]*)"/.exec(tag[0])?.[1] ?? 'text') : tag[1];
      inputs.push({ name, type, value: decodeEntities(/\bvalue="([^"]*)"/.exec(tag[0])?.[1] ?? '') });
    }
    forms.push({ action, inputs });
  }
  return forms;
}

const ASKED = new Set(['text', 'password', 'email', 'tel', 'number', 'textarea', 'select']);

/** The form that asks the user something (the first with a field to fill in), or null. */
export function askingForm(html: string): Form | null {
  return formsOf(html).find((f) => f.inputs.some((i) => ASKED.has(i.type))) ?? null;
}

/**
 * What the user sees: `signed-in` (sent back to the client with a code), `error:<oauth error>` (sent back with an
 * error), `fields:a,b` (a page asking for these fields, sorted), `page-without-fields` (an error or info page), or
 * `status:<n>`.
 */
export function seen(response: FormResponse): string {
  if (response.status === 302 || response.status === 303) {
    const location = response.location ?? '';
    if (location.startsWith(CALLBACK)) {
      const query = new URL(location).searchParams;
      if (query.get('code')) return 'signed-in';
      return `error:${query.get('error')}`;
    }
    return `redirect`;
  }
  const form = askingForm(response.text);
  if (form) return `fields:${[...new Set(form.inputs.filter((i) => ASKED.has(i.type)).map((i) => i.name))].sort().join(',')}`;
  return response.status === 200 ? 'page-without-fields' : `status:${response.status}`;
}

/** A browser without JavaScript on one side: starts a code flow of `web`, then fills in whatever page comes. */
export class Visitor {
  readonly client: FormClient;
  last!: FormResponse;

  constructor(readonly side: Side) {
    this.client = new FormClient(side.url);
  }

  /** Opens the authorization endpoint (extra query parameters such as kc_action added). */
  async open(extra: Record<string, string> = {}): Promise<string> {
    const query = new URLSearchParams({ client_id: 'web', redirect_uri: CALLBACK, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 'st', ...extra });
    this.last = await this.follow(await this.client.get(`/realms/${this.side.realm}/protocol/openid-connect/auth?${query}`));
    return seen(this.last);
  }

  /** Submits the asking form of the page now shown with these fields (its hidden inputs kept); what comes next. */
  async submit(fields: Record<string, string>): Promise<string> {
    const form = askingForm(this.last.text);
    if (!form) throw new Error(`${this.side.name}: no form to submit on a page seen as ${seen(this.last)}`);
    const body: Record<string, string> = {};
    // What a browser sends untouched: hidden inputs and the values the page filled in (a profile's e-mail…).
    for (const input of form.inputs) if (!['checkbox', 'radio', 'submit', 'button'].includes(input.type)) body[input.name] = input.value;
    Object.assign(body, fields);
    this.last = await this.follow(await this.client.post(new URL(form.action, `${this.side.url}/`).href, body));
    return seen(this.last);
  }

  /** Follows redirects inside the server (never the one back to the client). */
  private async follow(response: FormResponse): Promise<FormResponse> {
    for (let hops = 0; hops < 10 && (response.status === 302 || response.status === 303) && response.location && !response.location.startsWith(CALLBACK); hops++) {
      response = await this.client.get(new URL(response.location, `${this.side.url}/`).href);
    }
    return response;
  }

  /** Signs in with username and password from the login page; what comes next. */
  async signIn(username: string, password = USER_PASSWORD): Promise<string> {
    await this.open();
    return this.submit({ username, password });
  }
}

/**
 * Sets an authenticator app up for a user through the CONFIGURE_TOTP required action, as the user would: the key
 * is read from the setup page (Keycloak's hidden `totpSecret` holds the key's characters, Realmgate shows the base32
 * key), the code typed in.
 */
export async function configureOtp(side: Side, userId: string, username: string): Promise<CodeSource> {
  await (await side.admin()).users.update({ id: userId }, { requiredActions: ['CONFIGURE_TOTP'] });
  const visitor = new Visitor(side);
  const page = await visitor.signIn(username);
  if (!page.includes('totp')) throw new Error(`${side.name}: expected the authenticator setup page, saw ${page}`);
  const form = askingForm(visitor.last.text)!;
  const raw = form.inputs.find((i) => i.name === 'totpSecret')?.value;
  const shown = /id="kc-totp-secret-key"[^>]*>([^<]*)</.exec(visitor.last.text)?.[1];
  const key = raw ? Buffer.from(raw, 'utf8') : fromBase32(decodeEntities(shown ?? '').replace(/\s/g, ''));
  const codes = new CodeSource(key, { window: LOOK_AHEAD });
  const done = await visitor.submit({ totp: codes.next(), userLabel: 'phone' });
  if (done !== 'signed-in') throw new Error(`${side.name}: the authenticator setup ended with ${done}`);
  return codes;
}

/** The password grant of `web`: status, and the error fields of a refusal (never the tokens). */
export async function passwordGrant(side: Side, username: string, extra: Record<string, string> = {}): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${side.url}/realms/${side.realm}/protocol/openid-connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', client_id: 'web', username, password: USER_PASSWORD, scope: 'openid', ...extra }),
  });
  const body = (await response.json()) as Record<string, unknown>;
  return { status: response.status, body: response.status === 200 ? { access_token: typeof body.access_token } : body };
}

/**
 * The same steps in Chromium (playwright-core, /usr/bin/chromium as the other browser tests): what a user with
 * JavaScript sees. The redirect back to the client is seen as a request (Playwright does not route redirects);
 * nothing listens there (loopback), so its refused connection is expected.
 */
export class ChromiumVisitor {
  private callback: string | null = null;

  constructor(
    readonly side: Side,
    readonly page: Page,
  ) {
    page.on('request', (request) => {
      if (request.url().startsWith(CALLBACK)) this.callback = request.url();
    });
  }

  async open(extra: Record<string, string> = {}): Promise<string> {
    const query = new URLSearchParams({ client_id: 'web', redirect_uri: CALLBACK, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 'st', ...extra });
    await this.page.goto(`${this.side.url}/realms/${this.side.realm}/protocol/openid-connect/auth?${query}`).catch(() => this.expectCallback());
    return this.seen();
  }

  private expectCallback(): void {
    if (!this.callback) throw new Error(`${this.side.name}: a navigation failed before reaching the client`);
  }

  async seen(): Promise<string> {
    if (this.callback) return seen({ status: 302, location: this.callback, text: '', headers: new Headers(), setCookies: [] });
    return seen({ status: 200, location: null, text: await this.page.content(), headers: new Headers(), setCookies: [] });
  }

  /** Types the fields into the page's asking form and presses Enter in the last, as a user does. */
  async submit(fields: Record<string, string>): Promise<string> {
    const names = Object.keys(fields);
    for (const name of names) await this.page.fill(`form [name="${name}"]`, fields[name]);
    await Promise.all([this.page.waitForNavigation().catch(() => this.expectCallback()), this.page.press(`form [name="${names[names.length - 1]}"]`, 'Enter')]);
    return this.seen();
  }
}
