import type { AdminEvent, RealmInfo, RequestInfo, UserEvent, UserSnapshot } from '@realmgate/spi';

export const realm: RealmInfo = {
  id: '6f1c2f52-0b7a-4d1e-9d55-3c7c2b6d1a01',
  name: 'demo',
  displayName: 'Demo Realm',
  enabled: true,
};

export const alice: UserSnapshot = {
  id: 'b3c1f0e2-6a3d-4f6b-8d0e-1f2a3b4c5d6e',
  username: 'alice',
  email: 'alice@example.com',
  firstName: 'Alice',
  lastName: 'Liddell',
  emailVerified: true,
  enabled: true,
  createdTimestamp: 1_732_000_000_123,
  attributes: { locale: ['en'], phone: ['+1 555', '+1 556'] },
  realmRoles: ['default-roles-demo', 'offline_access'],
  organizations: [{ id: 'org-1', name: 'Acme', alias: 'acme' }],
};

export const request: RequestInfo = {
  ipAddress: '10.0.0.5',
  remoteAddress: '10.0.0.5',
  forwardedFor: '198.51.100.7, 10.0.0.4',
  realIp: '203.0.113.9',
  userAgent: 'Mozilla/5.0 (test)',
};

export function userEvent(overrides: Partial<UserEvent> = {}): UserEvent {
  return {
    id: 'e0a8b7c6-1111-2222-3333-444455556666',
    time: 1_732_000_100_000,
    type: 'REGISTER',
    realmId: realm.id,
    realmName: realm.name,
    clientId: 'shop',
    userId: alice.id,
    sessionId: 'session-1',
    ipAddress: '10.0.0.5',
    error: null,
    details: { username: 'alice', email: 'alice@example.com' },
    request,
    user: alice,
    realm,
    ...overrides,
  };
}

export function adminEvent(overrides: Partial<AdminEvent> = {}): AdminEvent {
  return {
    id: 'a0a8b7c6-1111-2222-3333-444455556666',
    time: 1_732_000_200_000,
    realmId: realm.id,
    realmName: realm.name,
    operationType: 'DELETE',
    resourceType: 'USER',
    resourcePath: `users/${alice.id}`,
    representation: null,
    authDetails: { realmId: realm.id, clientId: 'admin-cli', userId: 'admin-user', ipAddress: '192.0.2.1' },
    error: null,
    user: alice,
    realm,
    request: { ...request, forwardedFor: null, realIp: null, remoteAddress: '192.0.2.1', userAgent: 'admin-client/26' },
    ...overrides,
  };
}
