/**
 * Authentication flows as data (Keycloak's model): top-level flows hold executions, an execution names a
 * provider or runs a subflow, has a requirement (REQUIRED, ALTERNATIVE, DISABLED, CONDITIONAL), a priority
 * that orders it among its siblings, and optionally an authenticator config. Every realm gets Keycloak's
 * built-in flows (`browser`, `registration`, `reset credentials`, `direct grant`, `clients`); each installed
 * FormProtector gets a REQUIRED execution in the built-in flows of the forms its `installOn` names, in new
 * realms at creation and in existing ones at start-up (`Flows.start`).
 *
 * The runner, for the pages. Each call reads the realm's BOUND flow (`realm.browserFlow`, `registrationFlow`,
 * `resetCredentialsFlow`; a binding that names no flow falls back to the built-in one, with a warning) and
 * returns its enabled steps, walking subflows depth-first in priority order and skipping DISABLED executions
 * and everything inside a DISABLED subflow:
 *
 * - `flows.loginSteps(realm, client)` → `{ protectors }` (the client's `browser` override, if any, instead of the
 *   realm's browser flow; `runSignIn` likewise takes the client's `direct_grant` override: runner.ts, `signInFlow`)
 * - `flows.runSignIn(realm, entry, client, { env, authenticator, condition, done?, user? })`: the sign-in flow run by
 *   the one flow runner with Keycloak's semantics (engine.ts); the authenticators are authentication/sign-in.ts'.
 * - `flows.runBound(realm, 'resetCredentialsFlow', { … })`: the realm's bound reset-credentials flow through the same
 *   runner; the authenticators are authentication/reset-credentials.ts'.
 * - `flows.resetSteps(realm)`        → `{ protectors }`
 * - `flows.registrationSteps(realm)` → `{ protectors, formActions }`: form actions are the built-in
 *   `registration-user-creation` and `registration-password-action` and those of provider packages.
 *
 * A step is `{ id, executionId, instance, config }`: `id` the provider id, `instance` the `FormProtector` or
 * `FormAction` to call, `config` the execution's `authenticatorConfig.config` (a fresh `{}` when none is
 * attached). Protectors are a list apart because they all run first, whatever the priorities: a page renders
 * every protector's `render()` into its form and, on submit, calls every `verify()` before it looks at the
 * password or runs any form action; then (registration) every form action's `validate()`, collecting
 * `fieldErrors` (`{ field, message }`); after the user is created, each form action's `success()`. The login
 * and reset pages' own steps are authenticators run by `runSignIn` / `runBound`, so they are not steps here.
 *
 * A missing provider never weakens a sign-in (runnable.ts, `flowBlocker`): a flow that needs a step whose provider
 * is not installed (a REQUIRED one, one in a CONDITIONAL subflow, the only alternatives left) cannot run, and each
 * call above refuses with `FlowCannotRunError` (500, logged once per realm, flow and step) instead of running it
 * without the step; start-up logs each bound flow in that state. A missing provider the flow does not need (an
 * alternative beside one that runs, a condition, counted as met) is skipped, with one warning per realm and provider.
 *
 * Realm import: `flows.importFlows(realm, { flows, configs, builtIns, bindings }, trx)` writes an export's own flows
 * as it defines them (with the admin API's rules), merges its built-in flows into the realm's (requirements and
 * configs of the steps Realmgate has), and keeps the built-in flow bound where the file binds one that cannot run;
 * it returns what the import's report names (`notImported`, `keptAsData`).
 *
 * `flows.validateBindings(realm)` → `null`, or `{ field, message }` for a binding that names no top-level flow
 * of the realm (`realm.registrationFlow: no flow "x" in this realm`), or that the realm PUT changes to a flow that
 * cannot run (`realm.browserFlow: "x" cannot run: authenticator "custom-mfa" (REQUIRED, in flow "x") is not
 * installed; …`). The admin API's flow edits refuse to leave a bound flow unable to run the same way.
 */
export { Flows } from './flows.js';
export type { FlowImport, FlowImportReport, ImportedBinding, ImportedConfig, ImportedExecution, ImportedFlow } from './import.js';
export { aliasHint, aliasPattern, isOverrideBinding, keycloakBindingDefaults, overrideBindings, type OverrideBinding, type AuthExecution, type AuthFlow, type AuthenticatorConfig, type FlowType, type KeycloakBinding } from './model.js';
export { FlowCannotRunError, type FlowBlocker } from './runnable.js';
export type { Alternative, Authenticator, Condition, ConditionContext, ExecutionStatus, FlowIncomplete, FlowResult, FlowRun, StepContext, StepOutcome } from './engine.js';
export { firstBrokerLoginProviders, RESET_OTP_REMOVE_ALL, RESET_OTP_REMOVE_ONE, type AuthProvider, type ProviderRole } from './catalog.js';
export type { RealmFlows, WalkedExecution } from './realm-flows.js';
export type { BindingProblem, FormActionStep, FormSteps, ProtectorStep, RegistrationSteps, SigningClient } from './runner.js';
export type { ImportedOverrides } from './overrides.js';
