import { Writable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import { createHttpApp } from '../src/http/app.js';
import { createLogger, requestLoggerFactory } from '../src/observability/index.js';

/** A production logger writing its JSON lines into `lines`. */
function capture(level = 'info') {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger({ mode: 'production', level, destination }) };
}

describe("the per-request logger (Fastify's childLoggerFactory)", () => {
  it('makes no pino child until the request logs, then writes with the request id, redacted as any other line', async () => {
    const { lines, logger } = capture();
    const child = vi.spyOn(logger, 'child');
    const requestLogger = requestLoggerFactory(logger, { reqId: 'req-7' }, {});
    expect(requestLogger.level).toBe('info');
    expect(child).not.toHaveBeenCalled();
    requestLogger.warn({ password: 'hunter2', attributes: { 'api.key': 'k-1' } }, 'something odd');
    expect(child).toHaveBeenCalledTimes(1);
    requestLogger.error('again');
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines.map((l) => [l.reqId, l.msg, l.password, (l.attributes as Record<string, unknown> | undefined)?.['api.key']])).toEqual([
      ['req-7', 'something odd', '[redacted]', '[redacted]'],
      ['req-7', 'again', undefined, undefined],
    ]);
  });

  it("keeps a route's log level: below it nothing is written", async () => {
    const { lines, logger } = capture('info');
    const requestLogger = requestLoggerFactory(logger, { reqId: 'req-8' }, { level: 'error' });
    expect(requestLogger.level).toBe('error');
    requestLogger.warn('not written');
    requestLogger.error('written');
    expect(lines.map((l) => l.msg)).toEqual(['written']);
  });

  it("is what the server's Fastify hands a route as request.log", async () => {
    const { lines, logger } = capture();
    const app = await createHttpApp({ logger, trustedProxies: [] });
    app.get('/quiet', async () => 'ok');
    app.get('/noisy', async (request) => {
      request.log.warn({ token: 'secret-token' }, 'from the route');
      return 'ok';
    });
    expect((await app.inject({ url: '/quiet' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/noisy' })).statusCode).toBe(200);
    expect(lines.map((l) => [l.msg, l.token, typeof l.reqId])).toEqual([['from the route', '[redacted]', 'string']]);
    await app.close();
  });
});
