import { createHmac } from 'node:crypto';
import { secretsEqual } from '../credentials/index.js';
import type { RealmKeys } from '../keys/index.js';

/**
 * Small state the server hands to a browser and reads back unchanged, instead of keeping it: `<kid>.<payload>.
 * <mac>`, the payload JSON with its expiry, HMAC-SHA256 with a secret derived from the realm's key (so any
 * process verifies it, and another realm's does not), bound to a purpose so one kind cannot stand in for another.
 */
export class SignedState {
  constructor(private readonly keys: RealmKeys) {}

  async seal(realmId: string, purpose: string, payload: object, lifetimeMs: number): Promise<string> {
    const key = await this.keys.stateSecret(realmId);
    if (!key) throw new Error(`realm ${realmId} has no active signing key`);
    const body = Buffer.from(JSON.stringify({ ...payload, exp: Date.now() + lifetimeMs }), 'utf8').toString('base64url');
    return `${key.kid}.${body}.${mac(key.secret, purpose, key.kid, body)}`;
  }

  /** The payload when `value` is one this realm sealed for `purpose` and it has not expired; null otherwise. */
  async open<T extends object>(realmId: string, purpose: string, value: unknown, maxLength = 8192): Promise<(T & { exp: number }) | null> {
    if (typeof value !== 'string' || value.length > maxLength) return null;
    const parts = value.split('.');
    if (parts.length !== 3) return null;
    const [kid, body, tag] = parts;
    // A generated key's kid, or an imported one's (Keycloak's: base64url, so `_` too).
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(kid)) return null;
    const key = await this.keys.stateSecret(realmId, kid);
    if (!key || !secretsEqual(tag, mac(key.secret, purpose, kid, body))) return null;
    let payload: unknown;
    try {
      payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch {
      return null;
    }
    if (typeof payload !== 'object' || payload === null) return null;
    const exp = (payload as { exp?: unknown }).exp;
    if (typeof exp !== 'number' || exp <= Date.now()) return null;
    return payload as T & { exp: number };
  }
}

const mac = (secret: Buffer, purpose: string, kid: string, body: string) => createHmac('sha256', secret).update(`${purpose}\n${kid}\n${body}`).digest('base64url');
