import { CompactEncrypt, SignJWT, UnsecuredJWT, importJWK, type JWK } from 'jose';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { FormClient, pkce } from '../support/forms.js';
import { addUser, CALLBACK, seen, startBoth, USER_PASSWORD, type Both, type Side } from './both.js';
import { compareOnBoth, type DiffCase } from './compare.js';

/**
 * Issue 40's remaining items compared with Keycloak 26.7.3 (grants5): the device endpoint's verification URIs with
 * the realm's `shortVerificationUri`, standard token exchange's refusals (offline_access among them), the client
 * attribute `request.object.required` at the authorization and PAR endpoints, and the discovery fields these add.
 * Every observation is statuses, error fields and which page came, never a token.
 */

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS = 'urn:ietf:params:oauth:token-type:access_token';
const REFRESH = 'urn:ietf:params:oauth:token-type:refresh_token';
const SHORT = 'https://tv.example.test/go';
const REQUESTER_SECRET = 'requester-secret-0123456789';

async function setUp(side: Side): Promise<void> {
  const kc = await side.admin();
  const realm = await kc.realms.findOne({ realm: side.realm });
  await kc.realms.update({ realm: side.realm }, { attributes: { ...(realm?.attributes ?? {}), shortVerificationUri: SHORT } });
  const device = { 'oauth2.device.authorization.grant.enabled': 'true' };
  await kc.clients.create({ clientId: 'tv', publicClient: true, standardFlowEnabled: false, attributes: device });
  await kc.clients.create({ clientId: 'plain', publicClient: true, standardFlowEnabled: false });
  await kc.clients.create({ clientId: 'tv-objects', publicClient: true, standardFlowEnabled: false, attributes: { ...device, 'request.object.required': 'request only' } });
  for (const [clientId, required] of [
    ['any-object', 'request or request_uri'],
    ['request-only', 'request only'],
    ['uri-only', 'request_uri only'],
    ['free', 'not required'],
  ]) {
    await kc.clients.create({ clientId, publicClient: true, standardFlowEnabled: true, redirectUris: [CALLBACK], attributes: { 'request.object.required': required } });
  }
  await kc.clients.create({
    clientId: 'requester',
    publicClient: false,
    secret: REQUESTER_SECRET,
    directAccessGrantsEnabled: true,
    standardFlowEnabled: false,
    attributes: { 'standard.token.exchange.enabled': 'true', 'standard.token.exchange.enableRefreshRequestedTokenType': 'SAME_SESSION' },
  });
  await kc.clients.create({ clientId: 'outsider', publicClient: false, secret: REQUESTER_SECRET, directAccessGrantsEnabled: true, standardFlowEnabled: false, attributes: { 'standard.token.exchange.enabled': 'true' } });
  await addUser(side, 'viewer');
  // Encrypted request objects: a confidential client (HS256 inner objects with its secret), one pinning the content
  // encryption; an RSA-OAEP-256 encryption key on both (Keycloak's realms have an RSA-OAEP one already).
  await kc.clients.create({ clientId: 'jar', publicClient: false, secret: JAR_SECRET, redirectUris: [CALLBACK], standardFlowEnabled: true });
  await kc.clients.create({ clientId: 'jar-a128', publicClient: false, secret: JAR_SECRET, redirectUris: [CALLBACK], standardFlowEnabled: true, attributes: { 'request.object.encryption.enc': 'A128GCM' } });
  await side.call('POST', '/components', { name: 'enc-oaep-256', providerId: 'rsa-enc-generated', providerType: 'org.keycloak.keys.KeyProvider', config: { algorithm: ['RSA-OAEP-256'], priority: ['500'] } });
}

const JAR_SECRET = 'jar-secret-0123456789-0123456789-0123456789';

/** An HS256 request object of `clientId`, encrypted to the realm's RSA-OAEP-256 key (found in its JWKS). */
async function encryptedObject(side: Side, clientId: string, enc: string): Promise<string> {
  const jwks = (await (await fetch(realmPath(side, 'protocol/openid-connect/certs'))).json()) as { keys: JWK[] };
  const jwk = jwks.keys.find((k) => k.use === 'enc' && k.alg === 'RSA-OAEP-256')!;
  const inner = await new SignJWT({ ...plainRequest(clientId), iss: clientId, aud: realmPath(side, '').replace(/\/$/, '') })
    .setProtectedHeader({ alg: 'HS256' })
    .setExpirationTime('1m')
    .sign(new TextEncoder().encode(JAR_SECRET));
  return new CompactEncrypt(new TextEncoder().encode(inner)).setProtectedHeader({ alg: 'RSA-OAEP-256', enc, kid: jwk.kid, cty: 'JWT' }).encrypt(await importJWK(jwk, 'RSA-OAEP-256'));
}

const realmPath = (side: Side, path: string) => `${side.url}/realms/${side.realm}/${path}`;

async function form(side: Side, path: string, fields: Record<string, string>): Promise<{ status: number; body: Record<string, any> }> {
  const response = await fetch(realmPath(side, path), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields) });
  const text = await response.text();
  try {
    return { status: response.status, body: JSON.parse(text) as Record<string, any> };
  } catch {
    return { status: response.status, body: { html: response.headers.get('content-type')?.startsWith('text/html') ?? false } };
  }
}

/** An OAuth error answer as compared: the status and the error fields, never a token. */
const refusal = (answer: { status: number; body: Record<string, any> }) => ({ status: answer.status, error: answer.body.error ?? null, error_description: answer.body.error_description ?? null });

/** An access token of `requester` for the user (the password grant), the subject of the exchanges. */
async function subjectToken(side: Side, client = 'requester', scope = 'openid'): Promise<string> {
  const answer = await form(side, 'protocol/openid-connect/token', { grant_type: 'password', client_id: client, client_secret: REQUESTER_SECRET, username: 'viewer', password: USER_PASSWORD, scope });
  if (answer.status !== 200) throw new Error(`${side.name}: the password grant answered ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body.access_token as string;
}

async function exchange(side: Side, extra: Record<string, string>, subject?: string) {
  const answer = await form(side, 'protocol/openid-connect/token', {
    grant_type: EXCHANGE,
    client_id: 'requester',
    client_secret: REQUESTER_SECRET,
    subject_token: subject ?? (await subjectToken(side)),
    subject_token_type: ACCESS,
    ...extra,
  });
  if (answer.status !== 200) return refusal(answer);
  const scope = String(answer.body.scope ?? '').split(' ');
  return { status: 200, issued_token_type: answer.body.issued_token_type, refresh: typeof answer.body.refresh_token === 'string', offlineInScope: scope.includes('offline_access') };
}

/** What a browser sees at the authorization endpoint for `client_id` and these parameters (a login page, an error page, a redirect). */
async function authorize(side: Side, clientId: string, extra: Record<string, string>): Promise<string> {
  const query = new URLSearchParams({ client_id: clientId, ...extra });
  const browser = new FormClient(side.url);
  let response = await browser.get(`/realms/${side.realm}/protocol/openid-connect/auth?${query}`);
  // Keycloak moves a pushed request's sign-in to login-actions/authenticate (one redirect); followed inside the server.
  for (let hops = 0; hops < 5 && response.status === 302 && response.location && !response.location.startsWith(CALLBACK); hops++) {
    response = await browser.get(new URL(response.location, `${side.url}/`).href);
  }
  return seen(response);
}

const plainRequest = (clientId: string) => ({ response_type: 'code', redirect_uri: CALLBACK, scope: 'openid', state: 'st', code_challenge: pkce().challenge, code_challenge_method: 'S256', client_id: clientId });
const unsignedObject = (clientId: string, extra: Record<string, unknown> = {}) => new UnsecuredJWT({ ...plainRequest(clientId), ...extra }).encode();

const push = (side: Side, clientId: string, extra: Record<string, string>) => form(side, 'protocol/openid-connect/ext/par/request', { client_id: clientId, ...extra });

const rows: DiffCase[] = [
  {
    name: "device endpoint: the realm's shortVerificationUri is verification_uri, the complete one built on it",
    async observe(side) {
      const answer = await form(side, 'protocol/openid-connect/auth/device', { client_id: 'tv', scope: 'openid' });
      return {
        status: answer.status,
        keys: Object.keys(answer.body).sort(),
        verificationUriIsShort: answer.body.verification_uri === SHORT,
        completeIsShortWithCode: answer.body.verification_uri_complete === `${SHORT}?user_code=${answer.body.user_code}`,
        userCodeShape: /^[A-Z]{4}-[A-Z]{4}$/.test(String(answer.body.user_code)),
        interval: answer.body.interval,
        expires_in: answer.body.expires_in,
      };
    },
  },
  {
    name: 'device endpoint: a client without the grant, and one that must send request objects',
    async observe(side) {
      return {
        off: refusal(await form(side, 'protocol/openid-connect/auth/device', { client_id: 'plain' })),
        objectRequired: (await form(side, 'protocol/openid-connect/auth/device', { client_id: 'tv-objects' })).status,
      };
    },
  },
  {
    name: 'request.object.required at the authorization endpoint',
    async observe(side) {
      return {
        anyWithout: await authorize(side, 'any-object', plainRequest('any-object')),
        anyWithObject: await authorize(side, 'any-object', { request: unsignedObject('any-object') }),
        requestOnlyWithout: await authorize(side, 'request-only', plainRequest('request-only')),
        requestOnlyWithObject: await authorize(side, 'request-only', { request: unsignedObject('request-only') }),
        uriOnlyWithObject: await authorize(side, 'uri-only', { request: unsignedObject('uri-only') }),
        notRequired: await authorize(side, 'free', plainRequest('free')),
        bothParameters: await authorize(side, 'free', { request: unsignedObject('free'), request_uri: 'urn:ietf:params:oauth:request_uri:00000000-0000-0000-0000-000000000000' }),
        objectNamingRequestUri: await authorize(side, 'free', { request: unsignedObject('free', { request_uri: 'https://example.test/r' }) }),
      };
    },
  },
  {
    name: 'request.object.required at the PAR endpoint, and the pushed request at the authorization endpoint',
    async observe(side) {
      const anyWithout = await push(side, 'any-object', plainRequest('any-object'));
      const requestOnlyWithout = await push(side, 'request-only', plainRequest('request-only'));
      const requestOnlyWithObject = await push(side, 'request-only', { request: unsignedObject('request-only') });
      const uriOnlyWithout = await push(side, 'uri-only', plainRequest('uri-only'));
      return {
        anyWithout: refusal(anyWithout),
        requestOnlyWithout: refusal(requestOnlyWithout),
        requestOnlyWithObject: requestOnlyWithObject.status,
        uriOnlyWithout: uriOnlyWithout.status,
        // The pushed request's request_uri at the authorization endpoint: enough for `request_uri only`, not for `request only`.
        uriOnlyRedeemed: uriOnlyWithout.status === 201 ? await authorize(side, 'uri-only', { request_uri: uriOnlyWithout.body.request_uri }) : null,
        requestOnlyRedeemed: requestOnlyWithObject.status === 201 ? await authorize(side, 'request-only', { request_uri: requestOnlyWithObject.body.request_uri }) : null,
      };
    },
  },
  {
    name: 'encrypted request objects at the authorization endpoint',
    async observe(side) {
      return {
        encrypted: await authorize(side, 'jar', { request: await encryptedObject(side, 'jar', 'A256GCM') }),
        pinnedEncMatches: await authorize(side, 'jar-a128', { request: await encryptedObject(side, 'jar-a128', 'A128GCM') }),
        pinnedEncDiffers: await authorize(side, 'jar-a128', { request: await encryptedObject(side, 'jar-a128', 'A256GCM') }),
      };
    },
  },
  {
    name: 'standard token exchange: offline_access',
    async observe(side) {
      return {
        refreshWithOffline: await exchange(side, { requested_token_type: REFRESH, scope: 'offline_access' }),
        refreshWithout: await exchange(side, { requested_token_type: REFRESH }),
        accessWithOffline: await exchange(side, { scope: 'offline_access' }),
      };
    },
  },
  {
    name: 'standard token exchange: refusals',
    async observe(side) {
      const outsiders = await subjectToken(side, 'outsider');
      return {
        unknownAudience: await exchange(side, { audience: 'no-such-client' }),
        unknownScope: await exchange(side, { scope: 'no-such-scope' }),
        saml: await exchange(side, { requested_token_type: 'urn:ietf:params:oauth:token-type:saml2' }),
        idTokenSubject: await exchange(side, { subject_token_type: 'urn:ietf:params:oauth:token-type:id_token' }),
        requestedSubject: await exchange(side, { requested_subject: 'viewer' }),
        notInAudience: await exchange(side, {}, outsiders),
        garbage: await exchange(side, {}, 'not-a-token'),
        missingSubject: refusal(await form(side, 'protocol/openid-connect/token', { grant_type: EXCHANGE, client_id: 'requester', client_secret: REQUESTER_SECRET, subject_token_type: ACCESS })),
      };
    },
  },
  {
    name: 'discovery: the fields of the device flow, token exchange, PAR and request objects',
    async observe(side) {
      const meta = (await (await fetch(realmPath(side, '.well-known/openid-configuration'))).json()) as Record<string, any>;
      const sorted = (value: unknown) => (Array.isArray(value) ? [...value].sort() : (value ?? null));
      return {
        device_authorization_endpoint: meta.device_authorization_endpoint === realmPath(side, 'protocol/openid-connect/auth/device'),
        deviceGrant: meta.grant_types_supported.includes('urn:ietf:params:oauth:grant-type:device_code'),
        exchangeGrant: meta.grant_types_supported.includes(EXCHANGE),
        pushed_authorization_request_endpoint: meta.pushed_authorization_request_endpoint === realmPath(side, 'protocol/openid-connect/ext/par/request'),
        require_pushed_authorization_requests: meta.require_pushed_authorization_requests,
        request_parameter_supported: meta.request_parameter_supported,
        request_uri_parameter_supported: meta.request_uri_parameter_supported,
        require_request_uri_registration: meta.require_request_uri_registration,
        request_object_signing_alg_values_supported: sorted(meta.request_object_signing_alg_values_supported),
        request_object_encryption_alg_values_supported: sorted(meta.request_object_encryption_alg_values_supported),
        request_object_encryption_enc_values_supported: sorted(meta.request_object_encryption_enc_values_supported),
        mtlsDevice: meta.mtls_endpoint_aliases?.device_authorization_endpoint === realmPath(side, 'protocol/openid-connect/auth/device'),
        mtlsPar: meta.mtls_endpoint_aliases?.pushed_authorization_request_endpoint === realmPath(side, 'protocol/openid-connect/ext/par/request'),
      };
    },
  },
];

describe('grants against Keycloak 26.7.3 (issue 40, compared)', () => {
  let both: Both;

  beforeAll(async () => {
    both = await startBoth(setUp);
  });
  afterAll(async () => {
    await both?.close();
  });

  for (const row of rows) it(row.name, () => compareOnBoth(both, row, undefined).then(() => {}));
});
