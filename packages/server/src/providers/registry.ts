import type {
  EventListener,
  FormAction,
  FormActionFactory,
  FormProtector,
  FormProtectorFactory,
  ProviderContext,
  ProviderFactory,
  RealmResource,
} from '@realmgate/spi';
import { ProviderLoadError, type LoadedPackage } from './loader.js';

export interface ProviderEntry {
  factory: ProviderFactory;
  packageName: string;
  version: string;
  builtin: boolean;
}

/** Every provider the server runs with; an id is unique within its kind, as Keycloak's within an SPI. */
export class ProviderRegistry {
  private readonly entries = new Map<string, ProviderEntry>();
  readonly eventListeners = new Map<string, EventListener>();
  readonly formActions = new Map<string, { factory: FormActionFactory; instance: FormAction }>();
  readonly formProtectors = new Map<string, { factory: FormProtectorFactory; instance: FormProtector }>();
  readonly realmResources = new Map<string, RealmResource>();
  private readonly initialized: ProviderFactory[] = [];

  add(pkg: Omit<LoadedPackage, 'directory'>, builtin: boolean): void {
    for (const factory of pkg.factories) {
      const key = `${factory.kind}:${factory.id}`;
      const existing = this.entries.get(key);
      if (existing) {
        throw new ProviderLoadError(
          `duplicate ${factory.kind} provider id "${factory.id}": in ${existing.packageName} and in ${pkg.name}; remove one of them from the providers directory`,
        );
      }
      this.entries.set(key, { factory, packageName: pkg.name, version: pkg.version, builtin });
    }
  }

  list(): ProviderEntry[] {
    return [...this.entries.values()];
  }

  get(kind: ProviderFactory['kind'], id: string): ProviderEntry | undefined {
    return this.entries.get(`${kind}:${id}`);
  }

  /** Initializes each factory in load order and creates its instance; a failure stops start-up. */
  async init(contextFor: (factory: ProviderFactory) => ProviderContext): Promise<void> {
    for (const { factory, packageName } of this.entries.values()) {
      try {
        await factory.init?.(contextFor(factory));
      } catch (error) {
        throw new ProviderLoadError(`provider ${factory.id} (${packageName}) failed to initialize: ${(error as Error).message}`);
      }
      this.initialized.push(factory);
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
  }

  /** Closes in reverse order; one provider's failure does not keep the others open. */
  async close(onError: (id: string, error: unknown) => void): Promise<void> {
    for (const factory of this.initialized.reverse()) {
      try {
        await factory.close?.();
      } catch (error) {
        onError(factory.id, error);
      }
    }
    this.initialized.length = 0;
  }
}
