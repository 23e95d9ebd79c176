import { createHmac } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { leadingZeroBits, solve, solutionHash, verifyChallenge } from '../src/index.js';

/** The worked example of README.md, line by line. */
async function example(): Promise<Record<string, string>> {
  const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
  const block = /### Worked example[\s\S]*?```text\n([\s\S]*?)```/.exec(readme);
  if (!block) throw new Error('README has no worked example block');
  return Object.fromEntries(
    block[1]
      .trim()
      .split('\n')
      .map((line) => {
        const colon = line.indexOf(':');
        return [line.slice(0, colon), line.slice(colon + 1).trim()];
      }),
  );
}

describe('README worked example', () => {
  it('is what the code computes', async () => {
    const ex = await example();
    const key = Buffer.from(ex['key (UTF-8)'], 'utf8');
    expect(Buffer.from(ex['payload JSON']).toString('base64url')).toBe(ex.PAYLOAD);
    expect(createHmac('sha256', key).update(ex.PAYLOAD).digest('base64url')).toBe(ex.SIG);
    const token = `${ex.PAYLOAD}.${ex.SIG}`;
    const verified = verifyChallenge(token, key);
    if (!verified.ok) throw new Error(verified.reason);
    expect(JSON.stringify(verified.challenge)).toBe(ex['payload JSON']);

    const hash = await solutionHash(verified.challenge, ex['first nonce']);
    expect(hash.toString('hex')).toBe(ex['Argon2id hash']);
    expect(leadingZeroBits(hash)).toBe(Number(ex['leading zero bits']));
    expect(leadingZeroBits(hash)).toBeGreaterThanOrEqual(verified.challenge.d);
    expect((await solve(token)).nonce).toBe(ex['first nonce']);
  });
});
