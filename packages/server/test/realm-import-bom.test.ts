import KcAdminClient from '@keycloak/keycloak-admin-client';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpDatabases, startServer, tokenRequest, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

/**
 * `--import-realm` reads a file that starts with a UTF-8 byte order mark, as Keycloak does (Jackson skips it;
 * editors on Windows write one, as eclipse-tractusx/bpdm's realm file has): the one leading mark is skipped,
 * nothing else is. The file of test/fixtures/keycloak-exports/tractusx-bpdm-kc26.json is in
 * realm-exports-kc18-26.test.ts; here, small files made for each case.
 */

const realm = (name: string) =>
  JSON.stringify({
    realm: name,
    enabled: true,
    users: [{ username: 'bo', enabled: true, credentials: [{ type: 'password', value: 'Bom-pass-1', temporary: false }] }],
  });

const FILES: Record<string, string | Buffer> = {
  // One mark, then the realm: imported.
  'with-bom.json': `\uFEFF${realm('with-bom')}`,
  // The mark and CRLF line ends, as a Windows editor writes them.
  'with-bom-crlf.json': `\uFEFF${JSON.stringify(JSON.parse(realm('with-bom-crlf')), null, 2).replace(/\n/g, '\r\n')}`,
  // Two marks: the second is no JSON whitespace.
  'two-boms.json': `\uFEFF\uFEFF${realm('two-boms')}`,
  // A mark after leading whitespace is not a leading mark.
  'space-then-bom.json': ` \uFEFF${realm('space-then-bom')}`,
  // A mark inside the document, between tokens.
  'bom-inside.json': `{"realm": "bom-inside",\uFEFF "enabled": true}`,
  // UTF-16 with its own mark: not UTF-8, refused (Keycloak's import reads UTF-8 files).
  'utf16.json': Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(realm('utf16'), 'utf16le')]),
  // A mark as a value's first character is data, kept as it is.
  'bom-in-value.json': JSON.stringify({ realm: 'bom-in-value', enabled: true, displayName: '\uFEFFShown' }),
};

describe.each(httpDatabases)('--import-realm and a UTF-8 byte order mark (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  const dir = mkdtempSync(join(tmpdir(), 'realmgate-bom-'));

  beforeAll(async () => {
    for (const [name, content] of Object.entries(FILES)) writeFileSync(join(dir, name), content);
    t = await startServer({ database, config: { REALMGATE_IMPORT_REALM: dir } });
    kc = await masterAdminClient(t.url);
  });
  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const refusal = (file: string) =>
    t.logs.find((l) => l.msg === 'realm import: file refused, the others are imported' && String(l.file).endsWith(`/${file}`))?.error as string | undefined;

  it.each(['with-bom', 'with-bom-crlf'])('%s.json is imported, and its user signs in', async (name) => {
    expect(refusal(`${name}.json`)).toBeUndefined();
    expect((await kc.realms.findOne({ realm: name }))?.realm).toBe(name);
    const response = await tokenRequest(t.url, name, { grant_type: 'password', client_id: 'admin-cli', username: 'bo', password: 'Bom-pass-1' });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
  });

  it.each(['two-boms', 'space-then-bom', 'bom-inside', 'utf16'])('%s.json is refused as not valid JSON, the others are imported', async (name) => {
    expect(refusal(`${name}.json`)).toMatch(/^not valid JSON/);
    expect(await kc.realms.findOne({ realm: name })).toBeFalsy();
  });

  it("a mark inside a value is the file's data, kept", async () => {
    expect(refusal('bom-in-value.json')).toBeUndefined();
    expect((await kc.realms.findOne({ realm: 'bom-in-value' }))?.displayName).toBe('\uFEFFShown');
  });
});
