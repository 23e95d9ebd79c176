import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { badRequest } from '../model/errors.js';

/**
 * The admin routes that take Keycloak's multipart forms (a client's key file, an identity provider's metadata file):
 * registered in their own scope only, bounded to one small file and a few short fields; such a route declares
 * `config: { multipartBody: true }` so the admin API's JSON-only rule lets the form through.
 */

export const MAX_UPLOAD_BYTES = 64 * 1024;
const MAX_FIELD = 1024;

export async function acceptMultipart(scoped: FastifyInstance): Promise<void> {
  await scoped.register(multipart, { limits: { fileSize: MAX_UPLOAD_BYTES, files: 1, fields: 8, fieldSize: MAX_FIELD, parts: 9 } });
}

/** The form's fields and its one file (null when it has none); a form over the limits or malformed is a 400. */
export async function readMultipart(request: FastifyRequest): Promise<{ fields: Record<string, string>; file: Buffer | null }> {
  if (!request.isMultipart()) throw badRequest('the body must be multipart/form-data');
  const fields: Record<string, string> = {};
  let file: Buffer | null = null;
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file') file = await part.toBuffer();
      else if (typeof part.value === 'string') fields[part.fieldname.slice(0, 64)] = part.value;
    }
  } catch (error) {
    const code = (error as { code?: string }).code ?? '';
    if (code.startsWith('FST_')) throw badRequest(`the upload is too large or malformed (at most one file of ${MAX_UPLOAD_BYTES} bytes and a few short fields)`);
    throw error;
  }
  return { fields, file };
}
