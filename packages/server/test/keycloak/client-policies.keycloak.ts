import { afterAll, beforeAll, describe, it } from 'vitest';
import { startBoth, type Both, type Side } from './both.js';
import { compareOnBoth, type DiffCase } from './compare.js';

/**
 * Client policies' FAPI executors and updater conditions on Keycloak 26.7.3 and on Realmgate (client-policies-fapi.test.ts
 * tests them alone): what is compared is the status, `error` and `error_description` of each refusal (the executors'
 * descriptions are Keycloak's protocol texts, which clients match), and that an accepted request is accepted.
 */

const SECURE = 'https://app.example/cb';
const profile = (executors: [string, Record<string, unknown>?][]) => ({ profiles: [{ name: 'under-test', executors: executors.map(([executor, configuration = {}]) => ({ executor, configuration })) }] });
const policy = (conditions: [string, Record<string, unknown>?][] = [['any-client']]) => ({
  policies: [{ name: 'under-test', enabled: true, conditions: conditions.map(([condition, configuration = {}]) => ({ condition, configuration })), profiles: ['under-test'] }],
});

async function usePolicy(side: Side, executors: [string, Record<string, unknown>?][], conditions?: [string, Record<string, unknown>?][]) {
  const a = await side.call('PUT', '/client-policies/profiles', profile(executors));
  const b = await side.call('PUT', '/client-policies/policies', policy(conditions));
  if (a.status !== 204 || b.status !== 204) throw new Error(`${side.name}: policy not saved (${a.status}, ${b.status})`);
}

/** A refusal or acceptance as compared: status and, for an error, its code and description. */
const outcome = (response: { status: number; body: any }) => ({
  status: response.status,
  ...(response.body && typeof response.body === 'object' && response.body.error !== undefined ? { error: response.body.error, description: response.body.error_description } : {}),
});

async function authorize(side: Side, query: Record<string, string>) {
  const answer = await fetch(`${side.url}/realms/${side.realm}/protocol/openid-connect/auth?${new URLSearchParams(query)}`, { redirect: 'manual' });
  const location = answer.headers.get('location');
  const params = location ? new URL(location).searchParams : null;
  return { status: answer.status, error: params?.get('error') ?? null, description: params?.get('error_description') ?? null };
}

const cases: DiffCase[] = [
  {
    name: 'client policies: secure-session refuses a request without nonce or state',
    async observe(side) {
      await usePolicy(side, [['secure-session']]);
      const base = { client_id: 'web', response_type: 'code', redirect_uri: SECURE };
      return {
        noNonce: await authorize(side, { ...base, scope: 'openid' }),
        noState: await authorize(side, { ...base, scope: 'profile' }),
        accepted: (await authorize(side, { ...base, scope: 'openid', nonce: 'n' })).status,
      };
    },
  },
  {
    name: 'client policies: secure-client-uris at create and at the authorization request',
    async observe(side) {
      await usePolicy(side, [['secure-client-uris']]);
      return {
        http: outcome(await side.call('POST', '/clients', { clientId: 'plain', secret: 's', redirectUris: ['http://127.0.0.1:9/cb'] })),
        wildcard: outcome(await side.call('POST', '/clients', { clientId: 'wild', secret: 's', redirectUris: ['https://app.example/*'] })),
        https: outcome(await side.call('POST', '/clients', { clientId: 'safe', secret: 's', redirectUris: [SECURE] })),
        loopbackRequest: await authorize(side, { client_id: 'web', response_type: 'code', scope: 'openid', redirect_uri: 'http://127.0.0.1:9/cb' }),
      };
    },
  },
  {
    name: 'client policies: secure-signature-algorithm defaults and refusals',
    async observe(side) {
      await usePolicy(side, [['secure-signature-algorithm', { 'default-algorithm': 'ES256' }]]);
      const refused = outcome(await side.call('POST', '/clients', { clientId: 'rs', secret: 's', attributes: { 'id.token.signed.response.alg': 'RS256' } }));
      const created = outcome(await side.call('POST', '/clients', { clientId: 'es', secret: 's' }));
      const stored = (await side.call('GET', '/clients?clientId=es')).body[0].attributes as Record<string, string>;
      const algorithms = Object.fromEntries(['id.token.signed.response.alg', 'access.token.signed.response.alg', 'user.info.response.signature.alg', 'request.object.signature.alg', 'token.endpoint.auth.signing.alg'].map((k) => [k, stored[k]]));
      return { refused, created, algorithms };
    },
  },
  {
    name: 'client policies: secure-logout refuses front-channel logout',
    async observe(side) {
      await usePolicy(side, [['secure-logout']]);
      return {
        frontchannel: outcome(await side.call('POST', '/clients', { clientId: 'fc', secret: 's', frontchannelLogout: true })),
        url: outcome(await side.call('POST', '/clients', { clientId: 'fc', secret: 's', attributes: { 'frontchannel.logout.url': 'https://app.example/fc' } })),
        none: outcome(await side.call('POST', '/clients', { clientId: 'no-fc', secret: 's', frontchannelLogout: false })),
      };
    },
  },
  {
    name: 'client policies: secure-par-content at PAR and at the authorization endpoint',
    async observe(side) {
      await usePolicy(side, [['secure-par-content']]);
      const push = async (form: Record<string, string>) => {
        const response = await fetch(`${side.url}/realms/${side.realm}/protocol/openid-connect/ext/par/request`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) });
        return { status: response.status, body: await response.json() };
      };
      const form = { client_id: 'confidential', client_secret: 'confidential-secret', response_type: 'code', scope: 'openid', state: 's' };
      const pushed = await push({ ...form, redirect_uri: SECURE });
      return {
        noRedirect: outcome(await push(form)),
        pushed: pushed.status,
        notPushed: (await authorize(side, { client_id: 'confidential', response_type: 'code', scope: 'openid', redirect_uri: SECURE })).status,
        extraParameter: (await authorize(side, { client_id: 'confidential', request_uri: pushed.body.request_uri, prompt: 'login' })).status,
        spent: (await authorize(side, { client_id: 'confidential', request_uri: pushed.body.request_uri })).status,
      };
    },
  },
  {
    name: 'client policies: the conditions Keycloak 26.7.3 has and has not',
    async observe(side) {
      const save = async (condition: string, configuration: Record<string, unknown>) =>
        (await side.call('PUT', '/client-policies/policies', { policies: [{ name: 'c', enabled: true, conditions: [{ condition, configuration }], profiles: [] }] })).status;
      const result = {
        updaterContext: await save('client-updater-context', { 'update-client-source': ['ByAuthenticatedUser'] }),
        sourceHost: await save('client-updater-source-host', { 'trusted-hosts': ['127.0.0.1'] }),
        clientIds: await save('client-ids', {}),
      };
      await usePolicy(side, [['secure-client-uris']], [['client-updater-context', { 'update-client-source': ['ByAnonymous'] }]]);
      return { ...result, adminCreateUnderAnonymousOnly: outcome(await side.call('POST', '/clients', { clientId: 'admins', secret: 's', redirectUris: ['http://127.0.0.1:9/cb'] })) };
    },
  },
];

describe('client policies on both', () => {
  let both: Both;
  beforeAll(async () => {
    both = await startBoth(async (side) => {
      const kc = await side.admin();
      await kc.clients.create({ clientId: 'web', publicClient: false, secret: 'web-secret', redirectUris: [SECURE, 'http://127.0.0.1:9/cb'], standardFlowEnabled: true });
      await kc.clients.create({ clientId: 'confidential', publicClient: false, secret: 'confidential-secret', redirectUris: [SECURE], standardFlowEnabled: true });
    });
  }, 120_000);
  afterAll(() => both?.close());

  for (const row of cases) {
    it(row.name, async () => {
      await compareOnBoth(both, row, undefined);
    });
  }
});
