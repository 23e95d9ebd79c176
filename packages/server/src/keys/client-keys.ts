import { X509Certificate, createHash, createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { OutboundGuard } from '@realmgate/spi';

/**
 * The public keys a client signs its `private_key_jwt` assertions with, from where Keycloak keeps them in the
 * client's attributes: a JWKS URL (`use.jwks.url` "true" and `jwks.url`), a JWKS given as text (`use.jwks.string`
 * and `jwks.string`), or one key (`jwt.credential.certificate`: base64 DER certificate; `jwt.credential.public.key`:
 * base64 SPKI). Nothing here is logged but the URL.
 */

export const CLIENT_KEY_ATTRIBUTES = {
  useJwksUrl: 'use.jwks.url',
  jwksUrl: 'jwks.url',
  useJwksString: 'use.jwks.string',
  jwksString: 'jwks.string',
  certificate: 'jwt.credential.certificate',
  publicKey: 'jwt.credential.public.key',
  kid: 'jwt.credential.kid',
} as const;

/** A client key: the key, and the kid it is found by (null: any kid, as Keycloak's single certificate). */
export interface ClientPublicKey {
  kid: string | null;
  key: KeyObject;
  /** The JWK's `alg`, when it names one: an assertion must then use exactly that algorithm. */
  alg: string | null;
}

/** Thrown for a client key that cannot be used: its message names the problem (never the key). */
export class ClientKeyError extends Error {}

// RSA under 2048 bits is refused as for realm keys (keys/import.ts); EC keys on the three NIST curves, Ed25519.
const MIN_RSA_BITS = 2048;
const MAX_RSA_BITS = 8192;
const CURVES = new Set(['prime256v1', 'secp384r1', 'secp521r1']);

/** The problem with a public key for signing assertions, or null. */
export function publicKeyProblem(key: KeyObject): string | null {
  const type = key.asymmetricKeyType;
  if (type === 'rsa' || type === 'rsa-pss') {
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits < MIN_RSA_BITS) return `an RSA key of ${bits} bits: at least ${MIN_RSA_BITS} are required`;
    if (bits > MAX_RSA_BITS) return `an RSA key of ${bits} bits: at most ${MAX_RSA_BITS} are taken`;
    return null;
  }
  if (type === 'ec') return CURVES.has(key.asymmetricKeyDetails?.namedCurve ?? '') ? null : `an EC key on curve ${key.asymmetricKeyDetails?.namedCurve ?? 'unknown'}: P-256, P-384 or P-521 expected`;
  if (type === 'ed25519') return null;
  return `a key of type ${type ?? 'unknown'}: RSA, EC or Ed25519 expected`;
}

const base64Body = (value: string) => value.replace(/-----(BEGIN|END) [A-Z ]+-----/g, '').replace(/\s+/g, '');

/** A certificate (PEM or base64 DER) and its public key; throws ClientKeyError. */
export function parseCertificate(value: string): X509Certificate {
  try {
    return new X509Certificate(Buffer.from(base64Body(value), 'base64'));
  } catch {
    throw new ClientKeyError('the certificate does not parse (PEM or base64 DER expected)');
  }
}

/** A public key (PEM or base64 SPKI DER); throws ClientKeyError. */
export function parsePublicKey(value: string): KeyObject {
  try {
    return createPublicKey({ key: Buffer.from(base64Body(value), 'base64'), format: 'der', type: 'spki' });
  } catch {
    throw new ClientKeyError('the public key does not parse (PEM or base64 SPKI DER expected)');
  }
}

/** The usable signing keys of a JWKS document (keys for encryption or of unknown types are skipped, as Keycloak). */
export function parseJwks(document: unknown): ClientPublicKey[] {
  const keys = (document as { keys?: unknown } | null)?.keys;
  if (typeof document !== 'object' || document === null || !Array.isArray(keys)) throw new ClientKeyError('not a JWKS (an object with a "keys" list expected)');
  const out: ClientPublicKey[] = [];
  for (const jwk of keys.slice(0, 100) as Record<string, unknown>[]) {
    if (typeof jwk !== 'object' || jwk === null || (jwk.use !== undefined && jwk.use !== 'sig')) continue;
    if (jwk.kty !== 'RSA' && jwk.kty !== 'EC' && jwk.kty !== 'OKP') continue;
    let key: KeyObject;
    try {
      // Only the public members: a JWKS that (wrongly) carries a private key still gives its public one.
      const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...pub } = jwk;
      key = createPublicKey({ key: pub as JsonWebKey, format: 'jwk' });
    } catch {
      continue;
    }
    if (publicKeyProblem(key)) continue;
    out.push({ kid: typeof jwk.kid === 'string' ? jwk.kid : null, key, alg: typeof jwk.alg === 'string' ? jwk.alg : null });
  }
  return out;
}

/** A JWKS given as text (`jwks.string`); throws ClientKeyError. */
export function parseJwksText(text: string): ClientPublicKey[] {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw new ClientKeyError('the JWKS is not JSON');
  }
  return parseJwks(document);
}

export interface ClientKeysOptions {
  /** The server's one outbound target guard (http/target-guard.ts; webhooks and identity providers use it too). */
  guard: OutboundGuard;
  /** Most JWKS documents kept (the least recently used goes first), and most parsed key attribute values. */
  maxEntries?: number;
  /** A fetched JWKS is used this long before it is fetched again. */
  maxAgeMs?: number;
  /** A kid the cached JWKS lacks fetches it again, at most this often per URL (a client rotating its keys). */
  minRefetchMs?: number;
  timeoutMs?: number;
  maxBytes?: number;
}

interface CachedJwks {
  keys: ClientPublicKey[];
  fetchedAt: number;
}

const DEFAULTS = { maxEntries: 1000, maxAgeMs: 5 * 60_000, minRefetchMs: 10_000, timeoutMs: 5000, maxBytes: 256 * 1024 };

/**
 * Clients' keys, with their JWKS URLs fetched through the server's outbound guard (production mode refuses
 * loopback unless `outboundAllow` lists it; link-local and the unspecified address always), cached per URL and
 * bounded. A fetch that is slow, too large, not JSON or not a JWKS is refused (ClientKeyError), never retried in
 * the same request, and a refused fetch is not cached.
 */
export class ClientKeys {
  readonly guard: OutboundGuard;
  private readonly options: typeof DEFAULTS;
  private readonly cache = new Map<string, CachedJwks>();
  private readonly inFlight = new Map<string, Promise<ClientPublicKey[]>>();
  /** Keys parsed from a client's `jwks.string`, certificate or public key, by the attribute and its value. */
  private readonly parsed = new Map<string, ClientPublicKey[]>();
  /** By a client's attributes object (held weakly): the value its keys were parsed from, and those keys. */
  private readonly lastSeen = new WeakMap<object, { attribute: string; value: string; keys: ClientPublicKey[] }>();

  constructor(options: ClientKeysOptions) {
    this.guard = options.guard;
    const { guard: _guard, ...limits } = options;
    this.options = { ...DEFAULTS, ...Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined)) } as typeof DEFAULTS;
  }

  /** The keys of the client's attributes that may verify an assertion with this `kid` (its JWKS refetched once when it lacks the kid). */
  async keysFor(attributes: Record<string, string>, kid: string | undefined): Promise<ClientPublicKey[]> {
    const a = CLIENT_KEY_ATTRIBUTES;
    const matching = (keys: ClientPublicKey[]) => keys.filter((k) => kid === undefined || k.kid === null || k.kid === kid);
    if (attributes[a.useJwksUrl] === 'true') {
      const url = attributes[a.jwksUrl];
      if (!url) throw new ClientKeyError('use.jwks.url is on but jwks.url is empty');
      const cached = this.cache.get(url);
      const now = Date.now();
      if (cached && now - cached.fetchedAt < this.options.maxAgeMs) {
        const found = matching(cached.keys);
        if (found.length || now - cached.fetchedAt < this.options.minRefetchMs) return found;
      }
      return matching(await this.fetchOnce(url));
    }
    if (attributes[a.useJwksString] === 'true') return matching(this.parsedOnce(attributes, a.jwksString, parseJwksText));
    if (attributes[a.certificate]) return this.parsedOnce(attributes, a.certificate, (value) => [{ kid: null, key: parseCertificate(value).publicKey, alg: null }]);
    if (attributes[a.publicKey]) return this.parsedOnce(attributes, a.publicKey, (value) => [{ kid: null, key: parsePublicKey(value), alg: null }]);
    return [];
  }

  /**
   * The keys of a key attribute's value, parsed once per value: found by the value's SHA-256, so a client whose keys
   * change (on any node: its attributes come from the shared configuration cache) finds none of its old keys here,
   * and the old ones are never used again. Bounded as the JWKS documents are; a value that does not parse is not kept.
   * The attributes object last seen (a cached client's) remembers its value and keys: taken only while the value it
   * holds now is that same value, so no hash is computed per assertion.
   */
  private parsedOnce(attributes: Record<string, string>, attribute: string, parse: (value: string) => ClientPublicKey[]): ClientPublicKey[] {
    const value = attributes[attribute] ?? '';
    const seen = this.lastSeen.get(attributes);
    if (seen && seen.attribute === attribute && seen.value === value) return seen.keys;
    const id = `${attribute}\0${createHash('sha256').update(value).digest('base64url')}`;
    let keys = this.parsed.get(id);
    if (!keys) {
      keys = parse(value);
      this.parsed.set(id, keys);
      while (this.parsed.size > this.options.maxEntries) this.parsed.delete(this.parsed.keys().next().value!);
    }
    this.lastSeen.set(attributes, { attribute, value, keys });
    return keys;
  }

  /** How many parsed key configurations are held (for tests). */
  get parsedCount(): number {
    return this.parsed.size;
  }

  /** What the admin API can tell of a JWKS URL without fetching it: null when nothing is wrong so far. */
  urlProblem(url: string): string | null {
    return this.guard.checkUrl(url)?.message ?? null;
  }

  private fetchOnce(url: string): Promise<ClientPublicKey[]> {
    let pending = this.inFlight.get(url);
    if (!pending) {
      pending = this.fetchJwks(url).finally(() => this.inFlight.delete(url));
      this.inFlight.set(url, pending);
    }
    return pending;
  }

  private async fetchJwks(url: string): Promise<ClientPublicKey[]> {
    const problem = this.urlProblem(url);
    if (problem) throw new ClientKeyError(`jwks.url ${problem}`);
    const parsed = new URL(url);
    // A literal address is never looked up: judged here; a name is resolved and pinned by the guard (lookup).
    if (isIP(parsed.hostname.replace(/^\[|\]$/g, ''))) await this.pin(parsed.hostname);
    const text = await this.get(parsed);
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch {
      throw new ClientKeyError('the JWKS URL did not answer JSON');
    }
    const keys = parseJwks(document);
    this.cache.delete(url);
    this.cache.set(url, { keys, fetchedAt: Date.now() });
    while (this.cache.size > this.options.maxEntries) this.cache.delete(this.cache.keys().next().value!);
    return keys;
  }

  private async pin(hostname: string): Promise<string> {
    try {
      return await this.guard.pin(hostname);
    } catch (error) {
      throw new ClientKeyError(`jwks.url: ${(error as Error).message}`);
    }
  }

  private get(url: URL): Promise<string> {
    const { timeoutMs, maxBytes } = this.options;
    const lookup: LookupFunction = (hostname, options, callback) => {
      this.pin(hostname).then(
        (address) => (options.all ? callback(null, [{ address, family: address.includes(':') ? 6 : 4 }]) : callback(null, address, address.includes(':') ? 6 : 4)),
        (error: Error) => callback(error as NodeJS.ErrnoException, '', 4),
      );
    };
    return new Promise((done, fail) => {
      const client = url.protocol === 'https:' ? https : http;
      const request = client.get(url, { lookup, headers: { accept: 'application/json' }, timeout: timeoutMs }, (response) => {
        if (response.statusCode !== 200) {
          response.resume();
          fail(new ClientKeyError(`the JWKS URL answered ${response.statusCode}`));
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) {
            request.destroy(new ClientKeyError(`the JWKS URL answered more than ${maxBytes} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        response.on('end', () => done(Buffer.concat(chunks).toString('utf8')));
        response.on('error', fail);
      });
      // The whole answer within the timeout, not only each pause in it: a server trickling bytes is refused too.
      const timer = setTimeout(() => request.destroy(new ClientKeyError(`the JWKS URL did not answer within ${timeoutMs} ms`)), timeoutMs);
      request.on('timeout', () => request.destroy(new ClientKeyError(`the JWKS URL did not answer within ${timeoutMs} ms`)));
      request.on('error', (error) => fail(error instanceof ClientKeyError ? error : new ClientKeyError(`the JWKS URL could not be fetched (${(error as NodeJS.ErrnoException).code ?? error.message})`)));
      request.on('close', () => clearTimeout(timer));
    });
  }
}

/**
 * What is wrong with the key attributes of a client (400 naming each, nothing written): a JWKS URL the outbound
 * guard refuses without DNS (production: loopback, link-local, …), a certificate or public key that does not parse or
 * is too weak, a JWKS text that is not one. Empty values are fine (nothing configured).
 */
export function clientKeyAttributeProblems(attributes: Readonly<Record<string, string>>, keys: ClientKeys): string[] {
  const a = CLIENT_KEY_ATTRIBUTES;
  const problems: string[] = [];
  const check = (name: string, work: () => void) => {
    if (!attributes[name]) return;
    try {
      work();
    } catch (error) {
      if (!(error instanceof ClientKeyError)) throw error;
      problems.push(`${name}: ${error.message}`);
    }
  };
  check(a.jwksUrl, () => {
    const problem = keys.urlProblem(attributes[a.jwksUrl]);
    if (problem) throw new ClientKeyError(problem);
  });
  const strong = (key: KeyObject) => {
    const problem = publicKeyProblem(key);
    if (problem) throw new ClientKeyError(problem);
  };
  check(a.certificate, () => strong(parseCertificate(attributes[a.certificate]).publicKey));
  check(a.publicKey, () => strong(parsePublicKey(attributes[a.publicKey])));
  check(a.jwksString, () => {
    if (parseJwksText(attributes[a.jwksString]).length === 0) throw new ClientKeyError('the JWKS has no usable signing key (RSA of 2048 bits or more, EC P-256/384/521, Ed25519)');
  });
  return problems;
}
