import type { KeyObject } from 'node:crypto';
import type forge from 'node-forge';
import { ClientKeyError } from './client-keys.js';

/**
 * PKCS#12 keystores, the one keystore format this server reads and writes (node-forge does the ASN.1 and the
 * password-based encryption): what the console's client Keys tab downloads after "Generate new keys" and imports.
 * Java's JKS and Bouncy Castle's BCFKS are not supported (serverinfo does not offer them). One password protects
 * the store and its key, as most PKCS#12 tools expect.
 */

export const KEYSTORE_FORMATS = ['PKCS12'] as const;

/** Bounded: a keystore holds a key and a few certificates, never more. */
export const MAX_KEYSTORE_BYTES = 64 * 1024;

/** node-forge when a keystore is first read or written: most processes never do, and each paid for its import. */
let library: Promise<typeof forge> | undefined;
export const forgeLibrary = () => (library ??= import('node-forge').then((module) => module.default));

const toForgeCertificate = (forge: typeof import('node-forge'), der: Buffer) => forge.pki.certificateFromAsn1(forge.asn1.fromDer(forge.util.createBuffer(der.toString('binary'))));

/**
 * A PKCS#12 file holding `privateKey` with its certificate under `alias`, then `trusted` certificates (the realm's,
 * as Keycloak adds it) in the same chain.
 */
export async function pkcs12Keystore(entry: { alias: string; privateKey: KeyObject; certificate: Buffer }, password: string, trusted: Buffer[] = []): Promise<Buffer> {
  const forge = await forgeLibrary();
  const key = forge.pki.privateKeyFromPem(entry.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
  const certificates = [entry.certificate, ...trusted].map((der) => toForgeCertificate(forge, der));
  const p12 = forge.pkcs12.toPkcs12Asn1(key, certificates, password, { algorithm: 'aes256', friendlyName: entry.alias, generateLocalKeyId: true });
  return Buffer.from(forge.asn1.toDer(p12).getBytes(), 'binary');
}

/**
 * The certificate (DER) of a PKCS#12 file: the one named `alias` when given, else the first. Throws ClientKeyError
 * for a file that does not parse, a wrong password, or no certificate.
 */
export async function certificateFromPkcs12(file: Buffer, password: string, alias?: string): Promise<Buffer> {
  if (file.length > MAX_KEYSTORE_BYTES) throw new ClientKeyError(`the keystore is larger than ${MAX_KEYSTORE_BYTES} bytes`);
  const forge = await forgeLibrary();
  let p12: forge.pkcs12.Pkcs12Pfx;
  try {
    p12 = forge.pkcs12.pkcs12FromAsn1(forge.asn1.fromDer(forge.util.createBuffer(file.toString('binary'))), password);
  } catch {
    throw new ClientKeyError('the keystore does not open: not PKCS#12, or the store password is wrong');
  }
  const bags = p12.getBags({ bagType: forge.pki.oids.certBag })[forge.pki.oids.certBag] ?? [];
  const named = alias ? bags.filter((bag) => bag.attributes.friendlyName?.includes(alias)) : bags;
  const certificate = (named.length ? named : alias ? [] : bags)[0]?.cert;
  if (!certificate) throw new ClientKeyError(alias ? `the keystore has no certificate named ${JSON.stringify(alias.slice(0, 64))}` : 'the keystore holds no certificate');
  return Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(certificate)).getBytes(), 'binary');
}
