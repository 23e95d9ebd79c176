/**
 * Builds one of Keycloak's consoles (an npm UI package and the small entry of the Realmgate package that mounts it)
 * with Vite into that package's dist/, which is not committed: packages/admin-console (@keycloak/keycloak-admin-ui)
 * and packages/account-console (@keycloak/keycloak-account-ui) each describe theirs as a UiBuild and call
 * buildUi. The build is skipped when dist/ was made from the same inputs (the entry's files and the installed
 * versions of every package it bundles), so `npm start` and `npm test` pay for it once per install. Hashed assets
 * are written with .br and .gz twins, so the server serves them compressed without compressing on the request path.
 *
 * A console's English messages are not in its npm package: Keycloak keeps them in its server theme, the Maven
 * artifact of the same name and version. The build fetches that artifact from Maven Central over HTTPS with its
 * published SHA-1 checked, no Java tooling needed (scripts/maven-artifact.ts, cached under the user's home), and
 * writes its messages_en as dist/messages/en.json; offline, with nothing cached, the build still succeeds, says so,
 * and the console shows message keys instead of texts.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { parseProperties } from '../packages/server/src/pages/properties.js';
import { fetchMavenArtifact } from './maven-artifact.js';

/** What one console's build is made of. */
export interface UiBuild {
  /** The Realmgate package's folder: build.ts, index.html, package.json, src/ (and static/ when it has one). */
  root: string;
  /** For messages: "admin console". */
  label: string;
  /** The npm UI package (its version names the Maven artifact of the messages). */
  uiPackage: string;
  /** The URL path the hashed assets are served under (Vite's `base`). */
  base: string;
  /** Packages bundled beyond the root package's dependencies whose installed version makes the build stale. */
  alsoBundled: string[];
  /** Files of the UI package's lib/ copied beside the assets (not hashed: logos, icons). */
  libFiles: string[];
  /** The Maven artifact id holding the theme, and the messages_en path inside it. */
  messagesArtifact: string;
  messagesEntry: string;
  /** English texts of this server's own added to the messages (keys the console shows that Keycloak's theme defines elsewhere). */
  extraMessages?: Readonly<Record<string, string>>;
  /** The UI package's style sheet when its exports do not name it (path below the package): imported as 'realmgate-ui-package-styles'. */
  packageStyles?: string;
}

const STAMP = '.build-stamp';

export const distOf = (spec: UiBuild) => join(spec.root, 'dist');

/** A package's installed folder: node_modules/<name> here or in a folder above (npm hoists to the repository root). */
export function packageDir(from: string, name: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
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

const staticDir = (spec: UiBuild) => join(spec.root, 'static');

/** What the build depends on: the entry, and the installed version of each package the console bundles. */
function inputsHash(spec: UiBuild): string {
  const { root } = spec;
  const hash = createHash('sha256');
  const own = [join(root, 'build.ts'), join(root, 'index.html'), join(root, 'package.json'), join(import.meta.dirname, 'ui-build.ts'), ...files(join(root, 'src')), ...(existsSync(staticDir(spec)) ? files(staticDir(spec)) : [])];
  for (const file of own.sort()) hash.update(file.startsWith(root) ? file.slice(root.length) : file).update(readFileSync(file));
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const bundled = [...Object.keys(pkg.dependencies), ...spec.alsoBundled, '@keycloak/keycloak-ui-shared', '@patternfly/react-core', '@patternfly/patternfly', 'keycloak-js', 'vite'];
  for (const name of [...new Set(bundled)].sort()) hash.update(`${name}@${JSON.parse(readFileSync(join(packageDir(root, name), 'package.json'), 'utf8')).version}`);
  return hash.digest('hex');
}

export function uiBuildIsCurrent(spec: UiBuild): boolean {
  const stamp = join(distOf(spec), STAMP);
  return existsSync(stamp) && readFileSync(stamp, 'utf8') === inputsHash(spec);
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

/**
 * Keycloak's English messages of the console from the Maven artifact of its version, as { key: value } in
 * out/messages/en.json; false, with the reason and what it means on stderr, when the artifact cannot be had
 * (offline and not cached, or refused by its checksum).
 */
export async function writeMessages(spec: UiBuild, out: string, version: string, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  try {
    const artifact = await fetchMavenArtifact({ groupId: 'org.keycloak', artifactId: spec.messagesArtifact, version }, { env });
    const { default: JSZip } = await import('jszip');
    const jar = await JSZip.loadAsync(artifact.body);
    const entry = jar.file(spec.messagesEntry);
    if (!entry) throw new Error(`${spec.messagesEntry} not in ${artifact.source}`);
    mkdirSync(join(out, 'messages'), { recursive: true });
    writeFileSync(join(out, 'messages', 'en.json'), JSON.stringify({ ...spec.extraMessages, ...parseProperties(await entry.async('string')) }));
    return true;
  } catch (error) {
    console.error(
      `${spec.label}: English messages not fetched (${error instanceof Error ? error.message.split('\n')[0] : String(error)}); ` +
        `the build goes on and the console shows message keys instead of texts until a build that can reach the repository (npm run build:console)`,
    );
    return false;
  }
}

/** The installed version of the UI package: the version of the Maven artifact holding its messages. */
const uiVersion = (spec: UiBuild) => JSON.parse(readFileSync(join(packageDir(spec.root, spec.uiPackage), 'package.json'), 'utf8')).version as string;

/** Builds into a fresh folder and swaps it in, so a server reading dist/ never sees half a build. */
export async function buildUi(spec: UiBuild, options: { force?: boolean; quiet?: boolean } = {}): Promise<'built' | 'current'> {
  if (!options.force && uiBuildIsCurrent(spec)) {
    // A build made offline lacks the texts: each later run tries again for them alone (from the cache, or online).
    if (!existsSync(join(distOf(spec), 'messages', 'en.json'))) await writeMessages(spec, distOf(spec), uiVersion(spec));
    return 'current';
  }
  const started = Date.now();
  const { build } = await import('vite');
  const dist = distOf(spec);
  const out = `${dist}.tmp-${process.pid}`;
  rmSync(out, { recursive: true, force: true });
  await build({
    configFile: false,
    // Vite takes NODE_ENV from the process when set: built under a test runner (NODE_ENV=test) the console would
    // bundle React's development build (and JSX compiled for it), whose warnings are console errors the
    // production console never shows.
    mode: 'production',
    define: { 'process.env.NODE_ENV': JSON.stringify('production') },
    root: spec.root,
    base: spec.base,
    logLevel: options.quiet ? 'error' : 'warn',
    publicDir: false,
    esbuild: { jsx: 'automatic', jsxDev: false },
    resolve: {
      alias: {
        'realmgate-ui-shared-styles': join(packageDir(spec.root, '@keycloak/keycloak-ui-shared'), 'dist/main.css'),
        ...(spec.packageStyles ? { 'realmgate-ui-package-styles': join(packageDir(spec.root, spec.uiPackage), spec.packageStyles) } : {}),
      },
    },
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
  // The console shows these from its resourceUrl (logo, icon, favicon, menu): not hashed, served with a short lifetime.
  const lib = join(packageDir(spec.root, spec.uiPackage), 'lib');
  for (const name of spec.libFiles) if (existsSync(join(lib, name))) copyFileSync(join(lib, name), join(out, name));
  if (existsSync(staticDir(spec))) for (const name of readdirSync(staticDir(spec))) copyFileSync(join(staticDir(spec), name), join(out, name));
  precompress(join(out, 'assets'));
  const version = uiVersion(spec);
  // Without them (offline, nothing cached) the build still counts: a forced build tries again.
  await writeMessages(spec, out, version);
  writeFileSync(join(out, STAMP), inputsHash(spec));
  mkdirSync(dirname(dist), { recursive: true });
  rmSync(dist, { recursive: true, force: true });
  renameSync(out, dist);
  if (!options.quiet) console.log(`${spec.label} built into ${dist} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return 'built';
}

/** A package's build.ts run as a script: builds when stale, or with --force anyway; exits 1 on a failed build. */
export function runAsScript(moduleUrl: string, spec: UiBuild): void {
  if (!process.argv[1] || moduleUrl !== pathToFileURL(resolve(process.argv[1])).href) return;
  buildUi(spec, { force: process.argv.includes('--force') }).catch((error: unknown) => {
    console.error(`${spec.label}: build failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
