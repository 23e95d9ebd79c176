import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type {
  Counter,
  Gauge,
  Histogram,
  Logger,
  ProviderContext,
  RealmInfo,
  RequestInfo,
  SharedStore,
  TokenVerification,
} from '@realmgate/spi';

export async function tempDir(): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), 'disposable-email-'));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

/** A data file in mailchecker's format, with these domains. */
export async function writeDataFile(path: string, domains: string[]): Promise<string> {
  await writeFile(path, `'use strict';\nvar blacklist = new Set(${JSON.stringify(domains)});\nmodule.exports = {};\n`);
  return path;
}

export interface TestServer {
  url: string;
  hits: number;
  close(): Promise<void>;
}

export async function startServer(
  handler: (request: IncomingMessage, response: ServerResponse) => void | Promise<void>,
): Promise<TestServer> {
  const server = createServer((request, response) => {
    state.hits++;
    void handler(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const state: TestServer = {
    url: `http://127.0.0.1:${port}`,
    hits: 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return state;
}

export interface LogEntry {
  level: keyof Logger;
  message: string;
  fields?: Record<string, unknown>;
}

/** Publish/subscribe shared by several fake "server processes", delivering to every subscriber as Redis does. */
export class FakeBus {
  readonly published: { channel: string; message: string }[] = [];
  readonly #subscribers = new Map<string, Set<(message: string) => void>>();
  failPublish = false;

  store(): SharedStore {
    const unused = (): never => {
      throw new Error('not used by this provider');
    };
    return {
      get: unused,
      set: unused,
      setIfAbsent: unused,
      increment: unused,
      delete: unused,
      recordHit: unused,
      countHits: unused,
      publish: async (channel, message) => {
        if (this.failPublish) throw new Error('redis down');
        this.published.push({ channel, message });
        for (const subscriber of this.#subscribers.get(channel) ?? []) setImmediate(() => subscriber(message));
      },
      subscribe: async (channel, onMessage) => {
        const set = this.#subscribers.get(channel) ?? new Set();
        this.#subscribers.set(channel, set);
        set.add(onMessage);
        return async () => {
          set.delete(onMessage);
        };
      },
    };
  }

  subscriberCount(channel: string): number {
    return this.#subscribers.get(channel)?.size ?? 0;
  }
}

export interface FakeContext {
  context: ProviderContext;
  logs: LogEntry[];
  metrics: Map<string, { kind: string; values: { labels?: Record<string, string>; value: number }[] }>;
  verifyCalls: { realm: string; token: string }[];
}

export function fakeContext(
  options: {
    config?: Record<string, unknown>;
    env?: Record<string, string | undefined>;
    bus?: FakeBus;
    verify?: (token: string) => TokenVerification;
  } = {},
): FakeContext {
  const logs: LogEntry[] = [];
  const log =
    (level: keyof Logger) =>
    (message: string, fields?: Record<string, unknown>): void => {
      logs.push({ level, message, fields });
    };
  const metrics: FakeContext['metrics'] = new Map();
  const metric = (kind: string, name: string) => {
    const entry = { kind, values: [] as { labels?: Record<string, string>; value: number }[] };
    metrics.set(name, entry);
    return (labels: Record<string, string> | undefined, value: number): void => {
      entry.values.push({ labels, value });
    };
  };
  const verifyCalls: FakeContext['verifyCalls'] = [];
  const context: ProviderContext = {
    logger: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') },
    store: (options.bus ?? new FakeBus()).store(),
    metrics: {
      counter(name): Counter {
        const record = metric('counter', name);
        return { inc: (labels, value = 1) => record(labels, value) };
      },
      gauge(name): Gauge {
        const record = metric('gauge', name);
        return { set: record, inc: (labels, value = 1) => record(labels, value), dec: (labels, value = 1) => record(labels, -value) };
      },
      histogram(name): Histogram {
        const record = metric('histogram', name);
        return { observe: record };
      },
    },
    config: options.config ?? {},
    env: options.env ?? {},
    realms: { get: async () => null },
    users: { get: async () => null },
    clients: { getByClientId: async () => null, list: async () => [] },
    tokens: {
      verifyAccessToken: async (realm, token) => {
        verifyCalls.push({ realm, token });
        return options.verify ? options.verify(token) : { valid: false, reason: 'no verifier' };
      },
    },
  };
  return { context, logs, metrics, verifyCalls };
}

export const realm: RealmInfo = { id: 'realm-id', name: 'demo', displayName: 'Demo', enabled: true };

export const requestInfo: RequestInfo = {
  ipAddress: '127.0.0.1',
  remoteAddress: '127.0.0.1',
  forwardedFor: null,
  realIp: null,
  userAgent: 'vitest',
};

/** Waits until `condition` holds, polling; fails after `timeoutMs`. */
export async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
