import { connect, createServer, type Server, type Socket } from 'node:net';
import { once } from 'node:events';

/**
 * A TCP proxy on 127.0.0.1 in front of a dependency (the shared PostgreSQL or Redis), so a test can break the
 * connections of its own server without touching the dependency everyone else uses:
 * - `refuse()`: every connection is cut, new ones are closed at once (a dependency killed or restarted);
 * - `cut()`: every connection is cut, new ones go through (pg_terminate_backend, a network blip);
 * - `hang()`: connections stay open but nothing goes through, either way (a dependency that stopped answering);
 * - `restore()`: traffic flows again (held bytes included).
 */
export class FaultProxy {
  private mode: 'pass' | 'refuse' | 'hang' = 'pass';
  private readonly pairs = new Set<{ client: Socket; upstream: Socket | null; held: Buffer[] }>();
  private readonly waiting: Array<() => void> = [];

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(targetPort: number, targetHost = '127.0.0.1'): Promise<FaultProxy> {
    let proxy: FaultProxy | undefined;
    const server = createServer({ pauseOnConnect: true }, (client) => proxy!.accept(client, targetHost, targetPort));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    proxy = new FaultProxy(server, (server.address() as { port: number }).port);
    return proxy;
  }

  /** `url` with its host and port replaced by the proxy's. */
  url(url: string): string {
    const parsed = new URL(url);
    parsed.hostname = '127.0.0.1';
    parsed.port = String(this.port);
    return parsed.href;
  }

  get connections(): number {
    return this.pairs.size;
  }

  private accept(client: Socket, host: string, port: number): void {
    if (this.mode === 'refuse') {
      client.destroy();
      return;
    }
    const pair = { client, upstream: null as Socket | null, held: [] as Buffer[] };
    this.pairs.add(pair);
    const end = () => {
      this.pairs.delete(pair);
      client.destroy();
      pair.upstream?.destroy();
    };
    client.on('error', end);
    client.on('close', end);
    const open = () => {
      if (client.destroyed) return;
      const upstream = connect(port, host);
      pair.upstream = upstream;
      upstream.on('error', end);
      upstream.on('close', end);
      upstream.on('data', (data: Buffer) => {
        if (this.mode === 'hang') {
          upstream.pause();
          pair.held.push(data);
          this.waiting.push(() => {
            for (const chunk of pair.held.splice(0)) client.write(chunk);
            upstream.resume();
          });
          return;
        }
        client.write(data);
      });
      client.on('data', (data: Buffer) => {
        if (this.mode === 'hang') {
          client.pause();
          this.waiting.push(() => {
            upstream.write(data);
            client.resume();
          });
          return;
        }
        upstream.write(data);
      });
      client.resume();
    };
    if (this.mode === 'hang') this.waiting.push(open);
    else open();
  }

  /** Cuts every connection; new ones go through. */
  async cut(): Promise<void> {
    const closed = [...this.pairs].map(({ client }) => (client.destroyed ? Promise.resolve() : once(client, 'close')));
    for (const { client, upstream } of this.pairs) {
      client.destroy();
      upstream?.destroy();
    }
    await Promise.all(closed);
  }

  /** Cuts every connection and closes new ones at once, until restore(). */
  async refuse(): Promise<void> {
    this.mode = 'refuse';
    await this.cut();
  }

  /** Holds every byte, either way, on every connection old and new, until restore(). */
  hang(): void {
    this.mode = 'hang';
  }

  restore(): void {
    this.mode = 'pass';
    for (const resume of this.waiting.splice(0)) resume();
  }

  async close(): Promise<void> {
    this.restore();
    await this.cut();
    this.server.close();
    await once(this.server, 'close');
  }
}
