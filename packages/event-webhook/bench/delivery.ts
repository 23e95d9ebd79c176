/**
 * Webhook delivery benchmark. `npx tsx packages/event-webhook/bench/delivery.ts`, or `run()` from the
 * repository's bench script. Each figure comes with a baseline measured in the same run:
 *  (a) enqueue cost on the caller (what an event listener adds to a request), against a bare Array#push;
 *  (b) deliveries per second to a local receiver answering 204, against bare undici requests with the
 *      same concurrency (the ceiling the engine can reach on this machine).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Agent, request } from 'undici';
import { WebhookDispatcher } from '../src/delivery.js';
import type { WebhookDelivery } from '../src/delivery.js';

export interface BenchFigure {
  name: string;
  unit: string;
  value: number;
  baseline: { name: string; value: number };
  /** value / baseline. */
  ratio: number;
  higherIsBetter: boolean;
}

const BATCH = 100;
const BATCHES = 1000;
const THROUGHPUT_DELIVERIES = 10_000;
const CONCURRENCY = 8;
const ROUNDS = 3;

const quiet = { info() {}, warn() {} };

export async function run(): Promise<BenchFigure[]> {
  const receiver = await startReceiver();
  try {
    const body = JSON.stringify(samplePayload());
    const delivery: WebhookDelivery = {
      url: receiver.url,
      headers: { Authorization: 'Bearer bench-key', 'Content-Type': 'application/json' },
      body,
      eventType: 'LOGIN',
      userName: 'alice',
    };

    // (a) Enqueue cost while the engine sends in the background (between batches it gets the event loop).
    const enqueue = await perCallMicros(new WebhookDispatcher({ logger: quiet, queueSize: 10_000_000 }), delivery);
    const pushBaseline = await perCallMicros(null, delivery);

    // (b) Throughput, alternating the two so that warm-up and machine noise hit both alike.
    await rawUndici(receiver.url, body, 2000);
    const dispatcherRates: number[] = [];
    const rawRates: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      dispatcherRates.push(await dispatcherThroughput(delivery, THROUGHPUT_DELIVERIES));
      rawRates.push(await rawUndici(receiver.url, body, THROUGHPUT_DELIVERIES));
    }
    const dispatcherRate = median(dispatcherRates);
    const rawRate = median(rawRates);

    return [
      figure('webhook enqueue cost (median)', 'µs', enqueue.median, 'Array#push (median)', pushBaseline.median, false),
      figure('webhook enqueue cost (p99)', 'µs', enqueue.p99, 'Array#push (p99)', pushBaseline.p99, false),
      figure('webhook deliveries to a 204 receiver', '/s', dispatcherRate, `bare undici, ${CONCURRENCY} concurrent`, rawRate, true),
    ];
  } finally {
    await receiver.close();
  }
}

function figure(name: string, unit: string, value: number, baselineName: string, baseline: number, higherIsBetter: boolean): BenchFigure {
  return { name, unit, value, baseline: { name: baselineName, value: baseline }, ratio: value / baseline, higherIsBetter };
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Per-call cost in µs over batches of BATCH calls: median and 99th percentile of the batch means. */
async function perCallMicros(dispatcher: WebhookDispatcher | null, delivery: WebhookDelivery) {
  const sink: WebhookDelivery[] = [];
  const samples: number[] = [];
  for (let b = 0; b < BATCHES; b++) {
    const start = process.hrtime.bigint();
    if (dispatcher) for (let i = 0; i < BATCH; i++) dispatcher.enqueue(delivery);
    else for (let i = 0; i < BATCH; i++) sink.push(delivery);
    samples.push(Number(process.hrtime.bigint() - start) / 1000 / BATCH);
    await new Promise((done) => setImmediate(done));
  }
  // The receiver path is not waited on: whatever is still queued is dropped.
  await dispatcher?.close(0);
  samples.sort((x, y) => x - y);
  return { median: median(samples), p99: samples[Math.floor(samples.length * 0.99)] };
}

async function dispatcherThroughput(delivery: WebhookDelivery, count: number): Promise<number> {
  const dispatcher = new WebhookDispatcher({ logger: quiet, concurrency: CONCURRENCY, queueSize: count });
  const start = performance.now();
  for (let i = 0; i < count; i++) dispatcher.enqueue(delivery);
  await dispatcher.idle();
  const seconds = (performance.now() - start) / 1000;
  await dispatcher.close(0);
  return count / seconds;
}

async function rawUndici(url: string, body: string, count: number): Promise<number> {
  const agent = new Agent();
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < count) {
        const response = await request(url, {
          method: 'POST',
          headers: { Authorization: 'Bearer bench-key', 'Content-Type': 'application/json' },
          body,
          dispatcher: agent,
        });
        await response.body.dump();
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  await agent.close();
  return count / seconds;
}

async function startReceiver() {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

function samplePayload() {
  return {
    type: 'LOGIN',
    user_id: 'b3c1f0e2-6a3d-4f6b-8d0e-1f2a3b4c5d6e',
    user_name: 'alice',
    email: 'alice@example.com',
    first_name: 'Alice',
    last_name: 'Liddell',
    email_verified: true,
    created_timestamp: 1_732_000_000_123,
    user_ip: '198.51.100.7',
    user_agent: 'Mozilla/5.0 (X11; Linux x86_64)',
    delete_by_admin: false,
    user_roles: ['default-roles-demo'],
    organizations: [],
    attributes: { locale: ['en'] },
    realm: { id: '6f1c2f52-0b7a-4d1e-9d55-3c7c2b6d1a01', name: 'demo', display_name: 'Demo' },
    error: null,
    details: null,
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  for (const f of await run()) {
    const value = f.unit === '/s' ? Math.round(f.value).toLocaleString('en') : f.value.toFixed(3);
    const baseline = f.unit === '/s' ? Math.round(f.baseline.value).toLocaleString('en') : f.baseline.value.toFixed(3);
    console.log(`${f.name}: ${value} ${f.unit}  (baseline ${f.baseline.name}: ${baseline} ${f.unit}; ratio ${f.ratio.toFixed(2)})`);
  }
}
