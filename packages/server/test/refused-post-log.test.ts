/**
 * Issue 33, point 7: a form post a protector refuses (proof of work, honeypot, …) is answered on the form's page
 * and logs at most one warning line, never an error with a stack: a refused post is a bot's everyday traffic, and
 * an error per post would let anyone flood the error log.
 */
import { resolve } from 'node:path';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient } from './support/admin-client.js';
import { FormClient, inputValue, pkce } from './support/forms.js';
import { startServer, type TestServer } from './support/server.js';

const providersDir = resolve(import.meta.dirname, 'fixtures', 'page-providers');

describe('a refused form post', () => {
  let t: TestServer;
  let kc: KcAdminClient;
  const callback = 'http://127.0.0.1:9/cb';

  beforeAll(async () => {
    t = await startServer({ providersDir });
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'plug', enabled: true, resetPasswordAllowed: true });
    kc.setConfig({ realmName: 'plug' });
    await kc.clients.create({ clientId: 'web', publicClient: true, redirectUris: [callback] });
    await kc.users.create({ username: 'pat', enabled: true, credentials: [{ type: 'password', value: 'pat-pass-1' }] });
  });
  afterAll(async () => {
    await t?.close();
  });

  const authUrl = () =>
    `/realms/plug/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'web', redirect_uri: callback, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256' })}`;

  /**
   * The lines logged from `from` on. The old code's error line came in the same run of microtasks that sent the
   * answer, so it is there once the answer has been read; the last check's line, an unrelated request, is written
   * after the refused request's handler has finished.
   */
  const linesSince = async (from: number) => {
    await fetch(`${t.url}/realms/plug/.well-known/openid-configuration`);
    return t.logs.slice(from);
  };

  const expectQuiet = (lines: Record<string, unknown>[]) => {
    expect(lines.filter((l) => (l.level as number) >= 50), JSON.stringify(lines)).toEqual([]);
    const warnings = lines.filter((l) => l.level === 40);
    expect(warnings.length).toBeLessThanOrEqual(1);
    for (const w of warnings) expect(JSON.stringify(w)).not.toMatch(/"stack"|\n\s+at /);
  };

  for (const form of ['authenticate', 'reset-credentials'] as const) {
    it(`on ${form}: answered on the form's page with no error-level line and at most one warning without a stack`, async () => {
      const client = new FormClient(t.url);
      const page = (await client.get(authUrl())).text;
      const html = form === 'authenticate' ? page : (await client.get('/realms/plug/login-actions/reset-credentials')).text;
      const before = t.logs.length;
      const refused = await client.post(`/realms/plug/login-actions/${form}`, {
        username: 'pat',
        ...(form === 'authenticate' ? { password: 'pat-pass-1' } : {}),
        session_code: inputValue(html, 'session_code')!,
        'shield-token': inputValue(html, 'shield-token')!,
      });
      expect(refused.status).toBe(400);
      expect(refused.text).toContain('We could not verify this');
      expectQuiet(await linesSince(before));
    });

    it(`on ${form}: a post without the page's token is answered 400 with no error-level line`, async () => {
      const client = new FormClient(t.url);
      await client.get(authUrl());
      const before = t.logs.length;
      const refused = await client.post(`/realms/plug/login-actions/${form}`, { username: 'pat', password: 'pat-pass-1', session_code: 'not-the-page-token' });
      expect(refused.status).toBe(400);
      expectQuiet(await linesSince(before));
    });
  }
});
