import pino, { type Logger as Pino } from 'pino';
import type { Logger } from '@realmgate/spi';

export type ServerLogger = Pino;

/** Never let a credential reach a log line, whatever object a caller passes in. */
const redactPaths = [
  'password',
  '*.password',
  'secret',
  '*.secret',
  'client_secret',
  '*.client_secret',
  'authorization',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
  // A client attribute is named "api.key"; the plain path 'api.key' would only match { api: { key } }.
  '["api.key"]',
  '*["api.key"]',
  '*.attributes["api.key"]',
  'apiKey',
  '*.apiKey',
  'token',
  '*.token',
  'access_token',
  'refresh_token',
  // User representations carry passwords as credentials[].value.
  'credentials[*].value',
  '*.credentials[*].value',
];

export function createLogger(options: { mode: 'development' | 'production'; level: string; destination?: NodeJS.WritableStream }): ServerLogger {
  const base = { level: options.level, redact: { paths: redactPaths, censor: '[redacted]' } };
  if (options.mode === 'production') {
    return pino({ ...base, base: { service: 'realmgate' } }, options.destination as pino.DestinationStream | undefined);
  }
  // Readable lines without pulling in a pretty-printer dependency.
  return pino(
    { ...base, base: undefined, timestamp: false, formatters: { level: (label) => ({ level: label }) } },
    options.destination as pino.DestinationStream | undefined ?? readableDestination(),
  );
}

function readableDestination(): pino.DestinationStream {
  return {
    write(line: string) {
      try {
        const { level, msg, ...rest } = JSON.parse(line) as Record<string, unknown>;
        const fields = Object.keys(rest).length ? ` ${JSON.stringify(rest)}` : '';
        process.stdout.write(`${new Date().toISOString().slice(11, 23)} ${String(level).toUpperCase().padEnd(5)} ${msg ?? ''}${fields}\n`);
      } catch {
        process.stdout.write(line);
      }
    },
  };
}

/**
 * The server's logger behind the SPI's `Logger` shape (message first, fields second), with `bindings` on every
 * line: what providers get, tagged with their id, and what the host hands to code written against the SPI.
 */
export function spiLogger(logger: ServerLogger, bindings: Record<string, unknown>): Logger {
  const child = logger.child(bindings);
  return {
    debug: (message, fields) => child.debug(fields ?? {}, message),
    info: (message, fields) => child.info(fields ?? {}, message),
    warn: (message, fields) => child.warn(fields ?? {}, message),
    error: (message, fields) => child.error(fields ?? {}, message),
  };
}
