import { afterAll, beforeAll, describe, it } from 'vitest';
import { addUser, USER_PASSWORD, startBoth, type Both, type Side } from './both.js';
import { compareOnBoth, type DiffCase } from './compare.js';

/**
 * Issue 41: CORS on Keycloak 26.7.3 and on Realmgate: the preflight (OPTIONS) and the actual request's headers at
 * the token, userinfo, certs and discovery endpoints, the account API and the admin API, from an origin a client
 * allows, one it does not, and for clients whose web origins are "+" (their redirect URIs' origins) and "*".
 * What is compared: the status and the CORS headers, the allowed origin told as `origin` (the request's) or `*`.
 *
 * Clients (alike on both, public, password grant): `listed` allows ALLOWED; `plus` has "+" and a redirect URI at
 * PLUS; `star` has "*".
 */

const ALLOWED = 'http://app.example.test';
const PLUS = 'http://plus.example.test';
const OTHER = 'http://evil.example.test';
const ORIGIN_OF: Record<string, string> = { listed: ALLOWED, plus: PLUS, star: 'http://anywhere.example.test' };

const realmPath = (side: Side, path: string) => `${side.url}/realms/${side.realm}/${path}`;

/** The CORS headers of an answer, the allowed origin told relative to the request's. */
function corsOf(response: Response, origin: string) {
  const h = response.headers;
  const allow = h.get('access-control-allow-origin');
  const list = (name: string) =>
    h
      .get(name)
      ?.split(',')
      .map((v) => v.trim().toLowerCase())
      .filter(Boolean)
      .sort() ?? null;
  return {
    status: response.status,
    allowOrigin: allow === origin ? 'origin' : allow,
    allowCredentials: h.get('access-control-allow-credentials'),
    allowMethods: list('access-control-allow-methods'),
    allowHeaders: list('access-control-allow-headers'),
    exposeHeaders: list('access-control-expose-headers'),
    maxAge: h.get('access-control-max-age'),
  };
}

async function preflight(url: string, origin: string, method: string) {
  const response = await fetch(url, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type' } });
  await response.arrayBuffer();
  return corsOf(response, origin);
}

async function tokenAnswer(side: Side, clientId: string, origin: string) {
  const response = await fetch(realmPath(side, 'protocol/openid-connect/token'), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
    body: new URLSearchParams({ grant_type: 'password', client_id: clientId, username: 'alice', password: USER_PASSWORD, scope: 'openid' }),
  });
  const body = (await response.json()) as { access_token?: string };
  return { cors: corsOf(response, origin), token: body.access_token ?? '' };
}

async function get(url: string, origin: string, token?: string) {
  const response = await fetch(url, { headers: { origin, accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) } });
  await response.arrayBuffer();
  return corsOf(response, origin);
}

/** One client's view: token, userinfo and account API from the client's own origin and from OTHER; then the open endpoints. */
function clientCase(clientId: string): DiffCase<void> {
  return {
    name: `CORS: a client with web origins ${clientId === 'listed' ? 'listing the origin' : clientId === 'plus' ? '"+"' : '"*"'}`,
    async observe(side) {
      const own = ORIGIN_OF[clientId];
      const token = await tokenAnswer(side, clientId, own);
      const tokenOther = await tokenAnswer(side, clientId, OTHER);
      return {
        token: { own: token.cors, other: tokenOther.cors, preflight: await preflight(realmPath(side, 'protocol/openid-connect/token'), own, 'POST') },
        userinfo: {
          own: await get(realmPath(side, 'protocol/openid-connect/userinfo'), own, token.token),
          other: await get(realmPath(side, 'protocol/openid-connect/userinfo'), OTHER, token.token),
          preflight: await preflight(realmPath(side, 'protocol/openid-connect/userinfo'), own, 'GET'),
          badToken: await get(realmPath(side, 'protocol/openid-connect/userinfo'), own, 'not-a-token'),
        },
        account: {
          own: await get(realmPath(side, 'account'), own, token.token),
          other: await get(realmPath(side, 'account'), OTHER, token.token),
          preflight: await preflight(realmPath(side, 'account'), own, 'GET'),
        },
      };
    },
  };
}

const rows: DiffCase<void>[] = [
  clientCase('listed'),
  clientCase('plus'),
  clientCase('star'),
  {
    name: 'CORS: certs and discovery, from any origin',
    async observe(side) {
      return {
        certs: { get: await get(realmPath(side, 'protocol/openid-connect/certs'), OTHER), preflight: await preflight(realmPath(side, 'protocol/openid-connect/certs'), OTHER, 'GET') },
        discovery: { get: await get(realmPath(side, '.well-known/openid-configuration'), OTHER), preflight: await preflight(realmPath(side, '.well-known/openid-configuration'), OTHER, 'GET') },
      };
    },
  },
  {
    name: 'CORS: the admin API, from an origin no admin console allows',
    async observe(side) {
      const token = await (await side.admin()).getAccessToken();
      return {
        get: await get(`${side.url}/admin/realms/${side.realm}`, OTHER, token),
        preflight: await preflight(`${side.url}/admin/realms/${side.realm}`, OTHER, 'GET'),
      };
    },
  },
];

describe('CORS against Keycloak 26.7.3 (issue 41)', () => {
  let both: Both;

  beforeAll(async () => {
    both = await startBoth(async (side) => {
      const kc = await side.admin();
      const common = { publicClient: true, directAccessGrantsEnabled: true, standardFlowEnabled: true };
      await kc.clients.create({ ...common, clientId: 'listed', redirectUris: ['http://127.0.0.1:59999/cb'], webOrigins: [ALLOWED] });
      await kc.clients.create({ ...common, clientId: 'plus', redirectUris: [`${PLUS}/cb`], webOrigins: ['+'] });
      await kc.clients.create({ ...common, clientId: 'star', redirectUris: ['http://127.0.0.1:59999/cb'], webOrigins: ['*'] });
      await addUser(side, 'alice');
    });
  });

  afterAll(async () => {
    await both?.close();
  });

  for (const row of rows) it(row.name, () => compareOnBoth(both, row, undefined).then(() => {}));
});
