import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import pg from 'pg';
import pino from 'pino';
import { createServer, loadConfig, type RealmgateServer } from '../../src/index.js';
import { testRsaKeyPairs } from './rsa-keys.js';

export const ADMIN_USERNAME = 'admin';
export const ADMIN_PASSWORD = 'admin-test-password';
export const REPO_ROOT = resolve(import.meta.dirname, '../../../..');
export const pgUrl = process.env.REALMGATE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const redisUrl = process.env.REALMGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export type DatabaseKind = 'sqlite' | 'postgres';

export interface TestServer {
  url: string;
  server: RealmgateServer;
  /** Everything the server logged, as parsed JSON lines. */
  logs: Record<string, unknown>[];
  close(): Promise<void>;
}

export interface TestServerOptions {
  database?: DatabaseKind;
  /** Defaults to an empty directory: no extension packages unless a test asks for them. */
  providersDir?: string;
  env?: Record<string, string>;
  config?: Record<string, string>;
  /**
   * The Argon2id cost of the passwords the server hashes: 'test' (passwordHashingTestCost, the default outside
   * production mode, which refuses it) or 'production' (Keycloak's), for the tests that are about hashing.
   */
  passwordHashing?: 'test' | 'production';
  /** The in-memory shared store's clock (monotonic ms), for tests that move rate windows and TTLs on. */
  sharedStoreClock?: () => number;
}

/** The environment that gives a test server the test-only password hashing cost, unless asked for production's. */
export function passwordHashingEnv(config: Record<string, string> = {}, passwordHashing?: 'test' | 'production'): Record<string, string> {
  const cost = passwordHashing ?? (config.REALMGATE_MODE === 'production' ? 'production' : 'test');
  return { REALMGATE_PASSWORD_HASHING_TEST_COST: String(cost === 'test') };
}

/**
 * Counts what a test run sets up, for measuring the suite (issue 36): with REALMGATE_TEST_COUNTS=<file> set, each
 * server start and each PostgreSQL database created appends one line (`server sqlite`, `server postgres`, `pg-database`).
 */
export function countSetup(what: string): void {
  const file = process.env.REALMGATE_TEST_COUNTS;
  if (file) appendFileSync(file, `${what}\n`);
}

/** A throw-away PostgreSQL database, so each server starts from an empty schema. */
export async function createPgDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  countSetup('pg-database');
  const name = `realmgate_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(pgUrl);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    async drop() {
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** A server built on its own database but not listening: for tests that call its services directly (no HTTP). */
export async function createTestServer(options: TestServerOptions = {}): Promise<{ server: RealmgateServer; logs: Record<string, unknown>[]; dispose(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'realmgate-test-'));
  countSetup(`server ${options.config?.REALMGATE_DB_URL?.startsWith('postgres') || options.database === 'postgres' ? 'postgres' : 'sqlite'}`);
  const pgDb = options.database === 'postgres' ? await createPgDatabase() : null;
  const providersDir = options.providersDir ?? join(dir, 'providers');
  const config = loadConfig({
    env: {
      REALMGATE_HTTP_PORT: '0',
      REALMGATE_HTTP_HOST: '127.0.0.1',
      REALMGATE_DB_URL: pgDb ? pgDb.url : `sqlite:${join(dir, 'realmgate.db')}`,
      REALMGATE_BOOTSTRAP_ADMIN_USERNAME: ADMIN_USERNAME,
      REALMGATE_BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD,
      REALMGATE_PROVIDERS_DIR: providersDir,
      REALMGATE_LOG_LEVEL: 'debug',
      ...passwordHashingEnv(options.config, options.passwordHashing),
      ...options.config,
    },
  });
  const logs: Record<string, unknown>[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
  const dispose = async () => {
    await pgDb?.drop();
    rmSync(dir, { recursive: true, force: true });
  };
  let server: RealmgateServer;
  try {
    server = await createServer(config, { logger, env: options.env ?? {}, sharedStoreClock: options.sharedStoreClock, rsaKeyPairs: testRsaKeyPairs });
  } catch (error) {
    await dispose();
    throw error;
  }
  return { server, logs, dispose };
}

/** Starts a real server on a random port with its own database. */
export async function startServer(options: TestServerOptions = {}): Promise<TestServer> {
  const { server, logs, dispose } = await createTestServer(options);
  const url = await server.listen();
  const inFlight = requestsInFlight(server);
  return {
    url,
    server,
    logs,
    async close() {
      const started = Date.now();
      const open = inFlight();
      await server.close();
      // Not a test: a close held until the grace period cut a connection is a leak somewhere (a body never read, a
      // client that never hung up). Say which requests were still running, so the next such wait names its cause.
      if (Date.now() - started >= CLOSE_REPORTED_MS) {
        process.stderr.write(`test server ${url}: close() took ${Date.now() - started} ms; requests in flight when it began: ${open.length ? open.join(', ') : 'none'}\n`);
      }
      await dispose();
    },
  };
}

/** A close that takes this long (the default grace period is 10 s) is reported on stderr with what was in flight. */
const CLOSE_REPORTED_MS = 5000;

/** The requests the server has not finished answering (`METHOD url`), read when asked. */
function requestsInFlight(server: RealmgateServer): () => string[] {
  const open = new Set<{ line: string }>();
  server.app.server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const entry = { line: `${request.method} ${request.url}` };
    open.add(entry);
    response.once('close', () => open.delete(entry));
  });
  return () => [...open].map((entry) => entry.line);
}

/** Both: for behaviour that can differ by database (what the repositories store and how, constraints, locking). */
export const databases: DatabaseKind[] = ['sqlite', 'postgres'];
/**
 * HTTP behaviour that does not depend on the database (permissions, protocol, validation before any write): SQLite
 * only (issue 36). PostgreSQL's share is the storage suites and the files run on `databases`.
 */
export const httpDatabases: DatabaseKind[] = ['sqlite'];

/**
 * Two servers as two nodes of one deployment: one PostgreSQL database and one Redis (the shared store), the per-address
 * login limit out of the way; `b` closes before `a`, whose database it uses.
 */
export async function startServerPair(config: Record<string, string> = {}): Promise<{ a: TestServer; b: TestServer; close(): Promise<void> }> {
  const shared = { REALMGATE_REDIS_URL: redisUrl, REALMGATE_BRUTE_FORCE_IP_MAX_FAILURES: '100000', ...config };
  const a = await startServer({ database: 'postgres', config: shared });
  const b = await startServer({ config: { ...shared, REALMGATE_DB_URL: a.server.context.config.dbUrl } }).catch(async (error) => {
    await a.close();
    throw error;
  });
  return {
    a,
    b,
    async close() {
      await b.close();
      await a.close();
    },
  };
}

/** A password-grant token of the master administrator. */
export async function adminToken(url: string): Promise<string> {
  const tokens = await tokenRequest(url, 'master', { grant_type: 'password', client_id: 'admin-cli', username: ADMIN_USERNAME, password: ADMIN_PASSWORD });
  return tokens.body.access_token as string;
}

export async function tokenRequest(url: string, realm: string, form: Record<string, string>, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}/realms/${realm}/protocol/openid-connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** JSON request helper for raw HTTP tests (status and parsed body). */
/**
 * The text of an admin error body in whichever of Keycloak's shapes the case has ({errorMessage}, {error,
 * error_description}, {error}): what a test reads to see the field named, as `field` is sent only with `params`.
 */
export const errorText = (body: unknown): string => {
  const b = (body ?? {}) as { errorMessage?: string; error_description?: string; error?: string };
  return b.errorMessage ?? b.error_description ?? b.error ?? '';
};

export async function api(url: string, method: string, path: string, token: string | null, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let json: unknown = text;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON
  }
  return { status: response.status, body: json as any, headers: response.headers };
}

/** Waits until `check` returns a truthy value (events are delivered on a later tick). */
export async function eventually<T>(check: () => T | Promise<T>, timeoutMs = 5000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw last instanceof Error ? last : new Error('condition not met in time');
}
