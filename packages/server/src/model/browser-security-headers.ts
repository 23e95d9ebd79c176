/**
 * Keycloak's realm `browserSecurityHeaders`: the security headers of the realm's pages, by Keycloak's field names.
 * The defaults are the headers this server has always sent (stricter than Keycloak's SAMEORIGIN and
 * `frame-ancestors 'self'`: its pages are never framed); a realm's value replaces one, and "" leaves that header out.
 * pages/render.ts sends them.
 */
export const BROWSER_SECURITY_HEADERS = {
  contentSecurityPolicy: 'content-security-policy',
  contentSecurityPolicyReportOnly: 'content-security-policy-report-only',
  xContentTypeOptions: 'x-content-type-options',
  referrerPolicy: 'referrer-policy',
  xRobotsTag: 'x-robots-tag',
  xFrameOptions: 'x-frame-options',
  strictTransportSecurity: 'strict-transport-security',
} as const;

export type BrowserSecurityHeaders = Record<keyof typeof BROWSER_SECURITY_HEADERS, string>;

/**
 * Names earlier Keycloaks wrote (exports up to 26.0 carry `xXSSProtection`; browsers dropped the header) that
 * Keycloak 26.7.3 neither lists nor sends: taken from a realm file or a PUT and dropped, as there.
 */
export const RETIRED_BROWSER_SECURITY_HEADERS: readonly string[] = ['xXSSProtection'];

// Scripts only from this origin: protector and form-action assets are served by their realm resources.
export const PAGE_CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "style-src 'self'",
  "img-src 'self' data:",
  "worker-src 'self' blob:",
  "connect-src 'self'",
  "form-action 'self' http: https:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

export const defaultBrowserSecurityHeaders = (): BrowserSecurityHeaders => ({
  contentSecurityPolicy: PAGE_CONTENT_SECURITY_POLICY,
  contentSecurityPolicyReportOnly: '',
  xContentTypeOptions: 'nosniff',
  referrerPolicy: 'no-referrer',
  xRobotsTag: 'none',
  xFrameOptions: 'DENY',
  strictTransportSecurity: 'max-age=31536000; includeSubDomains',
});

/** A header value an administrator may set: printable, one line (a line break would start another header). */
export const HEADER_VALUE = /^[\x20-\x7e]{0,2048}$/;

/** The stored overrides over the defaults (an unknown key or a bad value dropped): what a realm sends. */
export function readBrowserSecurityHeaders(stored: Record<string, unknown>): BrowserSecurityHeaders {
  const headers = defaultBrowserSecurityHeaders();
  for (const key of Object.keys(headers) as (keyof BrowserSecurityHeaders)[]) {
    const value = stored[key];
    if (typeof value === 'string' && HEADER_VALUE.test(value)) headers[key] = value;
  }
  return headers;
}

/** Only what differs from the defaults is stored, so a default changed later reaches realms that never set it. */
export function browserSecurityHeaderOverrides(headers: BrowserSecurityHeaders): Partial<BrowserSecurityHeaders> {
  const defaults = defaultBrowserSecurityHeaders();
  return Object.fromEntries(Object.entries(headers).filter(([key, value]) => defaults[key as keyof BrowserSecurityHeaders] !== value));
}
