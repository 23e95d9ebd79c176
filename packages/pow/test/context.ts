import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger, ProviderContext, RealmInfo, RealmResource, RequestInfo } from '@realmgate/spi';
import type { Page } from 'playwright-core';
import { MemoryStore, RecordingMetrics } from './memory-store.js';

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
  fields?: Record<string, unknown>;
}

/** A ProviderContext as the host gives it, with a memory store and recording logger and metrics. */
export function providerContext(
  options: { env?: Record<string, string>; config?: Record<string, unknown>; store?: MemoryStore } = {},
) {
  const logs: LogLine[] = [];
  const log =
    (level: LogLine['level']) =>
    (message: string, fields?: Record<string, unknown>): void => {
      logs.push({ level, message, fields });
    };
  const logger: Logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
  const metrics = new RecordingMetrics();
  const store = options.store ?? new MemoryStore();
  const unused = () => Promise.reject(new Error('not used by ext-pow'));
  const context: ProviderContext = {
    logger,
    store,
    metrics,
    config: options.config ?? {},
    env: options.env ?? {},
    realms: { get: unused },
    users: { get: unused },
    clients: { getByClientId: unused, list: unused },
    tokens: { verifyAccessToken: unused },
  };
  return { context, logs, metrics, store };
}

export const realm: RealmInfo = {
  id: 'f1b1c1d1-0000-4000-8000-000000000001',
  name: 'demo',
  displayName: 'Demo',
  enabled: true,
};

export function requestFrom(ipAddress: string): RequestInfo {
  return { ipAddress, remoteAddress: ipAddress, forwardedFor: null, realIp: null, userAgent: 'test' };
}

/** Serves the asset route of `resource` over node:http, as the host mounts it; false for any other path. */
export async function serveAsset(resource: RealmResource, url: URL, request: IncomingMessage, response: ServerResponse): Promise<boolean> {
  const asset = /^\/realms\/demo\/ext-pow\/assets\/([^/]+)$/.exec(url.pathname);
  if (!asset) return false;
  const result = await resource.routes[0].handler({
    realm,
    method: 'GET',
    params: { file: decodeURIComponent(asset[1]) },
    query: Object.fromEntries(url.searchParams),
    headers: request.headers as Record<string, string>,
    body: undefined,
    request: requestFrom('127.0.0.1'),
  });
  response.writeHead(result.status, result.headers);
  response.end(result.body as Buffer | undefined);
  return true;
}

/**
 * Hashes exactly `nonces` in the served solver (pow-worker.js's `nonces` message) on `page`, a page of the
 * test or bench host, in a new worker: the hashes in hex, each one's time in the worker, and the WebAssembly
 * build it ran. `driver: 'package'` hashes with the argon2id package's own argon2id() instead of the solver's
 * block loop (same WebAssembly, same memory).
 */
export function hashInSolver(
  page: Page,
  version: string,
  challenge: { alg: 'argon2id'; id: string; m: number; t: number },
  nonces: string[],
  driver: 'solver' | 'package' = 'solver',
): Promise<{ hashes: string[]; ms: number[]; wasm: string }> {
  return page.evaluate(
    ({ url, challenge, nonces, driver }) =>
      new Promise<{ hashes: string[]; ms: number[]; wasm: string }>((resolve, reject) => {
        const worker = new Worker(url);
        worker.onmessage = (event) => {
          worker.terminate();
          if (event.data.error) reject(new Error(event.data.error));
          else resolve(event.data);
        };
        worker.onerror = (event) => reject(new Error(event.message));
        worker.postMessage({ challenge, nonces, driver });
      }),
    { url: `/realms/demo/ext-pow/assets/pow-worker.js?v=${version}#argon2id`, challenge, nonces, driver },
  );
}
