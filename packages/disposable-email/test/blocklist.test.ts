import { copyFile, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import mailchecker from 'mailchecker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Blocklist,
  defaultBlocklist,
  emailDomain,
  isDisposableEmail,
  mailcheckerDataPath,
  normalizeListEntry,
  refresh,
  size,
} from '../src/blocklist.js';
import { startServer, tempDir, writeDataFile } from './helpers.js';

let dir: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  dir = await tempDir();
});
afterAll(async () => {
  await dir.remove();
});

/** A Blocklist over a small data file of these domains. */
async function smallList(name: string, domains: string[], options: ConstructorParameters<typeof Blocklist>[0] = {}) {
  const dataPath = await writeDataFile(join(dir.path, `${name}.js`), domains);
  return { dataPath, list: new Blocklist({ ...options, dataPath }) };
}

describe('the bundled mailchecker data', () => {
  it('is read from the mailchecker package on disk, every entry kept', () => {
    expect(mailcheckerDataPath()).toMatch(/node_modules\/mailchecker\/.+\.js$/);
    // A list of its own: the process's default list may carry extra sources another file in this worker set.
    const fresh = new Blocklist();
    expect(fresh.size).toBeGreaterThan(50_000);
    expect(fresh.size).toBe(mailchecker.blacklist().size);
  });

  it('blocks what mailchecker considers disposable and nothing else, on a sample of its own list', () => {
    const entries = [...mailchecker.blacklist()];
    for (let i = 0; i < entries.length; i += 97) {
      expect(isDisposableEmail(`someone@${entries[i]}`), entries[i]).toBe(true);
      expect(isDisposableEmail(`someone@sub.${entries[i]}`), entries[i]).toBe(true);
    }
    for (const domain of ['gmail.com', 'outlook.com', 'proton.me', 'example.com', 'gmail.com.br']) {
      expect(mailchecker.isValid(`someone@${domain}`)).toBe(true);
      expect(isDisposableEmail(`someone@${domain}`), domain).toBe(false);
    }
  });

  it('refresh() resolves to the size and the module functions share one list', async () => {
    const count = await refresh();
    expect(count).toBe(size());
    expect(count).toBe(defaultBlocklist.size);
    expect(defaultBlocklist.lastRefresh?.domains).toBe(count);
  });
});

describe('matching', () => {
  it('matches the domain and every parent domain, on label boundaries only', () => {
    expect(mailchecker.blacklist().has('mailinator.com')).toBe(true);
    expect(mailchecker.blacklist().has('x.mailinator.com')).toBe(false);
    expect(mailchecker.blacklist().has('xmailinator.com')).toBe(false);
    expect(isDisposableEmail('a@mailinator.com')).toBe(true);
    expect(isDisposableEmail('a@x.mailinator.com')).toBe(true);
    expect(isDisposableEmail('a@a.b.c.d.mailinator.com')).toBe(true);
    expect(isDisposableEmail('a@xmailinator.com')).toBe(false);
    expect(isDisposableEmail('a@mailinator.com.example.org')).toBe(false);
  });

  it('ignores case', () => {
    expect(isDisposableEmail('A@MAILINATOR.COM')).toBe(true);
    expect(isDisposableEmail('Someone@Sub.MaIlInAtOr.CoM')).toBe(true);
  });

  it('strips one trailing dot', () => {
    expect(isDisposableEmail('a@mailinator.com.')).toBe(true);
    expect(isDisposableEmail('a@x.mailinator.com.')).toBe(true);
    expect(isDisposableEmail('a@mailinator.com..')).toBe(false);
  });

  it('takes the domain after the last @', () => {
    expect(isDisposableEmail('"a@gmail.com"@mailinator.com')).toBe(true);
    expect(isDisposableEmail('"a@mailinator.com"@gmail.com')).toBe(false);
    expect(emailDomain('"x@y"@Example.ORG.')).toBe('example.org');
  });

  it('judges the domain only: an odd local part does not hide a listed domain', () => {
    expect(isDisposableEmail('a b@mailinator.com')).toBe(true);
    expect(isDisposableEmail('  a@mailinator.com \n')).toBe(true);
  });

  it('matches a single-label domain against nothing', async () => {
    const { list } = await smallList('single', ['example.test']);
    expect(list.isDisposable('a@test')).toBe(false);
    expect(list.isDisposable('a@localhost')).toBe(false);
  });

  it('handles IDN: Unicode addresses and entries are compared as punycode', async () => {
    const { list } = await smallList('idn', ['bücher.example', 'xn--mnchen-3ya.example']);
    expect(list.isDisposable('a@bücher.example')).toBe(true);
    expect(list.isDisposable('a@BÜCHER.example')).toBe(true);
    expect(list.isDisposable('a@xn--bcher-kva.example')).toBe(true);
    expect(list.isDisposable('a@shop.bücher.example')).toBe(true);
    expect(list.isDisposable('a@münchen.example')).toBe(true);
    expect(list.isDisposable('a@sub.MÜNCHEN.example.')).toBe(true);
    expect(list.isDisposable('a@bucher.example')).toBe(false);
    expect(list.isDisposable('a@münchen.example.org')).toBe(false);
  });

  it('folds Unicode look-alikes that map to a listed domain', () => {
    // Full-width letters and the ideographic full stop map to ASCII under UTS #46.
    expect(isDisposableEmail('a@ｍａｉｌｉｎａｔｏｒ.com')).toBe(true);
    expect(isDisposableEmail('a@mailinator。com')).toBe(true);
  });

  it('returns false, never throws, for malformed input', () => {
    const malformed: unknown[] = [
      '',
      ' ',
      'mailinator.com',
      '@mailinator.com',
      '  @mailinator.com',
      'a@',
      'a@ ',
      'a@.',
      'a@mail inator.com',
      'a@mail\tinator.com',
      'a@mailinator\u0000.com',
      'a@.mailinator.com',
      'a@x..mailinator.com',
      'a@mailinator.com@',
      'a@\u{1F4A9}\u{1F4A9}%.com',
      'a@xn--.com\u00e9 x',
      `a@${'x.'.repeat(20_000)}mailinator.com@`,
      `a@${'x'.repeat(250)}.com`,
      null,
      undefined,
      42,
      {},
      ['a@mailinator.com'],
      Symbol('a@mailinator.com'),
    ];
    for (const input of malformed) {
      expect(() => isDisposableEmail(input as string)).not.toThrow();
      expect(isDisposableEmail(input as string), String(typeof input === 'symbol' ? 'symbol' : input)).toBe(false);
    }
  });

  it('treats a domain longer than 253 characters as malformed, and stays fast on huge input', () => {
    const longest = `${'x.'.repeat(119)}mailinator.com`;
    expect(longest).toHaveLength(252);
    expect(isDisposableEmail(`a@${longest}`)).toBe(true);
    expect(isDisposableEmail(`a@${longest}.`)).toBe(true);
    expect(isDisposableEmail(`a@y${longest}`)).toBe(true);
    expect(isDisposableEmail(`a@y.${longest}`)).toBe(false);
    // Linear work takes milliseconds, quadratic minutes: the test's timeout catches that (the time itself is a
    // benchmark's business, not an assertion's).
    for (let i = 0; i < 10; i++) expect(isDisposableEmail(`a@${'x.'.repeat(100_000)}mailinator.com`)).toBe(false);
  });

  it('catches padding that IDN mapping removes, however long', () => {
    expect(isDisposableEmail(`a@mail${'\u00ad'.repeat(1_000)}inator.com`)).toBe(true);
    expect(isDisposableEmail('a@mail\u200binator.com')).toBe(true);
  });
});

describe('list entries', () => {
  it('normalizes and validates entries', () => {
    expect(normalizeListEntry('  Example.COM.  ')).toBe('example.com');
    expect(normalizeListEntry('*.example.com')).toBe('example.com');
    expect(normalizeListEntry('bücher.example')).toBe('xn--bcher-kva.example');
    expect(normalizeListEntry('sub_domain.example.com')).toBe('sub_domain.example.com');
    for (const bad of ['com', 'example', '-bad.com', 'bad-.com', 'a b.com', 'a@b.com', 'http://x.com', 'x.com/path', '', '.', 'a..com', `${'a'.repeat(64)}.com`, `${'a.'.repeat(126)}com`]) {
      expect(normalizeListEntry(bad), bad).toBeNull();
    }
  });
});

describe('allowlist', () => {
  it('never blocks an allowlisted domain or its subdomains, and nothing else changes', async () => {
    const { list } = await smallList('allow', ['blocked.example', 'other.example'], { allowlist: ['Good.Blocked.Example'] });
    expect(list.isDisposable('a@blocked.example')).toBe(true);
    expect(list.isDisposable('a@bad.blocked.example')).toBe(true);
    expect(list.isDisposable('a@good.blocked.example')).toBe(false);
    expect(list.isDisposable('a@x.good.blocked.example')).toBe(false);
    expect(list.isDisposable('a@other.example')).toBe(true);
  });

  it('allowlisting a listed domain lets all of it through; configure() applies at once', async () => {
    const { list } = await smallList('allow2', ['blocked.example']);
    expect(list.isDisposable('a@x.blocked.example')).toBe(true);
    list.configure({ allowlist: ['blocked.example'] });
    expect(list.isDisposable('a@blocked.example')).toBe(false);
    expect(list.isDisposable('a@x.blocked.example')).toBe(false);
    list.configure({ allowlist: [] });
    expect(list.isDisposable('a@blocked.example')).toBe(true);
  });

  it('refuses an entry that is not a domain', async () => {
    const { list } = await smallList('allow3', ['blocked.example'], { allowlist: ['ok.example'] });
    expect(() => list.configure({ allowlist: ['not a domain'] })).toThrow(/allowlist: "not a domain"/);
    // A refused configuration changes nothing.
    expect(list.isDisposable('a@blocked.example')).toBe(true);
    expect(() => new Blocklist({ dataPath: mailcheckerDataPath(), allowlist: ['com'] })).toThrow(/allowlist/);
  });
});

describe('refresh', () => {
  it('re-reads the data file from disk, not from the module cache', async () => {
    const dataPath = join(dir.path, 'mailchecker-copy.js');
    await copyFile(mailcheckerDataPath(), dataPath);
    const list = new Blocklist({ dataPath });
    const before = list.size;
    expect(before).toBe(mailchecker.blacklist().size);
    expect(list.isDisposable('a@brand-new-disposable.test')).toBe(false);
    expect(list.isDisposable('a@mailinator.com')).toBe(true);

    const text = await readFile(dataPath, 'utf8');
    const changed = text.replace('"mailinator.com",', '').replace('new Set([', 'new Set(["brand-new-disposable.test",');
    expect(changed).not.toBe(text);
    await writeFile(dataPath, changed);

    expect(list.isDisposable('a@brand-new-disposable.test')).toBe(false);
    await expect(list.refresh()).resolves.toBe(before);
    expect(list.isDisposable('a@x.brand-new-disposable.test')).toBe(true);
    expect(list.isDisposable('a@mailinator.com')).toBe(false);
  });

  it('keeps the old list and rejects when the data file is missing or unreadable', async () => {
    const { dataPath, list } = await smallList('broken', ['one.example', 'two.example']);
    await writeFile(dataPath, 'module.exports = {};');
    await expect(list.refresh()).rejects.toThrow(/no domain list found/);
    expect(list.size).toBe(2);
    expect(list.isDisposable('a@one.example')).toBe(true);

    await writeFile(dataPath, 'var blacklist = new Set(["one.example", ]);');
    await expect(list.refresh()).rejects.toThrow(/no domain list found/);
    await unlink(dataPath);
    await expect(list.refresh()).rejects.toThrow(/ENOENT/);
    expect(list.size).toBe(2);
    expect(list.isDisposable('a@two.example')).toBe(true);
  });

  it('fails to construct on a data file without a list', async () => {
    const path = join(dir.path, 'empty.js');
    await writeFile(path, 'var blacklist = new Set([]);');
    expect(() => new Blocklist({ dataPath: path })).toThrow(/no domain list found/);
  });

  it('never shows a lookup an empty or partial list while refreshes run (hammer)', async () => {
    const extra = Array.from({ length: 2_000 }, (_, i) => `extra${i}.example`);
    // A slow source keeps each refresh in flight long enough for many lookups to interleave.
    const server = await startServer(async (_request, response) => {
      await new Promise((resolve) => setTimeout(resolve, 3));
      response.end(extra.join('\n'));
    });
    try {
      const sources = [`${server.url}/list.txt`];
      const { list } = await smallList('hammer', ['base.example'], { extraSources: sources });
      await list.refresh();
      const known = ['a@base.example', 'a@sub.base.example', 'a@extra0.example', 'a@x.extra1999.example'];
      let misses = 0;
      let refreshing = true;
      // Which refresh was in flight at each round of lookups: each one must have had lookups while it ran.
      let inFlight = -1;
      const lookedUpDuring = new Set<number>();
      const lookupLoop = (async () => {
        while (refreshing) {
          for (const address of known) {
            if (!list.isDisposable(address)) misses++;
          }
          if (inFlight >= 0) lookedUpDuring.add(inFlight);
          await new Promise((resolve) => setImmediate(resolve));
        }
      })();
      let refreshes = 0;
      for (let i = 0; i < 40; i++) {
        inFlight = i;
        await list.refresh();
        inFlight = -1;
        refreshes++;
      }
      refreshing = false;
      await lookupLoop;
      expect(refreshes).toBe(40);
      expect([...lookedUpDuring].sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i));
      expect(misses).toBe(0);
      expect(list.size).toBe(2_001);
    } finally {
      await server.close();
    }
  });

  it('coalesces concurrent calls into at most one follow-up rebuild', async () => {
    const server = await startServer(async (_request, response) => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      response.end('coalesce.example\n');
    });
    try {
      const { list } = await smallList('coalesce', ['base.example'], { extraSources: [server.url] });
      const results = await Promise.all(Array.from({ length: 10 }, () => list.refresh()));
      expect(results).toEqual(Array(10).fill(2));
      expect(server.hits).toBe(2);
      await expect(list.refresh()).resolves.toBe(2);
      expect(server.hits).toBe(3);
    } finally {
      await server.close();
    }
  });
});

describe('extra sources', () => {
  it('merges a file: comments, blank lines, CRLF, case, trailing dots and *. prefixes handled', async () => {
    const file = join(dir.path, 'extra.txt');
    await writeFile(
      file,
      [
        '# disposable domains',
        '',
        'Extra-One.example\r',
        '  extra-two.example.  # inline comment',
        '*.wild.example',
        'base.example',
        'this is not a domain',
        '   ',
        '#commented.example',
      ].join('\n'),
    );
    const { list } = await smallList('extra-file', ['base.example'], { extraSources: [file] });
    expect(list.isDisposable('a@extra-one.example')).toBe(false);
    await expect(list.refresh()).resolves.toBe(4);
    for (const address of ['a@extra-one.example', 'a@x.extra-two.example', 'a@wild.example', 'a@base.example']) {
      expect(list.isDisposable(address), address).toBe(true);
    }
    expect(list.isDisposable('a@commented.example')).toBe(false);
    expect(list.lastRefresh).toMatchObject({
      domains: 4,
      baseDomains: 1,
      sources: [{ source: file, domains: 4, invalid: 1 }],
    });
  });

  it('reads file: URLs', async () => {
    const file = join(dir.path, 'extra-url.txt');
    await writeFile(file, 'from-file-url.example\n');
    const { list } = await smallList('extra-file-url', ['base.example'], { extraSources: [pathToFileURL(file).href] });
    await expect(list.refresh()).resolves.toBe(2);
    expect(list.isDisposable('a@from-file-url.example')).toBe(true);
  });

  it('merges an http source, and an allowlist still wins over it', async () => {
    const server = await startServer((request, response) => {
      expect(request.url).toBe('/domains.txt');
      response.setHeader('content-type', 'text/plain');
      response.end('# list\nfrom-http.example\nallowed.example\n');
    });
    try {
      const { list } = await smallList('extra-http', ['base.example'], {
        extraSources: [`${server.url}/domains.txt`],
        allowlist: ['allowed.example'],
      });
      await expect(list.refresh()).resolves.toBe(3);
      expect(list.isDisposable('a@sub.from-http.example')).toBe(true);
      expect(list.isDisposable('a@allowed.example')).toBe(false);
    } finally {
      await server.close();
    }
  });

  it('a failing source rejects the refresh and keeps the old list', async () => {
    const server = await startServer((request, response) => {
      if (request.url === '/ok.txt') {
        response.end('ok.example\n');
      } else if (request.url === '/html') {
        response.end('<html>\n<body>Service unavailable</body>\n</html>\n');
      } else if (request.url === '/big') {
        response.end('big.example\n'.repeat(1_000));
      } else if (request.url === '/slow') {
        setTimeout(() => response.end('slow.example\n'), 2_000);
      } else {
        response.statusCode = 404;
        response.end('not found');
      }
    });
    try {
      const { list } = await smallList('extra-fail', ['base.example'], {
        extraSources: [`${server.url}/ok.txt`],
        maxSourceBytes: 4_096,
        sourceTimeoutMs: 300,
      });
      await list.refresh();
      expect(list.size).toBe(2);
      const cases: [string, RegExp][] = [
        [`${server.url}/missing`, /HTTP 404/],
        [`${server.url}/html`, /no domain names found/],
        [`${server.url}/big`, /larger than 4096 bytes/],
        [`${server.url}/slow`, /timed out/],
        [join(dir.path, 'does-not-exist.txt'), /ENOENT/],
        ['http://127.0.0.1:1/refused', /extra source http:\/\/127\.0\.0\.1:1\/refused/],
      ];
      for (const [source, error] of cases) {
        list.configure({ extraSources: [`${server.url}/ok.txt`, source] });
        await expect(list.refresh(), source).rejects.toThrow(error);
        expect(list.size).toBe(2);
        expect(list.isDisposable('a@ok.example')).toBe(true);
      }
    } finally {
      await server.close();
    }
  });

  it('sends credentials of a source URL as basic auth, and keeps them out of error messages', async () => {
    const server = await startServer((request, response) => {
      const expected = `Basic ${Buffer.from('user:s3cret p').toString('base64')}`;
      response.statusCode = request.headers.authorization === expected ? 200 : 401;
      response.end('private.example\n');
    });
    try {
      const { list } = await smallList('extra-auth', ['base.example'], {
        extraSources: [`${server.url.replace('//', '//user:s3cret%20p@')}/list.txt`],
      });
      await expect(list.refresh()).resolves.toBe(2);
      expect(list.lastRefresh?.sources[0].source).toBe(`${server.url}/list.txt`);
    } finally {
      await server.close();
    }
    const { list } = await smallList('extra-cred', ['base.example'], {
      extraSources: ['http://user:s3cret@127.0.0.1:1/list.txt'],
    });
    const error = await list.refresh().catch((e: unknown) => e as Error);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toContain('127.0.0.1:1/list.txt');
    expect((error as Error).message).not.toContain('s3cret');
  });

  it('refuses sources that are neither http(s) URLs nor files', async () => {
    const { list } = await smallList('extra-bad', ['base.example']);
    expect(() => list.configure({ extraSources: ['ftp://example.com/list.txt'] })).toThrow(/extraSources/);
    expect(() => list.configure({ extraSources: [''] })).toThrow(/extraSources/);
    expect(() => list.configure({ extraSources: ['http://exa mple.com/'] })).toThrow(/not a valid URL/);
    expect(() => list.configure({ sourceTimeoutMs: 0 })).toThrow(/sourceTimeoutMs/);
  });
});
