import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { open } from 'node:fs/promises';
import type forge from 'node-forge';
import { forgeLibrary, MAX_KEYSTORE_BYTES } from './keystore.js';

/**
 * Keycloak's `java-keystore` key provider: a key and its certificate read from a keystore file on the server (`keystore`
 * path, `keystorePassword`, `keyAlias`, `keyPassword`). PKCS#12 is read (node-forge); Java's JKS and JCEKS and Bouncy
 * Castle's BCFKS are not (no kept library reads them): refused naming the format, with the keytool line that converts
 * the file. The file is read when the provider is created or changed (and when a realm file brings one); the key is
 * then kept like an imported `rsa` key, so every node signs alike without the file. Errors name the file, never
 * its content or the passwords.
 */

export const KEYSTORE_TYPES = ['PKCS12'] as const;

/** A refusal of the provider's config: the entry named and why (a 400). */
export class KeystoreConfigError extends Error {
  constructor(
    readonly entry: string,
    message: string,
  ) {
    super(message);
  }
}

const der = (forge: typeof import('node-forge'), asn1: forge.asn1.Asn1) => Buffer.from(forge.asn1.toDer(asn1).getBytes(), 'binary');

/** The file's bytes: a regular file of at most MAX_KEYSTORE_BYTES, else a refusal naming it. */
async function readKeystore(path: string): Promise<Buffer> {
  const named = JSON.stringify(path.slice(0, 300));
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    throw new KeystoreConfigError('keystore', `the file ${named} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new KeystoreConfigError('keystore', `${named} is not a file`);
    if (stat.size > MAX_KEYSTORE_BYTES) throw new KeystoreConfigError('keystore', `the file ${named} is larger than ${MAX_KEYSTORE_BYTES} bytes: not a keystore of one key`);
    const buffer = Buffer.alloc(stat.size);
    await handle.read(buffer, 0, stat.size, 0);
    return buffer;
  } finally {
    await handle.close();
  }
}

/** Java's own formats, by their magic numbers: refused by name. */
function javaFormat(file: Buffer): string | null {
  const magic = file.length >= 4 ? file.readUInt32BE(0) : 0;
  if (magic === 0xfeedfeed) return 'JKS';
  if (magic === 0xcececece) return 'JCEKS';
  return null;
}

/**
 * The private key and certificate (DER) under `keyAlias` in the keystore file at `path`. One password opens a
 * PKCS#12 file here (node-forge checks the store's MAC and decrypts the key with it), so `keyPassword` must be the
 * store password, as in a keystore keytool or openssl wrote with one password.
 */
export async function keyFromKeystore(config: { path: string; storePassword: string; keyPassword: string; alias: string; type?: string }): Promise<{ privateKey: KeyObject; certificate: X509Certificate }> {
  if (config.type !== undefined && !(KEYSTORE_TYPES as readonly string[]).includes(config.type)) {
    throw new KeystoreConfigError('keystoreType', `${JSON.stringify(config.type.slice(0, 20))} keystores are not read: only PKCS12 (convert with keytool -importkeystore -deststoretype PKCS12)`);
  }
  const named = JSON.stringify(config.path.slice(0, 300));
  const file = await readKeystore(config.path);
  const java = javaFormat(file);
  if (java) throw new KeystoreConfigError('keystore', `the file ${named} is a ${java} keystore: only PKCS12 is read (convert it with keytool -importkeystore -deststoretype PKCS12)`);
  if (config.keyPassword !== config.storePassword) throw new KeystoreConfigError('keyPassword', 'must be the keystore password: a key under a password of its own is not read');
  const forge = await forgeLibrary();
  let p12: forge.pkcs12.Pkcs12Pfx;
  try {
    p12 = forge.pkcs12.pkcs12FromAsn1(forge.asn1.fromDer(forge.util.createBuffer(file.toString('binary'))), config.storePassword);
  } catch {
    throw new KeystoreConfigError('keystore', `the file ${named} does not open: not PKCS12, or the keystorePassword is wrong`);
  }
  const named2 = (bag: forge.pkcs12.Bag) => bag.attributes.friendlyName?.includes(config.alias) ?? false;
  const keyBags = [forge.pki.oids.pkcs8ShroudedKeyBag, forge.pki.oids.keyBag].flatMap((type) => p12.getBags({ bagType: type })[type] ?? []);
  const keyBag = keyBags.find(named2);
  if (!keyBag) throw new KeystoreConfigError('keyAlias', `the keystore ${named} has no key named ${JSON.stringify(config.alias.slice(0, 64))}`);
  const certBags = p12.getBags({ bagType: forge.pki.oids.certBag })[forge.pki.oids.certBag] ?? [];
  const localKeyId = keyBag.attributes.localKeyId?.[0];
  const certBag = certBags.find(named2) ?? certBags.find((bag) => localKeyId !== undefined && bag.attributes.localKeyId?.[0] === localKeyId);
  if (!certBag) throw new KeystoreConfigError('keyAlias', `the keystore ${named} has no certificate for the key ${JSON.stringify(config.alias.slice(0, 64))}`);
  let privateKey: KeyObject;
  let certificate: X509Certificate;
  try {
    // node-forge decodes RSA keys and certificates itself; others (EC) it leaves as ASN.1, which node:crypto reads.
    const keyInfo = keyBag.key ? forge.pki.wrapRsaPrivateKey(forge.pki.privateKeyToAsn1(keyBag.key)) : keyBag.asn1;
    privateKey = createPrivateKey({ key: der(forge, keyInfo), format: 'der', type: 'pkcs8' });
    certificate = new X509Certificate(certBag.cert ? der(forge, forge.pki.certificateToAsn1(certBag.cert)) : der(forge, certBag.asn1));
  } catch {
    throw new KeystoreConfigError('keystore', `the key ${JSON.stringify(config.alias.slice(0, 64))} in ${named} does not parse`);
  }
  if (!certificate.checkPrivateKey(privateKey)) throw new KeystoreConfigError('keystore', `the certificate of ${JSON.stringify(config.alias.slice(0, 64))} in ${named} is not of its key`);
  return { privateKey, certificate };
}
