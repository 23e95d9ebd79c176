import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { referencePath, renderConfigReference } from '../../../scripts/config-reference.js';
import { options } from '../src/config/index.js';

describe('docs/configuration.md', () => {
  it('is what npm run docs:config generates from the option table (run it after changing config/schema.ts)', () => {
    expect(readFileSync(referencePath, 'utf8')).toBe(renderConfigReference());
  });

  it('lists every option with its flag and environment variable', () => {
    const reference = renderConfigReference();
    for (const option of options) {
      expect(reference).toContain(`| \`${option.flag}\` | \`${option.env}\` | \`${option.key}\` |`);
    }
  });
});
