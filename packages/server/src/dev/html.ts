/** Everything shown on a dev page passes through escapeHtml: deliveries and tokens carry text from anyone. */
import { escapeHtml } from '../http/index.js';

export { escapeHtml };

/**
 * No script runs on these pages and every value is escaped; the policy makes a slip in either harmless.
 * Inline styles only, so a dev page needs nothing from the theme others may be changing.
 */
export const devPageHeaders = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
};

/** `body` must already be escaped HTML. */
export function devPage(title: string, body: string, head = ''): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Realmgate (development)</title>
${head}
<style>
  body { font: 15px/1.5 system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; padding: 0 1rem; color: #1d2330; }
  h1 { font-size: 1.4rem; } h2 { font-size: 1.05rem; margin: 0 0 .5rem; }
  .note { color: #5b6475; }
  article { border: 1px solid #d5d9e2; border-radius: 6px; padding: 1rem; margin: 1rem 0; }
  table { border-collapse: collapse; font: 13px/1.4 ui-monospace, monospace; margin-bottom: .75rem; }
  th { text-align: left; padding-right: 1rem; color: #5b6475; font-weight: normal; vertical-align: top; }
  pre { background: #f4f6fa; padding: .75rem; overflow-x: auto; font: 13px/1.4 ui-monospace, monospace; margin: 0; }
</style>
</head>
<body>
<p class="note">Realmgate development mode: this page does not exist in production.</p>
${body}
</body>
</html>
`;
}
