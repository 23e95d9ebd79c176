import type { ProtocolContext } from '../context.js';
import { TOKEN_SIGNATURE_ALGS } from '../../keys/index.js';
import { clientKeyAttributeProblems } from '../../keys/client-keys.js';
import { badRequest } from '../../model/errors.js';
import { ASSERTION_ALG_ATTRIBUTE, ASSERTION_MAX_EXP_ATTRIBUTE, ASYMMETRIC_ASSERTION_ALGS, SECRET_ASSERTION_ALGS } from './client-assertion.js';
import { CLIENT_ALG_ATTRIBUTE, USERINFO_ALG_ATTRIBUTE } from './tokens.js';

const ASSERTION_ALGS = [...ASYMMETRIC_ASSERTION_ALGS, ...SECRET_ASSERTION_ALGS];

/**
 * The rules for client attributes (its keys, signature algorithms, and the providers' own, a webhook URL say), for
 * every way a client is written (the admin API, dynamic registration): 400 naming each problem, nothing written.
 */
export async function checkClientAttributes(ctx: Pick<ProtocolContext, 'clientKeys' | 'providers'>, attributes: Readonly<Record<string, string>>): Promise<void> {
  const problems = [...clientKeyAttributeProblems(attributes, ctx.clientKeys), ...(await ctx.providers.clientAttributeProblems(attributes))];
  for (const name of [CLIENT_ALG_ATTRIBUTE.access, CLIENT_ALG_ATTRIBUTE.id, USERINFO_ALG_ATTRIBUTE]) {
    const value = attributes[name];
    if (value && !(name === USERINFO_ALG_ATTRIBUTE && value === 'unsigned') && !(TOKEN_SIGNATURE_ALGS as readonly string[]).includes(value)) {
      problems.unshift(`${name}: ${JSON.stringify(value.slice(0, 20))} is not a signature algorithm Realmgate signs with (${TOKEN_SIGNATURE_ALGS.join(', ')})`);
    }
  }
  const alg = attributes[ASSERTION_ALG_ATTRIBUTE];
  if (alg && !(ASSERTION_ALGS as readonly string[]).includes(alg)) problems.unshift(`${ASSERTION_ALG_ATTRIBUTE}: ${JSON.stringify(alg.slice(0, 20))} is not an algorithm Realmgate accepts (${ASSERTION_ALGS.join(', ')})`);
  // Keycloak reads anything else as its default (60 s); here it is refused, so what is stored is what applies.
  const maxExp = attributes[ASSERTION_MAX_EXP_ATTRIBUTE];
  if (maxExp !== undefined && maxExp !== '' && !/^[1-9][0-9]{0,8}$/.test(maxExp)) problems.unshift(`${ASSERTION_MAX_EXP_ATTRIBUTE}: ${JSON.stringify(maxExp.slice(0, 20))} is not a whole number of seconds above 0`);
  if (problems.length > 0) throw badRequest(`client.attributes: ${problems.join('; ')}`, 'attributes');
}
