import { sql, type RawBuilder, type SqlBool } from 'kysely';

/** Row encoding shared by the repositories: 0/1 flags and JSON text columns. */
export const flag = (value: boolean): number => (value ? 1 : 0);
export const bool = (value: number | boolean): boolean => value === 1 || value === true;
export const toJson = (value: unknown): string => JSON.stringify(value);
export function fromJson<T>(text: string | null | undefined, fallback: T): T {
  if (!text) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

/**
 * False for text no row can hold: PostgreSQL refuses NUL in text parameters (an error, not "no match") and SQLite
 * cuts the string there, so a lookup by such a name answers "nothing" without reaching the database.
 */
export const storable = (text: string): boolean => !text.includes('\u0000');

/** True when a driver error is a unique-constraint violation (SQLite or PostgreSQL). */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** True when a driver error is a foreign-key violation (SQLite or PostgreSQL): the row referred to is gone. */
export function isForeignKeyViolation(error: unknown): boolean {
  const e = error as { code?: string };
  return e?.code === '23503' || e?.code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

/** `value` with LIKE's wildcards (and the escape character) taken literally, for `… like ? escape '\\'`. */
export const escapeLike = (value: string) => value.replace(/[\\%_]/g, (c) => `\\${c}`);

/** Case-insensitive substring match, with LIKE wildcards in the value taken literally, on both dialects. */
export function containsIgnoreCase(column: string, value: string): RawBuilder<SqlBool> {
  const pattern = `%${escapeLike(value.toLowerCase())}%`;
  return sql<SqlBool>`lower(${sql.ref(column)}) like ${pattern} escape '\\'`;
}
