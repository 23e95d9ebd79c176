import { type X509Certificate, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { parseCertificate, parsePublicKey } from './client-keys.js';
import { EC_CURVES, HMAC_ALGS, RSA_ENC_ALGS, RSA_SIGNATURE_ALGS, keycloakKid, parsePrivateKey } from './algorithms.js';
import type { KeyMaterial } from './providers.js';


/**
 * A realm file's key providers (`components["org.keycloak.keys.KeyProvider"]`, Keycloak's export): each checked and
 * ready to store as the same provider with its key material, or, for a generated provider the file gives without
 * its keys (a console export, or masked `**********`), its config to make a new key from, as Keycloak makes one on
 * import. Nothing here is ever logged: the report names a provider by JSON path only, never quotes key material.
 */
export interface ImportedKey {
  path: string;
  providerId: string;
  name: string;
  priority: number;
  enabled: boolean;
  active: boolean;
  /** The file's key, checked; null when a new one is to be made from `config`. */
  material: KeyMaterial | null;
  config: Record<string, string[]>;
}

const MIN_BITS = 2048;
// Keycloak offers 1024–4096 for generated keys; a longer one would make every token slow to sign.
const MAX_BITS = 8192;
const MASK = '**********';
/** Providers whose key is made (or, `java-keystore`, read from its file) from their config when the file gives none. */
const MADE_FROM_CONFIG = ['rsa-generated', 'rsa-enc-generated', 'ecdsa-generated', 'eddsa-generated', 'hmac-generated', 'aes-generated', 'java-keystore'];

/** A component of the file's `org.keycloak.keys.KeyProvider` list. */
interface KeyProviderInput {
  name: string;
  providerId: string;
  config: Record<string, string[]>;
  path: string;
}

/** Thrown inside this module for a provider not taken: the reason, for the report. */
class NotTaken extends Error {}

const first = (config: Record<string, string[]>, name: string): string | undefined => {
  const value = config[name]?.[0];
  return value === undefined || value === '' || value === MASK ? undefined : value;
};

/** A key whose parts do not agree would sign tokens nobody can verify. */
function consistent(privateKey: KeyObject, publicKey: KeyObject): boolean {
  const probe = Buffer.from('realmgate key import');
  const hash = privateKey.asymmetricKeyType === 'ed25519' ? null : 'sha256';
  try {
    return verify(hash, probe, publicKey, sign(hash, probe, privateKey));
  } catch {
    return false;
  }
}

/** The file's certificate (base64 DER), checked to be of `key`; null when it gives none. */
function certificateOf(config: Record<string, string[]>, key: KeyObject): string | null {
  const value = first(config, 'certificate');
  if (!value) return null;
  let x509: X509Certificate;
  try {
    x509 = parseCertificate(value);
  } catch {
    throw new NotTaken('certificate does not parse (base64 DER expected)');
  }
  if (!x509.checkPrivateKey(key)) throw new NotTaken('certificate is not of this privateKey');
  return x509.raw.toString('base64');
}

function oneOf(config: Record<string, string[]>, entry: string, allowed: readonly string[], fallback: string): string {
  const value = first(config, entry) ?? fallback;
  if (!allowed.includes(value)) throw new NotTaken(`${entry} ${JSON.stringify(value.slice(0, 20))} is not one of ${allowed.join(', ')}`);
  return value;
}

function material(key: KeyObject, publicKey: KeyObject, algorithm: string, use: 'sig' | 'enc', certificate: string | null, settings: Record<string, string>): KeyMaterial {
  const kid = keycloakKid(publicKey);
  const members = { kid, alg: algorithm, use };
  return {
    kid,
    algorithm,
    use,
    privateJwk: { ...key.export({ format: 'jwk' }), ...members },
    publicJwk: { ...publicKey.export({ format: 'jwk' }), ...members },
    certificate,
    settings,
  };
}

/** `rsa-generated`, `rsa`, `rsa-enc-generated`: the privateKey (PKCS#1 or PKCS#8) with its certificate. */
function rsaMaterial(providerId: string, config: Record<string, string[]>, privateKey: string): KeyMaterial {
  const enc = providerId === 'rsa-enc-generated';
  const use = enc ? 'enc' : 'sig';
  const algorithm = oneOf(config, 'algorithm', enc ? RSA_ENC_ALGS : RSA_SIGNATURE_ALGS, enc ? 'RSA-OAEP' : 'RS256');
  const keyUse = first(config, 'keyUse');
  if (keyUse !== undefined && keyUse.toLowerCase() !== use) throw new NotTaken(`keyUse ${JSON.stringify(keyUse.slice(0, 20))}: a ${providerId} key is for ${use.toUpperCase()}`);
  const key = parsePrivateKey(privateKey);
  if (!key) throw new NotTaken('privateKey does not parse (base64 DER, PKCS#8 or PKCS#1, expected)');
  if (key.asymmetricKeyType !== 'rsa') throw new NotTaken(`privateKey is not an RSA key (${key.asymmetricKeyType ?? 'unknown type'})`);
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < MIN_BITS) throw new NotTaken(`RSA key of ${bits} bits: at least ${MIN_BITS} are required`);
  if (bits > MAX_BITS) throw new NotTaken(`RSA key of ${bits} bits: at most ${MAX_BITS} are taken`);
  const publicKey = createPublicKey(key);
  if (!consistent(key, publicKey)) throw new NotTaken('privateKey is not a consistent RSA key');
  const certificate = certificateOf(config, key);
  return material(key, publicKey, algorithm, use, certificate, providerId === 'rsa' ? { algorithm } : { algorithm, keySize: String(bits) });
}

/** `ecdsa-generated`, `eddsa-generated`: Keycloak's base64 PKCS#8 private and SPKI public key, of the named curve. */
function curveMaterial(providerId: string, config: Record<string, string[]>, privateValue: string, publicValue: string | undefined): KeyMaterial {
  const ec = providerId === 'ecdsa-generated';
  const prefix = ec ? 'ecdsa' : 'eddsa';
  const curveEntry = `${prefix}EllipticCurveKey`;
  const curve = oneOf(config, curveEntry, ec ? Object.keys(EC_CURVES) : ['Ed25519'], ec ? 'P-256' : 'Ed25519');
  const key = parsePrivateKey(privateValue);
  if (!key) throw new NotTaken(`${prefix}PrivateKey does not parse (base64 PKCS#8 DER expected)`);
  const wanted = ec ? 'ec' : 'ed25519';
  if (key.asymmetricKeyType !== wanted) throw new NotTaken(`${prefix}PrivateKey is not an ${ec ? 'EC' : 'Ed25519'} key (${key.asymmetricKeyType ?? 'unknown type'})`);
  if (ec && key.asymmetricKeyDetails?.namedCurve !== EC_CURVES[curve].node) throw new NotTaken(`${prefix}PrivateKey is not of the curve ${curve} (${curveEntry})`);
  if (!publicValue) throw new NotTaken(`no ${prefix}PublicKey`);
  let publicKey: KeyObject;
  try {
    publicKey = parsePublicKey(publicValue);
  } catch {
    throw new NotTaken(`${prefix}PublicKey does not parse (base64 SPKI DER expected)`);
  }
  if (!publicKey.equals(createPublicKey(key)) || !consistent(key, publicKey)) throw new NotTaken(`${prefix}PublicKey is not of this ${prefix}PrivateKey`);
  const algorithm = ec ? EC_CURVES[curve].alg : 'EdDSA';
  const settings: Record<string, string> = { [curveEntry]: curve };
  if (ec && first(config, 'ecGenerateCertificate') !== undefined) settings.ecGenerateCertificate = String(first(config, 'ecGenerateCertificate') === 'true');
  return material(key, publicKey, algorithm, 'sig', ec ? certificateOf(config, key) : null, settings);
}

/** `hmac-generated`, `aes-generated`: Keycloak's base64url secret under its kid. */
function secretMaterial(providerId: string, config: Record<string, string[]>, secret: string): KeyMaterial {
  const aes = providerId === 'aes-generated';
  const algorithm = aes ? 'AES' : oneOf(config, 'algorithm', HMAC_ALGS, 'HS512');
  const kid = first(config, 'kid');
  if (!kid) throw new NotTaken('no kid');
  if (kid.length > 200) throw new NotTaken('kid is longer than 200 characters');
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(secret)) throw new NotTaken('secret is not base64url');
  const bytes = Buffer.from(secret, 'base64url');
  if (aes ? ![16, 24, 32].includes(bytes.length) : bytes.length < 16) throw new NotTaken(`secret of ${bytes.length} bytes: ${aes ? '16, 24 or 32' : 'at least 16'} are required`);
  const use = aes ? 'enc' : 'sig';
  const privateJwk = { kty: 'oct', k: bytes.toString('base64url'), kid, alg: algorithm, use };
  const secretSize = String(bytes.length);
  return { kid, algorithm, use, privateJwk, publicJwk: null, certificate: null, settings: aes ? { secretSize } : { algorithm, secretSize } };
}

/** The key material a provider's config gives, null when it gives none (a generated provider makes a new one). */
function takeMaterial(component: KeyProviderInput): KeyMaterial | null {
  const { providerId, config } = component;
  switch (providerId) {
    case 'rsa':
    case 'rsa-generated':
    case 'rsa-enc-generated': {
      const privateKey = first(config, 'privateKey');
      if (privateKey) return rsaMaterial(providerId, config, privateKey);
      if (providerId === 'rsa') throw new NotTaken('no privateKey');
      return null;
    }
    case 'ecdsa-generated':
    case 'eddsa-generated': {
      const prefix = providerId === 'ecdsa-generated' ? 'ecdsa' : 'eddsa';
      const privateKey = first(config, `${prefix}PrivateKey`);
      return privateKey ? curveMaterial(providerId, config, privateKey, first(config, `${prefix}PublicKey`)) : null;
    }
    case 'hmac-generated':
    case 'aes-generated': {
      const secret = first(config, 'secret');
      return secret ? secretMaterial(providerId, config, secret) : null;
    }
    case 'java-keystore':
      return null;
    default:
      throw new NotTaken('a key provider this server does not have');
  }
}

function flag(config: Record<string, string[]>, entry: string): boolean {
  const value = first(config, entry) ?? 'true';
  if (value !== 'true' && value !== 'false') throw new NotTaken(`${entry} is not "true" or "false"`);
  return value === 'true';
}

/**
 * The key providers of a realm file, and a report line (JSON path and reason) for each one not taken: a provider this
 * server does not have, and keys that fail a check (does not parse, of another type or curve, RSA under 2048 bits,
 * a public key or certificate of another key, the same key twice). The reasons never quote key material.
 */
export function parseImportedKeyProviders(components: KeyProviderInput[]): { keys: ImportedKey[]; notImported: string[] } {
  const keys: ImportedKey[] = [];
  const notImported: string[] = [];
  for (const component of components) {
    const named = `${component.providerId} ${JSON.stringify(component.name.slice(0, 100))}`;
    try {
      const priorityValue = (first(component.config, 'priority') ?? '0').trim();
      if (!/^-?\d{1,9}$/.test(priorityValue)) throw new NotTaken('priority is not a whole number');
      const enabled = flag(component.config, 'enabled');
      const active = flag(component.config, 'active');
      let taken = takeMaterial(component);
      // A key pair's kid given in the file (this server's export of a key whose kid is not Keycloak's): kept.
      const givenKid = first(component.config, 'kid');
      if (taken?.publicJwk && givenKid !== undefined && givenKid !== taken.kid) {
        if (!/^[A-Za-z0-9._~-]{1,200}$/.test(givenKid)) throw new NotTaken('kid is not 1 to 200 letters, digits or ._~-');
        taken = { ...taken, kid: givenKid, privateJwk: { ...taken.privateJwk, kid: givenKid }, publicJwk: { ...taken.publicJwk, kid: givenKid } };
      }
      if (!taken && !MADE_FROM_CONFIG.includes(component.providerId)) throw new NotTaken('no key');
      const earlier = taken && keys.find((k) => k.material?.kid === taken.kid);
      if (earlier) throw new NotTaken(`the same key as ${earlier.path}`);
      keys.push({ path: component.path, providerId: component.providerId, name: component.name, priority: Number(priorityValue), enabled, active, material: taken, config: component.config });
    } catch (error) {
      if (!(error instanceof NotTaken)) throw error;
      notImported.push(`${component.path} (${named}: ${error.message})`);
    }
  }
  return { keys, notImported };
}
