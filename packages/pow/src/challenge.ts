import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ProtectedForm, SharedStore } from '@realmgate/spi';

export type ChallengeAlgorithm = 'argon2id' | 'sha256';

/** The signed payload of SPEC 6, field order as on the wire. */
export interface Challenge {
  v: 1;
  /** base64url of 16 random bytes; also the Argon2id salt and the spent-set key. */
  id: string;
  realm: string;
  flow: ProtectedForm;
  alg: ChallengeAlgorithm;
  /** Required leading zero bits. */
  d: number;
  /** Argon2id memory in KiB (0 in SHA-256 mode). */
  m: number;
  /** Argon2id iterations (0 in SHA-256 mode). */
  t: number;
  p: 1;
  /** Issue time, epoch ms. */
  iat: number;
}

export type ChallengeParseFailure = 'malformed' | 'bad_signature';

const FLOWS: readonly string[] = ['login', 'registration', 'reset-credentials'];
const B64URL = /^[A-Za-z0-9_-]+$/;
const ID = /^[A-Za-z0-9_-]{22}$/;
/** 32 HMAC bytes are 43 base64url characters. */
const SIG = /^[A-Za-z0-9_-]{43}$/;
/** Far above any real challenge; bounds the work spent on junk before the HMAC. */
export const MAX_CHALLENGE_LENGTH = 2048;

export function newChallengeId(): string {
  return randomBytes(16).toString('base64url');
}

function sign(payload: string, key: Uint8Array): Buffer {
  return createHmac('sha256', key).update(payload).digest();
}

/** `PAYLOAD.SIG`: base64url JSON with the fields in wire order, then base64url HMAC-SHA256 of PAYLOAD. */
export function encodeChallenge(challenge: Challenge, key: Uint8Array): string {
  const { v, id, realm, flow, alg, d, m, t, p, iat } = challenge;
  const payload = Buffer.from(JSON.stringify({ v, id, realm, flow, alg, d, m, t, p, iat })).toString('base64url');
  return `${payload}.${sign(payload, key).toString('base64url')}`;
}

function isInt(value: unknown, min: number, max: number): value is number {
  return Number.isSafeInteger(value) && (value as number) >= min && (value as number) <= max;
}

function toChallenge(json: unknown): Challenge | null {
  if (typeof json !== 'object' || json === null) return null;
  const c = json as Record<string, unknown>;
  const shapeOk =
    c.v === 1 &&
    typeof c.id === 'string' &&
    ID.test(c.id) &&
    typeof c.realm === 'string' &&
    c.realm.length > 0 &&
    typeof c.flow === 'string' &&
    FLOWS.includes(c.flow) &&
    isInt(c.d, 0, 256) &&
    c.p === 1 &&
    isInt(c.iat, 0, Number.MAX_SAFE_INTEGER) &&
    ((c.alg === 'argon2id' && isInt(c.m, 8, 1_048_576) && isInt(c.t, 1, 16)) ||
      (c.alg === 'sha256' && c.m === 0 && c.t === 0));
  if (!shapeOk) return null;
  const { v, id, realm, flow, alg, d, m, t, p, iat } = c as unknown as Challenge;
  return { v, id, realm, flow, alg, d, m, t, p, iat };
}

function decodePayload(payload: string): Challenge | null {
  try {
    return toChallenge(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')));
  } catch {
    return null;
  }
}

/** Checks the signature (constant time) before the payload is even parsed. */
export function verifyChallenge(
  token: string,
  key: Uint8Array,
): { ok: true; challenge: Challenge } | { ok: false; reason: ChallengeParseFailure } {
  const dot = token.indexOf('.');
  const payload = token.slice(0, dot);
  const sig = token.slice(dot + 1);
  if (token.length > MAX_CHALLENGE_LENGTH || dot < 0 || !B64URL.test(payload) || !SIG.test(sig))
    return { ok: false, reason: 'malformed' };
  // Compared as text, not decoded bytes: the last of the 43 characters carries 2 unused bits, and decoding
  // would let four spellings of one signature through (a token a client altered must not verify).
  if (!timingSafeEqual(Buffer.from(sign(payload, key).toString('base64url')), Buffer.from(sig)))
    return { ok: false, reason: 'bad_signature' };
  const challenge = decodePayload(payload);
  return challenge ? { ok: true, challenge } : { ok: false, reason: 'malformed' };
}

/** Reads a challenge without checking its signature: for solvers, which do not hold the key. */
export function decodeChallenge(token: string): Challenge {
  const payload = token.split('.')[0];
  const challenge = B64URL.test(payload) ? decodePayload(payload) : null;
  if (!challenge) throw new Error('not a proof-of-work challenge');
  return challenge;
}

const KEY_NAME = 'hmac-key';
/** The key must outlive every challenge and spent entry; the store API wants some TTL. */
const KEY_TTL_MS = 10 * 365 * 24 * 3600 * 1000;

/**
 * The challenge HMAC key. An explicit secret (`POW_SECRET`) wins; otherwise the first process to start
 * stores a random key in the shared store and every other process adopts it.
 */
export async function loadKey(store: SharedStore, secret: string | null): Promise<Buffer> {
  if (secret !== null) return Buffer.from(secret, 'utf8');
  await store.setIfAbsent(KEY_NAME, randomBytes(32).toString('base64url'), KEY_TTL_MS);
  const stored = await store.get(KEY_NAME);
  if (stored === null) throw new Error('the shared store lost the proof-of-work key right after storing it');
  return Buffer.from(stored, 'base64url');
}
