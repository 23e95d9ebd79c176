import { createHash, randomBytes, sign, type KeyObject } from 'node:crypto';

/**
 * A self-signed X.509 certificate for a realm key, as Keycloak keeps one beside each generated RSA key (its
 * JWKS publishes it as `x5c`). Built here as DER with node:crypto (Node has no certificate builder, and one
 * small DER writer is less to trust than a dependency): version 1, subject and issuer `CN=<realm name>`, a random
 * serial, SHA-256 with RSA, valid from a minute ago for ten years.
 */
export const CERTIFICATE_VALIDITY_YEARS = 10;

const tagged = (tag: number, content: Buffer): Buffer => Buffer.concat([Buffer.from([tag]), derLength(content.length), content]);

function derLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) bytes.unshift(n & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

const sequence = (...items: Buffer[]) => tagged(0x30, Buffer.concat(items));
const set = (...items: Buffer[]) => tagged(0x31, Buffer.concat(items));
const utf8String = (text: string) => tagged(0x0c, Buffer.from(text, 'utf8'));
const DER_NULL = Buffer.from([0x05, 0x00]);

function objectIdentifier(dotted: string): Buffer {
  const [first, second, ...rest] = dotted.split('.').map(Number);
  const bytes = [40 * first + second];
  for (const arc of rest) {
    const chunk = [arc & 0x7f];
    for (let n = Math.floor(arc / 128); n > 0; n = Math.floor(n / 128)) chunk.unshift((n & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return tagged(0x06, Buffer.from(bytes));
}

/** RFC 5280 4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050. */
function time(date: Date): Buffer {
  const iso = date.toISOString().replace(/[-:T]/g, '').slice(0, 14); // YYYYMMDDHHMMSS
  return date.getUTCFullYear() < 2050 ? tagged(0x17, Buffer.from(`${iso.slice(2)}Z`, 'ascii')) : tagged(0x18, Buffer.from(`${iso}Z`, 'ascii'));
}

const SHA256_WITH_RSA = sequence(objectIdentifier('1.2.840.113549.1.1.11'), DER_NULL);

/** The certificate's DER for this key pair, self-signed. */
export function selfSignedCertificate(privateKey: KeyObject, publicKey: KeyObject, commonName: string, now = new Date()): Buffer {
  const serial = randomBytes(16);
  serial[0] = (serial[0] & 0x7f) | 0x01; // positive and minimal: no leading zero byte needed
  const name = sequence(set(sequence(objectIdentifier('2.5.4.3'), utf8String(commonName))));
  const notBefore = new Date(now.getTime() - 60_000);
  const notAfter = new Date(now.getTime());
  notAfter.setUTCFullYear(notAfter.getUTCFullYear() + CERTIFICATE_VALIDITY_YEARS);
  const tbs = sequence(
    tagged(0x02, serial),
    SHA256_WITH_RSA,
    name,
    sequence(time(notBefore), time(notAfter)),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
  );
  const signature = sign('sha256', tbs, privateKey);
  return sequence(tbs, SHA256_WITH_RSA, tagged(0x03, Buffer.concat([Buffer.from([0]), signature])));
}

/** The JWK members that carry a certificate (RFC 7517 4.6–4.9): the chain, and its SHA-1 and SHA-256 thumbprints. */
export function certificateJwkMembers(der: Buffer): { x5c: string[]; x5t: string; 'x5t#S256': string } {
  return {
    x5c: [der.toString('base64')],
    x5t: createHash('sha1').update(der).digest('base64url'),
    'x5t#S256': createHash('sha256').update(der).digest('base64url'),
  };
}
