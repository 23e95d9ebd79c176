import { join } from 'node:path';
import type { FormActionFactory, HttpMethod, RealmResourceFactory } from '@realmgate/spi';
import { chromium } from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Blocklist } from '../src/blocklist.js';
import { REJECTION_MESSAGE, RESOURCE_ID, createProviders } from '../src/provider.js';
import { fakeContext, realm, requestInfo, startServer, tempDir, writeDataFile } from './helpers.js';
import type { TestServer } from './helpers.js';

/** The registration page as the host renders it: Keycloak's field names, the form action's assets appended. */
function page(assets: string, serverError?: string): string {
  const error = serverError
    ? `<span id="input-error-email" class="input-error">${serverError}</span>`
    : '';
  const invalid = serverError ? ' aria-invalid="true" aria-describedby="input-error-email"' : '';
  return `<!doctype html><html lang="en"><head><title>Register</title></head><body>
<form method="post" action="#">
  <label for="username">Username</label><input id="username" name="username">
  <label for="email">Email</label><input id="email" name="email" type="text"${invalid}>${error}
  <button type="submit">Register</button>
</form>
${assets}
</body></html>`;
}

describe('inline e-mail check in the browser', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let server: TestServer;
  let browser: Browser;
  const checks: string[] = [];

  beforeAll(async () => {
    dir = await tempDir();
    const list = new Blocklist({ dataPath: await writeDataFile(join(dir.path, 'data.js'), ['disposable.example']) });
    const [formAction, resource] = createProviders(list) as [FormActionFactory, RealmResourceFactory];
    await resource.init?.(fakeContext().context);
    const routes = resource.create().routes;
    const assets = await formAction.create().renderAssets?.({ realm, assetsBaseUrl: '/realms/demo' });
    const prefix = `/realms/demo/${RESOURCE_ID}`;

    server = await startServer(async (request, response) => {
      const url = new URL(request.url ?? '/', 'http://localhost');
      if (url.pathname === '/realms/demo/register' || url.pathname === '/realms/demo/register-taken') {
        response.setHeader('content-type', 'text/html; charset=utf-8');
        response.setHeader('content-security-policy', "script-src 'self'");
        response.end(page(assets ?? '', url.pathname.endsWith('taken') ? 'Email already exists.' : undefined));
        return;
      }
      const route = routes.find((r) => r.method === request.method && prefix + r.path === url.pathname);
      if (!route) {
        response.statusCode = 404;
        response.end();
        return;
      }
      if (route.path === '/check-email') checks.push(url.searchParams.get('email') ?? '');
      const result = await route.handler({
        realm,
        method: request.method as HttpMethod,
        params: {},
        query: Object.fromEntries(url.searchParams),
        headers: {},
        body: undefined,
        request: requestInfo,
      });
      response.statusCode = result.status;
      for (const [name, value] of Object.entries(result.headers ?? {})) response.setHeader(name, value);
      if (typeof result.body === 'string') {
        response.end(result.body);
      } else {
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify(result.body));
      }
    });
    browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await dir?.remove();
  });

  async function open(path: string): Promise<Page> {
    const tab = await browser.newPage();
    const errors: string[] = [];
    tab.on('pageerror', (error) => errors.push(error.message));
    tab.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    await tab.goto(server.url + path);
    await tab.waitForLoadState('load');
    expect(errors).toEqual([]);
    return tab;
  }

  async function typeAndLeave(tab: Page, email: string): Promise<void> {
    await tab.fill('#email', email);
    await tab.focus('#username');
  }

  const errorText = (tab: Page) => tab.locator('#input-error-email').textContent();

  it('shows the error next to the field when it loses focus on a disposable address, and clears it after a fix', async () => {
    const tab = await open('/realms/demo/register');
    expect(await tab.locator('#input-error-email').count()).toBe(0);

    await typeAndLeave(tab, 'someone@mail.disposable.example');
    await tab.waitForFunction((message) => document.getElementById('input-error-email')?.textContent === message, REJECTION_MESSAGE);
    expect(checks.at(-1)).toBe('someone@mail.disposable.example');
    expect(await tab.getAttribute('#email', 'aria-invalid')).toBe('true');
    expect(await tab.getAttribute('#email', 'aria-describedby')).toBe('input-error-email');
    expect(await tab.evaluate(() => document.getElementById('email')?.nextElementSibling?.id)).toBe('input-error-email');
    expect(await tab.locator('#input-error-email').isVisible()).toBe(true);

    await typeAndLeave(tab, 'someone@example.com');
    await tab.waitForFunction(() => document.getElementById('input-error-email')?.textContent === '');
    expect(await tab.getAttribute('#email', 'aria-invalid')).toBeNull();
    expect(await tab.getAttribute('#email', 'aria-describedby')).toBeNull();
    expect(await tab.locator('#input-error-email').isVisible()).toBe(false);

    // Something that is not an address clears without asking the server.
    await typeAndLeave(tab, 'someone@disposable.example');
    await tab.waitForFunction((message) => document.getElementById('input-error-email')?.textContent === message, REJECTION_MESSAGE);
    const before = checks.length;
    await typeAndLeave(tab, 'no-at-sign');
    await tab.waitForFunction(() => document.getElementById('input-error-email')?.textContent === '');
    expect(checks.length).toBe(before);
    await tab.close();
  });

  it('leaves another error the server rendered alone, and uses its element for its own', async () => {
    const tab = await open('/realms/demo/register-taken');
    await typeAndLeave(tab, 'someone@example.com');
    await expect.poll(() => checks.at(-1)).toBe('someone@example.com');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await errorText(tab)).toBe('Email already exists.');
    expect(await tab.getAttribute('#email', 'aria-invalid')).toBe('true');

    await typeAndLeave(tab, 'someone@disposable.example');
    await tab.waitForFunction((message) => document.getElementById('input-error-email')?.textContent === message, REJECTION_MESSAGE);
    expect(await tab.locator('#input-error-email').count()).toBe(1);

    await typeAndLeave(tab, 'someone@example.org');
    await tab.waitForFunction(() => document.getElementById('input-error-email')?.textContent === '');
    expect(await tab.getAttribute('#email', 'aria-invalid')).toBeNull();
    expect(await tab.getAttribute('#email', 'aria-describedby')).toBe('input-error-email');
    await tab.close();
  });
});
