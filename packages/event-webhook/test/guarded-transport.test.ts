/**
 * The webhook's undici transport behind the host's target guard. No test here lets a connection leave for anything
 * but 127.0.0.1: names are resolved by an injected resolver, and the connector behind the guard is a spy that fails
 * the test for any other address before a socket exists (this machine may only talk to loopback).
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { buildConnector } from 'undici';
import type { OutboundResolver } from '@realmgate/spi';
import { afterEach, describe, expect, it } from 'vitest';
import { isTargetRefusal } from '../../server/src/http/target-guard.js';
import { refusalOf as refusal, tableResolver as table, testGuard as guard } from '../../server/test/support/outbound.js';
import { WebhookDispatcher, undiciTransport } from '../src/delivery.js';
import type { Connector } from '../src/delivery.js';
import { recordingLogger, recordingMetrics } from './helpers.js';
import { startReceiver } from './receiver.js';

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
    const resolver: OutboundResolver = async () => [{ address: answers.shift() ?? '169.254.169.254', family: 4 }];
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
