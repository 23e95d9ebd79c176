import type {
  EventListener,
  FormAction,
  FormActionFactory,
  FormProtector,
  FormProtectorFactory,
  ProviderContext,
  ProviderFactory,
  RealmResource,
  AdminResource,
} from '@realmgate/spi';
import { ProviderLoadError } from '../model/errors.js';
import { inBackground } from '../storage/index.js';
import type { LoadedPackage } from './loader.js';

export interface ProviderEntry {
  factory: ProviderFactory;
  packageName: string;
  version: string;
  builtin: boolean;
}

/** Every provider the server runs with; an id belongs to one package, and to one factory of each kind in it. */
export class ProviderRegistry {
  private readonly entries = new Map<string, ProviderEntry>();
  private readonly byId = new Map<string, ProviderEntry>();
  readonly eventListeners = new Map<string, EventListener>();
  readonly formActions = new Map<string, { factory: FormActionFactory; instance: FormAction }>();
  readonly formProtectors = new Map<string, { factory: FormProtectorFactory; instance: FormProtector }>();
  readonly realmResources = new Map<string, RealmResource>();
  /** SPI `adminResource()` of each provider that has one, mounted under /admin/realms/{realm}/{providerId}. */
  readonly adminResources = new Map<string, AdminResource>();
  private readonly initialized: ProviderFactory[] = [];

  add(pkg: Omit<LoadedPackage, 'directory'>, builtin: boolean): void {
    for (const factory of pkg.factories) {
      const key = `${factory.kind}:${factory.id}`;
      // An id is the provider's store namespace, log tag and resource path: one package may use it for each
      // kind it implements (a form protector and its resource), but no other package may use it at all.
      const first = this.byId.get(factory.id);
      if (this.entries.has(key) || (first && first.packageName !== pkg.name)) {
        const holder = this.entries.get(key) ?? first!;
        throw new ProviderLoadError(
          `duplicate provider id "${factory.id}": ${holder.factory.kind} in ${holder.packageName} and ${factory.kind} in ${pkg.name}; remove one of them from the providers directory`,
        );
      }
      const entry = { factory, packageName: pkg.name, version: pkg.version, builtin };
      this.entries.set(key, entry);
      if (!first) this.byId.set(factory.id, entry);
    }
  }

  list(): ProviderEntry[] {
    return [...this.entries.values()];
  }

  get(kind: ProviderFactory['kind'], id: string): ProviderEntry | undefined {
    return this.entries.get(`${kind}:${id}`);
  }

  /** Every provider's objections to a client's attributes (SPI `validateClientAttributes`), in load order. */
  async clientAttributeProblems(attributes: Readonly<Record<string, string>>): Promise<string[]> {
    const problems: string[] = [];
    for (const factory of this.initialized) problems.push(...((await factory.validateClientAttributes?.(attributes)) ?? []));
    return problems;
  }

  /** Every client attribute a provider owns (SPI `ownedClientAttributes`). */
  ownedClientAttributes(): ReadonlySet<string> {
    return new Set([...this.entries.values()].flatMap(({ factory }) => factory.ownedClientAttributes ?? []));
  }

  /** Initializes each factory in load order and creates its instance; a failure stops start-up. */
  async init(contextFor: (factory: ProviderFactory) => ProviderContext): Promise<void> {
    for (const { factory, packageName } of this.entries.values()) {
      try {
        // What init starts (the webhook's outbox worker) runs as a background worker: its statements are not a request's.
        await inBackground(() => factory.init?.(contextFor(factory)));
      } catch (error) {
        throw new ProviderLoadError(`provider ${factory.id} (${packageName}) failed to initialize: ${(error as Error).message}`);
      }
      // Initialized means it may hold timers or connections: close() must reach it even if create() fails.
      this.initialized.push(factory);
      try {
        this.instantiate(factory);
        const admin = factory.adminResource?.();
        if (admin) this.adminResources.set(factory.id, admin);
      } catch (error) {
        throw new ProviderLoadError(`provider ${factory.id} (${packageName}) failed to create its ${factory.kind}: ${(error as Error).message}`);
      }
    }
  }

  private instantiate(factory: ProviderFactory): void {
    switch (factory.kind) {
      case 'event-listener':
        this.eventListeners.set(factory.id, factory.create());
        break;
      case 'form-action':
        this.formActions.set(factory.id, { factory, instance: factory.create() });
        break;
      case 'form-protector':
        this.formProtectors.set(factory.id, { factory, instance: factory.create() });
        break;
      case 'realm-resource':
        this.realmResources.set(factory.id, factory.create());
        break;
    }
  }

  /**
   * Closes in reverse order within `timeoutMs` in all; one provider's failure or hang does not keep the others
   * open, nor the server from shutting down.
   */
  async close(timeoutMs: number, onError: (id: string, error: unknown) => void): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (const factory of this.initialized.reverse()) {
      let timer: NodeJS.Timeout | undefined;
      const overdue = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`did not close within ${timeoutMs} ms`)), Math.max(0, deadline - Date.now()));
      });
      try {
        await Promise.race([Promise.resolve().then(() => factory.close?.()), overdue]);
      } catch (error) {
        onError(factory.id, error);
      } finally {
        clearTimeout(timer);
      }
    }
    this.initialized.length = 0;
  }
}
