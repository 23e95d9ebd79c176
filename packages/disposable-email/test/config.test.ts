import { describe, expect, it } from 'vitest';
import { ConfigError, ENV_ALLOWLIST, ENV_EXTRA_SOURCES, ENV_SOURCE_TIMEOUT_MS, parseSettings, unknownKeys } from '../src/config.js';

const SECTION = 'providers.ext-disposable-email-resource-provider';

describe('parseSettings', () => {
  it('defaults to no allowlist, no extra sources, 10 s source timeout', () => {
    expect(parseSettings({}, {}, SECTION)).toEqual({ allowlist: [], extraSources: [], sourceTimeoutMs: 10_000 });
  });

  it('reads lists as arrays or comma-separated strings from the config section', () => {
    expect(
      parseSettings(
        { allowlist: ['a.example', ' b.example '], extraSources: '/etc/list.txt, https://example.com/list.txt', sourceTimeoutMs: 2500 },
        {},
        SECTION,
      ),
    ).toEqual({
      allowlist: ['a.example', 'b.example'],
      extraSources: ['/etc/list.txt', 'https://example.com/list.txt'],
      sourceTimeoutMs: 2500,
    });
  });

  it('lets the environment override the config section; blank variables count as unset', () => {
    const settings = parseSettings(
      { allowlist: ['file.example'], extraSources: ['/from/file.txt'], sourceTimeoutMs: 1 },
      { [ENV_ALLOWLIST]: 'env.example,,other.example', [ENV_EXTRA_SOURCES]: '  ', [ENV_SOURCE_TIMEOUT_MS]: '3000' },
      SECTION,
    );
    expect(settings).toEqual({ allowlist: ['env.example', 'other.example'], extraSources: ['/from/file.txt'], sourceTimeoutMs: 3000 });
  });

  it('names the key and the value of a bad setting', () => {
    const cases: [Record<string, unknown>, Record<string, string>, string][] = [
      [{ allowlist: ['ok.example', 'not a domain'] }, {}, `Invalid ${SECTION}.allowlist[1]: "not a domain" is not a domain name`],
      [{ allowlist: 42 }, {}, `Invalid ${SECTION}.allowlist: 42 is neither a list of strings`],
      [{ allowlist: ['a.example', 7] }, {}, `Invalid ${SECTION}.allowlist: ["a.example",7]`],
      [{}, { [ENV_ALLOWLIST]: 'com' }, `Invalid ${ENV_ALLOWLIST}[0]: "com" is not a domain name`],
      [{ extraSources: ['ftp://x.example/list'] }, {}, `Invalid ${SECTION}.extraSources[0]: "ftp://x.example/list" is neither an http(s) URL nor a file`],
      [{}, { [ENV_EXTRA_SOURCES]: 'https://exa mple.com/x' }, `Invalid ${ENV_EXTRA_SOURCES}[0]: "https://exa mple.com/x" is not a valid URL`],
      [{ extraSources: [''] }, {}, `Invalid ${SECTION}.extraSources[0]: a source must be a non-empty string`],
      [{ sourceTimeoutMs: 0 }, {}, `Invalid ${SECTION}.sourceTimeoutMs: 0 is not a positive integer`],
      [{ sourceTimeoutMs: '10s' }, {}, `Invalid ${SECTION}.sourceTimeoutMs: "10s" is not a positive integer`],
      [{}, { [ENV_SOURCE_TIMEOUT_MS]: '-5' }, `Invalid ${ENV_SOURCE_TIMEOUT_MS}: "-5" is not a positive integer`],
      [{ sourceTimeoutMs: 1.5 }, {}, `Invalid ${SECTION}.sourceTimeoutMs: 1.5 is not a positive integer`],
    ];
    for (const [config, env, message] of cases) {
      let error: unknown;
      try {
        parseSettings(config, env, SECTION);
      } catch (e) {
        error = e;
      }
      expect(error, message).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toContain(message);
    }
  });

  it('reports unknown keys', () => {
    expect(unknownKeys({ allowlist: [], allowList: [], extra_sources: '' })).toEqual(['allowList', 'extra_sources']);
  });
});
