import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FormProtectorRenderContext, ResourceRequest, ResourceRoute } from '@realmgate/spi';
import { describe, expect, it } from 'vitest';
import { classicArgon2idScript } from '../src/assets.js';
import { createProviders, decodeChallenge, providers, SETTING_KEYS, solve } from '../src/index.js';
import { SMALL } from './helpers.js';
import { providerContext, realm, requestFrom } from './context.js';

const config = { ...SMALL, min_solve_time_ms: '0' };

function renderContext(overrides: Partial<FormProtectorRenderContext> = {}): FormProtectorRenderContext {
  return {
    realm,
    form: 'login',
    config,
    request: requestFrom('198.51.100.7'),
    resourceBaseUrl: '/realms/demo/ext-pow',
    ...overrides,
  };
}

async function initialised(env: Record<string, string> = {}) {
  const [protectorFactory, resourceFactory] = createProviders();
  const host = providerContext({ env });
  await protectorFactory.init!(host.context);
  await resourceFactory.init!(host.context);
  return { protector: protectorFactory.create(), resource: resourceFactory.create(), ...host };
}

function field(html: string, name: string): string {
  const match = new RegExp(`<input [^>]*name="${name}"[^>]*>`).exec(html);
  if (!match) throw new Error(`no ${name} input`);
  return /value="([^"]*)"/.exec(match[0])![1];
}

describe('factories', () => {
  it('declare a REQUIRED-or-DISABLED form protector on the three forms, and its asset resource', () => {
    const [protector, resource] = providers;
    expect(protector).toMatchObject({
      kind: 'form-protector',
      id: 'ext-pow',
      displayName: 'Proof of Work',
      requirementChoices: ['REQUIRED', 'DISABLED'],
      installOn: ['login', 'registration', 'reset-credentials'],
    });
    expect(resource).toMatchObject({ kind: 'realm-resource', id: 'ext-pow' });
    if (protector.kind !== 'form-protector') throw new Error('unreachable');
    expect(protector.configProperties!.map((p) => p.name)).toEqual(SETTING_KEYS);
    expect(protector.configProperties!.find((p) => p.name === 'argon2_memory_kb')).toMatchObject({
      type: 'String',
      defaultValue: '16384',
    });
  });

  it('refuse to start on a bad setting, naming key and value', async () => {
    const [protector] = createProviders();
    await expect(protector.init!(providerContext({ env: { POW_ARGON2_MEMORY_KB: 'abc' } }).context)).rejects.toThrow(
      'environment variable POW_ARGON2_MEMORY_KB: argon2_memory_kb must be an integer between 8 and 1048576, got "abc"',
    );
    await expect(protector.init!(providerContext({ config: { argon2_iterations: 'x' } }).context)).rejects.toThrow(
      'server config argon2_iterations',
    );
  });

  it('warn about unknown server-config keys', async () => {
    const [protector] = createProviders();
    const host = providerContext({ config: { argon2_memry_kb: 1 } });
    await protector.init!(host.context);
    expect(host.logs).toContainEqual(expect.objectContaining({ level: 'warn', fields: { keys: 'argon2_memry_kb' } }));
  });

  it('cannot be used before init', () => {
    const [protector, resource] = createProviders();
    if (protector.kind !== 'form-protector' || resource.kind !== 'realm-resource') throw new Error('unreachable');
    expect(() => protector.create()).toThrow('before init');
    expect(() => resource.create()).toThrow('before init');
  });
});

describe('render', () => {
  it("writes the status line's texts in the page's language when the host gives them, escaped, else in English", async () => {
    const { protector } = await initialised();
    const english = await protector.render(renderContext());
    expect(english).toContain('data-text-checking="Checking your browser\u2026"');
    expect(english).toContain('data-text-ready="Ready"');
    const texts: Record<string, string> = { powChecking: 'Browser wird geprüft <b>', powReady: 'Bereit', powNoScript: 'Bitte "JavaScript" einschalten.' };
    const german = await protector.render({ ...renderContext(), locale: 'de', msg: (key: string, fallback: string) => texts[key] ?? fallback });
    expect(german).toContain('data-text-checking="Browser wird geprüft &lt;b&gt;"');
    expect(german).toContain('data-text-ready="Bereit"');
    expect(german).toContain('data-text-failed="Your browser could not be checked. Please reload the page to try again."');
    expect(german).toContain('Bitte &quot;JavaScript&quot; einschalten.');
  });

  it('puts a challenge for this realm and form, the empty answer and honeypot, a status and a noscript in the form', async () => {
    const { protector } = await initialised();
    const html = await protector.render(renderContext({ form: 'registration' }));
    const challenge = decodeChallenge(field(html, 'pow_challenge'));
    expect(challenge).toMatchObject({ realm: 'demo', flow: 'registration', alg: 'argon2id', d: 2, m: 1024, t: 1 });
    expect(field(html, 'pow_nonce')).toBe('');
    expect(html).toMatch(/<input type="hidden" name="pow_challenge"/);
    expect(html).toMatch(/<input type="hidden" name="pow_nonce" value="">/);

    const honeypot = /<input [^>]*name="website"[^>]*>/.exec(html)![0];
    expect(honeypot).toContain('tabindex="-1"');
    expect(honeypot).toContain('autocomplete="off"');
    const honeypotId = /id="([^"]+)"/.exec(honeypot)![1];
    const hidden = `<div class="rg-pow-hp" aria-hidden="true">`;
    expect(html).toMatch(new RegExp(`${hidden}\\s*<label for="${honeypotId}">`));
    // Hidden by the package's stylesheet (host pages forbid inline styles), which the page must link.
    expect(html).toMatch(/<link rel="stylesheet" href="\/realms\/demo\/ext-pow\/assets\/pow\.css\?v=[\w-]+">/);

    expect(html).toMatch(/<p class="rg-pow-status" role="status" aria-live="polite"><\/p>/);
    expect(html).toMatch(/<noscript>.*JavaScript is needed for this form.*<\/noscript>/);
    expect(html).toMatch(/data-min-solve-ms="0"/);
    expect(html).toMatch(/<script src="\/realms\/demo\/ext-pow\/assets\/pow-form\.js\?v=[\w-]+" async><\/script>/);
  });

  it('escapes every attribute value', async () => {
    const { protector } = await initialised();
    const html = await protector.render(
      renderContext({ resourceBaseUrl: `/realms/a"b<c>&'d/ext-pow`, realm: { ...realm, name: `x"><script>` } }),
    );
    expect(html).not.toContain('a"b');
    expect(html).toContain('/realms/a&quot;b&lt;c&gt;&amp;&#39;d/ext-pow/assets/');
    expect(html).not.toContain('<script>');
    expect(decodeChallenge(field(html, 'pow_challenge')).realm).toBe(`x"><script>`);
  });

  it('uses the per-flow config, and falls back to server-wide settings with a logged error when it is bad', async () => {
    const { protector, logs } = await initialised({ POW_ARGON2_MEMORY_KB: '2048' });
    const rendered = await protector.render(renderContext({ config: { hash_algorithm: 'sha256' } }));
    const sha = decodeChallenge(field(rendered, 'pow_challenge'));
    expect(sha).toMatchObject({ alg: 'sha256', d: 16, m: 0, t: 0 });
    const bad = { argon2_memory_kb: '1024', argon2_iterations: 'many' };
    for (let i = 0; i < 3; i++) {
      const challenge = decodeChallenge(field(await protector.render(renderContext({ config: bad })), 'pow_challenge'));
      expect(challenge).toMatchObject({ alg: 'argon2id', m: 2048, t: 1 });
    }
    const errors = logs.filter((line) => line.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0].message).toContain('argon2_iterations must be an integer between 1 and 16, got "many"');
  });
});

describe('verify', () => {
  it('accepts a solution from a scripted client, then rejects its replay with pow_failed', async () => {
    const { protector, metrics } = await initialised();
    const html = await protector.render(renderContext());
    const challenge = field(html, 'pow_challenge');
    const { nonce } = await solve(challenge);
    const submitted = { username: 'alice', password: 'secret', pow_challenge: challenge, pow_nonce: nonce, website: '' };
    expect(await protector.verify({ ...renderContext(), submitted })).toEqual({ ok: true });
    expect(await protector.verify({ ...renderContext(), submitted })).toEqual({
      ok: false,
      reason: 'replayed',
      error: 'pow_failed',
    });
    expect(metrics.value('realmgate_pow_hash_verifications_total')).toBe(1);
    expect(metrics.value('realmgate_pow_rejections_total', { reason: 'replayed' })).toBe(1);
  });

  it('rejects a filled honeypot and a challenge from another form', async () => {
    const { protector } = await initialised();
    const challenge = field(await protector.render(renderContext({ form: 'reset-credentials' })), 'pow_challenge');
    const { nonce } = await solve(challenge);
    const base = { pow_challenge: challenge, pow_nonce: nonce };
    const honeypot = await protector.verify({ ...renderContext(), submitted: { ...base, website: 'x' } });
    expect(honeypot).toMatchObject({ reason: 'honeypot' });
    expect(await protector.verify({ ...renderContext(), submitted: base })).toMatchObject({ reason: 'wrong_flow' });
  });

  it('asks for 503 with Retry-After when the pool is full', async () => {
    const { protector } = await initialised({ POW_VERIFY_CONCURRENCY: '1', POW_VERIFY_QUEUE_LIMIT: '0' });
    const submissions = await Promise.all(
      [0, 1].map(async () => {
        const challenge = field(await protector.render(renderContext()), 'pow_challenge');
        return { pow_challenge: challenge, pow_nonce: (await solve(challenge)).nonce };
      }),
    );
    const [first, second] = await Promise.all(
      submissions.map((submitted) => protector.verify({ ...renderContext(), submitted })),
    );
    expect(first).toEqual({ ok: true });
    expect(second).toEqual({ ok: false, reason: 'overloaded', error: 'pow_failed', status: 503, retryAfterSeconds: 1 });
  });

  it('shares the challenge key through the store between processes', async () => {
    const one = providerContext();
    const two = providerContext({ store: one.store });
    const [a] = createProviders();
    const [b] = createProviders();
    await a.init!(one.context);
    await b.init!(two.context);
    if (a.kind !== 'form-protector' || b.kind !== 'form-protector') throw new Error('unreachable');
    const challenge = field(await a.create().render(renderContext()), 'pow_challenge');
    const { nonce } = await solve(challenge);
    const submitted = { pow_challenge: challenge, pow_nonce: nonce };
    expect(await b.create().verify({ ...renderContext(), submitted })).toEqual({ ok: true });
  });
});

// Issue 11: server-wide limits on per-flow config, for the admin API and at use time.
describe('limits on the per-flow config', () => {
  async function validator(env: Record<string, string> = {}) {
    const [factory] = createProviders();
    if (factory.kind !== 'form-protector') throw new Error('unreachable');
    const host = providerContext({ env });
    await factory.init!(host.context);
    return { factory, ...host };
  }

  it('offers the admin API a validateConfig that names the key and the limit', async () => {
    const { factory } = await validator({ POW_MAX_ARGON2_MEMORY_KB: '32768' });
    expect(factory.validateConfig!({ argon2_memory_kb: '32768', argon2_iterations: '2' })).toEqual([]);
    const problems = factory.validateConfig!({ argon2_memory_kb: '1048576' });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('argon2_memory_kb 1048576');
    expect(problems[0]).toContain("this server's limit of 32768");
    expect(problems[0]).toContain('POW_MAX_ARGON2_MEMORY_KB');
    const [fresh] = createProviders();
    if (fresh.kind !== 'form-protector') throw new Error('unreachable');
    expect(() => fresh.validateConfig!({})).toThrow('before init');
  });

  it('refuses to start on a bad limit, or on a server-wide setting above one', async () => {
    const [factory] = createProviders();
    await expect(factory.init!(providerContext({ env: { POW_MAX_ARGON2_ITERATIONS: '0' } }).context)).rejects.toThrow(
      'environment variable POW_MAX_ARGON2_ITERATIONS: max_argon2_iterations must be an integer between 1 and 16, got "0"',
    );
    await expect(factory.init!(providerContext({ config: { argon2_memory_kb: 1048576 } }).context)).rejects.toThrow(
      "server config argon2_memory_kb: argon2_memory_kb 1048576 is above this server's limit of 65536",
    );
  });

  it('uses a stored value above a limit (a realm import) at the limit, warning once per config', async () => {
    const { factory, logs, metrics } = await validator({ POW_MAX_ARGON2_MEMORY_KB: '2048', POW_MAX_ARGON2_ITERATIONS: '1' });
    const protector = factory.create();
    const imported = { ...config, argon2_memory_kb: '1048576', argon2_iterations: '16' };
    const challenges = [];
    for (let i = 0; i < 3; i++)
      challenges.push(decodeChallenge(field(await protector.render(renderContext({ config: imported })), 'pow_challenge')));
    expect(challenges.map((c) => [c.m, c.t])).toEqual([
      [2048, 1],
      [2048, 1],
      [2048, 1],
    ]);
    const warnings = logs.filter((line) => line.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0].message).toContain('per-flow config argon2_memory_kb: argon2_memory_kb 1048576 is above');
    expect(warnings[0].message).toContain('per-flow config argon2_iterations: argon2_iterations 16 is above');
    // And verification costs the server one hash at the limit, not at the stored value.
    const token = field(await protector.render(renderContext({ config: imported })), 'pow_challenge');
    const submitted = { pow_challenge: token, pow_nonce: (await solve(token)).nonce };
    expect(await protector.verify({ ...renderContext({ config: imported }), submitted })).toEqual({ ok: true });
    expect(metrics.value('realmgate_pow_hash_verifications_total')).toBe(1);
  });

  it('refuses, as stale and without a hash, a challenge issued before the flow was reconfigured', async () => {
    const { factory, metrics } = await validator();
    const protector = factory.create();
    const token = field(await protector.render(renderContext()), 'pow_challenge');
    const submitted = { pow_challenge: token, pow_nonce: (await solve(token)).nonce };
    const raised = { ...config, argon2_base_difficulty: '4' };
    expect(await protector.verify({ ...renderContext({ config: raised }), submitted })).toEqual({
      ok: false,
      reason: 'stale_difficulty',
      error: 'pow_failed',
    });
    expect(metrics.value('realmgate_pow_hash_verifications_total')).toBe(0);
  });
});

describe('asset resource', () => {
  const require = createRequire(import.meta.url);
  const argon2idDir = dirname(require.resolve('argon2id/package.json'));
  /**
   * Files served as they are, with their type; argon2id.js is made from the package (see hash.test.ts), and
   * pow-worker.js is served with it in front.
   */
  const files: Record<string, [string, string]> = {
    'pow-form.js': [new URL('../assets/pow-form.js', import.meta.url).pathname, 'text/javascript; charset=utf-8'],
    'pow.css': [new URL('../assets/pow.css', import.meta.url).pathname, 'text/css; charset=utf-8'],
    'argon2id-simd.wasm': [join(argon2idDir, 'dist/simd.wasm'), 'application/wasm'],
    'argon2id-baseline.wasm': [join(argon2idDir, 'dist/no-simd.wasm'), 'application/wasm'],
    'sha256.umd.min.js': [require.resolve('hash-wasm/dist/sha256.umd.min.js'), 'text/javascript; charset=utf-8'],
  };

  async function get(route: ResourceRoute, file: string, extra: Partial<ResourceRequest> = {}) {
    return route.handler({
      realm,
      method: 'GET',
      params: { file },
      query: {},
      headers: {},
      body: undefined,
      request: requestFrom('198.51.100.7'),
      ...extra,
    });
  }

  it('serves exactly its scripts, stylesheet and WebAssembly, each with its type', async () => {
    const { resource } = await initialised();
    expect(resource.routes.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /assets/:file']);
    const [route] = resource.routes;
    for (const [name, [path, type]] of Object.entries(files)) {
      const response = await get(route, name);
      expect(response.status).toBe(200);
      expect(response.headers).toMatchObject({
        'content-type': type,
        'x-content-type-options': 'nosniff',
        'cache-control': 'public, max-age=300',
      });
      expect(Buffer.compare(response.body as Buffer, await readFile(path)), name).toBe(0);
    }
    const library = await get(route, 'argon2id.js');
    expect(library.headers).toMatchObject({ 'content-type': 'text/javascript; charset=utf-8' });
    expect(String(library.body)).toMatch(/^\/\* argon2id 1\.0\.1 /);
    // The worker: strict mode, the library, then assets/pow-worker.js, so it needs no importScripts() before
    // hashing.
    const worker = await get(route, 'pow-worker.js');
    expect(worker.headers).toMatchObject({ 'content-type': 'text/javascript; charset=utf-8', 'x-content-type-options': 'nosniff' });
    expect(
      Buffer.compare(
        worker.body as Buffer,
        Buffer.concat([
          Buffer.from("'use strict';\n"),
          library.body as Buffer,
          await readFile(new URL('../assets/pow-worker.js', import.meta.url)),
        ]),
      ),
    ).toBe(0);
    // The worker fetches and compiles the WebAssembly (and, without WebCrypto, loads hash-wasm's SHA-256) under
    // its own CSP.
    expect((await get(route, 'pow-worker.js')).headers!['content-security-policy']).toBe(
      "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; connect-src 'self'",
    );
  });

  it('refuses to build the library script from sources whose import or exports moved', () => {
    const blake2b = 'function G() {}\nexport default function createHash(outlen) { return outlen; }\n';
    const argon2id = 'import blake2b from "./blake2b.js"\nfunction G() {}\nexport default function argon2id(params) { return blake2b(params); }\n';
    const script = classicArgon2idScript(blake2b, argon2id, 'x');
    expect(new Function(`${script}; return argon2id(32);`)()).toBe(32);
    // The package's BLAKE2b, for the solver's own block loop.
    expect(new Function(`${script}; return argon2id.blake2b(5);`)()).toBe(5);
    expect(() => classicArgon2idScript(blake2b.replace('export default ', 'export '), argon2id, 'x')).toThrow(/lib\/blake2b\.js/);
    expect(() => classicArgon2idScript(blake2b, argon2id.replace('import blake2b', 'import hash'), 'x')).toThrow(/lib\/argon2id\.js/);
    expect(() => classicArgon2idScript(`${blake2b}export const x = 1;\n`, argon2id, 'x')).toThrow(/another import or export/);
  });

  it('answers 404 to anything else, traversal included', async () => {
    const { resource } = await initialised();
    const [route] = resource.routes;
    const names = [
      '',
      'index.ts',
      '../package.json',
      '..%2Fpackage.json',
      '../src/index.ts',
      'pow-form.js/..',
      'POW-FORM.JS',
      '__proto__',
      'constructor',
      'argon2.umd.js',
      'argon2.umd.min.js',
      'simd.wasm',
      'sha1.umd.min.js',
      'index.umd.js',
      '%2e%2e',
    ];
    for (const name of names)
      expect((await get(route, name)).status, name).toBe(404);
  });

  it('lets versioned URLs be cached for good and answers 304 to a matching ETag', async () => {
    const { resource, protector } = await initialised();
    const [route] = resource.routes;
    const version = /pow-form\.js\?v=([\w-]+)/.exec(await protector.render(renderContext()))![1];
    const fresh = await get(route, 'pow-form.js', { query: { v: version } });
    expect(fresh.headers!['cache-control']).toBe('public, max-age=31536000, immutable');
    const etag = fresh.headers!.etag;
    const cached = await get(route, 'pow-form.js', { headers: { 'if-none-match': `W/"other", ${etag}` } });
    expect(cached).toEqual({ status: 304, headers: { etag, 'cache-control': 'public, max-age=300' } });
  });
});
