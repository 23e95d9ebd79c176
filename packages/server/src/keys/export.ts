import { createPrivateKey, createPublicKey, type JsonWebKey } from 'node:crypto';
import { keycloakKid } from './algorithms.js';

/** What an export needs of a stored realm key (index.ts's StoredKey). */
interface ExportedKey {
  providerId: string;
  name: string;
  priority: number;
  enabled: boolean;
  active: boolean;
  kid: string;
  use: 'sig' | 'enc';
  publicKey: string | null;
  certificate: string | null;
  settings: Record<string, string>;
}

/**
 * A realm key as Keycloak's export writes its key-provider component (`components["org.keycloak.keys.KeyProvider"]`
 * of a realm file): its name, providerId and config in Keycloak's entry names, the key material in Keycloak's
 * encodings (RSA: `privateKey` PKCS#1 DER and `certificate`, base64; EC and EdDSA: `*PrivateKey` PKCS#8 and
 * `*PublicKey` SPKI DER, base64; HMAC and AES: `kid` and `secret`, base64url), so that this server's import and
 * Keycloak's take it back. Without `secrets` (the admin API's partial export) the config only, as Keycloak's partial export.
 */
export function keyProviderExport(key: ExportedKey, privateJwk: JsonWebKey, secrets: boolean): { name: string; providerId: string; subComponents: Record<string, never>; config: Record<string, string[]> } {
  const config: Record<string, string[]> = { priority: [String(key.priority)], enabled: [String(key.enabled)], active: [String(key.active)] };
  for (const [entry, value] of Object.entries(key.settings)) config[entry] = [value];
  // Keycloak's partial export leaves a key provider's material out (no key, secret, kid or certificate): an import
  // of it makes new keys from the config, as Keycloak's does.
  if (!secrets) return { name: key.name, providerId: key.providerId, subComponents: {}, config };
  const der = (type: 'pkcs1' | 'pkcs8') => createPrivateKey({ key: privateJwk, format: 'jwk' }).export({ type, format: 'der' }).toString('base64');
  switch (key.providerId) {
    case 'rsa':
    case 'rsa-generated':
    case 'rsa-enc-generated':
      if (key.providerId !== 'rsa') config.keyUse = [key.use.toUpperCase()];
      config.privateKey = [der('pkcs1')];
      break;
    case 'ecdsa-generated':
    case 'eddsa-generated': {
      const prefix = key.providerId === 'ecdsa-generated' ? 'ecdsa' : 'eddsa';
      config[`${prefix}PrivateKey`] = [der('pkcs8')];
      if (key.publicKey) config[`${prefix}PublicKey`] = [key.publicKey];
      break;
    }
    case 'hmac-generated':
    case 'aes-generated':
      config.kid = [key.kid];
      config.secret = [String(privateJwk.k)];
      break;
  }
  if (key.certificate) config.certificate = [key.certificate];
  // A key pair whose kid is not Keycloak's (one made before kids were derived): its kid, so a restore keeps it.
  if (key.publicKey && key.kid !== keycloakKid(createPublicKey({ key: Buffer.from(key.publicKey, 'base64'), format: 'der', type: 'spki' }))) config.kid = [key.kid];
  return { name: key.name, providerId: key.providerId, subComponents: {}, config };
}
