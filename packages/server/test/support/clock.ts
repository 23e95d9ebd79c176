/**
 * A clock the test moves on instead of waiting (issue 36). Unlike vitest's fake timers, Date keeps running at
 * real speed (fake timers' shouldAdvanceTime ticks in steps that fall behind a busy event loop, so a server in
 * this process and a browser outside it would disagree on how long a wait was); `pass` only adds to it. It never
 * goes back, so every time stamp the servers handed out stays in the past.
 */
export interface MovableClock {
  /** Moves Date on by `ms` (nothing when `ms` is not positive), as if that much time had passed. */
  pass(ms: number): void;
  /** The real Date again. */
  restore(): void;
}

/** Replaces this process's Date (Date.now and new Date()) with one that is as far ahead as `pass` moved it. */
export function movableDate(): MovableClock {
  const RealDate = globalThis.Date;
  let ahead = 0;
  class MovedDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(RealDate.now() + ahead);
      else super(...(args as [string | number | Date]));
    }
    static override now(): number {
      return RealDate.now() + ahead;
    }
    // Dates made before the swap, or by code holding the real Date, are still dates.
    static override [Symbol.hasInstance](value: unknown): boolean {
      return value instanceof RealDate;
    }
  }
  globalThis.Date = MovedDate as DateConstructor;
  return {
    pass(ms) {
      if (ms > 0) ahead += ms;
    },
    restore() {
      globalThis.Date = RealDate;
    },
  };
}
