import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, startServer, type TestServer } from './support/server.js';

/**
 * Issue 38, the realm's WebAuthn policies: Keycloak 26.7.3's `webAuthnPolicy*` and `webAuthnPolicyPasswordless*`
 * fields with its defaults (those of the 26.7.3 full export in fixtures/), stored, answered, checked (a 400 naming
 * the field, nothing stored), and carried by realm import and partial export.
 */

const FIXTURE = join(import.meta.dirname, 'fixtures', 'keycloak-exports', 'keycloak-26.7.3-full-export.json');
const keycloakExport = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Record<string, unknown>;
const policyFields = (rep: Record<string, unknown>) => Object.fromEntries(Object.entries(rep).filter(([k]) => k.startsWith('webAuthnPolicy')));

let t: TestServer;
let token: string;
beforeAll(async () => {
  t = await startServer();
  token = await adminToken(t.url);
  expect((await api(t.url, 'POST', '/admin/realms', token, { realm: 'wp', enabled: true })).status).toBe(201);
});
afterAll(async () => {
  await t?.close();
});

describe('WebAuthn policies of a realm', () => {
  it("answers Keycloak 26.7.3's defaults for a new realm", async () => {
    const { body } = await api(t.url, 'GET', '/admin/realms/wp', token);
    // The export names every field but the passkeys switch, which Keycloak leaves out until it is set.
    expect(policyFields(body)).toEqual({ ...policyFields(keycloakExport), webAuthnPolicyPasswordlessPasskeysEnabled: false });
  });

  it('stores what a PUT sets and leaves the other fields as they were', async () => {
    const change = {
      webAuthnPolicyRpEntityName: 'Shop',
      webAuthnPolicySignatureAlgorithms: ['ES256', 'Ed25519'],
      webAuthnPolicyRpId: 'login.example.com',
      webAuthnPolicyAttestationConveyancePreference: 'direct',
      webAuthnPolicyAuthenticatorAttachment: 'cross-platform',
      webAuthnPolicyUserVerificationRequirement: 'required',
      webAuthnPolicyCreateTimeout: 60,
      webAuthnPolicyAvoidSameAuthenticatorRegister: true,
      webAuthnPolicyAcceptableAaguids: ['ee882879-721c-4913-9775-3dfcce97072a'],
      webAuthnPolicyExtraOrigins: ['https://app.example.com', 'android:apk-key-hash:abc'],
      webAuthnPolicyPasswordlessResidentKey: 'preferred',
      webAuthnPolicyPasswordlessPasskeysEnabled: true,
    };
    expect((await api(t.url, 'PUT', '/admin/realms/wp', token, change)).status).toBe(204);
    const { body } = await api(t.url, 'GET', '/admin/realms/wp', token);
    expect(body).toMatchObject(change);
    expect(body.webAuthnPolicyPasswordlessRpEntityName).toBe('keycloak');
    expect(body.webAuthnPolicyPasswordlessUserVerificationRequirement).toBe('required');
  });

  it.each([
    ['webAuthnPolicySignatureAlgorithms', ['ES256', 'HS256']],
    ['webAuthnPolicyUserVerificationRequirement', 'always'],
    ['webAuthnPolicyPasswordlessAttestationConveyancePreference', 'full'],
    ['webAuthnPolicyAuthenticatorAttachment', 'usb'],
    ['webAuthnPolicyPasswordlessResidentKey', 'Yes'],
    ['webAuthnPolicyRpId', 'https://example.com'],
    ['webAuthnPolicyCreateTimeout', -1],
    ['webAuthnPolicyAcceptableAaguids', ['not-a-uuid']],
    ['webAuthnPolicyPasswordlessExtraOrigins', ['https://example.com/path']],
    ['webAuthnPolicyPasswordlessPasskeysEnabled', 'yes'],
  ])('refuses %s = %j with a 400 naming it, storing nothing', async (field, value) => {
    const before = (await api(t.url, 'GET', '/admin/realms/wp', token)).body;
    const refused = await api(t.url, 'PUT', '/admin/realms/wp', token, { webAuthnPolicyRpEntityName: 'changed', [field]: value });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain(field);
    expect(policyFields((await api(t.url, 'GET', '/admin/realms/wp', token)).body)).toEqual(policyFields(before));
  });

  it('imports the policies of a realm file and exports them back', async () => {
    const file = { realm: 'wp-file', enabled: true, ...policyFields(keycloakExport), webAuthnPolicyRpEntityName: 'From file', webAuthnPolicyPasswordlessUserVerificationRequirement: 'preferred' };
    expect((await api(t.url, 'POST', '/admin/realms', token, file)).status).toBe(201);
    const exported = await api(t.url, 'POST', '/admin/realms/wp-file/partial-export', token);
    expect(exported.status).toBe(200);
    expect(policyFields(exported.body)).toMatchObject({ webAuthnPolicyRpEntityName: 'From file', webAuthnPolicyPasswordlessUserVerificationRequirement: 'preferred', webAuthnPolicyPasswordlessResidentKey: 'required' });
  });
});
