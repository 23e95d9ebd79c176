import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Histogram, OutboxStore } from '@realmgate/spi';
import type { Storage } from '../storage/index.js';
import { OutboxRepository } from '../storage/outbox.js';

/** This process's name in outbox leases and attempt records: host, pid and a random part (two servers in one process differ). */
export function outboxNodeId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

/**
 * A provider's own durable queue (SPI `ProviderContext.outbox`) in the server's database. `lateness` hears how long
 * each claimed item waited past its due time: a healthy receiver's deliveries should wait well under a second.
 */
export function providerOutbox(storage: Storage, providerId: string, lateness?: Histogram): OutboxStore {
  const observe = lateness ? (ms: number) => lateness.observe({ provider: providerId }, ms / 1000) : undefined;
  return new OutboxRepository(storage.db, storage.dialect, providerId, outboxNodeId(), undefined, observe);
}

/** The histogram providerOutbox reports to, registered once per server. */
export const OUTBOX_LATENESS = {
  name: 'realmgate_outbox_claim_lateness_seconds',
  help: 'How long an outbox item (a webhook delivery) waited past its due time before a worker claimed it',
  labels: ['provider'],
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
} as const;
