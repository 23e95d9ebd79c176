import type { FormAction, FormProtectorFactory } from '@realmgate/spi';
import type { Realm } from '../model/types.js';
import type { ServerLogger } from '../observability/index.js';
import { ProviderLoadError } from '../model/errors.js';
import type { Db, Storage } from '../storage/index.js';
import { addMissingConditionalOtp, addMissingFirstBrokerLogin, addMissingProtectors, provisionBuiltInFlows } from './builtin-flows.js';
import { ProviderCatalog } from './catalog.js';
import { FlowEditor } from './editing.js';
import type { FlowResult, FlowRun } from './engine.js';
import { importFlows, type FlowImport, type FlowImportReport } from './import.js';
import { flowBindings, type FlowBinding } from './model.js';
import { importOverrides, overridesProblem, type ImportedOverrides } from './overrides.js';
import { RealmFlows } from './realm-flows.js';
import { FlowRepository } from './repository.js';
import { flowBlocker } from './runnable.js';
import { FlowRunner, type BindingProblem, type FormSteps, type RegistrationSteps, type SigningClient } from './runner.js';
import type { FlowExtensions, OverrideBinding } from './model.js';

/** Authentication flows as data: built-in flows, the admin API's edits, and the runner the pages use. */
export class Flows {
  readonly catalog: ProviderCatalog;
  readonly editor: FlowEditor;
  private readonly repository: FlowRepository;
  private readonly runner: FlowRunner;

  constructor(
    private readonly storage: Storage,
    private readonly providers: FlowExtensions,
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
    const broker = await this.storage.transaction((trx) => addMissingFirstBrokerLogin(this.repository, trx));
    if (broker) this.logger.info({ realms: broker }, 'built-in "first broker login" flow added to existing realms');
    await this.reportFlowsThatCannotRun();
  }

  /**
   * Start-up: names, at error level, each bound flow that cannot run with the providers installed now (a package
   * was removed while a flow requires its step). Sign-ins through it are refused until the package is installed
   * again or the step is disabled; nothing is changed here. Only realms whose executions name a missing provider
   * are read.
   */
  private async reportFlowsThatCannotRun(): Promise<void> {
    const missing = (await this.repository.namedProviders()).filter((id) => !this.runner.installed(id));
    for (const realmId of await this.repository.realmsNaming(missing)) {
      const realm = await this.storage.realms.byId(realmId);
      if (!realm) continue;
      const flows = new RealmFlows(await this.repository.loadRealm(realmId));
      const bound: [string, string][] = [...flowBindings.map((b): [string, string] => [b, realm[b]]), ['direct grant', 'direct grant']];
      for (const [binding, alias] of bound) {
        const flow = flows.flowByAlias(alias);
        const blocker = flow ? flowBlocker(flows, flow.id, this.runner.installed) : null;
        if (!blocker) continue;
        this.logger.error(
          { realm: realm.name, binding, flow: alias, subflow: blocker.parent.alias, provider: blocker.provider, requirement: blocker.execution.requirement },
          'bound authentication flow cannot run: a step it requires is not installed; its sign-ins are refused until the provider is installed or the step disabled',
        );
      }
    }
  }

  /** A new realm's built-in flows; called inside the realm's creating transaction. */
  provisionBuiltInFlows(realmId: string, trx: Db): Promise<void> {
    return provisionBuiltInFlows(this.repository, realmId, this.protectors(), trx);
  }

  /**
   * A realm export's flows, configs and bindings (import.ts); called inside the realm's creating transaction, after
   * provisioning. A binding to a flow that cannot run is reset to the built-in flow, in `realm` and in storage.
   * Returns what the realm import's report names.
   */
  importFlows(realm: Realm, data: FlowImport, trx: Db): Promise<FlowImportReport> {
    return importFlows(this.repository, this.catalog, realm, data, trx);
  }

  /** The login form's steps: of the client's browser flow override, else of the realm's browser flow. */
  loginSteps(realm: Realm, client: SigningClient): Promise<FormSteps> {
    return this.runner.loginSteps(realm, client);
  }

  registrationSteps(realm: Realm): Promise<RegistrationSteps> {
    return this.runner.registrationSteps(realm);
  }

  resetSteps(realm: Realm): Promise<FormSteps> {
    return this.runner.resetSteps(realm);
  }

  /** Runs the sign-in flow of the browser or the direct grant (the client's override, else the realm's) through the one runner (FlowRunner.runSignIn). */
  runSignIn<Env, C, F>(realm: Realm, entry: OverrideBinding, client: SigningClient, run: Omit<FlowRun<Env, C, F>, 'flows' | 'root'>): Promise<FlowResult<C, F>> {
    return this.runner.runSignIn(realm, entry, client, run);
  }

  /** Runs the realm's bound reset-credentials (or registration) flow through the one runner (FlowRunner.runBound). */
  runBound<Env, C, F>(realm: Realm, binding: Exclude<FlowBinding, 'browserFlow'>, run: Omit<FlowRun<Env, C, F>, 'flows' | 'root'>): Promise<FlowResult<C, F>> {
    return this.runner.runBound(realm, binding, run);
  }

  /** A registration form action by provider id (FlowRunner.formAction). */
  formAction(realm: Realm, providerId: string): FormAction | undefined {
    return this.runner.formAction(realm, providerId);
  }

  /** Runs the realm's flow of this alias (an identity provider's first / post broker login flow). */
  runNamedFlow<Env, C, F>(realm: Realm, alias: string, run: Omit<FlowRun<Env, C, F>, 'flows' | 'root'>): Promise<FlowResult<C, F> | null> {
    return this.runner.runNamedFlow(realm, alias, run);
  }

  /** A client's `authenticationFlowBindingOverrides` as the admin API would store them: null, or why not (overrides.ts). */
  validateOverrides(realm: Realm, overrides: Record<string, string>, previous: Record<string, string> = {}): Promise<string | null> {
    return overridesProblem(this.repository, this.catalog, realm, overrides, previous);
  }

  /** A realm file's client overrides, after its flows (overrides.ts); returns what `notImported` names. */
  importOverrides(realm: Realm, clients: ImportedOverrides[], fileFlows: FlowImport['flows'], trx: Db): Promise<string[]> {
    return importOverrides(this.storage, this.repository, this.catalog, realm, clients, fileFlows, trx);
  }

  validateBindings(realm: Realm, db?: Db): Promise<BindingProblem | null> {
    return this.runner.validateBindings(realm, db);
  }

  private protectors(): FormProtectorFactory[] {
    return [...this.providers.formProtectors.values()].map((p) => p.factory);
  }
}
