import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The request being served, as the code below it sees it without passing it down: its `signal` aborts when
 * the client has gone (the connection closed before the answer) or the request ran past its time. The database
 * driver (storage/availability.ts) then starts no new work for it and commits nothing more, so a request nobody
 * saw answered does not create a user or send its events.
 *
 * Set by the HTTP layer (http/request-timeout.ts); lives down here so that storage/ and http/, peers, share it.
 */
export interface RequestScope {
  signal: AbortSignal;
}

export const requestScope = new AsyncLocalStorage<RequestScope>();

/** Thrown into work the request's client abandoned (gone, or timed out). */
export class RequestAbandonedError extends Error {
  constructor(reason: string) {
    super(`request abandoned (${reason}): nothing more is written for it`);
    this.name = 'RequestAbandonedError';
  }
}

/** Throws RequestAbandonedError when the current request's client is gone or its time is up. */
export function throwIfAbandoned(): void {
  const signal = requestScope.getStore()?.signal;
  if (signal?.aborted) throw new RequestAbandonedError(String(signal.reason ?? 'aborted'));
}
