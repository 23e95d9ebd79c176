import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  query: URLSearchParams;
  method: string;
  body: string;
  token: string | null;
  /** Answered, or the sender hung up, by now. */
  closed: boolean;
  answer(status: number): void;
}

/** A loopback receiver of logout tokens: answers 200 at once unless `hold` is set, then waits for answer(). */
export class Receiver {
  readonly received: Received[] = [];
  hold = false;
  status = 200;
  private server: Server | null = null;
  port = 0;

  async start(port = 0): Promise<void> {
    this.server = createServer((request: IncomingMessage, response: ServerResponse) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const entry: Received = {
          path: (request.url ?? '').split('?')[0],
          query: new URLSearchParams((request.url ?? '').split('?')[1] ?? ''),
          method: request.method ?? '',
          body,
          token: new URLSearchParams(body).get('logout_token'),
          closed: false,
          answer: (status) => {
            entry.closed = true;
            response.writeHead(status).end();
          },
        };
        response.on('close', () => (entry.closed = true));
        this.received.push(entry);
        if (!this.hold) entry.answer(this.status);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }
}
