/** Java properties text as key → value (comments, `key=value` / `key: value`, continuation lines, backslash escapes). */
export function parseProperties(text: string): Record<string, string> {
  // No prototype: a key such as __proto__ is a key like any other.
  const result: Record<string, string> = Object.create(null) as Record<string, string>;
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i].replace(/^\s+/, '');
    if (line === '' || line.startsWith('#') || line.startsWith('!')) continue;
    while (/(^|[^\\])(\\\\)*\\$/.test(line) && i + 1 < lines.length) line = line.slice(0, -1) + lines[++i].replace(/^\s+/, '');
    const separator = /(?<!\\)(?:\\\\)*[=:\s]/.exec(line);
    const end = separator ? separator.index + separator[0].length - 1 : line.length;
    const rawKey = line.slice(0, end);
    const rawValue = separator ? line.slice(end + 1).replace(/^\s*[=:]?\s*/, '') : '';
    const unescape = (value: string) =>
      value.replace(/\\(u[0-9a-fA-F]{4}|.)/g, (_, c: string) => (c.length === 5 ? String.fromCharCode(parseInt(c.slice(1), 16)) : c === 'n' ? '\n' : c === 't' ? '\t' : c === 'r' ? '\r' : c));
    result[unescape(rawKey)] = unescape(rawValue);
  }
  return result;
}
