import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { APP_ERRORS, AUTHORIZATION_ERRORS, EVENT_ERRORS, OAUTH_ERRORS, PASSWORD_POLICY_ERRORS, TOKEN_VERIFICATION_REASONS } from '../src/model/errors.js';

/**
 * Issue 13, point 2: one error catalogue (src/model/errors.ts), every code of it in the README's "Errors" table
 * and nothing in the table that the catalogue lacks (as Fastify's errors test holds lib/errors.js to its docs);
 * no call site makes up a code or branches on an error's message.
 */

const SRC = resolve(import.meta.dirname, '../src');
const README = resolve(import.meta.dirname, '../README.md');
const CATALOGUE = join(SRC, 'model/errors.ts');

/** The rows of the README's Errors table as `kind | code | status` (status: the usual one, before any bracket). */
function documentedRows(markdown: string): string[] {
  const section = /^## Errors\n([\s\S]*?)(?=^## )/m.exec(markdown)?.[1] ?? '';
  return [...section.matchAll(/^\| `([^`]+)` \| ([^|]+?) \| ([^|]+?) \|/gm)].map(([, code, kind, status]) => `${kind} | ${code} | ${status.split(' ')[0]}`);
}

function catalogueRows(): string[] {
  return [
    ...Object.entries(OAUTH_ERRORS).map(([code, status]) => `OAuth | ${code} | ${status}`),
    ...AUTHORIZATION_ERRORS.map((code) => `OAuth redirect | ${code} | redirect`),
    ...Object.entries(APP_ERRORS).map(([code, status]) => `admin | ${code} | ${status}`),
    ...TOKEN_VERIFICATION_REASONS.map((reason) => `token | ${reason} | —`),
    ...EVENT_ERRORS.map((name) => `event | ${name} | —`),
    ...PASSWORD_POLICY_ERRORS.map((key) => `password policy | ${key} | 400`),
  ];
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** What the catalogue alone may do: build its errors, and let a provider's own event error name through. */
const offencePatterns: Record<string, RegExp> = {
  'constructs an OAuthError or AppError (use the catalogue’s factories)': /\bnew (?:OAuthError|AppError)\s*\(/g,
  'branches on an error message (use its code or reason)': /\.message\s*[!=]==?|[!=]==?\s*\w+(?:\?\.|\.)message\b/g,
  'passes its own name as a provider’s event error': /providerEventError\(\s*['"`]/g,
};

function offencesIn(label: string, text: string): string[] {
  return Object.entries(offencePatterns).flatMap(([what, pattern]) =>
    text.split('\n').flatMap((line, i) => (line.match(pattern) ? [`${label}:${i + 1} ${what}`] : [])),
  );
}

describe('the error catalogue', () => {
  const rows = documentedRows(readFileSync(README, 'utf8'));

  it('is the README’s Errors table, code for code, kind and status included', () => {
    expect([...rows].sort()).toEqual([...catalogueRows()].sort());
  });

  it('lists each code once per kind', () => {
    expect(new Set(rows).size).toBe(rows.length);
    for (const kind of ['OAuth', 'OAuth redirect', 'admin', 'token', 'event']) {
      expect(rows.some((row) => row.startsWith(`${kind} | `)), kind).toBe(true);
    }
  });

  it('would see a code missing from the table, or one the catalogue lacks', () => {
    const table = readFileSync(README, 'utf8');
    const dropped = table.replace(/^\| `login_required` .*\n/m, '');
    expect(documentedRows(dropped)).not.toContain('OAuth redirect | login_required | redirect');
    const invented = table.replace('| `conflict` | admin | 409 |', '| `conflicted` | admin | 409 |');
    expect([...documentedRows(invented)].sort()).not.toEqual([...catalogueRows()].sort());
  });
});

describe('call sites', () => {
  it('build errors only through the catalogue, never branch on a message, never pass their own name as a provider’s', () => {
    const found = sources(SRC)
      .filter((file) => file !== CATALOGUE)
      .flatMap((file) => offencesIn(relative(SRC, file), readFileSync(file, 'utf8')));
    expect(found).toEqual([]);
  });

  it('the check sees each offence when there is one', () => {
    const planted = [
      "throw new OAuthError('invalid_grant', 'Code not valid');",
      "throw new AppError('conflict', 'taken');",
      "if (error.message === 'session ended') return;",
      "if ('session ended' !== error?.message) return;",
      "error: providerEventError('my_own_name'),",
    ].join('\n');
    expect(offencesIn('planted', planted)).toHaveLength(5);
    expect(offencesIn('model/errors.ts', readFileSync(CATALOGUE, 'utf8')).length).toBeGreaterThan(0);
  });

  it('http/ imports nothing from protocol/ (TokenVerificationError is the catalogue’s)', () => {
    const upward = sources(join(SRC, 'http')).flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/from\s+'([^']+)'/g)]
        .map((m) => relative(SRC, resolve(file, '..', m[1])))
        .filter((target) => target.startsWith('protocol/'))
        .map((target) => `${relative(SRC, file)} → ${target}`),
    );
    expect(upward).toEqual([]);
  });
});
