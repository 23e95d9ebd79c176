import { isTargetRefusal, TargetGuard, type Resolver, type TargetGuardOptions } from '../../src/http/target-guard.js';

/** A resolver from a table; a name not in it fails the test rather than reaching the system resolver. */
export function tableResolver(entries: Record<string, string[]>): Resolver & { asked: string[] } {
  const asked: string[] = [];
  const resolver = async (hostname: string) => {
    asked.push(hostname);
    const addresses = entries[hostname];
    if (!addresses) throw new Error(`test resolver: unexpected name ${hostname}`);
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolver, { asked });
}

/** A production guard that asks no real DNS (a name must be in the table given). */
export const testGuard = (options: Partial<TargetGuardOptions> = {}) =>
  new TargetGuard({ mode: 'production', resolver: tableResolver({}), label: 'webhook target', ...options });

/** The refusal a guarded promise ended in (reason and message); fails when it was not refused. */
export async function refusalOf(promise: Promise<unknown>): Promise<{ reason: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (isTargetRefusal(error)) return { reason: error.reason, message: error.message };
    throw error;
  }
  throw new Error('not refused');
}
