import { claimPath } from '../../../model/protocol-mapper-types.js';
import type { Claims } from './types.js';

/** Parts that would reach an object's prototype: never written. */
const UNSAFE = new Set(['__proto__', 'constructor', 'prototype']);

const isObject = (v: unknown): v is Claims => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A compiled `claim.name`: its path, or null when the mapper writes nothing (no name, or an unsafe part). */
export function compileClaimName(name: string | undefined): string[] | null {
  if (!name) return null;
  const path = claimPath(name);
  return path.some((p) => UNSAFE.has(p) || p === '') ? null : path;
}

/**
 * Writes `value` at `path`, creating the objects on the way (a non-object in the way is replaced). A multivalued
 * claim already holding a list gets the new values added (two role mappers writing one claim merge, as Keycloak's).
 */
export function writeClaim(claims: Claims, path: readonly string[], value: unknown, merge = false): void {
  let target = claims;
  for (let i = 0; i < path.length - 1; i++) {
    const next = target[path[i]];
    if (isObject(next)) target = next;
    else {
      const created: Claims = {};
      target[path[i]] = created;
      target = created;
    }
  }
  const key = path[path.length - 1];
  const existing = target[key];
  if (merge && Array.isArray(existing) && Array.isArray(value)) {
    target[key] = [...existing, ...value.filter((v) => !existing.includes(v))];
  } else target[key] = value;
}

/** The access, ID token or introspection `aud`, kept as a list while mappers add to it. */
export function addAudience(claims: Claims, audience: string): void {
  const current = claims.aud;
  const list = Array.isArray(current) ? (current as string[]) : typeof current === 'string' ? [current] : [];
  if (!list.includes(audience)) list.push(audience);
  claims.aud = list;
}

/**
 * A string value as `jsonType.label` asks (Keycloak's conversions): undefined when it cannot be converted, and the
 * claim is then left out. No type: the string as it is.
 */
export function convertValue(value: unknown, jsonType: string | undefined): unknown {
  if (value === undefined || value === null) return undefined;
  switch (jsonType) {
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (String(value).toLowerCase() === 'true') return true;
      if (String(value).toLowerCase() === 'false') return false;
      return undefined;
    case 'long':
    case 'int': {
      if (typeof value === 'number') return Math.trunc(value);
      const text = String(value).trim();
      if (!/^[-+]?\d+$/.test(text)) return undefined;
      const n = Number(text);
      return Number.isSafeInteger(n) ? n : undefined;
    }
    case 'JSON':
      if (typeof value !== 'string') return value;
      try {
        return JSON.parse(value);
      } catch {
        return undefined;
      }
    case 'String':
      return typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
    default:
      return value;
  }
}

/** Which documents a mapper writes to, from its `*.token.claim` settings (absent means no, as Keycloak's). */
export interface Targets {
  access: boolean;
  id: boolean;
  userinfo: boolean;
  introspection: boolean;
}

export function targetsOf(config: Record<string, string>): Targets {
  const access = config['access.token.claim'] === 'true';
  const introspection = config['introspection.token.claim'];
  return {
    access,
    id: config['id.token.claim'] === 'true',
    userinfo: config['userinfo.token.claim'] === 'true',
    // Keycloak's rule for mappers made before introspection had its own switch: absent, it follows the access token.
    introspection: introspection === undefined ? access : introspection === 'true',
  };
}

/**
 * The common shape of a value mapper (Keycloak's attribute helper): `claim.name`, `jsonType.label`,
 * `multivalued`. `write` converts each value and writes a list (multivalued) or the first value.
 */
export function valueWriter(config: Record<string, string>): ((claims: Claims, values: readonly unknown[] | undefined) => void) | null {
  const path = compileClaimName(config['claim.name']);
  if (!path) return null;
  const jsonType = config['jsonType.label'];
  const multivalued = config.multivalued === 'true';
  return (claims, values) => {
    if (!values || values.length === 0) return;
    if (multivalued) {
      const converted = values.map((v) => convertValue(v, jsonType)).filter((v) => v !== undefined);
      if (converted.length) writeClaim(claims, path, converted, true);
    } else {
      const converted = convertValue(values[0], jsonType);
      if (converted !== undefined) writeClaim(claims, path, converted);
    }
  };
}
