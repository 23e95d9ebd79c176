import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { OutboxStore } from '@realmgate/spi';
import type { Storage } from '../storage/index.js';
import { OutboxRepository } from '../storage/outbox.js';

/** This process's name in outbox leases and attempt records: host, pid and a random part (two servers in one process differ). */
export function outboxNodeId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

/** A provider's own durable queue (SPI `ProviderContext.outbox`) in the server's database. */
export function providerOutbox(storage: Storage, providerId: string): OutboxStore {
  return new OutboxRepository(storage.db, storage.dialect, providerId, outboxNodeId());
}
