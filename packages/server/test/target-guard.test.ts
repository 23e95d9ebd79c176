/**
 * The outbound target guard (http/target-guard.ts): the one check on every address the server's own HTTP reaches
 * (webhook deliveries, an identity provider's endpoints, a client's JWKS). Names are resolved by an injected resolver;
 * nothing here opens a connection.
 */
import { describe, expect, it } from 'vitest';
import { addressClass } from '../src/http/target-guard.js';
import { refusalOf as refusal, tableResolver as table, testGuard as guard } from './support/outbound.js';

describe('addressClass', () => {
  it.each([
    ['169.254.169.254', 'link_local'],
    ['169.254.0.1', 'link_local'],
    ['fe80::1', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['febf:ffff::1', 'link_local'],
    ['::ffff:169.254.169.254', 'link_local'],
    ['::ffff:a9fe:a9fe', 'link_local'],
    ['64:ff9b::169.254.169.254', 'link_local'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['::', 'unspecified'],
    ['::ffff:0.0.0.0', 'unspecified'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::127.0.0.1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['::ffff:10.1.2.3', 'private'],
    ['224.0.0.1', 'not_unicast'],
    ['255.255.255.255', 'not_unicast'],
    ['ff02::1', 'not_unicast'],
    ['172.32.0.1', 'public'],
    ['8.8.8.8', 'public'],
    ['2001:db8::1', 'public'],
    ['fec0::1', 'private'],
  ])('%s is %s', (address, kind) => {
    expect(addressClass(address)).toBe(kind);
  });

  it('is null for what is not an address', () => {
    expect(addressClass('localhost')).toBeNull();
    expect(addressClass('300.1.1.1')).toBeNull();
  });
});

describe('TargetGuard.pin (every new connection)', () => {
  it.each(['169.254.169.254', 'fe80::1', '::ffff:169.254.169.254', '::ffff:a9fe:a9fe', '0.0.0.0', '::', '224.0.0.1'])(
    'always refuses %s, in development mode too and whatever the allow list says',
    async (address) => {
      for (const mode of ['production', 'development'] as const) {
        const refused = await refusal(guard({ mode, allow: ['0.0.0.0/0', '::/0', 'loopback'] }).pin(address));
        expect(refused.reason).toMatch(/^(link_local|unspecified|not_unicast)$/);
      }
    },
  );

  it('refuses loopback in production mode and allows it in development mode', async () => {
    for (const address of ['127.0.0.1', '127.0.0.2', '::1', '::ffff:127.0.0.1']) {
      expect(await refusal(guard().pin(address))).toMatchObject({ reason: 'loopback' });
      await expect(guard({ mode: 'development' }).pin(address)).resolves.toBe(address);
    }
  });

  it('allows private ranges and public addresses by default', async () => {
    for (const address of ['10.0.0.9', '172.20.1.1', '192.168.0.10', 'fd00::5', '203.0.113.7', '2001:db8::7']) {
      await expect(guard().pin(address)).resolves.toBe(address);
    }
  });

  it('checks the resolved addresses, not the name, and returns the one to connect to', async () => {
    const resolver = table({ 'metadata.test': ['169.254.169.254'], 'hooks.test': ['203.0.113.7', '2001:db8::7'] });
    const g = guard({ resolver });
    expect(await refusal(g.pin('metadata.test'))).toEqual({
      reason: 'link_local',
      message: 'metadata.test: 169.254.169.254 is a link-local address (cloud metadata lives there)',
    });
    await expect(g.pin('hooks.test')).resolves.toBe('203.0.113.7');
    expect(resolver.asked).toEqual(['metadata.test', 'hooks.test']);
  });

  it('refuses a name with one good and one refused address (a rebinding attempt looks like that)', async () => {
    const resolver = table({ 'rebind.test': ['203.0.113.7', '169.254.169.254'], 'local.test': ['203.0.113.7', '::1'] });
    expect(await refusal(guard({ resolver }).pin('rebind.test'))).toMatchObject({ reason: 'link_local' });
    expect(await refusal(guard({ resolver }).pin('local.test'))).toMatchObject({ reason: 'loopback' });
  });

  it('resolves afresh for every connection, so a name that changes to a refused address is refused then', async () => {
    let answer = '203.0.113.7';
    const g = guard({ resolver: async () => [{ address: answer, family: 4 }] });
    await expect(g.pin('flip.test')).resolves.toBe('203.0.113.7');
    answer = '169.254.169.254';
    expect(await refusal(g.pin('flip.test'))).toMatchObject({ reason: 'link_local' });
  });

  it('does not resolve a literal address', async () => {
    const resolver = table({});
    await guard({ resolver }).pin('203.0.113.7');
    await guard({ resolver }).pin('[2001:db8::7]');
    expect(resolver.asked).toEqual([]);
  });

  it('applies the deny and allow lists, the most specific entry winning and deny winning a tie', async () => {
    const g = guard({ deny: ['10.0.0.0/8', '203.0.113.7', '2001:db8::/32'], allow: ['10.1.2.3/32', '10.9.0.0/16', '10.9.9.9/32', 'loopback'] });
    expect(await refusal(g.pin('10.0.0.1'))).toMatchObject({ reason: 'denied', message: '10.0.0.1 is denied by the webhook target rules' });
    await expect(g.pin('10.1.2.3')).resolves.toBe('10.1.2.3');
    await expect(g.pin('10.9.1.1')).resolves.toBe('10.9.1.1');
    expect(await refusal(g.pin('203.0.113.7'))).toMatchObject({ reason: 'denied' });
    expect(await refusal(g.pin('2001:db8::1'))).toMatchObject({ reason: 'denied' });
    await expect(g.pin('127.0.0.1')).resolves.toBe('127.0.0.1'); // loopback allowed in production by the rule
    await expect(g.pin('192.168.1.1')).resolves.toBe('192.168.1.1');
    const tie = guard({ deny: ['10.0.0.0/8'], allow: ['10.0.0.0/8'] });
    expect(await refusal(tie.pin('10.0.0.1'))).toMatchObject({ reason: 'denied' });
    expect(await refusal(guard({ deny: ['private'] }).pin('fd00::1'))).toMatchObject({ reason: 'denied' });
  });

  it('applies IPv4 rules to IPv4-mapped IPv6 addresses', async () => {
    expect(await refusal(guard({ deny: ['10.0.0.0/8'] }).pin('::ffff:10.0.0.1'))).toMatchObject({ reason: 'denied' });
    expect(await refusal(guard({ deny: ['::ffff:10.0.0.0/104'] }).pin('10.0.0.1'))).toMatchObject({ reason: 'denied' });
  });

  it('applies host rules to the name: deny refuses it, allow takes it whatever it resolves to but link-local', async () => {
    const resolver = table({ 'a.corp.test': ['203.0.113.7'], 'hooks.internal': ['127.0.0.1'], 'meta.internal': ['169.254.169.254'] });
    const g = guard({ resolver, deny: ['*.corp.test', 'loopback'], allow: ['hooks.internal', 'meta.internal'] });
    expect(await refusal(g.pin('a.corp.test'))).toMatchObject({ reason: 'denied', message: 'host a.corp.test is denied by the webhook target rules' });
    expect(resolver.asked).toEqual([]); // refused by name, before any lookup
    await expect(g.pin('hooks.internal')).resolves.toBe('127.0.0.1');
    expect(await refusal(g.pin('meta.internal'))).toMatchObject({ reason: 'link_local' });
  });

  it('refuses rule entries that are neither CIDRs, addresses, names nor keywords', () => {
    expect(() => guard({ deny: ['10.0.0.0/40'] })).toThrow(/10\.0\.0\.0\/40/);
    expect(() => guard({ allow: ['https://x.test/'] })).toThrow(/not a CIDR/);
  });
});

describe('TargetGuard.checkUrl (the admin API, without DNS)', () => {
  it.each([
    ['http://169.254.169.254/latest/meta-data/', 'link_local'],
    ['http://2852039166/', 'link_local'], // decimal
    ['http://0xa9fea9fe/', 'link_local'], // hex
    ['http://0251.0376.0251.0376/', 'link_local'], // octal
    ['http://169.254.43518/', 'link_local'], // two-part
    ['http://[::ffff:169.254.169.254]/', 'link_local'],
    ['http://[fe80::1]/', 'link_local'],
    ['http://0/', 'unspecified'],
    ['http://[::]/', 'unspecified'],
    ['http://127.0.0.1:8080/dev/webhooks/inbox', 'loopback'],
    ['http://0x7f.1/', 'loopback'],
    ['http://2130706433/', 'loopback'],
    ['http://[::1]/', 'loopback'],
    ['http://[0:0:0:0:0:ffff:7f00:1]/', 'loopback'],
    ['http://localhost:8080/', 'loopback'],
    ['http://LOCALHOST./', 'loopback'],
    ['http://api.localhost/', 'loopback'],
    ['ftp://hooks.example/', 'scheme'],
    ['file:///etc/passwd', 'scheme'],
    ['not a url', 'scheme'],
  ])('refuses %s in production mode (%s)', (url, reason) => {
    expect(guard().checkUrl(url)?.reason).toBe(reason);
  });

  it('allows loopback in development mode, never link-local', () => {
    const dev = guard({ mode: 'development' });
    expect(dev.checkUrl('http://127.0.0.1:8080/dev/webhooks/inbox')).toBeNull();
    expect(dev.checkUrl('http://localhost/')).toBeNull();
    expect(dev.checkUrl('http://2852039166/')?.reason).toBe('link_local');
  });

  it('passes names it cannot judge without DNS, and private and public addresses', () => {
    for (const url of ['https://hooks.example/in', 'http://10.0.0.9:8080/', 'https://[2001:db8::1]/', 'http://metadata.test/']) {
      expect(guard().checkUrl(url)).toBeNull();
    }
  });

  it('applies host rules', () => {
    const g = guard({ deny: ['*.corp.test', '10.0.0.0/8'], allow: ['localhost'] });
    expect(g.checkUrl('https://x.corp.test/')?.reason).toBe('denied');
    expect(g.checkUrl('http://10.1.1.1/')?.reason).toBe('denied');
    expect(g.checkUrl('http://localhost/')).toBeNull();
  });
});

