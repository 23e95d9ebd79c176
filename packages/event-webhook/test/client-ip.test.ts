import { describe, expect, it } from 'vitest';
import { clientIp, normalizeIp, parseTrustedProxyCount } from '../src/client-ip.js';

describe('parseTrustedProxyCount', () => {
  it.each<[string | null | undefined, number]>([
    [undefined, 1],
    [null, 1],
    ['', 1],
    ['   ', 1],
    ['abc', 1],
    ['1.5', 1],
    ['2x', 1],
    ['0', 0],
    ['1', 1],
    [' 3 ', 3],
    ['+2', 2],
    ['-1', 0],
    ['-7', 0],
  ])('%j → %i', (value, expected) => {
    expect(parseTrustedProxyCount(value)).toBe(expected);
  });
});

describe('clientIp', () => {
  const socket = '10.0.0.1';
  it.each<[string, string | null, string | null, number, string | null]>([
    // description, X-Forwarded-For, X-Real-IP, trusted.proxy.count, expected
    ['one proxy: the last entry', '203.0.113.1, 198.51.100.2', null, 1, '198.51.100.2'],
    ['two proxies: second from the right', '203.0.113.1, 198.51.100.2, 10.0.0.9', null, 2, '198.51.100.2'],
    ['count equals list length: the first entry', '203.0.113.1, 198.51.100.2', null, 2, '203.0.113.1'],
    ['list too short: X-Real-IP', '203.0.113.1', '192.0.2.5', 2, '192.0.2.5'],
    ['list too short, no X-Real-IP: socket', '203.0.113.1', null, 3, socket],
    ['count 0: X-Forwarded-For ignored', '203.0.113.1', '192.0.2.5', 0, '192.0.2.5'],
    ['count 0, no X-Real-IP: socket', '203.0.113.1', null, 0, socket],
    ['no X-Forwarded-For: X-Real-IP', null, '192.0.2.5', 1, '192.0.2.5'],
    ['nothing forwarded: socket', null, null, 1, socket],
    ['empty header: fallback', '', '192.0.2.5', 1, '192.0.2.5'],
    ['empty entries are ignored', '203.0.113.1,, ,198.51.100.2,', null, 2, '203.0.113.1'],
    ['spaces trimmed', '  203.0.113.1  ,  198.51.100.2  ', null, 1, '198.51.100.2'],
    ['IPv6 entry', '2001:db8::1, 2001:DB8::2', null, 1, '2001:db8::2'],
    ['IPv4 with port', '203.0.113.1:4711', null, 1, '203.0.113.1'],
    ['bracketed IPv6 with port', '[2001:db8::1]:443', null, 1, '2001:db8::1'],
    ['IPv4-mapped IPv6 unwrapped', '::ffff:198.51.100.2', null, 1, '198.51.100.2'],
    ['malformed picked entry: X-Real-IP, not another entry', '203.0.113.1, unknown', '192.0.2.5', 1, '192.0.2.5'],
    ['malformed picked entry, no X-Real-IP: socket', '203.0.113.1, not-an-ip', null, 1, socket],
    ['garbage header', ';;;<script>', null, 1, socket],
    ['out-of-range octets are not an IP', '999.1.1.1', null, 1, socket],
    ['malformed X-Real-IP: socket', null, 'nope', 1, socket],
    ['X-Real-IP with spaces', null, ' 192.0.2.5 ', 1, '192.0.2.5'],
    ['huge count: fallback', '203.0.113.1', null, 1e9, socket],
  ])('%s', (_, forwardedFor, realIp, count, expected) => {
    expect(clientIp({ forwardedFor, realIp, remoteAddress: socket }, count)).toBe(expected);
  });

  it('unwraps a dual-stack socket address', () => {
    expect(clientIp({ forwardedFor: null, realIp: null, remoteAddress: '::ffff:127.0.0.1' }, 1)).toBe('127.0.0.1');
  });

  it('is null when nothing usable is known', () => {
    expect(clientIp({ forwardedFor: 'x', realIp: 'y', remoteAddress: '' }, 1)).toBeNull();
  });
});

describe('normalizeIp', () => {
  it.each<[string, string | null]>([
    ['1.2.3.4', '1.2.3.4'],
    ['[::1]', '::1'],
    ['::1', '::1'],
    ['1.2.3.4:80:90', null],
    ['1.2.3', null],
    ['', null],
  ])('%j → %j', (raw, expected) => {
    expect(normalizeIp(raw)).toBe(expected);
  });
});
