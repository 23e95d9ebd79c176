import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { FormClient, inputValue, pkce, textOf } from './forms.js';
import { api, tokenRequest, type TestServer } from './server.js';
import { CodeSource, fromBase32, hotpCode } from './totp.js';

/**
 * Realms, users and authenticator apps for tests of the OTP step: a realm with a public client allowed the
 * password grant, users with a password, an app set up through CONFIGURE_TOTP, and the browser's steps.
 */

export const OTP_USER_PASSWORD = 'Otp-user-password-7';
export const OTP_CALLBACK = 'http://127.0.0.1:9/cb';
/** The look-ahead window these realms use (the codes of three steps either side of now are accepted). */
export const LOOK_AHEAD = 3;

export interface Realmed {
  t: TestServer;
  token: string;
  realm: string;
}

export const ok = (response: { status: number; body: unknown }) => expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);

export async function newOtpRealm(t: TestServer, token: string, settings: Record<string, unknown> = {}): Promise<Realmed> {
  const realm = `otp-${randomUUID().slice(0, 8)}`;
  ok(await api(t.url, 'POST', '/admin/realms', token, { realm, enabled: true, eventsEnabled: true, otpPolicyLookAheadWindow: LOOK_AHEAD, ...settings }));
  ok(await api(t.url, 'POST', `/admin/realms/${realm}/clients`, token, { clientId: 'web', publicClient: true, directAccessGrantsEnabled: true, redirectUris: [OTP_CALLBACK] }));
  return { t, token, realm };
}

export async function newOtpUser({ t, token, realm }: Realmed, extra: Record<string, unknown> = {}): Promise<{ id: string; username: string }> {
  const username = `u${randomUUID().slice(0, 8)}`;
  const created = await api(t.url, 'POST', `/admin/realms/${realm}/users`, token, { username, enabled: true, credentials: [{ type: 'password', value: OTP_USER_PASSWORD }], ...extra });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return { id: created.headers.get('location')!.split('/').pop()!, username: (extra.username as string | undefined) ?? username };
}

/** A browser without JavaScript that has posted the right password: the page it got and how to post the next form. */
export async function passwordStep({ t, realm }: Realmed, username: string, password = OTP_USER_PASSWORD) {
  const client = new FormClient(t.url);
  const query = new URLSearchParams({ client_id: 'web', redirect_uri: OTP_CALLBACK, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256' });
  const login = await client.get(`/realms/${realm}/protocol/openid-connect/auth?${query}`);
  const csrf = inputValue(login.text, 'session_code')!;
  const page = await client.post(`/realms/${realm}/login-actions/authenticate`, { username, password, session_code: csrf });
  const post = (action: 'login-otp' | 'config-totp', form: Record<string, string>, from = page) =>
    client.post(`/realms/${realm}/login-actions/${action}`, { key: inputValue(from.text, 'key') ?? '', session_code: csrf, ...form });
  return { page, post, client, authPath: `/realms/${realm}/protocol/openid-connect/auth?${query}` };
}

/** The user's authenticator app: its codes, and a code that is surely wrong now (none of the window's). */
export interface App {
  codes: CodeSource;
  wrongCode(): string;
}

/** Sets an authenticator app up for the user through CONFIGURE_TOTP (set by the admin API). */
export async function withOtp(r: Realmed, user: { id: string; username: string }): Promise<App> {
  ok(await api(r.t.url, 'PUT', `/admin/realms/${r.realm}/users/${user.id}`, r.token, { requiredActions: ['CONFIGURE_TOTP'] }));
  const { page, post } = await passwordStep(r, user.username);
  expect(page.status, page.text.slice(0, 300)).toBe(200);
  const key = fromBase32(textOf(page.text, 'kc-totp-secret-key')!.replace(/\s/g, ''));
  const codes = new CodeSource(key, { window: LOOK_AHEAD });
  const done = await post('config-totp', { totp: codes.next(), userLabel: 'phone' });
  expect(done.status, done.text.slice(0, 500)).toBe(302);
  const wrongCode = () => {
    const now = Math.floor(Date.now() / 30_000);
    // Two steps of margin beyond the window, for a step that turns while the code travels.
    const valid = new Set(Array.from({ length: 2 * LOOK_AHEAD + 5 }, (_, i) => hotpCode(key, now - LOOK_AHEAD - 2 + i)));
    for (let guess = 0; ; guess++) {
      const code = String(guess).padStart(6, '0');
      if (!valid.has(code)) return code;
    }
  };
  return { codes, wrongCode };
}

export const passwordGrant = ({ t, realm }: Realmed, username: string, extra: Record<string, string> = {}, url = t.url) =>
  tokenRequest(url, realm, { grant_type: 'password', client_id: 'web', username, password: OTP_USER_PASSWORD, ...extra });

/** The errors of the user's LOGIN_ERROR (or other `type`) events, sorted. */
export async function eventErrors({ t, token, realm }: Realmed, userId: string, type = 'LOGIN_ERROR'): Promise<string[]> {
  const events = (await api(t.url, 'GET', `/admin/realms/${realm}/events?type=${type}&max=1000`, token)).body as { userId?: string; error: string }[];
  return events
    .filter((e) => e.userId === userId)
    .map((e) => e.error)
    .sort();
}
