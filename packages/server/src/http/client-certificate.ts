import { X509Certificate, createHash } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import type { FastifyRequest } from 'fastify';
import type { ServerConfig } from '../config/index.js';
import { addressMatcher } from './target-guard.js';

/**
 * Keycloak's `x509cert-lookup` SPI: where the client certificate of a request comes from (mutual TLS), for the
 * `client-x509` client authenticator and certificate-bound tokens (RFC 8705).
 *
 * - `default`: the certificate of the TLS connection itself, when the server's socket is a TLS one that verified
 *   it (this server listens on plain HTTP, so behind it there is none);
 * - `haproxy`, `apache`, `nginx`: a TLS-terminating proxy's request header (`x509certLookupSslClientCert`) holding
 *   the certificate as PEM (newlines or spaces), URL-encoded PEM (nginx's `$ssl_client_escaped_cert`) or base64 DER
 *   (HAProxy's `ssl_c_der,base64`), and the chain's other certificates in `<prefix>_0` … `<prefix>_<n-1>`;
 * - `envoy`: Envoy's `x-forwarded-client-cert` (its last element: the one the proxy next to this server added),
 *   `Cert="<URL-encoded PEM>"` and `Chain="…"`.
 *
 * A header is believed only when the request's TCP peer is one of `proxyTrustedAddresses` (the same list Fastify
 * reads X-Forwarded-* by); from anyone else it is ignored, as if absent. The proxy must verify the certificate
 * (nginx `ssl_verify_client on`, …) and overwrite the header on every request: this server checks no chain against a
 * trust store (it has none). A value that is not a certificate is no certificate.
 */

export const X509_LOOKUP_PROVIDERS = ['default', 'haproxy', 'apache', 'nginx', 'envoy'] as const;
export type X509LookupProvider = (typeof X509_LOOKUP_PROVIDERS)[number];

/** The header each proxy provider reads when `x509certLookupSslClientCert` is not set (the names Keycloak's guide uses). */
const DEFAULT_HEADER: Record<Exclude<X509LookupProvider, 'default'>, string> = {
  haproxy: 'ssl_client_cert',
  apache: 'ssl_client_cert',
  nginx: 'ssl-client-cert',
  envoy: 'x-forwarded-client-cert',
};

/** Longest header value read (a certificate chain of a few certificates fits easily; Node's own limit is 16 KiB for all headers). */
const MAX_VALUE = 16_384;

export interface ClientCertificateLookup {
  /** The request's client certificate chain, the client's own first; null when there is none to believe. */
  chain(request: FastifyRequest): X509Certificate[] | null;
}

type LookupConfig = Pick<ServerConfig, 'proxyTrustedAddresses' | 'x509certLookupProvider' | 'x509certLookupSslClientCert' | 'x509certLookupSslCertChainPrefix' | 'x509certLookupCertificateChainLength'>;

const lookups = new WeakMap<object, ClientCertificateLookup>();

/** The lookup the configuration chooses, made once per configuration object. Throws on a trusted-proxy entry that is not an address. */
export function clientCertificateLookup(config: LookupConfig): ClientCertificateLookup {
  let lookup = lookups.get(config);
  if (!lookup) {
    lookup = makeLookup(config);
    lookups.set(config, lookup);
  }
  return lookup;
}

function makeLookup(config: LookupConfig): ClientCertificateLookup {
  const provider = config.x509certLookupProvider as X509LookupProvider;
  if (provider === 'default') return { chain: connectionChain };
  const trusted = addressMatcher(config.proxyTrustedAddresses, 'proxyTrustedAddresses');
  const header = (config.x509certLookupSslClientCert ?? DEFAULT_HEADER[provider]).toLowerCase();
  const prefix = config.x509certLookupSslCertChainPrefix?.toLowerCase() ?? null;
  const chainLength = Math.max(1, config.x509certLookupCertificateChainLength);
  return {
    chain(request) {
      // Only the TCP peer counts: X-Forwarded-For is the proxy's to write, not evidence of who the proxy is.
      if (!trusted(request.raw.socket.remoteAddress)) return null;
      const value = headerValue(request, header);
      if (value === null) return null;
      if (provider === 'envoy') return envoyChain(value, chainLength);
      const leaf = certificateFrom(value);
      if (!leaf) return null;
      const chain = [leaf];
      if (prefix) {
        for (let i = 0; i < chainLength - 1; i++) {
          const next = headerValue(request, `${prefix}_${i}`);
          const cert = next === null ? null : certificateFrom(next);
          if (!cert) break;
          chain.push(cert);
        }
      }
      return chain;
    },
  };
}

function headerValue(request: FastifyRequest, name: string): string | null {
  const value = request.headers[name];
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_VALUE) return null;
  return value;
}

/** The TLS connection's verified peer certificate and its issuers (when the server itself terminates TLS). */
function connectionChain(request: FastifyRequest): X509Certificate[] | null {
  const socket = request.raw.socket as Partial<TLSSocket>;
  if (typeof socket.getPeerX509Certificate !== 'function' || !socket.authorized) return null;
  const leaf = socket.getPeerX509Certificate();
  if (!leaf) return null;
  const chain = [leaf];
  for (let cert = leaf.issuerCertificate; cert && chain.length < 10 && !chain.some((c) => c.fingerprint256 === cert!.fingerprint256); cert = cert.issuerCertificate) chain.push(cert);
  return chain;
}

const PEM = /-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/g;

/** One certificate from a header value: PEM (its line breaks kept, or turned to spaces), URL-encoded PEM, or base64 DER. Null when it is none. */
export function certificateFrom(raw: string): X509Certificate | null {
  let text = raw.trim();
  if (text === '' || text === '(null)') return null;
  if (text.includes('%')) {
    try {
      text = decodeURIComponent(text);
    } catch {
      return null;
    }
  }
  const pem = /-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/.exec(text);
  const body = (pem ? pem[1] : text).replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body)) return null;
  try {
    return new X509Certificate(Buffer.from(body, 'base64'));
  } catch {
    return null;
  }
}

/** Envoy's XFCC: `key="value";…` elements separated by commas; the last element's `Cert` (and `Chain`, the client's first). */
function envoyChain(value: string, chainLength: number): X509Certificate[] | null {
  const elements = value.match(/(?:[^,"]|"[^"]*")+/g) ?? [];
  const last = elements.at(-1);
  if (!last) return null;
  const fields = new Map<string, string>();
  for (const pair of last.match(/(?:[^;"]|"[^"]*")+/g) ?? []) {
    const eq = pair.indexOf('=');
    if (eq < 0) continue;
    fields.set(pair.slice(0, eq).trim().toLowerCase(), pair.slice(eq + 1).trim().replace(/^"(.*)"$/s, '$1'));
  }
  const chainText = fields.get('chain');
  if (chainText !== undefined) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(chainText);
    } catch {
      return null;
    }
    const chain = [...decoded.matchAll(PEM)].slice(0, chainLength).map((m) => certificateFrom(m[0]));
    if (chain.length > 0 && chain.every((c): c is X509Certificate => c !== null)) return chain;
    return null;
  }
  const cert = fields.get('cert');
  const leaf = cert === undefined ? null : certificateFrom(cert);
  return leaf ? [leaf] : null;
}

/** RFC 8705 3.1: the certificate's `x5t#S256` (base64url SHA-256 of its DER). */
export function certificateThumbprint(certificate: X509Certificate): string {
  return createHash('sha256').update(certificate.raw).digest('base64url');
}
