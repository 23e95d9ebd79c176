import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { ConfigError, loadConfig } from '../src/config/index.js';
import { createLogger } from '../src/observability/index.js';
import { createServer } from '../src/index.js';
import { REPO_ROOT, api, eventually, startServer, tokenRequest, type TestServer } from './support/server.js';

const fixtureProviders = join(import.meta.dirname, 'fixtures', 'providers');

const scratch = mkdtempSync(join(tmpdir(), 'realmgate-ops-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let fileCount = 0;
function file(name: string, content: unknown): string {
  const dir = join(scratch, `f${fileCount++}`);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  return path;
}

/** A Keycloak realm export with a role, a client and users, plus fields this server does not know. */
const acmeExport = {
  realm: 'acme',
  enabled: true,
  displayName: 'Acme',
  bruteForceProtected: true,
  someFutureSetting: { nested: true },
  roles: { realm: [{ name: 'buyer', description: 'can buy' }] },
  clients: [{ clientId: 'shop', publicClient: true, directAccessGrantsEnabled: true, redirectUris: ['https://shop.example/*'] }],
  users: [
    { username: 'dora', email: 'dora@example.com', enabled: true, credentials: [{ type: 'password', value: 'Dora-pass-1' }], realmRoles: ['buyer'] },
    { username: 'eve', email: 'eve@example.com', enabled: true },
  ],
};

describe('health and metrics', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startServer();
  });
  afterAll(() => t?.close());

  it('answers /health/live and /health/ready with 200 JSON', async () => {
    for (const path of ['/health/live', '/health/ready']) {
      const response = await api(t.url, 'GET', path, null);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(response.body.status).toBe('UP');
    }
  });

  it('serves Prometheus text at /metrics with the HTTP request histogram', async () => {
    await api(t.url, 'GET', '/health/live', null);
    const response = await fetch(`${t.url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await response.text();
    expect(text).toContain('# TYPE realmgate_http_request_duration_seconds histogram');
    expect(text).toMatch(/realmgate_http_request_duration_seconds_count\{method="GET",route="\/health\/live",status="200"\} [1-9]/);
  });

  it('labels unmatched paths as one route, so a scanner cannot blow up the label set', async () => {
    await api(t.url, 'GET', '/no/such/path/4711', null);
    const text = await (await fetch(`${t.url}/metrics`)).text();
    // In a label, not anywhere: a byte count or a CPU time may hold the digits too.
    expect(text).not.toMatch(/\{[^}]*4711[^}]*\}/);
  });
});

describe('the production logger', () => {
  it('writes JSON lines and redacts credentials in whatever object it is given', async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const logger = createLogger({ mode: 'production', level: 'info', destination });
    logger.info(
      {
        password: 'secret-1',
        client_secret: 'secret-2',
        client: { secret: 'secret-3', attributes: { 'api.key': 'secret-4', 'api.url': 'https://hooks.example' } },
        user: { username: 'alice', credentials: [{ type: 'password', value: 'secret-5' }] },
        req: { headers: { authorization: 'Bearer secret-6', cookie: 'KC=secret-7' } },
      },
      'something happened',
    );
    await eventually(() => lines.length);
    const line = JSON.parse(lines[0]);
    expect(line).toMatchObject({ msg: 'something happened', level: 30, service: 'realmgate', user: { username: 'alice' } });
    expect(line.client.attributes['api.url']).toBe('https://hooks.example');
    expect(lines[0]).not.toMatch(/secret-\d/);
  });
});

describe('configuration', () => {
  it('takes defaults when nothing is given', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ mode: 'development', httpPort: 8080, httpHost: '0.0.0.0', providersDir: './providers', hostname: null, configFile: null, providers: {} });
  });

  it('applies flag > environment > file > default', () => {
    const path = file('realmgate.json', { httpPort: 7000, httpHost: '127.0.0.2', logLevel: 'warn', providers: { 'ext-pow': { difficulty: 3 } } });
    const env = { REALMGATE_HTTP_PORT: '7001', REALMGATE_HTTP_HOST: '127.0.0.3' };
    const config = loadConfig({ argv: ['--config', path, '--http-port=7002'], env });
    expect(config.httpPort).toBe(7002);
    expect(config.httpHost).toBe('127.0.0.3');
    expect(config.logLevel).toBe('warn');
    expect(config.mode).toBe('development');
    expect(config.providers).toEqual({ 'ext-pow': { difficulty: 3 } });
    expect(loadConfig({ argv: ['--config', path], env }).httpPort).toBe(7001);
    expect(loadConfig({ env: { REALMGATE_CONFIG_FILE: path } }).httpPort).toBe(7000);
  });

  it('reads --import-realm and list options', () => {
    const config = loadConfig({ argv: ['--import-realm', '/tmp/realms'], env: { REALMGATE_PROXY_TRUSTED_ADDRESSES: '10.0.0.1, 10.1.0.0/16' } });
    expect(config.importRealm).toBe('/tmp/realms');
    expect(config.proxyTrustedAddresses).toEqual(['10.0.0.1', '10.1.0.0/16']);
  });

  const failure = (sources: Parameters<typeof loadConfig>[0]): string => {
    try {
      loadConfig(sources);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as Error).message;
    }
    throw new Error('loadConfig accepted a bad configuration');
  };

  it('names the key, the source and the bad value', () => {
    const env = failure({ env: { REALMGATE_HTTP_PORT: 'abc' } });
    expect(env).toContain('httpPort');
    expect(env).toContain('REALMGATE_HTTP_PORT');
    expect(env).toContain('"abc"');
    const flag = failure({ argv: ['--http-port', '70000'] });
    expect(flag).toMatch(/httpPort.*--http-port.*70000/);
    const path = file('bad.json', { mode: 'staging' });
    const fromFile = failure({ argv: ['--config', path] });
    expect(fromFile).toContain('mode');
    expect(fromFile).toContain(path);
    expect(fromFile).toContain('"staging"');
    expect(fromFile).toContain('development, production');
  });

  it('does not echo a secret value it refuses', () => {
    const redis = failure({ env: { REALMGATE_REDIS_URL: 'not a url :pa55word' } });
    expect(redis).toContain('redisUrl');
    expect(redis).not.toContain('pa55word');
    // A database URL of an unsupported kind is refused here, before it can reach an error message verbatim.
    const db = failure({ env: { REALMGATE_DB_URL: 'mysql://root:hunter2@db.example/realmgate' } });
    expect(db).toMatch(/dbUrl.*REALMGATE_DB_URL.*sqlite:<path> or postgres:\/\//);
    expect(db).not.toContain('hunter2');
    expect(loadConfig({ env: { REALMGATE_DB_URL: 'postgresql://u:p@h:5432/d' } }).dbUrl).toBe('postgresql://u:p@h:5432/d');
  });

  it('refuses a provider section that is not an object, naming the provider', () => {
    expect(failure({ argv: ['--config', file('providers.json', { providers: { 'ext-pow': 5 } })] })).toContain('providers.ext-pow');
    expect(failure({ argv: ['--config', file('providers-list.json', { providers: ['ext-pow'] })] })).toContain('"providers"');
  });

  it('refuses unknown keys, unknown flags and unreadable files by name', () => {
    expect(failure({ argv: ['--config', file('typo.json', { httpPrt: 1 })] })).toContain('httpPrt');
    expect(failure({ argv: ['--http-prot', '1'] })).toContain('--http-prot');
    expect(failure({ argv: ['--config', join(scratch, 'missing.json')] })).toContain('missing.json');
    expect(failure({ argv: ['--config', file('broken.json', '{"httpPort": ')] })).toMatch(/broken\.json.*not valid JSON/);
    expect(failure({ argv: ['--http-port'] })).toContain('--http-port');
  });

  it('the test-only password hashing cost is off by default and refused in production mode, by loadConfig and createServer', async () => {
    expect(loadConfig({}).passwordHashingTestCost).toBe(false);
    expect(loadConfig({ env: { REALMGATE_PASSWORD_HASHING_TEST_COST: 'true' } }).passwordHashingTestCost).toBe(true);
    const production = { REALMGATE_MODE: 'production', REALMGATE_HOSTNAME: 'https://auth.example.test' };
    expect(loadConfig({ env: production }).passwordHashingTestCost).toBe(false);
    const refused = failure({ argv: ['--password-hashing-test-cost', 'true'], env: production });
    expect(refused).toMatch(/passwordHashingTestCost is for test suites only.*Production mode refuses it/);
    // A configuration built in code is checked by createServer before it opens anything.
    const config = { ...loadConfig({ env: production }), passwordHashingTestCost: true };
    await expect(createServer(config)).rejects.toThrow(/passwordHashingTestCost is for test suites only/);
  });
});

describe('realm import at start-up', () => {
  it('refuses an invalid realm file, naming the file and the JSON path of the error', async () => {
    const dir = join(scratch, 'invalid-import');
    mkdirSync(dir);
    const invalid = structuredClone(acmeExport);
    invalid.users[1].email = 'not-an-email';
    writeFileSync(join(dir, 'acme.json'), JSON.stringify(invalid));
    const strict = { REALMGATE_IMPORT_REALM: dir, REALMGATE_IMPORT_REALM_STRICT: 'true' };
    await expect(startServer({ config: strict })).rejects.toThrow(/acme\.json.*realm\.users\[1\]\.email/);
    // Not strict (the default): the server starts without that realm and says why, naming the file and the path.
    const t = await startServer({ config: { REALMGATE_IMPORT_REALM: dir } });
    try {
      const line = t.logs.find((l) => l.msg === 'realm import: file refused, the others are imported');
      expect(String(line?.file)).toMatch(/acme\.json$/);
      expect(String(line?.error)).toMatch(/realm\.users\[1\]\.email/);
      expect(line?.level).toBe(50);
      expect(await t.server.context.storage.realms.byName('acme')).toBeNull();
    } finally {
      await t.close();
    }
  });

  it('refuses a file that is not JSON, naming it', async () => {
    const dir = join(scratch, 'not-json');
    mkdirSync(dir);
    writeFileSync(join(dir, 'broken.json'), '{ "realm": ');
    await expect(startServer({ config: { REALMGATE_IMPORT_REALM: dir, REALMGATE_IMPORT_REALM_STRICT: 'true' } })).rejects.toThrow(/broken\.json.*not valid JSON/);
  });

  it('refuses a realm import directory that does not exist, naming it', async () => {
    await expect(startServer({ config: { REALMGATE_IMPORT_REALM: join(scratch, 'nowhere') } })).rejects.toThrow(/realm import directory .*nowhere/);
  });
});

// ---------------------------------------------------------------------------------------------------------
// The real CLI, as an operator starts it.

interface Cli {
  stdout: string;
  stderr: string;
  exited: Promise<number | null>;
  kill(signal: NodeJS.Signals): void;
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
}

function startCli(args: string[], env: Record<string, string>): Cli {
  const child = spawn(process.execPath, ['--import', 'tsx', 'packages/server/src/main.ts', ...args], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? scratch, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const cli: Cli = {
    stdout: '',
    stderr: '',
    exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))),
    kill: (signal) => child.kill(signal),
    async waitFor(pattern, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const match = cli.stdout.match(pattern);
        if (match) return match;
        if (child.exitCode !== null || Date.now() > deadline) {
          throw new Error(`no ${pattern} in output (exit ${child.exitCode}):\n${cli.stdout}\n${cli.stderr}`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
  child.stdout.on('data', (chunk: Buffer) => (cli.stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (cli.stderr += chunk.toString()));
  afterAll(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  return cli;
}

const baseEnv = (name: string) => ({
  REALMGATE_HTTP_PORT: '0',
  REALMGATE_HTTP_HOST: '127.0.0.1',
  REALMGATE_DB_URL: `sqlite:${join(scratch, name, 'realmgate.db')}`,
  REALMGATE_PROVIDERS_DIR: join(scratch, name, 'providers'),
});

describe('the CLI', () => {
  it('runs in production mode with JSON logs, imports realms, and on SIGTERM finishes the request in flight and exits 0', async () => {
    const realms = join(scratch, 'cli-realms');
    mkdirSync(realms);
    writeFileSync(join(realms, 'acme.json'), JSON.stringify(acmeExport));
    const cli = startCli(['--import-realm', realms, '--providers-dir', fixtureProviders], {
      ...baseEnv('prod'),
      REALMGATE_MODE: 'production',
      REALMGATE_HOSTNAME: 'https://auth.example.test',
      REALMGATE_BOOTSTRAP_ADMIN_PASSWORD: 'Prod-admin-pass-1',
    });
    const [, url] = await cli.waitFor(/"url":"(http:\/\/[^"]+)"/);
    const lines = cli.stdout.trim().split('\n');
    const logs = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(logs.find((l) => l.msg === 'Realmgate is running')).toMatchObject({ level: 30, mode: 'production', service: 'realmgate', time: expect.any(Number) });
    expect(logs.filter((l) => l.msg === 'realm import: parts of the file are not imported').map((l) => l.notImported)).toEqual([['realm.someFutureSetting']]);
    expect(logs.find((l) => l.msg === 'realm imported')).toMatchObject({ realm: 'acme' });
    expect(logs.find((l) => l.msg === 'provider package loaded')).toMatchObject({ package: '@realmgate-test/test-provider', version: '1.2.3' });
    expect(cli.stdout).not.toContain('Prod-admin-pass-1');

    expect((await api(url, 'GET', '/health/ready', null)).status).toBe(200);
    const token = await tokenRequest(url, 'acme', { grant_type: 'password', client_id: 'shop', username: 'dora', password: 'Dora-pass-1' });
    expect(token.status).toBe(200);
    const claims = JSON.parse(Buffer.from((token.body.access_token as string).split('.')[1], 'base64url').toString());
    expect(claims.realm_access.roles).toContain('buyer');

    const inFlight = fetch(`${url}/realms/acme/test-recorder/slow?ms=800`);
    await new Promise((r) => setTimeout(r, 200));
    cli.kill('SIGTERM');
    const slow = await inFlight;
    expect(slow.status).toBe(200);
    expect(await slow.json()).toEqual({ waited: 800 });
    expect(await cli.exited).toBe(0);
    const tail = cli.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(tail.map((l) => l.msg)).toEqual(expect.arrayContaining(['shutting down', 'stopped']));
    // It stopped when the request was done, not when a grace period ran out (for a provider or for the whole server).
    expect(tail.map((l) => l.msg)).not.toEqual(expect.arrayContaining([expect.stringMatching(/^(provider failed to close|shutdown took longer than the grace period)/)]));
    expect(cli.stderr).toBe('');
  });

  it('prints a generated admin password once in development mode, and it works', async () => {
    const cli = startCli([], { ...baseEnv('dev'), REALMGATE_MODE: 'development' });
    const [, password] = await cli.waitFor(/password: (\S+)\n/);
    const [, url] = await cli.waitFor(/"url":"(http:\/\/[^"]+)"/);
    expect(cli.stdout.split(password).length - 1).toBe(1);
    // Development logs are readable lines, not JSON.
    expect(cli.stdout).toMatch(/INFO +Realmgate is running/);
    const token = await tokenRequest(url, 'master', { grant_type: 'password', client_id: 'admin-cli', username: 'admin', password });
    expect(token.status).toBe(200);
    cli.kill('SIGTERM');
    expect(await cli.exited).toBe(0);
  });

  it('exits non-zero on a bad environment value, naming the option', async () => {
    const cli = startCli([], { ...baseEnv('bad'), REALMGATE_HTTP_PORT: 'abc' });
    expect(await cli.exited).not.toBe(0);
    expect(cli.stderr).toMatch(/httpPort/);
    expect(cli.stderr).toMatch(/REALMGATE_HTTP_PORT/);
    expect(cli.stderr).toContain('"abc"');
  });
});

describe('closing with a client that stopped mid-request', () => {
  it('close() cuts the connection once the grace period is over instead of waiting for the client', async () => {
    const t = await startServer({ config: { REALMGATE_SHUTDOWN_GRACE_MS: '300' } });
    const socket = connect(Number(new URL(t.url).port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    // A body announced at 100 bytes of which 5 ever come: the request stays in flight until the connection goes.
    socket.write('POST /realms/master/protocol/openid-connect/token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ngrant');
    // Let the server read the head (nothing shows it from outside; a close begun earlier refuses the request instead).
    await new Promise((resolve) => setTimeout(resolve, 200));
    const gone = new Promise((resolve) => socket.once('close', resolve));
    // Without the cut, close() waits for the client (this test's timeout fails it).
    await t.close();
    await gone;
    expect(socket.destroyed).toBe(true);
  }, 30_000);
});
