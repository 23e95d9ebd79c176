import { expect } from 'vitest';
import { FormClient, firstForm, pkce } from './forms.js';
import { tokenRequest } from './server.js';

/**
 * A browser for brokering tests against two realms of one test server: the broker realm `down` and the upstream
 * realm `up`, one cookie jar each (the form client ignores cookie paths).
 */
export class BrokerBrowser {
  readonly down: FormClient;
  readonly up: FormClient;
  constructor(base: string) {
    this.down = new FormClient(base);
    this.up = new FormClient(base);
  }
  /** Only this test server is ever asked (the application's redirect URI is looked at, never fetched). */
  private jar(url: string) {
    if (/^https?:/.test(url) && !url.startsWith(this.down.base)) throw new Error(`the test browser does not leave the test server: ${url}`);
    return url.includes('/realms/up/') ? this.up : this.down;
  }
  get(url: string) {
    return this.jar(url).get(url);
  }
  post(url: string, form: Record<string, string>) {
    return this.jar(url).post(url, form);
  }
}

/** The application of the two-realm brokering tests: client `app` of realm `down`, its redirect URI never fetched. */
export const APP_REDIRECT = 'http://app.test/callback';

/**
 * upuser (password Up-pass-123 at `up`) signs in to `app` at `down` through the provider `up` (kc_idp_hint) in a new
 * browser, so a new upstream session; the browser and the app's tokens from the code exchange.
 */
export async function signInThroughUp(base: string): Promise<{ browser: BrokerBrowser; tokens: Record<string, string> }> {
  const browser = new BrokerBrowser(base);
  const { verifier, challenge } = pkce();
  const query = new URLSearchParams({ client_id: 'app', redirect_uri: APP_REDIRECT, response_type: 'code', scope: 'openid', state: 's', code_challenge: challenge, code_challenge_method: 'S256', kc_idp_hint: 'up' });
  let answer = await browser.get(`/realms/down/protocol/openid-connect/auth?${query}`);
  for (let hops = 0; answer.status === 302 && !answer.location!.startsWith(APP_REDIRECT) && hops < 10; hops++) answer = await browser.get(answer.location!);
  if (answer.status === 200) {
    const form = firstForm(answer.text);
    answer = await browser.post(form.action, { ...form.hidden, username: 'upuser', password: 'Up-pass-123' });
    for (let hops = 0; answer.status === 302 && !answer.location!.startsWith(APP_REDIRECT) && hops < 10; hops++) answer = await browser.get(answer.location!);
  }
  expect(answer.location, answer.text?.slice(0, 300)).toMatch(/^http:\/\/app\.test\/callback\?.*code=/);
  const code = new URL(answer.location!).searchParams.get('code')!;
  const tokens = await tokenRequest(base, 'down', { grant_type: 'authorization_code', client_id: 'app', code, redirect_uri: APP_REDIRECT, code_verifier: verifier });
  expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
  return { browser, tokens: tokens.body as Record<string, string> };
}
