/**
 * The webhook target guard. No test here lets a connection leave for anything but 127.0.0.1: names are
 * resolved by an injected resolver, and the connector behind the guard is a spy that fails the test for any
 * other address before a socket exists (this machine may only talk to loopback).
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { buildConnector } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { WebhookDispatcher, undiciTransport } from '../src/delivery.js';
import type { Connector } from '../src/delivery.js';
import { TargetGuard, addressClass, isTargetRefusal } from '../src/target-guard.js';
import type { Resolver, TargetGuardOptions } from '../src/target-guard.js';
import { recordingLogger, recordingMetrics } from './helpers.js';
import { startReceiver } from './receiver.js';

/** A resolver from a table; a name not in it fails the test rather than reaching the system resolver. */
function table(entries: Record<string, string[]>): Resolver & { asked: string[] } {
  const asked: string[] = [];
  const resolver = async (hostname: string) => {
    asked.push(hostname);
    const addresses = entries[hostname];
    if (!addresses) throw new Error(`test resolver: unexpected name ${hostname}`);
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolver, { asked });
}

/** Records each connection asked for; opens a real one only to 127.0.0.1, never elsewhere. */
function loopbackOnlyConnector(
  options: buildConnector.BuildOptions = {},
): Connector & { calls: { hostname: string; host?: string; servername?: string }[] } {
  const real = buildConnector({ timeout: 2000, ...options });
  const calls: { hostname: string; host?: string; servername?: string }[] = [];
  const connector: Connector = (options, callback) => {
    calls.push({ hostname: options.hostname, host: options.host, servername: options.servername });
    if (options.hostname !== '127.0.0.1') {
      callback(new Error(`test connector: a connection to ${options.hostname} was attempted`), null);
      return;
    }
    real(options, callback);
  };
  return Object.assign(connector, { calls });
}

const guard = (options: Partial<TargetGuardOptions> = {}) =>
  new TargetGuard({ mode: 'production', resolver: table({}), ...options });

async function refusal(promise: Promise<unknown>): Promise<{ reason: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (isTargetRefusal(error)) return { reason: error.reason, message: error.message };
    throw error;
  }
  throw new Error('not refused');
}

describe('addressClass', () => {
  it.each([
    ['169.254.169.254', 'link_local'],
    ['169.254.0.1', 'link_local'],
    ['fe80::1', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['febf:ffff::1', 'link_local'],
    ['::ffff:169.254.169.254', 'link_local'],
    ['::ffff:a9fe:a9fe', 'link_local'],
    ['64:ff9b::169.254.169.254', 'link_local'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['::', 'unspecified'],
    ['::ffff:0.0.0.0', 'unspecified'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::127.0.0.1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['::ffff:10.1.2.3', 'private'],
    ['224.0.0.1', 'not_unicast'],
    ['255.255.255.255', 'not_unicast'],
    ['ff02::1', 'not_unicast'],
    ['172.32.0.1', 'public'],
    ['8.8.8.8', 'public'],
    ['2001:db8::1', 'public'],
    ['fec0::1', 'private'],
  ])('%s is %s', (address, kind) => {
    expect(addressClass(address)).toBe(kind);
  });

  it('is null for what is not an address', () => {
    expect(addressClass('localhost')).toBeNull();
    expect(addressClass('300.1.1.1')).toBeNull();
  });
});

describe('TargetGuard.pin (every new connection)', () => {
  it.each(['169.254.169.254', 'fe80::1', '::ffff:169.254.169.254', '::ffff:a9fe:a9fe', '0.0.0.0', '::', '224.0.0.1'])(
    'always refuses %s, in development mode too and whatever the allow list says',
    async (address) => {
      for (const mode of ['production', 'development'] as const) {
        const refused = await refusal(guard({ mode, allow: ['0.0.0.0/0', '::/0', 'loopback'] }).pin(address));
        expect(refused.reason).toMatch(/^(link_local|unspecified|not_unicast)$/);
      }
    },
  );

  it('refuses loopback in production mode and allows it in development mode', async () => {
    for (const address of ['127.0.0.1', '127.0.0.2', '::1', '::ffff:127.0.0.1']) {
      expect(await refusal(guard().pin(address))).toMatchObject({ reason: 'loopback' });
      await expect(guard({ mode: 'development' }).pin(address)).resolves.toBe(address);
    }
  });

  it('allows private ranges and public addresses by default', async () => {
    for (const address of ['10.0.0.9', '172.20.1.1', '192.168.0.10', 'fd00::5', '203.0.113.7', '2001:db8::7']) {
      await expect(guard().pin(address)).resolves.toBe(address);
    }
  });

  it('checks the resolved addresses, not the name, and returns the one to connect to', async () => {
    const resolver = table({ 'metadata.test': ['169.254.169.254'], 'hooks.test': ['203.0.113.7', '2001:db8::7'] });
    const g = guard({ resolver });
    expect(await refusal(g.pin('metadata.test'))).toEqual({
      reason: 'link_local',
      message: 'metadata.test: 169.254.169.254 is a link-local address (cloud metadata lives there)',
    });
    await expect(g.pin('hooks.test')).resolves.toBe('203.0.113.7');
    expect(resolver.asked).toEqual(['metadata.test', 'hooks.test']);
  });

  it('refuses a name with one good and one refused address (a rebinding attempt looks like that)', async () => {
    const resolver = table({ 'rebind.test': ['203.0.113.7', '169.254.169.254'], 'local.test': ['203.0.113.7', '::1'] });
    expect(await refusal(guard({ resolver }).pin('rebind.test'))).toMatchObject({ reason: 'link_local' });
    expect(await refusal(guard({ resolver }).pin('local.test'))).toMatchObject({ reason: 'loopback' });
  });

  it('resolves afresh for every connection, so a name that changes to a refused address is refused then', async () => {
    let answer = '203.0.113.7';
    const g = guard({ resolver: async () => [{ address: answer, family: 4 }] });
    await expect(g.pin('flip.test')).resolves.toBe('203.0.113.7');
    answer = '169.254.169.254';
    expect(await refusal(g.pin('flip.test'))).toMatchObject({ reason: 'link_local' });
  });

  it('does not resolve a literal address', async () => {
    const resolver = table({});
    await guard({ resolver }).pin('203.0.113.7');
    await guard({ resolver }).pin('[2001:db8::7]');
    expect(resolver.asked).toEqual([]);
  });

  it('applies the deny and allow lists, the most specific entry winning and deny winning a tie', async () => {
    const g = guard({ deny: ['10.0.0.0/8', '203.0.113.7', '2001:db8::/32'], allow: ['10.1.2.3/32', '10.9.0.0/16', '10.9.9.9/32', 'loopback'] });
    expect(await refusal(g.pin('10.0.0.1'))).toMatchObject({ reason: 'denied', message: '10.0.0.1 is denied by the webhook target rules' });
    await expect(g.pin('10.1.2.3')).resolves.toBe('10.1.2.3');
    await expect(g.pin('10.9.1.1')).resolves.toBe('10.9.1.1');
    expect(await refusal(g.pin('203.0.113.7'))).toMatchObject({ reason: 'denied' });
    expect(await refusal(g.pin('2001:db8::1'))).toMatchObject({ reason: 'denied' });
    await expect(g.pin('127.0.0.1')).resolves.toBe('127.0.0.1'); // loopback allowed in production by the rule
    await expect(g.pin('192.168.1.1')).resolves.toBe('192.168.1.1');
    const tie = guard({ deny: ['10.0.0.0/8'], allow: ['10.0.0.0/8'] });
    expect(await refusal(tie.pin('10.0.0.1'))).toMatchObject({ reason: 'denied' });
    expect(await refusal(guard({ deny: ['private'] }).pin('fd00::1'))).toMatchObject({ reason: 'denied' });
  });

  it('applies IPv4 rules to IPv4-mapped IPv6 addresses', async () => {
    expect(await refusal(guard({ deny: ['10.0.0.0/8'] }).pin('::ffff:10.0.0.1'))).toMatchObject({ reason: 'denied' });
    expect(await refusal(guard({ deny: ['::ffff:10.0.0.0/104'] }).pin('10.0.0.1'))).toMatchObject({ reason: 'denied' });
  });

  it('applies host rules to the name: deny refuses it, allow takes it whatever it resolves to but link-local', async () => {
    const resolver = table({ 'a.corp.test': ['203.0.113.7'], 'hooks.internal': ['127.0.0.1'], 'meta.internal': ['169.254.169.254'] });
    const g = guard({ resolver, deny: ['*.corp.test', 'loopback'], allow: ['hooks.internal', 'meta.internal'] });
    expect(await refusal(g.pin('a.corp.test'))).toMatchObject({ reason: 'denied', message: 'host a.corp.test is denied by the webhook target rules' });
    expect(resolver.asked).toEqual([]); // refused by name, before any lookup
    await expect(g.pin('hooks.internal')).resolves.toBe('127.0.0.1');
    expect(await refusal(g.pin('meta.internal'))).toMatchObject({ reason: 'link_local' });
  });

  it('refuses rule entries that are neither CIDRs, addresses, names nor keywords', () => {
    expect(() => guard({ deny: ['10.0.0.0/40'] })).toThrow(/10\.0\.0\.0\/40/);
    expect(() => guard({ allow: ['https://x.test/'] })).toThrow(/not a CIDR/);
  });
});

describe('TargetGuard.checkUrl (the admin API, without DNS)', () => {
  it.each([
    ['http://169.254.169.254/latest/meta-data/', 'link_local'],
    ['http://2852039166/', 'link_local'], // decimal
    ['http://0xa9fea9fe/', 'link_local'], // hex
    ['http://0251.0376.0251.0376/', 'link_local'], // octal
    ['http://169.254.43518/', 'link_local'], // two-part
    ['http://[::ffff:169.254.169.254]/', 'link_local'],
    ['http://[fe80::1]/', 'link_local'],
    ['http://0/', 'unspecified'],
    ['http://[::]/', 'unspecified'],
    ['http://127.0.0.1:8080/dev/webhooks/inbox', 'loopback'],
    ['http://0x7f.1/', 'loopback'],
    ['http://2130706433/', 'loopback'],
    ['http://[::1]/', 'loopback'],
    ['http://[0:0:0:0:0:ffff:7f00:1]/', 'loopback'],
    ['http://localhost:8080/', 'loopback'],
    ['http://LOCALHOST./', 'loopback'],
    ['http://api.localhost/', 'loopback'],
    ['ftp://hooks.example/', 'scheme'],
    ['file:///etc/passwd', 'scheme'],
    ['not a url', 'scheme'],
  ])('refuses %s in production mode (%s)', (url, reason) => {
    expect(guard().checkUrl(url)?.reason).toBe(reason);
  });

  it('allows loopback in development mode, never link-local', () => {
    const dev = guard({ mode: 'development' });
    expect(dev.checkUrl('http://127.0.0.1:8080/dev/webhooks/inbox')).toBeNull();
    expect(dev.checkUrl('http://localhost/')).toBeNull();
    expect(dev.checkUrl('http://2852039166/')?.reason).toBe('link_local');
  });

  it('passes names it cannot judge without DNS, and private and public addresses', () => {
    for (const url of ['https://hooks.example/in', 'http://10.0.0.9:8080/', 'https://[2001:db8::1]/', 'http://metadata.test/']) {
      expect(guard().checkUrl(url)).toBeNull();
    }
  });

  it('applies host rules', () => {
    const g = guard({ deny: ['*.corp.test', '10.0.0.0/8'], allow: ['localhost'] });
    expect(g.checkUrl('https://x.corp.test/')?.reason).toBe('denied');
    expect(g.checkUrl('http://10.1.1.1/')?.reason).toBe('denied');
    expect(g.checkUrl('http://localhost/')).toBeNull();
  });
});

describe('the guarded undici transport', () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  it('refuses before the connector is called: no socket is ever opened for a refused address', async () => {
    const connector = loopbackOnlyConnector();
    const resolver = table({ 'metadata.test': ['169.254.169.254'], 'ten.test': ['10.0.0.1'] });
    const transport = undiciTransport(
      { connectTimeoutMs: 1000, responseTimeoutMs: 1000 },
      { guard: guard({ resolver, deny: ['10.0.0.0/8'] }), connector },
    );
    closers.push(() => transport.close!());
    const send = (url: string) => transport.send({ url, headers: {}, body: '{}', signal: new AbortController().signal });
    for (const url of [
      'http://169.254.169.254/latest/meta-data/',
      'http://2852039166/',
      'https://[::ffff:169.254.169.254]/',
      'http://[fe80::1]:8080/',
      'http://0.0.0.0:8080/',
      'http://127.0.0.1:1/',
      'http://[::1]:1/',
      'http://metadata.test/',
      'https://ten.test/',
    ]) {
      expect(isTargetRefusal(await send(url).catch((error: unknown) => error)), url).toBe(true);
    }
    expect(connector.calls).toEqual([]);
  });

  it('connects to the address it checked, keeping the name for Host (and TLS)', async () => {
    const receiver = await startReceiver(() => 204);
    closers.push(receiver.close);
    const port = new URL(receiver.url).port;
    const connector = loopbackOnlyConnector();
    const resolver = table({ 'hooks.test': ['127.0.0.1'] });
    const transport = undiciTransport(
      { connectTimeoutMs: 1000, responseTimeoutMs: 2000 },
      { guard: guard({ mode: 'development', resolver }), connector },
    );
    closers.push(() => transport.close!());
    const { status } = await transport.send({
      url: `http://hooks.test:${port}/hook`,
      headers: {},
      body: '{}',
      signal: new AbortController().signal,
    });
    expect(status).toBe(204);
    expect(resolver.asked).toEqual(['hooks.test']);
    expect(connector.calls).toEqual([expect.objectContaining({ hostname: '127.0.0.1', host: `hooks.test:${port}` })]);
    expect(receiver.received[0].headers.host).toBe(`hooks.test:${port}`);
  });

  it('verifies TLS against the name in the URL while connecting to the pinned address', async () => {
    // A self-signed certificate for hooks.test only (test/tls, valid for a century), trusted by this test.
    const tls = (file: string) => readFileSync(join(import.meta.dirname, 'tls', file));
    const cert = tls('hooks.test.cert.pem');
    const server = createTlsServer({ key: tls('hooks.test.key.pem'), cert }, (req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(204).end());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => server.close(resolve)));
    const { port } = server.address() as AddressInfo;
    const resolver = table({ 'hooks.test': ['127.0.0.1'], 'other.test': ['127.0.0.1'] });
    const connector = loopbackOnlyConnector({ ca: cert });
    const transport = undiciTransport(
      { connectTimeoutMs: 1000, responseTimeoutMs: 2000 },
      { guard: guard({ mode: 'development', resolver }), connector },
    );
    closers.push(() => transport.close!());
    const send = (host: string) =>
      transport.send({ url: `https://${host}:${port}/hook`, headers: {}, body: '{}', signal: new AbortController().signal });
    await expect(send('hooks.test')).resolves.toMatchObject({ status: 204 });
    await expect(send('other.test')).rejects.toMatchObject({ code: 'ERR_TLS_CERT_ALTNAME_INVALID' });
    expect(connector.calls.map((call) => call.hostname)).toEqual(['127.0.0.1', '127.0.0.1']);
  });

  it('checks each new connection: a name rebound to a refused address after a good delivery is refused', async () => {
    // The receiver closes every connection, so the second delivery needs a new one.
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(204, { connection: 'close' }).end());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => server.close(resolve)));
    const { port } = server.address() as AddressInfo;
    const answers = ['127.0.0.1', '169.254.169.254'];
    const connector = loopbackOnlyConnector();
    const logger = recordingLogger();
    const metrics = recordingMetrics();
    const resolver: Resolver = async () => [{ address: answers.shift() ?? '169.254.169.254', family: 4 }];
    const dispatcher = new WebhookDispatcher({
      logger,
      metrics,
      transport: undiciTransport({ connectTimeoutMs: 1000, responseTimeoutMs: 2000 }, { guard: guard({ mode: 'development', resolver }), connector }),
    });
    closers.push(() => dispatcher.close(0));
    const delivery = { url: `http://rebind.test:${port}/hook`, headers: {}, body: '{}', eventType: 'LOGIN', userName: 'alice' };
    dispatcher.enqueue(delivery);
    await dispatcher.idle();
    dispatcher.enqueue(delivery);
    await dispatcher.idle();
    expect(metrics.outcomes).toEqual(['success', 'refused']);
    expect(connector.calls.map((call) => call.hostname)).toEqual(['127.0.0.1']);
    expect(logger.warnings()).toEqual([
      'webhook delivery refused, not retried (rebind.test: 169.254.169.254 is a link-local address (cloud metadata lives there)): event LOGIN for user alice',
    ]);
  });
});

describe('the dispatcher with a refused target', () => {
  it('does not retry, counts it as refused, and logs the reason with the origin only', async () => {
    const logger = recordingLogger();
    const metrics = recordingMetrics();
    const connector = loopbackOnlyConnector();
    const dispatcher = new WebhookDispatcher({
      logger,
      metrics,
      backoffMs: [0],
      transport: undiciTransport({ connectTimeoutMs: 1000, responseTimeoutMs: 1000 }, { guard: guard(), connector }),
    });
    dispatcher.enqueue({
      id: 'msg_1',
      url: 'http://169.254.169.254/latest/meta-data/iam?token=t',
      headers: {},
      body: '{}',
      eventType: 'REGISTER',
      userName: 'bob',
    });
    await dispatcher.idle();
    await dispatcher.close(0);
    expect(metrics.attempts).toBe(1);
    expect(metrics.outcomes).toEqual(['refused']);
    expect(metrics.seconds).toEqual([]);
    expect(connector.calls).toEqual([]);
    const refused = logger.lines.filter((line) => line.level === 'warn');
    expect(refused).toHaveLength(1);
    expect(refused[0].message).toBe(
      'webhook delivery refused, not retried (169.254.169.254 is a link-local address (cloud metadata lives there)): event REGISTER for user bob',
    );
    expect(refused[0].fields).toMatchObject({ deliveryId: 'msg_1', target: 'http://169.254.169.254', reason: 'link_local' });
  });
});
