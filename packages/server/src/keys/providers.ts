import { createPublicKey, type X509Certificate, generateKeyPair as generateKeyPairCallback, randomBytes, type JsonWebKey, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { parseCertificate } from './client-keys.js';
import { EC_CURVES, EC_SIGNATURE_ALGS, HMAC_ALGS, RSA_ENC_ALGS, RSA_SIGNATURE_ALGS, keycloakKid, parsePrivateKey } from './algorithms.js';
import { KEYSTORE_TYPES, KeystoreConfigError, keyFromKeystore } from './java-keystore.js';

export { EC_SIGNATURE_ALGS, RSA_SIGNATURE_ALGS, TOKEN_SIGNATURE_ALGS } from './algorithms.js';

const generateKeyPair = promisify(generateKeyPairCallback);

/**
 * Keycloak's key providers (`org.keycloak.keys.KeyProvider` components) this server runs: what each one's config
 * takes, and the key material it makes. One component holds one key, as Keycloak's generated and imported providers.
 */
export const KEY_PROVIDER_IDS = ['rsa-generated', 'rsa', 'rsa-enc-generated', 'ecdsa-generated', 'eddsa-generated', 'hmac-generated', 'aes-generated', 'java-keystore'] as const;
export type KeyProviderId = (typeof KEY_PROVIDER_IDS)[number];

const RSA_SIZES = ['2048', '3072', '4096'];
const MIN_RSA_BITS = 2048;

/** Thrown for a key provider's config that cannot be used: 400 naming the config entry. */
export class KeyProviderError extends Error {
  constructor(
    readonly entry: string,
    message: string,
  ) {
    super(`config.${entry}: ${message}`);
  }
}

/** The key of one provider, ready to store (JWKs carry kid, alg and use). */
export interface KeyMaterial {
  kid: string;
  algorithm: string;
  use: 'sig' | 'enc';
  privateJwk: JsonWebKey;
  publicJwk: JsonWebKey | null;
  /** base64 DER, when the provider was given one (`rsa`); RSA keys get a self-signed one when stored. */
  certificate: string | null;
  /** The config as it is kept and shown: the provider's own entries, without key material. */
  settings: Record<string, string>;
}

const first = (config: Record<string, string[]>, name: string): string | undefined => config[name]?.[0];

function choice(config: Record<string, string[]>, entry: string, allowed: readonly string[], fallback: string): string {
  const value = first(config, entry) ?? fallback;
  if (!allowed.includes(value)) throw new KeyProviderError(entry, `${JSON.stringify(value.slice(0, 30))} is not one of ${allowed.join(', ')}`);
  return value;
}

// A generated key pair's kid is Keycloak's (SHA-256 of its public key), so an export and re-import keep it; an
// imported `rsa` key and a secret get a random one (the same key may be given twice).
const kidOf = () => randomBytes(24).toString('base64url');

const jwks = (privateKey: KeyObject, publicKey: KeyObject | null, members: { kid: string; alg: string; use: string }) => ({
  privateJwk: { ...privateKey.export({ format: 'jwk' }), ...members },
  publicJwk: publicKey ? { ...publicKey.export({ format: 'jwk' }), ...members } : null,
});

/**
 * The key a provider's config makes: generated for the `*-generated` providers, the given private key (and
 * certificate, checked to be of it) for `rsa`. Refuses, naming the entry, RSA under 2048 bits, an unknown algorithm,
 * curve or size, and a certificate of another key.
 */
export async function keyMaterialFor(providerId: string, config: Record<string, string[]>): Promise<KeyMaterial> {
  switch (providerId as KeyProviderId) {
    case 'rsa-generated':
    case 'rsa-enc-generated': {
      const enc = providerId === 'rsa-enc-generated';
      const algorithm = choice(config, 'algorithm', enc ? RSA_ENC_ALGS : RSA_SIGNATURE_ALGS, enc ? 'RSA-OAEP' : 'RS256');
      const keySize = first(config, 'keySize') ?? '2048';
      if (/^\d+$/.test(keySize) && Number(keySize) < MIN_RSA_BITS) throw new KeyProviderError('keySize', `${keySize} bits: at least ${MIN_RSA_BITS} are required`);
      choice(config, 'keySize', RSA_SIZES, '2048');
      const { privateKey, publicKey } = await generateKeyPair('rsa', { modulusLength: Number(keySize) });
      const kid = keycloakKid(publicKey);
      const use = enc ? 'enc' : 'sig';
      return { kid, algorithm, use, ...jwks(privateKey, publicKey, { kid, alg: algorithm, use }), certificate: null, settings: { algorithm, keySize } };
    }
    case 'rsa': {
      const algorithm = choice(config, 'algorithm', RSA_SIGNATURE_ALGS, 'RS256');
      const pem = first(config, 'privateKey');
      if (!pem) throw new KeyProviderError('privateKey', 'is required');
      const privateKey = parsePrivateKey(pem);
      if (!privateKey || privateKey.asymmetricKeyType !== 'rsa') throw new KeyProviderError('privateKey', 'is not an RSA private key (PEM or base64 DER, PKCS#8 or PKCS#1)');
      const bits = privateKey.asymmetricKeyDetails?.modulusLength ?? 0;
      if (bits < MIN_RSA_BITS) throw new KeyProviderError('privateKey', `an RSA key of ${bits} bits: at least ${MIN_RSA_BITS} are required`);
      let certificate: string | null = null;
      const given = first(config, 'certificate');
      if (given) {
        let x509: X509Certificate;
        try {
          x509 = parseCertificate(given);
        } catch (error) {
          throw new KeyProviderError('certificate', (error as Error).message);
        }
        if (!x509.checkPrivateKey(privateKey)) throw new KeyProviderError('certificate', 'is not of this privateKey');
        certificate = x509.raw.toString('base64');
      }
      const publicKey = createPublicKey(privateKey);
      const kid = kidOf();
      return { kid, algorithm, use: 'sig', ...jwks(privateKey, publicKey, { kid, alg: algorithm, use: 'sig' }), certificate, settings: { algorithm } };
    }
    case 'ecdsa-generated': {
      const curve = choice(config, 'ecdsaEllipticCurveKey', Object.keys(EC_CURVES), 'P-256');
      const { alg, node } = EC_CURVES[curve];
      const ecGenerateCertificate = choice(config, 'ecGenerateCertificate', ['true', 'false'], 'false');
      const { privateKey, publicKey } = await generateKeyPair('ec', { namedCurve: node });
      const kid = keycloakKid(publicKey);
      // The certificate (ecGenerateCertificate) is made when the key is stored, as the RSA keys' are.
      return { kid, algorithm: alg, use: 'sig', ...jwks(privateKey, publicKey, { kid, alg, use: 'sig' }), certificate: null, settings: { ecdsaEllipticCurveKey: curve, ecGenerateCertificate } };
    }
    case 'eddsa-generated': {
      const curve = choice(config, 'eddsaEllipticCurveKey', ['Ed25519'], 'Ed25519');
      const { privateKey, publicKey } = await generateKeyPair('ed25519');
      const kid = keycloakKid(publicKey);
      return { kid, algorithm: 'EdDSA', use: 'sig', ...jwks(privateKey, publicKey, { kid, alg: 'EdDSA', use: 'sig' }), certificate: null, settings: { eddsaEllipticCurveKey: curve } };
    }
    case 'hmac-generated':
    case 'aes-generated': {
      const aes = providerId === 'aes-generated';
      const algorithm = aes ? 'AES' : choice(config, 'algorithm', HMAC_ALGS, 'HS512');
      const sizes = aes ? ['16', '24', '32'] : ['32', '64', '128', '256', '512'];
      const secretSize = choice(config, 'secretSize', sizes, aes ? '16' : '64');
      const kid = kidOf();
      const use = aes ? 'enc' : 'sig';
      const privateJwk = { kty: 'oct', k: randomBytes(Number(secretSize)).toString('base64url'), kid, alg: algorithm, use };
      return { kid, algorithm, use, privateJwk, publicJwk: null, certificate: null, settings: aes ? { secretSize } : { algorithm, secretSize } };
    }
    case 'java-keystore':
      return keystoreMaterial(config);
    default:
      throw new KeyProviderError('providerId', `${JSON.stringify(providerId.slice(0, 40))} is not a key provider Realmgate runs (${KEY_PROVIDER_IDS.join(', ')})`);
  }
}

/**
 * A `java-keystore` provider's key, read from its file (keys/java-keystore.ts): an RSA key (signing, or encryption
 * with `keyUse` enc) of at least 2048 bits, or an EC signing key of the three NIST curves, with the keystore's
 * certificate. The passwords are not kept: the key is (as an imported `rsa` key's), so changing the file, alias or
 * type later takes the passwords again.
 */
async function keystoreMaterial(config: Record<string, string[]>): Promise<KeyMaterial> {
  const given = (entry: string) => {
    const value = first(config, entry);
    return value === undefined || value === '' || value === '**********' ? undefined : value;
  };
  const required = (entry: string) => {
    const value = given(entry);
    if (value === undefined) throw new KeyProviderError(entry, 'is required (the passwords are not kept: give them again when the keystore, alias or type changes)');
    return value;
  };
  const path = required('keystore');
  const storePassword = required('keystorePassword');
  const alias = required('keyAlias');
  const keyPassword = required('keyPassword');
  const keystoreType = given('keystoreType');
  let read: Awaited<ReturnType<typeof keyFromKeystore>>;
  try {
    read = await keyFromKeystore({ path, storePassword, keyPassword, alias, type: keystoreType });
  } catch (error) {
    if (error instanceof KeystoreConfigError) throw new KeyProviderError(error.entry, error.message);
    throw error;
  }
  const { privateKey, certificate } = read;
  const use = choice(config, 'keyUse', ['sig', 'enc'], 'sig') as 'sig' | 'enc';
  let algorithm: string;
  if (privateKey.asymmetricKeyType === 'rsa') {
    const bits = privateKey.asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits < MIN_RSA_BITS) throw new KeyProviderError('keyAlias', `an RSA key of ${bits} bits: at least ${MIN_RSA_BITS} are required`);
    algorithm = use === 'enc' ? choice(config, 'algorithm', RSA_ENC_ALGS, 'RSA-OAEP') : choice(config, 'algorithm', RSA_SIGNATURE_ALGS, 'RS256');
  } else if (privateKey.asymmetricKeyType === 'ec') {
    const curve = Object.values(EC_CURVES).find((c) => c.node === privateKey.asymmetricKeyDetails?.namedCurve);
    if (!curve) throw new KeyProviderError('keyAlias', 'an EC key off the P-256, P-384 and P-521 curves');
    if (use !== 'sig') throw new KeyProviderError('keyUse', 'an EC key signs: "sig"');
    algorithm = choice(config, 'algorithm', [curve.alg], curve.alg);
  } else {
    throw new KeyProviderError('keyAlias', `a ${privateKey.asymmetricKeyType ?? 'unknown'} key: RSA or EC expected`);
  }
  const kid = kidOf();
  const settings: Record<string, string> = { keystore: path, keyAlias: alias, keyUse: use, algorithm, ...(keystoreType ? { keystoreType } : {}) };
  return { kid, algorithm, use, ...jwks(privateKey, certificate.publicKey, { kid, alg: algorithm, use }), certificate: certificate.raw.toString('base64'), settings };
}

/** A config entry as Keycloak's serverinfo describes it (ConfigPropertyRepresentation): the console builds its form from it. */
export interface KeyProviderProperty {
  name: string;
  label: string;
  helpText: string;
  type: 'String' | 'boolean' | 'List' | 'File';
  defaultValue?: string;
  options?: string[];
  secret: boolean;
}

const property = (name: string, label: string, helpText: string, type: KeyProviderProperty['type'], defaultValue?: string, options?: readonly string[], secret = false): KeyProviderProperty => ({
  name,
  label,
  helpText,
  type,
  ...(defaultValue !== undefined ? { defaultValue } : {}),
  ...(options ? { options: [...options] } : {}),
  secret,
});

const COMMON = [
  property('priority', 'Priority', 'Among the active keys of one algorithm, the one of the highest priority signs.', 'String', '0'),
  property('enabled', 'Enabled', 'A disabled key neither signs nor verifies, and is not published.', 'boolean', 'true'),
  property('active', 'Active', 'An active key signs; a passive one only verifies what it signed before.', 'boolean', 'true'),
];
const keySize = property('keySize', 'Key size', 'Bits of the generated RSA key.', 'List', '2048', RSA_SIZES);

/**
 * The key providers as serverinfo's componentTypes describe them to the console (its Keys → Providers → Add
 * provider form): Keycloak's ids, entry names, kinds and defaults, with only the values this server takes as options.
 */
export const KEY_PROVIDER_TYPES: readonly { id: KeyProviderId; helpText: string; properties: KeyProviderProperty[] }[] = [
  { id: 'rsa-generated', helpText: 'Generates an RSA signing key and a self-signed certificate.', properties: [...COMMON, keySize, property('algorithm', 'Algorithm', 'What the key signs with.', 'List', 'RS256', RSA_SIGNATURE_ALGS)] },
  {
    id: 'rsa',
    helpText: 'An RSA signing key you provide (PEM), with its certificate if you have one.',
    properties: [
      ...COMMON,
      property('privateKey', 'Private RSA Key', 'The private key in PEM (PKCS#8 or PKCS#1), at least 2048 bits.', 'File', undefined, undefined, true),
      property('certificate', 'X509 Certificate', 'The certificate of that key in PEM; one is made when none is given.', 'File'),
      property('algorithm', 'Algorithm', 'What the key signs with.', 'List', 'RS256', RSA_SIGNATURE_ALGS),
    ],
  },
  { id: 'rsa-enc-generated', helpText: 'Generates an RSA encryption key (published; this server decrypts nothing with it).', properties: [...COMMON, keySize, property('algorithm', 'Algorithm', 'The key encryption algorithm.', 'List', 'RSA-OAEP', RSA_ENC_ALGS)] },
  { id: 'ecdsa-generated', helpText: 'Generates an elliptic-curve signing key (ES256, ES384 or ES512 by its curve).', properties: [...COMMON, property('ecdsaEllipticCurveKey', 'Elliptic Curve', 'The curve, which decides the algorithm.', 'List', 'P-256', Object.keys(EC_CURVES)), property('ecGenerateCertificate', 'Generate Certificate', 'Make a self-signed certificate for the key: the realm\'s JWKS then carries it as x5c, with its thumbprints.', 'boolean', 'false')] },
  { id: 'eddsa-generated', helpText: 'Generates an Edwards-curve signing key (EdDSA).', properties: [...COMMON, property('eddsaEllipticCurveKey', 'Elliptic Curve', 'The curve.', 'List', 'Ed25519', ['Ed25519'])] },
  { id: 'hmac-generated', helpText: 'Generates an HMAC secret.', properties: [...COMMON, property('secretSize', 'Secret size', 'Bytes of the generated secret.', 'List', '64', ['32', '64', '128', '256', '512']), property('algorithm', 'Algorithm', 'What the secret signs with.', 'List', 'HS512', HMAC_ALGS)] },
  {
    id: 'java-keystore',
    helpText: 'A key and its certificate read from a PKCS12 keystore file on the server, when the provider is saved.',
    properties: [
      ...COMMON,
      property('keystore', 'Keystore', 'Path to the keystore file on the server (PKCS12; JKS is refused).', 'String'),
      property('keystorePassword', 'Keystore Password', 'Password of the keystore (not kept once the key is read).', 'String', undefined, undefined, true),
      property('keystoreType', 'Keystore Type', 'The keystore\'s format.', 'List', 'PKCS12', KEYSTORE_TYPES),
      property('keyAlias', 'Key Alias', 'Alias of the private key in the keystore.', 'String'),
      property('keyPassword', 'Key Password', 'Password of the private key: the keystore password.', 'String', undefined, undefined, true),
      property('keyUse', 'Key use', 'Whether the key signs or encrypts.', 'List', 'sig', ['sig', 'enc']),
      property('algorithm', 'Algorithm', 'What the key signs (or encrypts) with; an EC key\'s is its curve\'s.', 'List', 'RS256', [...RSA_SIGNATURE_ALGS, ...EC_SIGNATURE_ALGS, ...RSA_ENC_ALGS]),
    ],
  },
  { id: 'aes-generated', helpText: 'Generates an AES secret.', properties: [...COMMON, property('secretSize', 'Secret size', 'Bytes of the generated secret.', 'List', '16', ['16', '24', '32'])] },
];

/** Keycloak's KeyType of a stored key, as `GET …/keys` answers it. */
export function keyType(jwk: JsonWebKey): string {
  return jwk.kty === 'oct' ? 'OCT' : (jwk.kty ?? 'RSA');
}

/** The entries of a provider's config that make a new key when they change (size, curve). */
export const KEY_DEFINING_ENTRIES = ['keySize', 'ecdsaEllipticCurveKey', 'eddsaEllipticCurveKey', 'secretSize', 'privateKey', 'certificate', 'keystore', 'keyAlias', 'keystoreType'];
