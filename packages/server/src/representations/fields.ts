/**
 * Field specs and the parser every admin representation goes through (Keycloak's JSON mapper rules). No routes
 * here: the admin API and realm import (services/realm-import) both read representations with these.
 */
import { badRequest, unreadableBody } from '../model/errors.js';

const JAVA_INT_MAX = 2_147_483_647;

type FieldType = 'string' | 'boolean' | 'integer' | 'stringArray' | 'stringMap' | 'multiMap' | 'object' | 'array';

export interface FieldSpec {
  type: FieldType;
  /**
   * Longest string (or longest item / value for collections); 255 by default, as Keycloak's columns.
   * For integers the largest value: a Java int by default, as Keycloak's, which also fits the integer columns.
   */
  max?: number;
  min?: number;
  pattern?: RegExp;
  patternHint?: string;
}

export type Spec = Record<string, FieldSpec>;

/**
 * Validates a JSON representation: a field of Keycloak's representation that this server does not use is
 * accepted and ignored (so Keycloak exports round-trip); any other field is refused, as Keycloak refuses
 * unrecognized fields. `null` means "not given", as in Keycloak.
 */
export function parseRepresentation(
  body: unknown,
  spec: Spec,
  ignored: readonly string[],
  path: string,
  /** When given (realm import), an unknown field is reported here and skipped instead of refused. */
  onUnknown?: (path: string) => void,
): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw unreadableBody(`${path}: must be a JSON object`);
  }
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    const field = Object.hasOwn(spec, key) ? spec[key] : undefined;
    if (!field) {
      if (ignored.includes(key)) continue;
      if (onUnknown) {
        onUnknown(`${path}.${key}`);
        continue;
      }
      throw unreadableBody(`${path}.${key}: unrecognized field`, key);
    }
    if (value === null) continue;
    out[key] = checkField(`${path}.${key}`, key, value, field);
  }
  return out;
}

function checkField(path: string, key: string, value: unknown, field: FieldSpec): unknown {
  const max = field.max ?? 255;
  const fail = (expected: string) => badRequest(`${path}: must be ${expected}`, key);
  // What Keycloak's JSON reader cannot read as the field's type is answered as its reader's failure.
  const wrongType = (expected: string) => unreadableBody(`${path}: must be ${expected}`, key);
  const checkString = (s: unknown, label = 'a string') => {
    if (typeof s !== 'string') throw wrongType(label);
    if (s.length > max) throw fail(`at most ${max} characters`);
    // PostgreSQL cannot store NUL in text, and SQLite cuts the string there: refused, not half-stored.
    if (s.includes('\u0000')) throw fail('text without NUL characters');
    return s;
  };
  switch (field.type) {
    case 'string': {
      const s = checkString(value);
      if (field.min !== undefined && s.length < field.min) throw fail(`at least ${field.min} characters`);
      if (field.pattern && !field.pattern.test(s)) throw fail(field.patternHint ?? `of the form ${field.pattern}`);
      return s;
    }
    case 'boolean':
      if (typeof value !== 'boolean') throw wrongType('true or false');
      return value;
    case 'integer':
      if (typeof value !== 'number' || !Number.isInteger(value)) throw wrongType('an integer');
      if (field.min !== undefined && value < field.min) throw fail(`at least ${field.min}`);
      if (value > (field.max ?? JAVA_INT_MAX)) throw fail(`at most ${field.max ?? JAVA_INT_MAX}`);
      return value;
    case 'stringArray':
      if (!Array.isArray(value)) throw wrongType('an array of strings');
      if (value.length > 1000) throw fail('an array of at most 1000 strings');
      return value.map((v) => checkString(v, 'an array of strings'));
    case 'stringMap': {
      if (typeof value !== 'object' || Array.isArray(value)) throw wrongType('an object of string values');
      const entries = Object.entries(value as object);
      if (entries.length > 500) throw fail('an object of at most 500 entries');
      const map: Record<string, string> = {};
      for (const [k, v] of entries) {
        if (k.length > 255) throw fail('an object whose keys have at most 255 characters');
        // Assigned to a plain object, `__proto__` would replace its prototype instead of being kept: refused.
        if (k === '__proto__') throw fail('an object without a "__proto__" key');
        // Keycloak's client attributes arrive as strings; numbers and booleans are stored as their text.
        if (typeof v === 'number' || typeof v === 'boolean') map[k] = String(v);
        else map[k] = checkString(v, 'an object of string values');
      }
      return map;
    }
    case 'multiMap': {
      if (typeof value !== 'object' || Array.isArray(value)) throw wrongType('an object of string arrays');
      const entries = Object.entries(value as object);
      if (entries.length > 500) throw fail('an object of at most 500 entries');
      const map: Record<string, string[]> = {};
      for (const [k, v] of entries) {
        if (k.length > 255) throw fail('an object whose keys have at most 255 characters');
        if (k === '__proto__') throw fail('an object without a "__proto__" key');
        const list = Array.isArray(v) ? v : [v];
        if (list.length > 1000) throw fail('an object of at most 1000 values per key');
        map[k] = list.map((item) => checkString(item, 'an object of string arrays'));
      }
      return map;
    }
    case 'object':
      if (typeof value !== 'object' || Array.isArray(value)) throw wrongType('an object');
      return value;
    case 'array':
      if (!Array.isArray(value)) throw wrongType('an array');
      if (value.length > 1000) throw fail('an array of at most 1000 items');
      return value;
  }
}

/** Ids in paths are UUIDs; anything else cannot name a resource (and never reaches a query). */
export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A list field of a realm file: absent or null is empty; anything but an array is refused, naming its path. */
export const asArray = (value: unknown, path: string): unknown[] => {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw badRequest(`${path}: must be an array`);
  return value;
};

export const stringList = (value: unknown, path: string): string[] =>
  asArray(value, path).map((v, i) => {
    // Names here are looked up in the database: NUL would fail there instead of naming nothing.
    if (typeof v !== 'string' || v.includes('\u0000')) throw badRequest(`${path}[${i}]: must be a string without NUL characters`);
    return v;
  });
