import { createHash, randomBytes, sign, type KeyObject } from 'node:crypto';

/**
 * A self-signed X.509 certificate for a realm key, as Keycloak keeps one beside each generated RSA key (its
 * JWKS publishes it as `x5c`). Built here as DER with node:crypto (Node has no certificate builder, and one
 * small DER writer is less to trust than a dependency): version 1, subject and issuer `CN=<realm name>`, a random
 * serial, SHA-256 with RSA (ECDSA with the curve's hash for an EC key, Ed25519 for an EdDSA one), valid from a
 * minute ago for ten years.
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
// RFC 5758 3.2 and RFC 8410 3: no parameters. An EC key signs with the hash of its curve's size, as Keycloak's.
const EC_SIGNATURES: Record<string, { hash: string; id: Buffer }> = {
  prime256v1: { hash: 'sha256', id: sequence(objectIdentifier('1.2.840.10045.4.3.2')) },
  secp384r1: { hash: 'sha384', id: sequence(objectIdentifier('1.2.840.10045.4.3.3')) },
  secp521r1: { hash: 'sha512', id: sequence(objectIdentifier('1.2.840.10045.4.3.4')) },
};
const ED25519 = { hash: null, id: sequence(objectIdentifier('1.3.101.112')) };

/** The signature algorithm a key signs its certificate with: SHA-256 with RSA, ECDSA by its curve, or Ed25519. */
function signatureOf(privateKey: KeyObject): { hash: string | null; id: Buffer } {
  if (privateKey.asymmetricKeyType === 'ec') {
    const found = EC_SIGNATURES[privateKey.asymmetricKeyDetails?.namedCurve ?? ''];
    if (!found) throw new Error('no certificate for an EC key of this curve');
    return found;
  }
  if (privateKey.asymmetricKeyType === 'ed25519') return ED25519;
  return { hash: 'sha256', id: SHA256_WITH_RSA };
}

/** The certificate's DER for this key pair, self-signed. */
export function selfSignedCertificate(privateKey: KeyObject, publicKey: KeyObject, commonName: string, now = new Date()): Buffer {
  const serial = randomBytes(16);
  serial[0] = (serial[0] & 0x7f) | 0x01; // positive and minimal: no leading zero byte needed
  const name = sequence(set(sequence(objectIdentifier('2.5.4.3'), utf8String(commonName))));
  const notBefore = new Date(now.getTime() - 60_000);
  const notAfter = new Date(now.getTime());
  notAfter.setUTCFullYear(notAfter.getUTCFullYear() + CERTIFICATE_VALIDITY_YEARS);
  const algorithm = signatureOf(privateKey);
  const tbs = sequence(
    tagged(0x02, serial),
    algorithm.id,
    name,
    sequence(time(notBefore), time(notAfter)),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
  );
  const signature = sign(algorithm.hash, tbs, privateKey);
  return sequence(tbs, algorithm.id, tagged(0x03, Buffer.concat([Buffer.from([0]), signature])));
}

/** The JWK members that carry a certificate (RFC 7517 4.6–4.9): the chain, and its SHA-1 and SHA-256 thumbprints. */
export function certificateJwkMembers(der: Buffer): { x5c: string[]; x5t: string; 'x5t#S256': string } {
  return {
    x5c: [der.toString('base64')],
    x5t: createHash('sha1').update(der).digest('base64url'),
    'x5t#S256': createHash('sha256').update(der).digest('base64url'),
  };
}
