import type { FormProtectorFactory } from '@realmgate/spi';
import type { Realm } from '../model/types.js';
import type { ServerLogger } from '../observability/index.js';
import { ProviderLoadError } from '../model/errors.js';
import type { ProviderRegistry } from '../providers/index.js';
import type { Db, Storage } from '../storage/index.js';
import { addMissingConditionalOtp, addMissingProtectors, provisionBuiltInFlows } from './builtin-flows.js';
import { ProviderCatalog } from './catalog.js';
import { FlowEditor } from './editing.js';
import { importFlows, type FlowImport } from './import.js';
import { FlowRepository } from './repository.js';
import { FlowRunner, type BindingProblem, type FormSteps, type RegistrationSteps } from './runner.js';

/** Authentication flows as data: built-in flows, the admin API's edits, and the runner the pages use. */
export class Flows {
  readonly catalog: ProviderCatalog;
  readonly editor: FlowEditor;
  private readonly repository: FlowRepository;
  private readonly runner: FlowRunner;

  constructor(
    private readonly storage: Storage,
    private readonly providers: ProviderRegistry,
    private readonly logger: ServerLogger,
  ) {
    this.repository = new FlowRepository(storage.db, storage.cache);
    this.catalog = new ProviderCatalog(providers);
    this.editor = new FlowEditor(storage, this.repository, this.catalog);
    this.runner = new FlowRunner(this.repository, this.catalog, providers, storage, logger);
  }

  /**
   * Start-up, once providers are initialized: refuses provider ids that shadow a built-in one, then adds the
   * executions of newly installed protectors to the built-in flows of realms that existed before.
   */
  async start(): Promise<void> {
    const clashes = this.catalog.clashingIds();
    if (clashes.length) {
      throw new ProviderLoadError(`provider id(s) ${clashes.map((id) => `"${id}"`).join(', ')} clash with a built-in authentication provider or with each other; rename or remove them`);
    }
    const added = await this.storage.transaction((trx) => addMissingProtectors(this.repository, this.protectors(), trx));
    if (added) this.logger.info({ added }, 'form protector executions added to existing built-in flows');
    const otp = await this.storage.transaction((trx) => addMissingConditionalOtp(this.repository, trx));
    if (otp) this.logger.info({ added: otp }, 'conditional OTP subflows added to existing built-in flows');
  }

  /** A new realm's built-in flows; called inside the realm's creating transaction. */
  provisionBuiltInFlows(realmId: string, trx: Db): Promise<void> {
    return provisionBuiltInFlows(this.repository, realmId, this.protectors(), trx);
  }

  /** A realm export's own flows and configs; called inside the realm's creating transaction, after provisioning. */
  importFlows(realmId: string, data: FlowImport, trx: Db): Promise<void> {
    return importFlows(this.repository, this.catalog, this.logger, realmId, data, trx);
  }

  loginSteps(realm: Realm): Promise<FormSteps> {
    return this.runner.loginSteps(realm);
  }

  registrationSteps(realm: Realm): Promise<RegistrationSteps> {
    return this.runner.registrationSteps(realm);
  }

  resetSteps(realm: Realm): Promise<FormSteps> {
    return this.runner.resetSteps(realm);
  }

  /** Whether the browser flow or the direct grant asks this user for a one-time code (FlowRunner.otpStep). */
  otpStep(realm: Realm, entry: 'browser' | 'direct-grant', hasOtp: boolean): Promise<'otp' | 'configure' | null> {
    return this.runner.otpStep(realm, entry, hasOtp);
  }

  validateBindings(realm: Realm, db?: Db): Promise<BindingProblem | null> {
    return this.runner.validateBindings(realm, db);
  }

  private protectors(): FormProtectorFactory[] {
    return [...this.providers.formProtectors.values()].map((p) => p.factory);
  }
}
