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

/**
 * Fastify's per-request logger (`childLoggerFactory`), made on the request's first log line: pino's `child()` runs
 * the redaction over its bindings, about 30 µs of every request's CPU, and almost no request logs anything (request
 * logging is off; only errors and warnings write).
 */
export function requestLoggerFactory(logger: ServerLogger, bindings: pino.Bindings, options: pino.ChildLoggerOptions): ServerLogger {
  return new RequestLogger(logger, bindings, options) as unknown as ServerLogger;
}

type LogArgs = Parameters<pino.LogFn>;

class RequestLogger {
  private made: ServerLogger | null = null;

  constructor(
    private readonly parent: ServerLogger,
    private readonly bindings: pino.Bindings,
    private readonly options: pino.ChildLoggerOptions,
  ) {}

  private get logger(): ServerLogger {
    return (this.made ??= this.parent.child(this.bindings, this.options));
  }

  get level(): string {
    return this.made?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  fatal(...args: LogArgs): void {
    this.logger.fatal(...args);
  }

  error(...args: LogArgs): void {
    this.logger.error(...args);
  }

  warn(...args: LogArgs): void {
    this.logger.warn(...args);
  }

  info(...args: LogArgs): void {
    this.logger.info(...args);
  }

  debug(...args: LogArgs): void {
    this.logger.debug(...args);
  }

  trace(...args: LogArgs): void {
    this.logger.trace(...args);
  }

  silent(): void {}

  child(bindings: pino.Bindings, options?: pino.ChildLoggerOptions): ServerLogger {
    return this.logger.child(bindings, options);
  }
}
