import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { domainToASCII, fileURLToPath } from 'node:url';

export interface BlocklistSettings {
  /** Domains never blocked, with all their subdomains. */
  allowlist?: Iterable<string>;
  /** Files or http(s) URLs of one domain per line, merged into the list at each refresh. */
  extraSources?: readonly string[];
  /** Time limit for fetching one URL source. */
  sourceTimeoutMs?: number;
}

export interface BlocklistOptions extends BlocklistSettings {
  /** mailchecker's data file; defaults to the installed package's. */
  dataPath?: string;
  /** Largest accepted URL source body. */
  maxSourceBytes?: number;
}

export interface SourceReport {
  source: string;
  domains: number;
  /** Lines that are neither blank, a comment, nor a domain name; skipped. */
  invalid: number;
}

export interface RefreshReport {
  domains: number;
  baseDomains: number;
  sources: SourceReport[];
  durationMs: number;
}

export const DEFAULT_SOURCE_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_SOURCE_BYTES = 16 * 1024 * 1024;
const MAX_DOMAIN_LENGTH = 253;
const LIST_ENTRY = /^(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.)+[a-z0-9-]{2,63}$/;

/** The file mailchecker keeps its list in (its main module, a `new Set([...])` literal). */
export function mailcheckerDataPath(): string {
  return createRequire(import.meta.url).resolve('mailchecker');
}

/**
 * The domain of an address, lower-cased, trailing dot removed, Unicode converted to punycode;
 * null when there is no usable domain (also when longer than a DNS name can be). The local part is only required to be non-empty: judging its
 * syntax is the registration form's job, and ignoring it keeps odd local parts from hiding a domain.
 */
export function emailDomain(email: string): string | null {
  if (typeof email !== 'string') return null;
  const address = email.trim();
  const at = address.lastIndexOf('@');
  if (at <= 0) return null;
  return normalizeDomain(address.slice(at + 1));
}

/** A domain in the form the list stores it, or null when it is not a syntactically usable domain. */
export function normalizeDomain(domain: string): string | null {
  return normalize(domain, true);
}

function normalize(domain: string, convertUnicode: boolean): string | null {
  let end = domain.length;
  if (end > 0 && domain.charCodeAt(end - 1) === 46) end--;
  if (end === 0) return null;
  let upper = false;
  let previousDot = true;
  for (let i = 0; i < end; i++) {
    // Already longer than a DNS name, all in ASCII so far: IDN mapping (should Unicode follow) keeps ASCII
    // characters and only adds, so the answer is null; stop here rather than scan a huge input to its end.
    if (i === MAX_DOMAIN_LENGTH) return null;
    const c = domain.charCodeAt(i);
    if (c === 46) {
      if (previousDot) return null;
      previousDot = true;
      continue;
    }
    previousDot = false;
    if (c <= 32 || c === 127) return null;
    if (c > 127) {
      if (!convertUnicode) return null;
      // Rare path: UTS #46 mapping also folds full-width letters and ideographic dots, which would
      // otherwise slip a listed domain past the check.
      const ascii = domainToASCII(domain);
      return ascii === '' ? null : normalize(ascii, false);
    }
    if (c >= 65 && c <= 90) upper = true;
  }
  // Longer is no DNS name; the bound also keeps the suffix lookups cheap.
  if (previousDot || end > MAX_DOMAIN_LENGTH) return null;
  const trimmed = end === domain.length ? domain : domain.slice(0, end);
  return upper ? trimmed.toLowerCase() : trimmed;
}

/**
 * A list or allowlist entry (`*.` prefix allowed) as stored, or null when it is not a domain of at least
 * two labels: a bare TLD would block a whole top-level domain.
 */
export function normalizeListEntry(entry: string): string | null {
  let value = entry.trim();
  if (value.startsWith('*.')) value = value.slice(2);
  const domain = normalizeDomain(value);
  return domain !== null && LIST_ENTRY.test(domain) ? domain : null;
}

/** True when `domain` or one of its parent domains is in `set`; O(labels). */
function matches(set: ReadonlySet<string>, domain: string): boolean {
  let from = 0;
  for (;;) {
    const dot = domain.indexOf('.', from);
    // Entries have two labels at least, so the last label alone is never looked up.
    if (dot < 0) return false;
    if (set.has(from === 0 ? domain : domain.slice(from))) return true;
    from = dot + 1;
  }
}

function parseMailcheckerData(text: string, path: string): string[] {
  const literal = /new Set\(\s*(\[[\s\S]*?\])\s*\)/.exec(text);
  let parsed: unknown;
  try {
    parsed = literal ? JSON.parse(literal[1]) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((d) => typeof d === 'string')) {
    throw new Error(`no domain list found in ${path} (expected mailchecker's "new Set([...])" literal)`);
  }
  return parsed as string[];
}

function parseSourceText(text: string): { domains: string[]; invalid: number } {
  const domains: string[] = [];
  let invalid = 0;
  for (const line of text.split('\n')) {
    const hash = line.indexOf('#');
    const content = (hash < 0 ? line : line.slice(0, hash)).trim();
    if (content === '') continue;
    const domain = normalizeListEntry(content);
    if (domain === null) invalid++;
    else domains.push(domain);
  }
  return { domains, invalid };
}

/** The source as safe to show in messages: a URL without its credentials. */
function describeSource(source: string): string {
  if (!/^https?:\/\//i.test(source)) return source;
  try {
    const url = new URL(source);
    url.username = '';
    url.password = '';
    return url.href;
  } catch {
    return source;
  }
}

/** Throws when `source` is neither an http(s) URL, a file: URL, nor a path. */
export function checkSource(source: string): void {
  if (typeof source !== 'string' || source.trim() === '') throw new Error('a source must be a non-empty string');
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(source)?.[1]?.toLowerCase();
  if (scheme === undefined) return;
  if (scheme !== 'http' && scheme !== 'https' && scheme !== 'file') {
    throw new Error(`"${describeSource(source)}" is neither an http(s) URL nor a file`);
  }
  try {
    if (scheme === 'file') fileURLToPath(source);
    else new URL(source);
  } catch {
    throw new Error(`"${describeSource(source)}" is not a valid URL`);
  }
}

function normalizeAllowlist(entries: Iterable<string>): Set<string> {
  const set = new Set<string>();
  for (const entry of entries) {
    const domain = typeof entry === 'string' ? normalizeListEntry(entry) : null;
    if (domain === null) throw new Error(`allowlist: "${String(entry)}" is not a domain name`);
    set.add(domain);
  }
  return set;
}

/**
 * A set of disposable-e-mail domains. Lookups read whichever set is current; a refresh builds a complete
 * new set aside and replaces the reference in one assignment, so no lookup ever sees a partial list.
 */
export class Blocklist {
  readonly #dataPath: string;
  readonly #maxSourceBytes: number;
  #domains: Set<string>;
  #allowlist: Set<string> = new Set();
  #extraSources: readonly string[] = [];
  #sourceTimeoutMs = DEFAULT_SOURCE_TIMEOUT_MS;
  #running: Promise<number> | null = null;
  #pending: Promise<number> | null = null;
  #lastRefresh: RefreshReport | null = null;

  /** Loads mailchecker's data synchronously, so the list is usable at once; extra sources wait for `refresh()`. */
  constructor(options: BlocklistOptions = {}) {
    this.#dataPath = options.dataPath ?? mailcheckerDataPath();
    this.#maxSourceBytes = options.maxSourceBytes ?? DEFAULT_MAX_SOURCE_BYTES;
    this.configure(options);
    const base = parseMailcheckerData(readFileSync(this.#dataPath, 'utf8'), this.#dataPath);
    this.#domains = new Set();
    for (const entry of base) {
      const domain = normalizeListEntry(entry);
      if (domain !== null) this.#domains.add(domain);
    }
  }

  /** Number of blocked domains (the allowlist is not subtracted). */
  get size(): number {
    return this.#domains.size;
  }

  /** What the last successful refresh merged, or null before the first. */
  get lastRefresh(): RefreshReport | null {
    return this.#lastRefresh;
  }

  /** The allowlist applies at once; extra sources at the next refresh. Throws on an invalid entry. */
  configure(settings: BlocklistSettings): void {
    const allowlist = settings.allowlist === undefined ? this.#allowlist : normalizeAllowlist(settings.allowlist);
    const extraSources = settings.extraSources ?? this.#extraSources;
    for (const source of extraSources) {
      try {
        checkSource(source);
      } catch (error) {
        throw new Error(`extraSources: ${(error as Error).message}`);
      }
    }
    const timeout = settings.sourceTimeoutMs ?? this.#sourceTimeoutMs;
    if (!Number.isInteger(timeout) || timeout <= 0) {
      throw new Error(`sourceTimeoutMs: ${String(timeout)} is not a positive integer`);
    }
    this.#allowlist = allowlist;
    this.#extraSources = [...extraSources];
    this.#sourceTimeoutMs = timeout;
  }

  /** True means reject: the address's domain or a parent domain is listed and not allowlisted. Never throws. */
  isDisposable(email: string): boolean {
    const domain = emailDomain(email);
    if (domain === null) return false;
    if (!matches(this.#domains, domain)) return false;
    return this.#allowlist.size === 0 || !matches(this.#allowlist, domain);
  }

  /**
   * Rebuilds the list from mailchecker's file (read again from disk) and the extra sources, then swaps it
   * in. Resolves to the new size; on failure rejects and keeps the current list. Calls made while one runs
   * share a single follow-up rebuild, so they all see data at least as new as their call.
   */
  refresh(): Promise<number> {
    if (this.#running === null) return this.#startRefresh();
    this.#pending ??= this.#running
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        this.#pending = null;
        return this.#startRefresh();
      });
    return this.#pending;
  }

  #startRefresh(): Promise<number> {
    const run = this.#rebuild().finally(() => {
      if (this.#running === run) this.#running = null;
    });
    this.#running = run;
    return run;
  }

  async #rebuild(): Promise<number> {
    const started = performance.now();
    const extraSources = this.#extraSources;
    const [baseText, ...sourceTexts] = await Promise.all([
      readFile(this.#dataPath, 'utf8'),
      ...extraSources.map((source) => this.#readSource(source)),
    ]);
    const next = new Set<string>();
    for (const entry of parseMailcheckerData(baseText, this.#dataPath)) {
      const domain = normalizeListEntry(entry);
      if (domain !== null) next.add(domain);
    }
    const baseDomains = next.size;
    const sources = sourceTexts.map((text, i) => {
      const source = describeSource(extraSources[i]);
      const { domains, invalid } = parseSourceText(text);
      // An error page served with status 200 must not pass for an (empty) list.
      if (domains.length === 0 && invalid > 0) throw new Error(`${source}: no domain names found`);
      for (const domain of domains) next.add(domain);
      return { source, domains: domains.length, invalid };
    });
    this.#domains = next;
    this.#lastRefresh = { domains: next.size, baseDomains, sources, durationMs: performance.now() - started };
    return next.size;
  }

  async #readSource(source: string): Promise<string> {
    const shown = describeSource(source);
    try {
      if (!/^https?:\/\//i.test(source)) {
        return await readFile(/^file:\/\//i.test(source) ? fileURLToPath(source) : source, 'utf8');
      }
      const url = new URL(source);
      const headers: Record<string, string> = {};
      // fetch refuses URLs with credentials; a list behind basic auth gets them as a header instead.
      if (url.username !== '' || url.password !== '') {
        const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
        headers.authorization = `Basic ${Buffer.from(credentials).toString('base64')}`;
        url.username = '';
        url.password = '';
      }
      const response = await fetch(url, { headers, signal: AbortSignal.timeout(this.#sourceTimeoutMs) });
      if (!response.ok || response.body === null) {
        await response.body?.cancel();
        throw new Error(`HTTP ${response.status}`);
      }
      const reader = response.body.getReader();
      const chunks: Uint8Array[] = [];
      let total = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        total += value.byteLength;
        if (total > this.#maxSourceBytes) {
          await reader.cancel().catch(() => undefined);
          throw new Error(`larger than ${this.#maxSourceBytes} bytes`);
        }
        chunks.push(value);
      }
      return Buffer.concat(chunks).toString('utf8');
    } catch (error) {
      const reason = error instanceof Error && error.name === 'TimeoutError' ? 'timed out' : (error as Error).message;
      throw new Error(`extra source ${shown}: ${reason}`, { cause: error });
    }
  }
}

/** The process-wide list behind the module functions and the server's providers. */
export const defaultBlocklist = new Blocklist();

/** True means reject: the domain or one of its parent domains is a known disposable-e-mail domain. */
export function isDisposableEmail(email: string): boolean {
  return defaultBlocklist.isDisposable(email);
}

/** Rebuilds the process-wide list from the data on disk; resolves to its new size. */
export function refresh(): Promise<number> {
  return defaultBlocklist.refresh();
}

/** Number of domains in the process-wide list. */
export function size(): number {
  return defaultBlocklist.size;
}
