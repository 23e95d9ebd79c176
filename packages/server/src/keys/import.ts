import { type X509Certificate, createHash, createPrivateKey, createPublicKey, sign, verify, type JsonWebKey, type KeyObject } from 'node:crypto';
import { parseCertificate } from './client-keys.js';

/**
 * A realm file's RSA signing key (Keycloak's `rsa-generated` or `rsa` key provider with its `privateKey`), checked and
 * ready to store as a realm key. Nothing here is ever logged: the report names a key by JSON path only.
 */
export interface ImportedSigningKey {
  /** Keycloak's kid for the key: base64url of the SHA-256 of its public key (SPKI DER), KeyUtils.createKeyId. */
  kid: string;
  path: string;
  privateJwk: JsonWebKey;
  publicJwk: JsonWebKey;
  /** The file's certificate (base64 DER), checked to be of this key; null when the file gives none. */
  certificate: string | null;
  active: boolean;
  priority: number;
  /** The component's provider (`rsa-generated` or `rsa`) and name, kept with the key. */
  providerId: string;
  name: string;
}

const ALGORITHM = 'RS256';
const MIN_BITS = 2048;
// Keycloak offers 1024–4096 for generated keys; a longer one would make every token slow to sign.
const MAX_BITS = 8192;

/** Why a provider this server has no counterpart for is not taken (by providerId). */
const NOT_TAKEN: Record<string, string> = {
  'hmac-generated': 'this server derives its HS512 refresh-token key from the realm\'s RSA key',
  'aes-generated': 'this server derives its own secrets from the realm\'s RSA key',
  'rsa-enc-generated': 'an encryption key: this server decrypts nothing',
  'ecdsa-generated': 'only RS256 signing keys are taken',
  'eddsa-generated': 'only RS256 signing keys are taken',
  'java-keystore': 'keystore files are not read',
};

/** A component of the file's `org.keycloak.keys.KeyProvider` list. */
interface KeyProviderInput {
  name: string;
  providerId: string;
  config: Record<string, string[]>;
  path: string;
}

const first = (config: Record<string, string[]>, name: string): string | undefined => config[name]?.[0];

/** The private key of a config value: base64 DER (PKCS#8 or PKCS#1), with or without its PEM armour; null if none parses. */
export function parsePrivateKey(value: string): KeyObject | null {
  const body = value.replace(/-----(BEGIN|END) [A-Z ]+-----/g, '').replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body)) return null;
  const der = Buffer.from(body, 'base64');
  for (const type of ['pkcs8', 'pkcs1'] as const) {
    try {
      return createPrivateKey({ key: der, format: 'der', type });
    } catch {
      // the other encoding, or none
    }
  }
  return null;
}

/** Why the key of an `rsa-generated`/`rsa` provider is not taken, or the key ready to store. */
function takeRsaKey(component: KeyProviderInput): ImportedSigningKey | string {
  const { config } = component;
  const privateKey = first(config, 'privateKey');
  if (!privateKey) return 'no privateKey (an export without keys): the realm gets a generated key, as Keycloak generates one';
  if (first(config, 'enabled') === 'false') return 'enabled is false: Keycloak neither signs nor verifies with it';
  const algorithm = first(config, 'algorithm') ?? ALGORITHM;
  if (algorithm !== ALGORITHM) return `algorithm ${JSON.stringify(algorithm.slice(0, 20))}: only RS256 keys are taken`;
  const keyUse = first(config, 'keyUse');
  if (keyUse !== undefined && keyUse.toLowerCase() !== 'sig') return `keyUse ${JSON.stringify(keyUse.slice(0, 20))}: only signing keys are taken`;
  const priorityValue = first(config, 'priority') ?? '0';
  if (!/^-?\d{1,18}$/.test(priorityValue.trim())) return 'priority is not a whole number';
  const key = parsePrivateKey(privateKey);
  if (!key) return 'privateKey does not parse (base64 DER, PKCS#8 or PKCS#1, expected)';
  if (key.asymmetricKeyType !== 'rsa') return `privateKey is not an RSA key (${key.asymmetricKeyType ?? 'unknown type'})`;
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < MIN_BITS) return `RSA key of ${bits} bits: at least ${MIN_BITS} are required`;
  if (bits > MAX_BITS) return `RSA key of ${bits} bits: at most ${MAX_BITS} are taken`;
  const publicKey = createPublicKey(key);
  // A key whose parts do not agree would sign tokens nobody can verify.
  const probe = Buffer.from('realmgate key import');
  let agrees = false;
  try {
    agrees = verify('sha256', probe, publicKey, sign('sha256', probe, key));
  } catch {
    agrees = false;
  }
  if (!agrees) return 'privateKey is not a consistent RSA key';
  let certificate: string | null = null;
  const certificateValue = first(config, 'certificate');
  if (certificateValue) {
    let x509: X509Certificate;
    try {
      x509 = parseCertificate(certificateValue);
    } catch {
      return 'certificate does not parse (base64 DER expected)';
    }
    if (!x509.checkPrivateKey(key)) return 'certificate is not of this privateKey';
    certificate = x509.raw.toString('base64');
  }
  const kid = createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('base64url');
  const members = { kid, alg: ALGORITHM, use: 'sig' };
  return {
    kid,
    path: component.path,
    privateJwk: { ...key.export({ format: 'jwk' }), ...members },
    publicJwk: { ...publicKey.export({ format: 'jwk' }), ...members },
    certificate,
    active: first(config, 'active') !== 'false',
    priority: Number(priorityValue.trim()),
    providerId: component.providerId,
    name: component.name,
  };
}

/**
 * The RSA signing keys of a realm file's key providers (`components["org.keycloak.keys.KeyProvider"]`), and a report line (JSON path and reason) for each provider
 * not taken: HMAC, AES, EC and encryption keys, other algorithms, and keys that fail a check (does not parse, not
 * RSA, under 2048 bits, certificate of another key, the same key twice). The reasons never quote key material.
 */
export function parseImportedKeyProviders(components: KeyProviderInput[]): { keys: ImportedSigningKey[]; notImported: string[] } {
  const keys: ImportedSigningKey[] = [];
  const notImported: string[] = [];
  for (const component of components) {
    const named = `${component.providerId} ${JSON.stringify(component.name.slice(0, 100))}`;
    let outcome: ImportedSigningKey | string;
    if (component.providerId === 'rsa-generated' || component.providerId === 'rsa') outcome = takeRsaKey(component);
    else outcome = NOT_TAKEN[component.providerId] ?? 'a key provider this server does not have';
    if (typeof outcome !== 'string') {
      const key = outcome;
      const earlier = keys.find((k) => k.kid === key.kid);
      if (!earlier) {
        keys.push(key);
        continue;
      }
      outcome = `the same key as ${earlier.path}`;
    }
    notImported.push(`${component.path} (${named}: ${outcome})`);
  }
  return { keys, notImported };
}
