/**
 * What a page's main thread did, from a Chromium trace. A person notices a main thread that is busy: the trace
 * gives each of its tasks the thread's own CPU time (`tdur`) beside the wall time (`dur`). The Long Tasks API
 * gives wall time only, which on two cores shared with the whole test suite stretched tasks of a few ms of the
 * page's work past 50 ms (CI runs saw 64-249 ms), so it could not tell the page's doing from the machine's.
 */
import type { Browser } from 'playwright-core';

/** One event of a Chromium trace (Trace Event Format; times in µs). */
interface TraceEvent {
  name: string;
  ph: string;
  pid: number;
  tid: number;
  ts: number;
  dur?: number;
  tdur?: number;
  args?: { name?: string };
}

/**
 * Runs `action` under a trace of the whole browser and returns the trace's events. A page traced while it loads
 * should already be at a page of the same site, so that it loads in a renderer process that is up before the trace
 * starts: a process started during the trace made the trace larger and its stop slower, and the next trace's start
 * often waited 10 s (issue 36, the development machine under load: start 0.1-0.4 s, stop 1-4 s and traces of 2-5 MB
 * with the process up; start up to 10.3 s, stop 7-9 s and 4-8 MB with it started in the trace).
 */
export async function traced(browser: Browser, action: () => Promise<unknown>): Promise<TraceEvent[]> {
  await browser.startTracing(undefined, { categories: ['__metadata', 'blink.user_timing', 'toplevel'] });
  let events: TraceEvent[] = [];
  try {
    await action();
  } finally {
    events = (JSON.parse((await browser.stopTracing()).toString('utf8')) as { traceEvents: TraceEvent[] }).traceEvents;
  }
  return events;
}

/**
 * The main-thread tasks of the renderer that made the marks `from` and `to` (performance.mark) which overlap the
 * time between them, with their wall and CPU time in ms.
 */
export function mainThreadTasks(trace: TraceEvent[], from: string, to: string): { wallMs: number; cpuMs: number }[] {
  const markOf = (name: string) => trace.find((event) => event.name === name && event.ph !== 'M');
  const start = markOf(from);
  const end = markOf(to);
  if (!start || !end) throw new Error(`the trace holds no mark ${start ? to : from}`);
  const main = trace.find((event) => event.ph === 'M' && event.name === 'thread_name' && event.pid === start.pid && event.args?.name === 'CrRendererMain');
  if (!main) throw new Error('the trace names no main thread for the page');
  return trace
    .filter((event) => event.name === 'ThreadControllerImpl::RunTask' && event.ph === 'X' && event.pid === main.pid && event.tid === main.tid)
    .filter((task) => task.ts + (task.dur ?? 0) >= start.ts && task.ts <= end.ts)
    .map((task) => {
      if (task.dur === undefined) throw new Error('a main-thread task in the trace has no wall time');
      // Chromium 156 leaves `tdur` out of tasks whose thread time is zero (seen: tasks of 1-4 µs of wall time, never
      // a `tdur` of 0); such a task counts its wall time, which CPU time cannot exceed, so nothing long is missed.
      return { wallMs: task.dur / 1000, cpuMs: (task.tdur ?? task.dur) / 1000 };
    });
}

/**
 * Runs in a page (`page.evaluate(blockMainThread)`): one task of the page's own with a fixed amount of work, as
 * hashing would be (a loop on the clock would get less CPU when starved), between the marks `busy-start` and
 * `busy-end`. Resolves after that task.
 */
export function blockMainThread(): Promise<void> {
  return new Promise<void>((resolve) =>
    setTimeout(() => {
      performance.mark('busy-start');
      let sum = 0;
      for (let i = 0; i < 3e7; i++) sum = (sum + i * 2654435761) | 0;
      (window as unknown as { sum: number }).sum = sum;
      performance.mark('busy-end');
      setTimeout(resolve, 0);
    }, 0),
  );
}
