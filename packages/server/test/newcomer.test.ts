import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot } from './support/browser.js';
import { REPO_ROOT } from './support/server.js';

const DISPOSABLE_REJECTION = 'Disposable e-mail addresses are not accepted. Please use a permanent address.';

/**
 * A free port rather than 0: the demo client's webhook URL is fixed at import from the configured port, as it
 * is for a newcomer's `npm start` on 8080.
 */
async function freePort(): Promise<number> {
  const probe = createNetServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** The console's three numbered links, read the way a newcomer reads them. */
function printedLinks(stdout: string): { disposable: string; normal: string; inbox: string; login: string } | null {
  const match = /1\. Register with a disposable .*\n\s+(\S+)\n\s+2\. Register with a normal .* at (\S+)\n\s+(\S+)\n\s+3\. Log in.*\n\s+(\S+)\n/.exec(stdout);
  return match ? { disposable: match[1], inbox: match[2], normal: match[3], login: match[4] } : null;
}

describe("a newcomer's first ten minutes: npm start in development mode, then the three printed links", () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'realmgate-newcomer-'));
  let child: ChildProcess;
  let stdout = '';
  let stderr = '';
  let links: NonNullable<ReturnType<typeof printedLinks>>;
  let browser: Browser;

  beforeAll(async () => {
    const port = await freePort();
    // What `npm start` runs, with the repository's ./providers; only the port and data directory differ.
    child = spawn(process.execPath, ['--import', 'tsx', 'packages/server/src/main.ts'], {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? dataDir,
        REALMGATE_HTTP_HOST: '127.0.0.1',
        REALMGATE_HTTP_PORT: String(port),
        REALMGATE_DB_URL: `sqlite:${join(dataDir, 'realmgate.db')}`,
        // Cheap Argon2id, so the browser's background solve takes milliseconds on a loaded test machine.
        POW_ARGON2_MEMORY_KB: '1024',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const deadline = Date.now() + 60_000;
    for (;;) {
      const found = printedLinks(stdout);
      if (found) {
        links = found;
        break;
      }
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`no demo links printed (exit ${child.exitCode}):\n${stdout}\n${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    browser = await launchBrowser();
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    if (child?.exitCode === null) child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function open(url: string): Promise<Page> {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(url);
    return page;
  }

  it('prints the URL, the admin credentials and the demo links', () => {
    expect(stdout).toMatch(/Realmgate \S+ is running at http:\/\/127\.0\.0\.1:\d+\n/);
    expect(stdout).toMatch(/Admin console: http:\/\/127\.0\.0\.1:\d+\/admin\/master\/console\/\n/);
    expect(stdout).toMatch(/username: admin\n\s+password: \S+\n/);
    expect(links.disposable).toBe(links.normal);
    expect(links.inbox).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/dev\/webhooks$/);
    expect(links.login).toContain('/realms/demo/protocol/openid-connect/auth?');
  });

  it('rejects a disposable address next to the e-mail field when it loses focus, without a reload', async () => {
    const page = await open(links.disposable);
    expect(await page.locator('h1').textContent()).toMatch(/^Register/);
    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));
    await page.fill('#email', 'someone@mailinator.com');
    await page.focus('#username');
    await page.waitForFunction((message) => document.getElementById('input-error-email')?.textContent === message, DISPOSABLE_REJECTION);
    expect(await page.evaluate(() => document.getElementById('email')?.nextElementSibling?.id)).toBe('input-error-email');
    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
    await screenshot(page, 'newcomer-disposable-rejected');
    await page.context().close();
  });

  it('registers a normal address, lands on the demo application, and the REGISTER delivery shows in the inbox', async () => {
    const page = await open(links.normal);
    await page.fill('#firstName', 'Nora');
    await page.fill('#lastName', 'Newcomer');
    await page.fill('#email', 'nora@example.com');
    await page.fill('#username', 'nora');
    await page.fill('#password', 'first-ten-minutes');
    await page.fill('#password-confirm', 'first-ten-minutes');
    await page.click('button[type=submit]');
    await page.waitForURL(/\/dev\/welcome\?/, { timeout: 30_000 });
    expect(await page.locator('#signed-in-as').textContent()).toBe('Signed in as nora (nora@example.com).');

    await page.goto(links.inbox);
    const delivery = page.locator('article', { hasText: '"type": "REGISTER"' });
    for (let i = 0; (await delivery.count()) === 0 && i < 50; i++) {
      await page.waitForTimeout(200);
      await page.reload();
    }
    expect(await delivery.count()).toBe(1);
    const text = (await delivery.textContent()) ?? '';
    expect(text).toContain('"user_name": "nora"');
    expect(text).toContain('"email": "nora@example.com"');
    expect(text).toContain('"name": "demo"');
    // The bearer key is masked but for its last four characters.
    expect(text).toContain('••••••••cret');
    expect(text).not.toContain('demo-webhook-key');
    await screenshot(page, 'newcomer-webhook-inbox');
    await page.context().close();
  });

  it('solves proof of work in the background on the login page, and logging in works', async () => {
    const page = await open(links.login);
    expect(await page.locator('h1').textContent()).toMatch(/^Sign in/);
    // Solved before anything is typed: the nonce is filled in by the workers on their own.
    await page.waitForFunction(() => (document.querySelector('input[name=pow_nonce]') as HTMLInputElement | null)?.value !== '', null, { timeout: 30_000 });
    await page.fill('#username', 'nora');
    await page.fill('#password', 'first-ten-minutes');
    await screenshot(page, 'newcomer-login');
    await page.click('button[type=submit]');
    await page.waitForURL(/\/dev\/welcome\?/, { timeout: 30_000 });
    expect(await page.locator('#signed-in-as').textContent()).toBe('Signed in as nora (nora@example.com).');
    await page.context().close();
  });

  it('stops on SIGTERM with exit code 0', async () => {
    const exited = new Promise((resolve) => child.on('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr).toBe('');
  });
});
