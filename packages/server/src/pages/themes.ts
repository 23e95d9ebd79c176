import { existsSync, lstatSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script } from 'node:vm';
import { Eta, EtaParseError } from 'eta';
import { LOCALE_TAG } from '../model/locales.js';
import { THEME_NAME } from '../model/themes.js';
import { parseProperties } from './properties.js';

/**
 * Operators' themes (issue 43 item 4), read once at start-up from the `themeDir` option's directory, Keycloak's
 * layout with this server's template language:
 *
 *   <themeDir>/<name>/<type>/theme.properties            optional: parent=<name> (another theme, or the built-in)
 *   <themeDir>/<name>/<type>/templates/<page>.eta         replaces the built-in template of that file name
 *   <themeDir>/<name>/<type>/resources/<path>             served at /realms/{realm}/login-actions/resources/<path>
 *   <themeDir>/<name>/<type>/messages/messages_<locale>.properties (or .json)   texts by message key
 *
 * `type` is `login` (every page), `account` (the server-rendered account page; the account console reads its
 * theme.properties, resources and messages: account-api/console.ts) or `email`. A
 * realm picks a theme of each type by Keycloak's `loginTheme`, `accountTheme` and `emailTheme` fields. Whatever is
 * missing comes from the parent, then from the built-in theme. A template that does not compile stops the start
 * with its file and line (ThemeError); nothing a request names is ever joined to a path: resources are looked up in
 * the index made here.
 */

export const THEME_TYPES = ['login', 'account', 'email'] as const;
export type ThemeType = (typeof THEME_TYPES)[number];

/** The built-in theme's name per type, as Keycloak 26's serverinfo lists its defaults. */
export const BUILTIN_THEME: Record<ThemeType, string> = { login: 'keycloak', account: 'keycloak.v3', email: 'keycloak' };
/** Keycloak's own theme names a realm (or realm file) may carry: all of them mean the built-in theme here. */
const BUILTIN_ALIASES = new Set(['base', 'keycloak', 'keycloak.v2', 'keycloak.v3']);


export const builtinTemplatesDir = fileURLToPath(new URL('./templates/', import.meta.url));
const TEMPLATE_FILE = /^[a-z0-9-]+\.eta$/;
const RESOURCE_SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;
const MAX_RESOURCES = 5000;

/** What a theme's resources may be, by extension: the media type they are served with. */
export const RESOURCE_TYPES: Readonly<Record<string, string>> = {
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.otf': 'font/otf',
};

/** A theme that cannot be used: the server does not start (the file, and the line where there is one). */
export class ThemeError extends Error {
  override name = 'ThemeError';
}

/** One theme of one type, its parents resolved. */
export interface Theme {
  name: string;
  type: ThemeType;
  /** This theme, then its parents (the built-in theme is not in it). */
  chain: Theme[];
  dir: string;
  /** Template file names it has (`login.eta`). */
  templates: Set<string>;
  /** Resource path (`img/logo.png`) → file. */
  resources: Map<string, string>;
  /** Its own texts by locale (`pt-BR`), not its parents'. */
  messages: Record<string, Record<string, string>>;
  /** Its own `theme.properties` (parent included), not its parents': see themeProperties(). */
  properties: Record<string, string>;
  /** Renders pages with this theme's templates over the built-in ones (login and account themes). */
  eta: Eta;
  /** An e-mail theme's bodies: `html/<mail>.eta` and `text/<mail>.eta` below `templates/` (its own and its parents'). */
  mailTemplates: Set<string>;
  /** Renders an e-mail theme's bodies (HTML escaped, text not); undefined for other types. */
  mailEta?: { html: Eta; text: Eta };
}

/** The e-mails a theme may write, by our template name (Keycloak's name in the README). */
export const MAIL_TEMPLATES = ['password-reset', 'email-verification', 'execute-actions', 'org-invite', 'identity-provider-link'] as const;

/** An e-mail theme's engine for one kind of body: only the theme's files (the built-in bodies are written in code). */
function mailEngine(chain: readonly Theme[], kind: 'html' | 'text'): Eta {
  // A text body keeps its line breaks as written (Eta's default drops the one after a tag).
  const eta = new Eta({ views: builtinTemplatesDir, autoEscape: kind === 'html', autoTrim: kind === 'text' ? false : [false, 'nl'], cache: true, defaultExtension: '.eta', debug: true });
  eta.resolvePath = (template: string) => {
    const file = `${kind}/${template.replace(/^(html|text)\//, '').replace(/\.eta$/, '')}.eta`;
    if (!TEMPLATE_FILE.test(file.slice(kind.length + 1))) throw new Error(`bad template name ${template}`);
    const theme = chain.find((t) => t.mailTemplates.has(file));
    if (!theme) throw new Error(`no template ${file}`);
    return join(theme.dir, 'templates', file);
  };
  return eta;
}

/** The templates of `chain` over the built-in ones; `debug` makes Eta's runtime errors name the template line. */
export function templateEngine(chain: readonly Theme[], debug: boolean): Eta {
  const eta = new Eta({ views: builtinTemplatesDir, autoEscape: true, cache: true, defaultExtension: '.eta', debug });
  eta.resolvePath = (template: string) => {
    const file = template.endsWith('.eta') ? template : `${template}.eta`;
    if (!TEMPLATE_FILE.test(file)) throw new Error(`bad template name ${template}`);
    const theme = chain.find((t) => t.templates.has(file));
    return theme ? join(theme.dir, 'templates', file) : join(builtinTemplatesDir, file);
  };
  return eta;
}

/**
 * A template's syntax, checked as Eta compiles it: a ThemeError `file:line: reason` when it does not compile. Eta
 * names the line of a tag it cannot parse; for JavaScript that does not compile, the line is the tag's whose code
 * V8 stopped at (Eta's debug output marks each tag's line).
 */
export function checkTemplate(file: string, source: string): void {
  const eta = new Eta({ autoEscape: true, debug: true });
  let code: string;
  try {
    code = eta.compileToString(source, { async: true });
  } catch (error) {
    const line = error instanceof EtaParseError ? /at line (\d+)/.exec(error.message)?.[1] : undefined;
    throw new ThemeError(`${file}:${line ?? 1}: ${(error as Error).message.split('\n')[0]}`);
  }
  const wrapped = `(async function (it, options) {\n${code}\n})`;
  try {
    new Script(wrapped, { filename: 'template' });
  } catch (error) {
    // V8's stack begins `template:<line>` and that generated line. Each tag's code follows a `__eta.line=<n>` marker.
    const [, at, source = ''] = /^template:(\d+)\n(.*)/.exec((error as Error).stack ?? '') ?? [];
    const generated = wrapped.split('\n');
    const errorIndex = at ? Number(at) - 1 : generated.length - 1;
    const markerAt = (i: number) => Number(/^__eta\.line=(\d+)$/.exec(generated[i] ?? '')?.[1] ?? 0);
    // Stopped at a marker: the tag before it is not finished.
    let index = markerAt(errorIndex) ? errorIndex - 1 : errorIndex;
    while (index > 0 && !markerAt(index)) index--;
    const line = markerAt(index) || 1;
    let reason = (error as Error).message;
    if (reason === 'Unexpected end of input' || /^\} catch \(e\) \{ this\.RuntimeErr/.test(source.trim())) reason = `a block opened here or before is not closed (${reason})`;
    throw new ThemeError(`${file}:${line}: ${reason}`);
  }
}

/** The directory's entries, names sorted. */
const entries = (dir: string) => readdirSync(dir).sort();

/** `resources/` indexed: every file whose path is made of plain names and whose type is known; links only within `root`. */
function indexResources(dir: string, root: string, warn: (message: string) => void): Map<string, string> {
  const index = new Map<string, string>();
  const walk = (folder: string, prefix: string, depth: number) => {
    for (const name of entries(folder)) {
      const path = join(folder, name);
      const rel = prefix ? `${prefix}/${name}` : name;
      if (!RESOURCE_SEGMENT.test(name)) {
        warn(`${path}: not served (a resource's name is letters, digits, ".", "_" and "-", not starting with ".")`);
        continue;
      }
      let real = path;
      if (lstatSync(path).isSymbolicLink()) {
        real = realpathSync(path);
        // A link may lead into a theme's resources (one theme sharing another's images), nowhere else.
        if (!real.startsWith(root + sep) || !/^[^/\\]+[/\\](login|account|email)[/\\]resources([/\\]|$)/.test(real.slice(root.length + 1))) {
          warn(`${path}: not served (a link to outside the theme directory's resources)`);
          continue;
        }
      }
      const stat = statSync(real);
      if (stat.isDirectory()) {
        if (depth < 8) walk(real, rel, depth + 1);
      } else if (stat.isFile()) {
        if (!RESOURCE_TYPES[extname(name).toLowerCase()]) warn(`${path}: not served (not a style sheet, script, image or font)`);
        else if (index.size >= MAX_RESOURCES) warn(`${path}: not served (more than ${MAX_RESOURCES} resources)`);
        else index.set(rel, real);
      }
    }
  };
  walk(dir, '', 0);
  return index;
}

/** `messages/messages_<locale>.properties|json` → texts by locale (`messages_pt_BR` is `pt-BR`). */
function readMessages(dir: string, warn: (message: string) => void): Record<string, Record<string, string>> {
  const messages: Record<string, Record<string, string>> = {};
  for (const name of entries(dir)) {
    const match = /^messages_(.+)\.(properties|json)$/.exec(name);
    const locale = match?.[1].replaceAll('_', '-');
    if (!match || !locale || !LOCALE_TAG.test(locale)) {
      warn(`${join(dir, name)}: not read (a message file is messages_<locale>.properties or .json)`);
      continue;
    }
    const file = join(dir, name);
    let texts: Record<string, unknown>;
    try {
      texts = match[2] === 'json' ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>) : parseProperties(readFileSync(file, 'utf8'));
    } catch (error) {
      throw new ThemeError(`${file}: ${(error as Error).message}`);
    }
    if (!texts || typeof texts !== 'object' || Array.isArray(texts) || Object.values(texts).some((v) => typeof v !== 'string')) {
      throw new ThemeError(`${file}: must be an object of message texts (strings)`);
    }
    messages[locale] = { ...messages[locale], ...(texts as Record<string, string>) };
  }
  return messages;
}

/** The themes of a theme directory; an empty set without one. */
export class Themes {
  private readonly byType: Record<ThemeType, Map<string, Theme>> = { login: new Map(), account: new Map(), email: new Map() };

  /** Reads `themeDir` (null: none); throws ThemeError for what would make a broken page, `warn`s about what it skips. */
  static load(themeDir: string | null, warn: (message: string) => void = () => {}): Themes {
    const themes = new Themes();
    if (!themeDir) return themes;
    const root = resolve(themeDir);
    if (!existsSync(root) || !statSync(root).isDirectory()) throw new ThemeError(`themeDir ${root}: not a directory`);
    const realRoot = realpathSync(root);
    const loose = entries(realRoot).filter((name) => name.endsWith('.eta') || name === 'style.css');
    if (loose.length) {
      throw new ThemeError(
        `themeDir ${root}: ${loose.join(', ')} directly in the theme directory; a theme is now a directory <themeDir>/<name>/login/ with templates/, resources/ and messages/ (move them to <name>/login/templates/ and <name>/login/resources/, and set the realm's loginTheme to <name>)`,
      );
    }
    const raw: { name: string; type: ThemeType; dir: string; parent: string | null; properties: Record<string, string> }[] = [];
    for (const name of entries(realRoot)) {
      const dir = join(realRoot, name);
      if (!statSync(dir).isDirectory()) continue;
      if (!THEME_NAME.test(name)) {
        warn(`${dir}: not a theme (a theme's name is letters, digits, ".", "_" and "-")`);
        continue;
      }
      if (BUILTIN_ALIASES.has(name)) throw new ThemeError(`${dir}: "${name}" is the built-in theme's name; give the theme another`);
      for (const type of THEME_TYPES) {
        const typeDir = join(dir, type);
        if (!existsSync(typeDir) || !statSync(typeDir).isDirectory()) continue;
        const properties = join(typeDir, 'theme.properties');
        const own = existsSync(properties) ? parseProperties(readFileSync(properties, 'utf8')) : {};
        const parent = own.parent?.trim() ?? null;
        raw.push({ name, type, dir: realpathSync(typeDir), parent: parent || null, properties: own });
      }
    }
    for (const entry of raw) {
      const templatesDir = join(entry.dir, 'templates');
      const templates = new Set<string>();
      const mailTemplates = new Set<string>();
      if (existsSync(templatesDir)) {
        if (entry.type === 'email') {
          for (const kind of ['html', 'text'] as const) {
            const kindDir = join(templatesDir, kind);
            if (!existsSync(kindDir) || !statSync(kindDir).isDirectory()) continue;
            for (const file of entries(kindDir)) {
              if (!TEMPLATE_FILE.test(file)) {
                warn(`${join(kindDir, file)}: not a template (a template is <mail>.eta, lower-case letters, digits and "-")`);
                continue;
              }
              checkTemplate(join(kindDir, file), readFileSync(join(kindDir, file), 'utf8'));
              if (!(MAIL_TEMPLATES as readonly string[]).includes(file.slice(0, -4))) warn(`${join(kindDir, file)}: no e-mail of that name (${MAIL_TEMPLATES.join(', ')}); usable as a partial only`);
              mailTemplates.add(`${kind}/${file}`);
            }
          }
          for (const file of entries(templatesDir)) if (file.endsWith('.eta')) warn(`${join(templatesDir, file)}: not used (an e-mail theme's bodies are templates/html/<mail>.eta and templates/text/<mail>.eta)`);
        } else {
          for (const file of entries(templatesDir)) {
            if (!TEMPLATE_FILE.test(file)) {
              warn(`${join(templatesDir, file)}: not a template (a template is <page>.eta, lower-case letters, digits and "-")`);
              continue;
            }
            checkTemplate(join(templatesDir, file), readFileSync(join(templatesDir, file), 'utf8'));
            templates.add(file);
          }
        }
      }
      const resourcesDir = join(entry.dir, 'resources');
      const theme: Theme = {
        name: entry.name,
        type: entry.type,
        chain: [],
        dir: entry.dir,
        templates,
        resources: existsSync(resourcesDir) ? indexResources(resourcesDir, realRoot, warn) : new Map(),
        messages: existsSync(join(entry.dir, 'messages')) ? readMessages(join(entry.dir, 'messages'), warn) : {},
        properties: entry.properties,
        eta: undefined as unknown as Eta,
        mailTemplates,
      };
      themes.byType[entry.type].set(entry.name, theme);
    }
    for (const entry of raw) {
      const theme = themes.byType[entry.type].get(entry.name)!;
      const seen = new Set<string>();
      for (let current: { name: string; parent: string | null } | undefined = entry; current; ) {
        if (seen.has(current.name)) throw new ThemeError(`${join(realRoot, entry.name, entry.type, 'theme.properties')}: its parents name ${current.name} twice (a loop)`);
        seen.add(current.name);
        theme.chain.push(themes.byType[entry.type].get(current.name)!);
        const parent: string | null = current.parent;
        if (!parent || BUILTIN_ALIASES.has(parent)) break;
        current = raw.find((r) => r.type === entry.type && r.name === parent);
        if (!current) throw new ThemeError(`${join(realRoot, entry.name, entry.type, 'theme.properties')}: parent theme "${parent}" not found in ${root}`);
      }
      theme.eta = templateEngine(theme.chain, true);
      if (theme.type === 'email') theme.mailEta = { html: mailEngine(theme.chain, 'html'), text: mailEngine(theme.chain, 'text') };
    }
    return themes;
  }

  /** The theme of a type by name; undefined for the built-in theme and for a name the directory does not have. */
  get(type: ThemeType, name: string | undefined): Theme | undefined {
    return name ? this.byType[type].get(name) : undefined;
  }

  /** Whether a realm may name it: the built-in theme's names, and the directory's themes of the type. */
  has(type: ThemeType, name: string): boolean {
    return BUILTIN_ALIASES.has(name) || this.byType[type].has(name);
  }

  /** The directory's themes of a type, by name. */
  names(type: ThemeType): string[] {
    return [...this.byType[type].keys()];
  }

  /** The locales a theme has texts for, its parents' included. */
  locales(theme: Theme): string[] {
    return [...new Set(theme.chain.flatMap((t) => Object.keys(t.messages)))];
  }
}

/** A theme's texts of one locale (its own over its parents'), or undefined when none of them has the locale. */
export function themeMessages(theme: Theme | undefined, locale: string): Record<string, string> | undefined {
  if (!theme) return undefined;
  const layers = theme.chain.map((t) => t.messages[locale]).filter(Boolean);
  return layers.length ? Object.assign({}, ...layers.reverse()) : undefined;
}

/** A theme's `theme.properties` as Keycloak reads them: its parents', then its own over them (trimmed values). */
export function themeProperties(theme: Theme | undefined): Record<string, string> {
  if (!theme) return {};
  const merged: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const t of [...theme.chain].reverse()) for (const [key, value] of Object.entries(t.properties)) merged[key] = value.trim();
  return merged;
}

/** The file of a theme's resource (its own, else its parents'), or null: never a path made from the request. */
export function themeResource(theme: Theme | undefined, path: string): string | null {
  if (!theme) return null;
  for (const t of theme.chain) {
    const file = t.resources.get(path);
    if (file) return file;
  }
  return null;
}
