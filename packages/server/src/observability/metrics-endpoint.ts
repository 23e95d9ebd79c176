import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MetricsRegistry } from './metrics.js';

/**
 * Who may read /metrics and where (the `metricsPort`, `metricsHost` and `metricsToken` options): on the main port
 * unless a port of its own is given, to anyone unless a token is.
 */
export interface MetricsAccess {
  /** Served on the main port too (false once it has a port of its own). */
  onMainPort: boolean;
  /** Whether a request's Authorization header may read the metrics. */
  authorized(authorization: string | undefined): boolean;
}

/** A scraper without the token: Prometheus' own answer shape is plain text. */
export const METRICS_UNAUTHORIZED = 'A bearer token is required for /metrics (metricsToken)\n';

/** The answer to a request for /metrics, wherever it is served. */
export async function metricsAnswer(metrics: MetricsRegistry, access: MetricsAccess, authorization: string | undefined): Promise<{ status: number; contentType: string; body: string }> {
  if (!access.authorized(authorization)) return { status: 401, contentType: 'text/plain; charset=utf-8', body: METRICS_UNAUTHORIZED };
  return { status: 200, ...(await metrics.render()) };
}

/**
 * /metrics on a port of its own (nothing else is there): a scraper reaches it on a private interface while the
 * public port answers 404. Returns its URL and how to close it.
 */
export async function listenForMetrics(metrics: MetricsRegistry, access: MetricsAccess, host: string, port: number): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((request: IncomingMessage, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (request.method !== 'GET' || path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found\n');
      return;
    }
    metricsAnswer(metrics, access, request.headers.authorization).then(
      ({ status, contentType, body }) => {
        const headers: Record<string, string> = { 'content-type': contentType };
        if (status === 401) headers['www-authenticate'] = 'Bearer';
        response.writeHead(status, headers).end(body);
      },
      () => response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('Metrics unavailable\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const { address, port: bound } = server.address() as AddressInfo;
  const shown = address.includes(':') ? `[${address}]` : address;
  return {
    url: `http://${shown}:${bound}`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
