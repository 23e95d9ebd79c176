import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * The fault suite's own PostgreSQL and Redis: started here, in a temporary directory, on ports of their own, so
 * that restarting, killing, hanging or locking them never touches the PostgreSQL and Redis that the main suite (and
 * anyone else on the machine) uses.
 */

/** The newest PostgreSQL server binaries installed (Debian's layout), or null. */
export function postgresBin(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(root, versions[0], 'bin') : null;
}

export function redisServerBin(): string | null {
  for (const dir of (process.env.PATH ?? '').split(':')) if (existsSync(join(dir, 'redis-server'))) return join(dir, 'redis-server');
  return null;
}

/** What is missing for the suite, or null when it can run. */
export function missingBinaries(): string | null {
  if (!postgresBin()) return 'PostgreSQL server binaries (/usr/lib/postgresql/<version>/bin/initdb, pg_ctl)';
  if (!redisServerBin()) return 'redis-server';
  return null;
}

/** initdb and postgres refuse to run as root: as root, they run as the `postgres` system user. */
function asDatabaseUser(bin: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
}

async function waitForPort(port: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const connected = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (connected) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export class OwnPostgres {
  private constructor(
    private readonly dir: string,
    readonly port: number,
    private readonly bin: string,
  ) {}

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  static async start(port: number): Promise<OwnPostgres> {
    const bin = postgresBin()!;
    const dir = mkdtempSync(join(tmpdir(), 'realmgate-faults-pg-'));
    mkdirSync(join(dir, 'socket'));
    if (process.getuid?.() === 0) execFileSync('chown', ['-R', 'postgres:postgres', dir]);
    const pg = new OwnPostgres(dir, port, bin);
    await pg.run('initdb', ['-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
    await pg.pgCtl('start');
    return pg;
  }

  /**
   * Never synchronously: the servers under test run in this process, and an event loop blocked while pg_ctl waits
   * for the database fires every timer late at once (a Redis command "timed out" though its answer had come).
   */
  private async run(tool: string, args: string[]): Promise<void> {
    const [command, argv] = asDatabaseUser(join(this.bin, tool), args);
    await promisify(execFile)(command, argv, { cwd: this.dir });
  }

  private pgCtl(action: 'start' | 'stop', mode = 'fast'): Promise<void> {
    const options = `-p ${this.port} -k ${join(this.dir, 'socket')} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=100`;
    const args = ['-D', join(this.dir, 'data'), '-l', join(this.dir, 'postgres.log'), '-w', '-t', '30'];
    return this.run('pg_ctl', action === 'stop' ? [...args, '-m', mode, 'stop'] : [...args, '-m', mode, '-o', options, action]);
  }

  /** Stops at once (immediate: every connection is cut, no shutdown checkpoint). */
  stop(): Promise<void> {
    return this.pgCtl('stop', 'immediate');
  }

  /** Starts; resolves when it accepts connections. */
  start(): Promise<void> {
    return this.pgCtl('start');
  }

  async close(): Promise<void> {
    try {
      await this.stop();
    } catch {
      // Already stopped.
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export class OwnRedis {
  private process: ChildProcess | null = null;
  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(port: number): Promise<OwnRedis> {
    const redis = new OwnRedis(port, mkdtempSync(join(tmpdir(), 'realmgate-faults-redis-')));
    await redis.launch();
    return redis;
  }

  private async launch(): Promise<void> {
    const child = spawn(redisServerBin()!, ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir], { stdio: 'ignore' });
    this.process = child;
    await waitForPort(this.port);
  }

  /** SIGKILL: every connection drops, everything held is gone (nothing is saved). */
  async kill(): Promise<void> {
    const child = this.process!;
    this.process = null;
    child.kill('SIGKILL');
    if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
  }

  async start(): Promise<void> {
    await this.launch();
  }

  /** SIGSTOP: connections stay open, nothing is answered. */
  hang(): void {
    this.process!.kill('SIGSTOP');
  }

  resume(): void {
    this.process!.kill('SIGCONT');
  }

  async close(): Promise<void> {
    if (this.process) {
      this.resume();
      await this.kill();
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

