import { createHash, randomBytes } from 'node:crypto';

export interface FormResponse {
  status: number;
  text: string;
  location: string | null;
  headers: Headers;
  /** Names of the cookies this response set (a cleared cookie included). */
  setCookies: string[];
}

/**
 * A browser without JavaScript: keeps cookies (one realm at a time, so paths are ignored), follows nothing by
 * itself, posts forms the way a browser encodes them.
 */
export class FormClient {
  readonly cookies = new Map<string, string>();

  constructor(readonly base: string) {}

  async get(path: string): Promise<FormResponse> {
    return this.send('GET', path);
  }

  async post(path: string, form: Record<string, string> | string, contentType = 'application/x-www-form-urlencoded'): Promise<FormResponse> {
    return this.send('POST', path, typeof form === 'string' ? form : new URLSearchParams(form).toString(), contentType);
  }

  private async send(method: string, path: string, body?: string, contentType?: string): Promise<FormResponse> {
    const headers: Record<string, string> = {};
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (contentType) headers['content-type'] = contentType;
    const response = await fetch(path.startsWith('http') ? path : `${this.base}${path}`, { method, headers, body, redirect: 'manual' });
    const setCookies: string[] = [];
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      setCookies.push(name);
      if (!value || attributes.some((a) => /^\s*max-age=0\s*$/i.test(a))) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return { status: response.status, text: await response.text(), location: response.headers.get('location'), headers: response.headers, setCookies };
  }
}

/** The value of a hidden (or any) input by name in a page, HTML entities undone. */
export function inputValue(html: string, name: string): string | null {
  const tag = new RegExp(`<input[^>]*\\bname="${name.replace(/[-]/g, '\\-')}"[^>]*>`).exec(html);
  if (!tag) return null;
  const value = /\bvalue="([^"]*)"/.exec(tag[0]);
  return value ? decodeEntities(value[1]) : '';
}

export function decodeEntities(s: string): string {
  return s
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)))
    .replace(/&#x([0-9a-f]+);/gi, (_, n: string) => String.fromCharCode(parseInt(n, 16)))
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/** The first form of a page: where it posts and its hidden inputs, as a browser would send them. */
export function firstForm(html: string): { action: string; hidden: Record<string, string> } {
  const form = /<form\b[^>]*\baction="([^"]*)"[^>]*>([\s\S]*?)<\/form>/.exec(html);
  if (!form) throw new Error('the page has no form');
  const hidden: Record<string, string> = {};
  for (const input of form[2].matchAll(/<input\b[^>]*\btype="hidden"[^>]*>/g)) {
    const name = /\bname="([^"]*)"/.exec(input[0])?.[1];
    if (name) hidden[name] = decodeEntities(/\bvalue="([^"]*)"/.exec(input[0])?.[1] ?? '');
  }
  return { action: decodeEntities(form[1]), hidden };
}

/** The text of the element with this id (`error-text`, `page-message`, `input-error-email`…), or null. */
export function textOf(html: string, id: string): string | null {
  const match = new RegExp(`id="${id}"[^>]*>([^<]*)<`).exec(html);
  return match ? decodeEntities(match[1]).trim() : null;
}

export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}
