import type { OutboundRefusal } from '@realmgate/spi';

/** Whether a delivery failed because the host's target guard refused its address (never retried). */
export function isTargetRefusal(error: unknown): error is OutboundRefusal {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'ERR_OUTBOUND_TARGET_REFUSED';
}
