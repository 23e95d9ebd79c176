/**
 * Browser-less use of the server's login pages with fetch and a cookie jar: the authorization request, the
 * login form post (with extra headers such as X-Forwarded-For), and registration. Used by the end-to-end
 * test and by the login-latency bench.
 */
import { createHash, randomBytes } from 'node:crypto';

export interface FormClient {
  baseUrl: string;
  realm: string;
  clientId: string;
  redirectUri: string;
}

/** The cookies of one "browser": name → value, for the realm path. */
export class CookieJar {
  readonly cookies = new Map<string, string>();

  take(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';');
      const at = pair.indexOf('=');
      const name = pair.slice(0, at).trim();
      const value = pair.slice(at + 1).trim();
      const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a) || /^\s*expires=thu, 01 jan 1970/i.test(a));
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }
}

export interface FormPage {
  status: number;
  html: string;
  /** The form's action URL (absolute) and its CSRF token, when the page has a form with one. */
  action: string | null;
  sessionCode: string | null;
}

function unescapeHtml(text: string): string {
  return text.replace(/&amp;/g, '&').replace(/&#x2F;/gi, '/').replace(/&#39;/g, "'").replace(/&quot;/g, '"');
}

function parsePage(baseUrl: string, status: number, html: string): FormPage {
  const action = /<form[^>]*\saction="([^"]+)"/.exec(html)?.[1];
  const sessionCode = /name="session_code"\s+value="([^"]*)"/.exec(html)?.[1];
  return {
    status,
    html,
    action: action ? new URL(unescapeHtml(action), baseUrl).href : null,
    sessionCode: sessionCode ? unescapeHtml(sessionCode) : null,
  };
}

async function get(jar: CookieJar, baseUrl: string, url: string, headers: Record<string, string>): Promise<FormPage> {
  const response = await fetch(url, { redirect: 'manual', headers: { cookie: jar.header(), ...headers } });
  jar.take(response);
  return parsePage(baseUrl, response.status, await response.text());
}

/** Authorization-request parameters of a public client with PKCE (the code is never redeemed here). */
export function authorizationQuery(client: FormClient): URLSearchParams {
  const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
  return new URLSearchParams({
    client_id: client.clientId,
    redirect_uri: client.redirectUri,
    response_type: 'code',
    scope: 'openid',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
}

export interface FormResult {
  status: number;
  /** Location of a redirect (the client's redirect URI with the code on success), else null. */
  location: string | null;
  html: string;
}

async function post(jar: CookieJar, page: FormPage, fields: Record<string, string>, headers: Record<string, string>): Promise<FormResult> {
  if (!page.action || page.sessionCode === null) throw new Error(`no form on the page (status ${page.status}): ${page.html.slice(0, 300)}`);
  const response = await fetch(page.action, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: jar.header(), ...headers },
    body: new URLSearchParams({ ...fields, session_code: page.sessionCode }),
  });
  jar.take(response);
  return { status: response.status, location: response.headers.get('location'), html: await response.text() };
}

/** Opens the login page of `client` and posts the credentials; `headers` go with both requests. */
export async function formLogin(
  client: FormClient,
  username: string,
  password: string,
  headers: Record<string, string> = {},
  jar = new CookieJar(),
): Promise<FormResult> {
  const url = `${client.baseUrl}/realms/${encodeURIComponent(client.realm)}/protocol/openid-connect/auth?${authorizationQuery(client)}`;
  const page = await get(jar, client.baseUrl, url, headers);
  return post(jar, page, { username, password }, headers);
}

/** Opens the registration page of `client` and posts the form. */
export async function formRegister(
  client: FormClient,
  fields: { username: string; email: string; firstName: string; lastName: string; password: string },
  headers: Record<string, string> = {},
  jar = new CookieJar(),
): Promise<FormResult> {
  const url = `${client.baseUrl}/realms/${encodeURIComponent(client.realm)}/protocol/openid-connect/registrations?${authorizationQuery(client)}`;
  const page = await get(jar, client.baseUrl, url, headers);
  return post(jar, page, { ...fields, 'password-confirm': fields.password }, headers);
}
