/**
 * Issue 33, point 7: /metrics can leave the public port (metricsPort, on metricsHost) or require a bearer token
 * (metricsToken); production warns at start when it is open to anyone on the main port.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from './support/server.js';

const TOKEN = 'scrape-token-0123456789abcdef';

describe('/metrics on a port of its own (metricsPort)', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startServer({ config: { REALMGATE_METRICS_PORT: '0' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('is not served on the main port', async () => {
    expect((await fetch(`${t.url}/metrics`)).status).toBe(404);
    expect((await fetch(`${t.url}/health/live`)).status).toBe(200);
  });

  it('is served on the metrics port, on loopback by default, and nothing else is', async () => {
    const url = t.server.metricsUrl!;
    expect(new URL(url).hostname).toBe('127.0.0.1');
    const answer = await fetch(`${url}/metrics`);
    expect(answer.status).toBe(200);
    expect(await answer.text()).toMatch(/^# HELP realmgate_/m);
    expect((await fetch(`${url}/health/live`)).status).toBe(404);
    expect((await fetch(`${url}/admin/realms`)).status).toBe(404);
  });
});

describe('/metrics behind a token (metricsToken)', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startServer({ config: { REALMGATE_METRICS_TOKEN: TOKEN } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers 401 without the token or with another, the metrics with it', async () => {
    const none = await fetch(`${t.url}/metrics`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expect(await none.text()).not.toMatch(/realmgate_/);
    expect((await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}x` } })).status).toBe(401);
    expect((await fetch(`${t.url}/metrics`, { headers: { authorization: TOKEN } })).status).toBe(401);
    const good = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(good.status).toBe(200);
    expect(await good.text()).toMatch(/^# HELP realmgate_/m);
    expect(JSON.stringify(t.logs)).not.toContain(TOKEN);
  });
});

describe('production mode', () => {
  const production = { REALMGATE_MODE: 'production', REALMGATE_HOSTNAME: 'http://127.0.0.1:1' };
  const warning = (t: TestServer) => t.logs.filter((l) => l.level === 40 && String(l.msg).includes('/metrics'));

  it('warns once at start when /metrics is open on the main port', async () => {
    const t = await startServer({ config: production });
    try {
      expect(warning(t)).toHaveLength(1);
    } finally {
      await t.close();
    }
  });

  it('does not warn with a token or a port of its own', async () => {
    const configs: Record<string, string>[] = [{ REALMGATE_METRICS_TOKEN: TOKEN }, { REALMGATE_METRICS_PORT: '0' }];
    for (const config of configs) {
      const t = await startServer({ config: { ...production, ...config } });
      try {
        expect(warning(t)).toEqual([]);
      } finally {
        await t.close();
      }
    }
  });
});
