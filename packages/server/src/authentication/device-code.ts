import { createHash, randomBytes, randomInt } from 'node:crypto';
import type { AuthenticationContext } from './context.js';
import { secretsEqual } from '../credentials/index.js';
import type { UserSession } from '../model/types.js';
import { pkceRefusal, type PkceRefusal } from './authorization-code.js';

/**
 * The device authorization grant's state (RFC 8628), kept in the shared store as authorization codes are, so any
 * node answers the device, the user's browser and the polling client alike: one entry per device code (by its hash)
 * and one per user code pointing at it. Every change is a compare-and-set on the whole entry, so two nodes cannot
 * both approve, or approve one and deny the other; redeeming claims the code once, as a code is claimed.
 */
export interface DeviceGrant {
  realmId: string;
  clientId: string;
  scope: string;
  nonce: string | null;
  /** RFC 7636 at the device authorization endpoint (Keycloak 26): the S256 challenge the poll's `code_verifier` must meet. */
  codeChallenge?: string;
  userCode: string;
  /** Epoch ms after which the device code answers `expired_token`. */
  expiresAt: number;
  /** Seconds the client must wait between polls. */
  interval: number;
  /** `consent`: the user has signed in and the consent page is shown; the poll still answers pending. */
  status: 'pending' | 'consent' | 'approved' | 'denied';
  /** Who signed in (from `consent` on). */
  sessionId?: string;
  userId?: string;
  authTime?: number;
  /** The hash of the token the consent form carries (`consent` only): only that page can answer. */
  consentHash?: string;
}

type StoreCtx = Pick<AuthenticationContext, 'hostStore'>;

/** Keycloak's user codes: eight upper-case letters, shown as XXXX-XXXX (consonants only: no words, no 0/O or 1/I). */
const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';

const hash = (value: string) => createHash('sha256').update(value).digest('base64url');
const grantKey = (id: string) => `device:${id}`;
const userCodeKey = (realmId: string, userCode: string) => `device-user:${realmId}:${userCode}`;

/** The store keeps an entry past its expiry (Keycloak: lifespan + interval + 10 s), so a late poll hears `expired_token`. */
const keptMs = (grant: DeviceGrant) => grant.expiresAt + (grant.interval + 10) * 1000 - Date.now();

function newUserCode(): string {
  let code = '';
  for (let i = 0; i < 8; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/** A typed user code as stored: letters only, upper case, `XXXX-XXXX` (what Keycloak's provider's format() does). */
export function normalizeUserCode(input: string): string | null {
  const letters = input.toUpperCase().replace(/[^A-Z]/g, '');
  return letters.length === 8 ? `${letters.slice(0, 4)}-${letters.slice(4)}` : null;
}

/** A new device code and user code for `client`, pending until a user answers on the device page. */
export async function startDeviceGrant(
  ctx: StoreCtx,
  fields: Pick<DeviceGrant, 'realmId' | 'clientId' | 'scope' | 'nonce' | 'interval' | 'codeChallenge'> & { lifespanSeconds: number },
): Promise<{ deviceCode: string; userCode: string }> {
  const deviceCode = randomBytes(32).toString('base64url');
  const id = hash(deviceCode);
  const { lifespanSeconds, ...rest } = fields;
  for (let attempt = 0; attempt < 5; attempt++) {
    const userCode = newUserCode();
    const grant: DeviceGrant = { ...rest, userCode, expiresAt: Date.now() + lifespanSeconds * 1000, status: 'pending' };
    // A user code names one device code at a time: a collision (1 in 2.5e10 per live code) draws again.
    if (!(await ctx.hostStore.setIfAbsent(userCodeKey(grant.realmId, userCode), id, keptMs(grant)))) continue;
    await ctx.hostStore.set(grantKey(id), JSON.stringify(grant), keptMs(grant));
    return { deviceCode, userCode };
  }
  throw new Error('no free user code after five draws');
}

/** The grant a typed user code names, with its id; null when unknown or spent. */
export async function deviceGrantByUserCode(ctx: StoreCtx, realmId: string, userCode: string): Promise<{ id: string; grant: DeviceGrant } | null> {
  const id = await ctx.hostStore.get(userCodeKey(realmId, userCode));
  if (!id) return null;
  const raw = await ctx.hostStore.get(grantKey(id));
  return raw ? { id, grant: JSON.parse(raw) as DeviceGrant } : null;
}

/** Changes a grant when `allowed` says its current state may change so; false when it is gone or in another state. */
async function changeGrant(ctx: StoreCtx, id: string, allowed: (grant: DeviceGrant) => boolean, change: (grant: DeviceGrant) => DeviceGrant): Promise<DeviceGrant | null> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const raw = await ctx.hostStore.get(grantKey(id));
    if (!raw) return null;
    const grant = JSON.parse(raw) as DeviceGrant;
    if (!allowed(grant) || grant.expiresAt <= Date.now()) return null;
    const next = change(grant);
    if (await ctx.hostStore.compareAndSet(grantKey(id), raw, JSON.stringify(next), Math.max(1, keptMs(next)))) return next;
  }
  return null;
}

/**
 * The user signed in on the device page: the grant waits for the consent page's answer, which must carry the token
 * returned here. Null when the grant has expired, been answered or is gone.
 */
export async function holdDeviceConsent(ctx: StoreCtx, id: string, session: UserSession, userId: string): Promise<string | null> {
  const token = randomBytes(32).toString('base64url');
  const held = await changeGrant(
    ctx,
    id,
    (g) => g.status === 'pending' || g.status === 'consent',
    (g) => ({ ...g, status: 'consent', sessionId: session.id, userId, authTime: Math.floor(session.started / 1000), consentHash: hash(token) }),
  );
  return held ? token : null;
}

/** The consent page's answer: approved or denied once, by the page that holds the token; the user code is then spent. */
export async function answerDeviceConsent(ctx: StoreCtx, realmId: string, id: string, token: string, approve: boolean): Promise<DeviceGrant | null> {
  const answered = await changeGrant(
    ctx,
    id,
    (g) => g.realmId === realmId && g.status === 'consent' && g.consentHash !== undefined && secretsEqual(hash(token), g.consentHash),
    (g) => ({ ...g, status: approve ? 'approved' : 'denied', consentHash: undefined }),
  );
  if (answered) await ctx.hostStore.delete(userCodeKey(realmId, answered.userCode));
  return answered;
}

/** The user cancelled the sign-in the device page started (Keycloak's CANCELLED_BY_USER): the device hears access_denied. */
export async function denyDeviceGrant(ctx: StoreCtx, realmId: string, id: string): Promise<boolean> {
  const denied = await changeGrant(ctx, id, (g) => g.realmId === realmId && (g.status === 'pending' || g.status === 'consent'), (g) => ({ ...g, status: 'denied', consentHash: undefined }));
  if (denied) await ctx.hostStore.delete(userCodeKey(realmId, denied.userCode));
  return denied !== null;
}

export type DevicePoll =
  | { status: 'not_valid' | 'expired' | 'other_client' | 'slow_down' | 'denied' | 'pending' }
  | { status: 'pkce'; reason: PkceRefusal }
  | { status: 'approved'; grant: DeviceGrant & { sessionId: string; userId: string } };

/**
 * A poll of the token endpoint, in Keycloak's order: unknown or spent, expired, another client's (no poll stamped),
 * too soon after the last poll (`slow_down`, which does not stamp the clock again), denied, pending. An approved code
 * is claimed before it is answered, so it is redeemed once across nodes, even by two polls at once.
 */
export async function pollDeviceGrant(ctx: StoreCtx, realmId: string, clientId: string, deviceCode: string, codeVerifier?: string): Promise<DevicePoll> {
  if (deviceCode.length > 256) return { status: 'not_valid' };
  const id = hash(deviceCode);
  const raw = await ctx.hostStore.get(grantKey(id));
  if (!raw) return { status: 'not_valid' };
  const grant = JSON.parse(raw) as DeviceGrant;
  if (grant.realmId !== realmId) return { status: 'not_valid' };
  if (grant.expiresAt <= Date.now()) return { status: 'expired' };
  if (grant.clientId !== clientId) return { status: 'other_client' };
  if (!(await ctx.hostStore.setIfAbsent(`${grantKey(id)}:poll`, '1', grant.interval * 1000))) return { status: 'slow_down' };
  if (grant.status === 'denied') return { status: 'denied' };
  if (grant.status !== 'approved' || !grant.sessionId || !grant.userId) return { status: 'pending' };
  // As Keycloak's DeviceGrantType: checked once approved, before the code is spent (a wrong verifier spends nothing).
  const pkce = pkceRefusal(grant.codeChallenge, codeVerifier);
  if (pkce) return { status: 'pkce', reason: pkce };
  if (!(await ctx.hostStore.setIfAbsent(`${grantKey(id)}:used`, '1', Math.max(1, keptMs(grant))))) return { status: 'not_valid' };
  await ctx.hostStore.delete(grantKey(id));
  return { status: 'approved', grant: grant as DeviceGrant & { sessionId: string; userId: string } };
}
