import type { DeliveryLogger, DeliveryMetrics, DeliveryOutcome, Transport, TransportRequest } from '../src/delivery.js';

/** One scripted answer: a status, a thrown error, or no answer until the attempt is aborted. */
export type Answer = number | Error | 'hang';

export interface RecordedCall {
  at: number;
  request: TransportRequest;
}

/** Answers attempts in order; the last answer repeats. Records when each attempt started (Date.now). */
export function scriptedTransport(answers: Answer[]): Transport & { calls: RecordedCall[] } {
  const calls: RecordedCall[] = [];
  return {
    calls,
    send(request) {
      calls.push({ at: Date.now(), request });
      const answer = answers[Math.min(calls.length, answers.length) - 1];
      if (answer === 'hang') {
        return new Promise((_, reject) => request.signal.addEventListener('abort', () => reject(request.signal.reason)));
      }
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve({ status: answer });
    },
  };
}

export interface LogLine {
  level: 'info' | 'warn' | 'debug' | 'error';
  message: string;
  fields?: Record<string, unknown>;
}

export function recordingLogger(): DeliveryLogger & {
  lines: LogLine[];
  warnings: () => string[];
  debug(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
} {
  const lines: LogLine[] = [];
  const record = (level: LogLine['level']) => (message: string, fields?: Record<string, unknown>) => {
    lines.push({ level, message, fields });
  };
  return {
    lines,
    warnings: () => lines.filter((line) => line.level === 'warn').map((line) => line.message),
    debug: record('debug'),
    info: record('info'),
    warn: record('warn'),
    error: record('error'),
  };
}

export function recordingMetrics(): DeliveryMetrics & {
  outcomes: DeliveryOutcome[];
  seconds: number[];
  attempts: number;
  depths: number[];
} {
  const metrics = {
    outcomes: [] as DeliveryOutcome[],
    seconds: [] as number[],
    attempts: 0,
    depths: [] as number[],
    outcome(outcome: DeliveryOutcome, seconds?: number) {
      metrics.outcomes.push(outcome);
      if (seconds !== undefined) metrics.seconds.push(seconds);
    },
    attempt() {
      metrics.attempts++;
    },
    queueDepth(depth: number) {
      metrics.depths.push(depth);
    },
  };
  return metrics;
}
