/**
 * Builds Keycloak's admin console (the npm package @keycloak/keycloak-admin-ui and the small entry in src/) with
 * Vite into dist/, which is not committed. The build is skipped when dist/ was made from the same inputs (the
 * entry's files and the installed versions of every package it bundles), so `npm start` and `npm test` pay for it
 * once per install. Hashed assets are written with .br and .gz twins, so the server serves them compressed without
 * compressing on the request path.
 *
 * The console's English messages are not in the npm package: Keycloak keeps them in its server theme, the Maven
 * artifact org.keycloak:keycloak-admin-ui of the same version. When Maven is installed the build fetches that
 * artifact (Maven's own client and cache) and writes its messages_en as dist/messages/en.json; without it, or
 * offline, the console runs and shows message keys instead of texts.
 *
 *   tsx packages/admin-console/build.ts          build when stale
 *   tsx packages/admin-console/build.ts --force  build anyway
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const ROOT = dirname(fileURLToPath(import.meta.url));
/** Where the server finds the console; the server resolves the same folder on its own (it never imports this file). */
export const CONSOLE_DIST = join(ROOT, 'dist');
/** The URL path the hashed assets are served under (Vite's `base`); the server serves dist/ there. */
export const CONSOLE_RESOURCES = '/resources/admin-console/';
const STAMP = '.build-stamp';

/** A package's installed folder: node_modules/<name> here or in a folder above (npm hoists to the repository root). */
function packageDir(name: string): string {
  for (let dir = ROOT; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'node_modules', name, 'package.json'))) return join(dir, 'node_modules', name);
    if (dirname(dir) === dir) throw new Error(`package ${name} is not installed (run npm ci)`);
  }
}

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

/** What the build depends on: the entry, and the installed version of each package the console bundles. */
function inputsHash(): string {
  const hash = createHash('sha256');
  for (const file of [join(ROOT, 'build.ts'), join(ROOT, 'index.html'), join(ROOT, 'package.json'), ...files(join(ROOT, 'src'))].sort()) {
    hash.update(file.slice(ROOT.length)).update(readFileSync(file));
  }
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const bundled = [...Object.keys(pkg.dependencies), '@keycloak/keycloak-ui-shared', '@keycloak/keycloak-admin-client', '@patternfly/react-core', '@patternfly/patternfly', 'keycloak-js', 'vite'];
  for (const name of bundled.sort()) hash.update(`${name}@${JSON.parse(readFileSync(join(packageDir(name), 'package.json'), 'utf8')).version}`);
  return hash.digest('hex');
}

export function consoleBuildIsCurrent(): boolean {
  const stamp = join(CONSOLE_DIST, STAMP);
  return existsSync(stamp) && readFileSync(stamp, 'utf8') === inputsHash();
}

const COMPRESSIBLE = /\.(js|css|svg|json|html|map|txt)$/;

function precompress(dir: string): void {
  for (const file of files(dir)) {
    if (!COMPRESSIBLE.test(file)) continue;
    const body = readFileSync(file);
    if (body.length < 1024) continue;
    writeFileSync(`${file}.br`, brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 9, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } }));
    writeFileSync(`${file}.gz`, gzipSync(body, { level: 9 }));
  }
}

/** Java properties text as key → value (comments, `key=value` / `key: value`, continuation lines, backslash escapes). */
export function parseProperties(text: string): Record<string, string> {
  const result: Record<string, string> = {};
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i].replace(/^\s+/, '');
    if (line === '' || line.startsWith('#') || line.startsWith('!')) continue;
    while (/(^|[^\\])(\\\\)*\\$/.test(line) && i + 1 < lines.length) line = line.slice(0, -1) + lines[++i].replace(/^\s+/, '');
    const separator = /(?<!\\)(?:\\\\)*[=:\s]/.exec(line);
    const end = separator ? separator.index + separator[0].length - 1 : line.length;
    const rawKey = line.slice(0, end);
    const rawValue = separator ? line.slice(end + 1).replace(/^\s*[=:]?\s*/, '') : '';
    const unescape = (value: string) =>
      value.replace(/\\(u[0-9a-fA-F]{4}|.)/g, (_, c: string) => (c.length === 5 ? String.fromCharCode(parseInt(c.slice(1), 16)) : c === 'n' ? '\n' : c === 't' ? '\t' : c === 'r' ? '\r' : c));
    result[unescape(rawKey)] = unescape(rawValue);
  }
  return result;
}

/**
 * Keycloak's English admin messages from the Maven artifact of the console's version, as { key: value } in
 * out/messages/en.json; false (with the reason on stderr) when Maven is missing or cannot fetch it.
 */
async function writeMessages(out: string, version: string): Promise<boolean> {
  const work = join(tmpdir(), `realmgate-console-messages-${process.pid}`);
  try {
    execFileSync('mvn', ['-q', '-B', 'dependency:copy', `-Dartifact=org.keycloak:keycloak-admin-ui:${version}:jar`, `-DoutputDirectory=${work}`], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 300_000 });
    const { default: JSZip } = await import('jszip');
    const jar = await JSZip.loadAsync(readFileSync(join(work, `keycloak-admin-ui-${version}.jar`)));
    const entry = jar.file('theme/keycloak.v2/admin/messages/messages_en.properties');
    if (!entry) throw new Error('messages_en.properties not in the artifact');
    mkdirSync(join(out, 'messages'), { recursive: true });
    writeFileSync(join(out, 'messages', 'en.json'), JSON.stringify(parseProperties(await entry.async('string'))));
    return true;
  } catch (error) {
    console.error(`admin console: English messages not fetched (${error instanceof Error ? error.message.split('\n')[0] : String(error)}); the console shows message keys`);
    return false;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Builds into a fresh folder and swaps it in, so a server reading dist/ never sees half a build. */
export async function buildConsole(options: { force?: boolean; quiet?: boolean } = {}): Promise<'built' | 'current'> {
  if (!options.force && consoleBuildIsCurrent()) return 'current';
  const started = Date.now();
  const { build } = await import('vite');
  const out = `${CONSOLE_DIST}.tmp-${process.pid}`;
  rmSync(out, { recursive: true, force: true });
  await build({
    configFile: false,
    root: ROOT,
    base: CONSOLE_RESOURCES,
    logLevel: options.quiet ? 'error' : 'warn',
    publicDir: false,
    esbuild: { jsx: 'automatic' },
    // Vite takes process.env.NODE_ENV from the environment when it is set, and vitest sets it to "test": a build
    // started by a test would bundle React's development build (slower, and its warnings are console errors).
    mode: 'production',
    define: { 'process.env.NODE_ENV': JSON.stringify('production') },
    resolve: { alias: { 'realmgate-ui-shared-styles': join(packageDir('@keycloak/keycloak-ui-shared'), 'dist/main.css') } },
    build: {
      outDir: out,
      emptyOutDir: true,
      assetsDir: 'assets',
      target: 'es2022',
      sourcemap: false,
      reportCompressedSize: false,
      chunkSizeWarningLimit: 10_000,
      rollupOptions: {
        // React Router marks its modules "use client" (for server components): meaningless in a browser bundle.
        onwarn(warning, warn) {
          if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
        },
      },
    },
  });
  // The console shows these from its resourceUrl (logo, icon, favicon): not hashed, served with a short lifetime.
  const lib = join(packageDir('@keycloak/keycloak-admin-ui'), 'lib');
  for (const name of ['logo.svg', 'icon.svg', 'favicon.svg']) if (existsSync(join(lib, name))) copyFileSync(join(lib, name), join(out, name));
  precompress(join(out, 'assets'));
  const version = JSON.parse(readFileSync(join(packageDir('@keycloak/keycloak-admin-ui'), 'package.json'), 'utf8')).version as string;
  // Without them (no Maven, offline) the build still counts: `npm run build:console` tries again.
  await writeMessages(out, version);
  writeFileSync(join(out, STAMP), inputsHash());
  mkdirSync(dirname(CONSOLE_DIST), { recursive: true });
  rmSync(CONSOLE_DIST, { recursive: true, force: true });
  renameSync(out, CONSOLE_DIST);
  if (!options.quiet) console.log(`admin console built into ${CONSOLE_DIST} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return 'built';
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  buildConsole({ force: process.argv.includes('--force') }).catch((error: unknown) => {
    console.error(`admin console: build failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
