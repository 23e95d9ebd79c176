import { badRequest } from '../model/errors.js';

/** Query parameters: `first`/`max` paging and booleans, with 400s that name the parameter. */
export function queryInt(query: Record<string, unknown>, name: string, fallback: number | undefined, max = 10_000): number | undefined {
  const raw = query[name];
  if (raw === undefined || raw === '') return fallback;
  if (typeof raw !== 'string' || !/^\d{1,9}$/.test(raw)) throw badRequest(`Query parameter "${name}" must be a non-negative integer`, name);
  return Math.min(Number(raw), max);
}

export function queryBool(query: Record<string, unknown>, name: string): boolean | undefined {
  const raw = query[name];
  if (raw === undefined || raw === '') return undefined;
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  throw badRequest(`Query parameter "${name}" must be true or false`, name);
}

export function queryString(query: Record<string, unknown>, name: string, max = 255): string | undefined {
  const raw = query[name];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string') throw badRequest(`Query parameter "${name}" must be given once`, name);
  if (raw.length > max) throw badRequest(`Query parameter "${name}" is longer than ${max} characters`, name);
  if (raw.includes('\u0000')) throw badRequest(`Query parameter "${name}" must not contain NUL characters`, name);
  return raw;
}
