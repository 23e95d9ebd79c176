import { describe, expect, it } from 'vitest';
import { adminDeletePayload, userEventPayload } from '../src/payload.js';
import { adminEvent, alice, realm, userEvent } from './fixtures.js';

const FIELDS = [
  'type',
  'user_id',
  'user_name',
  'email',
  'first_name',
  'last_name',
  'email_verified',
  'created_timestamp',
  'user_ip',
  'user_agent',
  'delete_by_admin',
  'user_roles',
  'organizations',
  'attributes',
  'realm',
  'error',
  'details',
];

const origin = { userIp: '198.51.100.7', userAgent: 'Mozilla/5.0 (test)' };

describe('payload', () => {
  it('carries every field of a user event, in order', () => {
    const payload = userEventPayload(userEvent({ type: 'LOGIN' }), origin);
    expect(Object.keys(payload)).toEqual(FIELDS);
    expect(payload).toEqual({
      type: 'LOGIN',
      user_id: alice.id,
      user_name: 'alice',
      email: 'alice@example.com',
      first_name: 'Alice',
      last_name: 'Liddell',
      email_verified: true,
      created_timestamp: 1_732_000_000_123,
      user_ip: '198.51.100.7',
      user_agent: 'Mozilla/5.0 (test)',
      delete_by_admin: false,
      user_roles: ['default-roles-demo', 'offline_access'],
      organizations: [{ id: 'org-1', name: 'Acme', alias: 'acme' }],
      attributes: { locale: ['en'], phone: ['+1 555', '+1 556'] },
      realm: { id: realm.id, name: 'demo', display_name: 'Demo Realm' },
      error: null,
      details: null,
    });
  });

  it('keeps null fields in the JSON', () => {
    const user = { ...alice, email: null, firstName: null, lastName: null };
    const json = JSON.stringify(
      userEventPayload(userEvent({ user, realm: { ...realm, displayName: null } }), { userIp: null, userAgent: null }),
    );
    for (const field of ['email', 'first_name', 'last_name', 'user_ip', 'user_agent', 'display_name', 'error', 'details']) {
      expect(json).toContain(`"${field}":null`);
    }
  });

  it('sends only id, name and alias of an organization', () => {
    const user = { ...alice, organizations: [{ id: 'o', name: 'N', alias: 'a', domains: ['x.test'] } as never] };
    expect(userEventPayload(userEvent({ user }), origin).organizations).toEqual([{ id: 'o', name: 'N', alias: 'a' }]);
  });

  it('builds REGISTER_ERROR from the form: no user, error and details', () => {
    const details = {
      email: 'bob@mailinator.com',
      first_name: 'Bob',
      last_name: 'Builder',
      username: 'bob',
    };
    const payload = userEventPayload(
      userEvent({ type: 'REGISTER_ERROR', userId: null, user: null, error: 'invalid_email_domain', details }),
      origin,
    );
    expect(Object.keys(payload)).toEqual(FIELDS);
    expect(payload).toEqual({
      type: 'REGISTER_ERROR',
      user_id: null,
      user_name: null,
      email: 'bob@mailinator.com',
      first_name: 'Bob',
      last_name: 'Builder',
      email_verified: null,
      created_timestamp: null,
      user_ip: '198.51.100.7',
      user_agent: 'Mozilla/5.0 (test)',
      delete_by_admin: false,
      user_roles: [],
      organizations: [],
      attributes: {},
      realm: { id: realm.id, name: 'demo', display_name: 'Demo Realm' },
      error: 'invalid_email_domain',
      details,
    });
  });

  it('REGISTER_ERROR without form values has null e-mail and names', () => {
    const payload = userEventPayload(userEvent({ type: 'REGISTER_ERROR', user: null, error: 'x', details: {} }), origin);
    expect([payload.email, payload.first_name, payload.last_name]).toEqual([null, null, null]);
    expect(payload.details).toEqual({});
  });

  it('falls back to the event when the host has no snapshot of the user', () => {
    const payload = userEventPayload(userEvent({ type: 'LOGOUT', user: null }), origin);
    expect(payload).toMatchObject({
      type: 'LOGOUT',
      user_id: alice.id,
      user_name: 'alice',
      email: null,
      email_verified: null,
      user_roles: [],
      error: null,
      details: null,
    });
  });

  it('marks a self-service DELETE_ACCOUNT as not by an administrator', () => {
    expect(userEventPayload(userEvent({ type: 'DELETE_ACCOUNT' }), origin).delete_by_admin).toBe(false);
  });

  it('builds DELETE_ACCOUNT with delete_by_admin from an admin deletion', () => {
    const payload = adminDeletePayload(adminEvent(), { userIp: '192.0.2.1', userAgent: 'admin-client/26' });
    expect(Object.keys(payload)).toEqual(FIELDS);
    expect(payload).toEqual({
      ...userEventPayload(userEvent({ type: 'DELETE_ACCOUNT' }), { userIp: '192.0.2.1', userAgent: 'admin-client/26' }),
      delete_by_admin: true,
    });
  });

  it('takes the user id from the resource path when an admin deletion has no snapshot', () => {
    const payload = adminDeletePayload(adminEvent({ user: null }), origin);
    expect(payload).toMatchObject({ type: 'DELETE_ACCOUNT', user_id: alice.id, user_name: null, delete_by_admin: true });
  });
});
