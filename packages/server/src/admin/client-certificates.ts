import { createHash, generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { CLIENT_KEY_ATTRIBUTES, ClientKeyError, parseCertificate, parseJwksText, parsePublicKey, publicKeyProblem } from '../keys/client-keys.js';
import { selfSignedCertificate } from '../keys/certificate.js';
import { certificateFromPkcs12, KEYSTORE_FORMATS, pkcs12Keystore } from '../keys/keystore.js';
import { badRequest, notFound } from '../model/errors.js';
import type { Client } from '../model/types.js';
import { loadClient, requireMayChangeAdministrationClient } from './clients.js';
import { acceptMultipart, readMultipart } from './multipart.js';
import { callerOf, recordAdminEvent, type AdminRequest } from './routing.js';

/**
 * A client's Keys tab (Keycloak's ClientAttributeCertificateResource) for the `jwt.credential` key its
 * private_key_jwt assertions are checked with (keys/client-keys.ts): read, generate, generate-and-download (a
 * PKCS#12 keystore), upload (a keystore) and upload-certificate (a certificate PEM, a public key PEM, a JWKS, or a
 * keystore). This server never signs as the client: the private key of a generated pair is answered once (or
 * downloaded in the keystore) and not kept. Whatever is set becomes the client's key and its JWKS URL switch is
 * turned off, as the console's import does. The SAML prefixes are kept as data and only read.
 */

type CertificateRequest = AdminRequest<{ realm: string; id: string; attr: string }>;

const ATTRIBUTES = ['jwt.credential', 'saml.signing', 'saml.encryption'];
/** The formats the console's Import key dialog offers besides the keystore types (its names). */
const FILE_FORMATS = ['Certificate PEM', 'Public Key PEM', 'JSON Web Key Set'] as const;
const MAX_FIELD = 1024;

const kidOf = (publicKey: KeyObject) => createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('base64url');

/** The client's key attributes after setting one key (certificate or public key) and its kid; its JWKS URL and string kept, switched off. */
function withKey(client: Client, key: { certificate?: string; publicKey?: string; kid: string }): Record<string, string> {
  const attributes: Record<string, string> = { ...client.attributes, [CLIENT_KEY_ATTRIBUTES.useJwksUrl]: 'false' };
  if (attributes[CLIENT_KEY_ATTRIBUTES.useJwksString] === 'true') attributes[CLIENT_KEY_ATTRIBUTES.useJwksString] = 'false';
  for (const name of [CLIENT_KEY_ATTRIBUTES.certificate, CLIENT_KEY_ATTRIBUTES.publicKey, CLIENT_KEY_ATTRIBUTES.kid]) delete attributes[name];
  if (key.certificate) attributes[CLIENT_KEY_ATTRIBUTES.certificate] = key.certificate;
  if (key.publicKey) attributes[CLIENT_KEY_ATTRIBUTES.publicKey] = key.publicKey;
  attributes[CLIENT_KEY_ATTRIBUTES.kid] = key.kid;
  return attributes;
}

/** Keycloak's CertificateRepresentation of what the client's attributes hold. */
function certificateInfo(client: Client, attr: string): Record<string, string> {
  const info: Record<string, string> = {};
  for (const [field, suffix] of [['certificate', 'certificate'], ['publicKey', 'public.key'], ['kid', 'kid']]) {
    const value = client.attributes[`${attr}.${suffix}`];
    if (value) info[field] = value;
  }
  return info;
}

const usable = (publicKey: KeyObject) => {
  const problem = publicKeyProblem(publicKey);
  if (problem) throw badRequest(`file: ${problem}`, 'file');
  return publicKey;
};

/** The key an uploaded file sets, by the format the console names. */
async function keyFromFile(format: string, file: Buffer, fields: Record<string, string>): Promise<{ certificate?: string; publicKey?: string; kid: string }> {
  try {
    switch (format) {
      case 'Certificate PEM': {
        const certificate = parseCertificate(file.toString('utf8'));
        return { certificate: certificate.raw.toString('base64'), kid: kidOf(usable(certificate.publicKey)) };
      }
      case 'Public Key PEM': {
        const publicKey = usable(parsePublicKey(file.toString('utf8')));
        return { publicKey: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'), kid: kidOf(publicKey) };
      }
      case 'JSON Web Key Set': {
        // Keycloak takes the set's signing key: here the first usable one, by its own kid.
        const [first] = parseJwksText(file.toString('utf8'));
        if (!first) throw new ClientKeyError('the JWKS holds no signing key this server can use');
        const publicKey = usable(first.key);
        return { publicKey: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'), kid: first.kid ?? kidOf(publicKey) };
      }
      case 'PKCS12': {
        const certificate = parseCertificate((await certificateFromPkcs12(file, fields.storePassword ?? '', fields.keyAlias || undefined)).toString('base64'));
        return { certificate: certificate.raw.toString('base64'), kid: kidOf(usable(certificate.publicKey)) };
      }
      default:
        throw badRequest(`keystoreFormat: ${JSON.stringify(format.slice(0, 32))} is not read here (${[...KEYSTORE_FORMATS, ...FILE_FORMATS].join(', ')})`, 'keystoreFormat');
    }
  } catch (error) {
    if (error instanceof ClientKeyError) throw badRequest(`file: ${error.message}`, 'file');
    throw error;
  }
}

export function clientCertificateRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const load = async (request: CertificateRequest, change: boolean) => {
    const loaded = await loadClient(ctx, request);
    const attr = request.params.attr;
    if (!ATTRIBUTES.includes(attr)) throw notFound(`No certificate attribute ${attr.slice(0, 64)}`);
    if (change) {
      requireMayChangeAdministrationClient(callerOf(request), loaded.realm, loaded.client);
      if (attr !== 'jwt.credential') throw badRequest(`${attr.slice(0, 64)}: only the jwt.credential key (private_key_jwt) is set here; SAML keys are kept as data`);
    }
    return { ...loaded, attr };
  };

  app.get('/realms/:realm/clients/:id/certificates/:attr', async (request: CertificateRequest) => {
    const { client, attr } = await load(request, false);
    return certificateInfo(client, attr);
  });

  // Keycloak's generate: a new RSA 2048 pair and a self-signed certificate named after the client.
  const generate = (client: Client) => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const certificate = selfSignedCertificate(privateKey, publicKey, client.clientId);
    return { privateKey, certificate, kid: kidOf(publicKey) };
  };

  app.register(async (scoped) => {
    await acceptMultipart(scoped);

    scoped.post('/realms/:realm/clients/:id/certificates/:attr/:operation', { config: { multipartBody: true } }, async (request: AdminRequest<{ realm: string; id: string; attr: string; operation: string }>, reply) => {
      const { realm, client, attr } = await load(request, true);
      const { operation } = request.params;
      const saved = async (attributes: Record<string, string>) => {
        await ctx.storage.clients.update({ ...client, attributes });
        await recordAdminEvent(ctx, request, realm, 'ACTION', 'CLIENT', `clients/${client.id}/certificates/${attr}/${operation}`);
      };
      switch (operation) {
        case 'generate': {
          const pair = generate(client);
          const certificate = pair.certificate.toString('base64');
          await saved(withKey(client, { certificate, kid: pair.kid }));
          return { privateKey: pair.privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64'), certificate, kid: pair.kid };
        }
        case 'generate-and-download': {
          const config = (request.body ?? {}) as Record<string, unknown>;
          const text = (name: string) => (typeof config[name] === 'string' ? (config[name] as string) : undefined);
          const format = text('format') ?? '';
          if (!(KEYSTORE_FORMATS as readonly string[]).includes(format)) throw badRequest(`format: ${JSON.stringify(format.slice(0, 32))} is not a keystore format this server writes (${KEYSTORE_FORMATS.join(', ')})`, 'format');
          const storePassword = text('storePassword')?.trim();
          if (!storePassword) throw badRequest('storePassword: is required', 'storePassword');
          const keyPassword = text('keyPassword')?.trim();
          if (keyPassword && keyPassword !== storePassword) throw badRequest('keyPassword: a PKCS#12 keystore here has one password: give the store password, or none', 'keyPassword');
          const alias = (text('keyAlias') || client.clientId).slice(0, MAX_FIELD);
          const pair = generate(client);
          // Keycloak adds the realm's certificate unless told not to.
          const realmCertificate = config.realmCertificate === false ? null : (await ctx.keys.list(realm.id)).find((k) => k.active && k.enabled && k.certificate && k.algorithm === 'RS256')?.certificate;
          const keystore = await pkcs12Keystore({ alias, privateKey: pair.privateKey, certificate: pair.certificate }, storePassword, realmCertificate ? [Buffer.from(realmCertificate, 'base64')] : []);
          await saved(withKey(client, { certificate: pair.certificate.toString('base64'), kid: pair.kid }));
          return reply.type('application/octet-stream').header('cache-control', 'no-store').send(keystore);
        }
        case 'upload':
        case 'upload-certificate': {
          const { fields, file } = await readMultipart(request);
          if (!file || file.length === 0) throw badRequest('file: is required', 'file');
          const key = await keyFromFile(fields.keystoreFormat ?? '', file, fields);
          await saved(withKey(client, key));
          return { ...key };
        }
        default:
          throw badRequest(`${operation.slice(0, 64)}: not an operation on a client's keys (generate, generate-and-download, upload, upload-certificate)`);
      }
    });
  });
}
