import type { FormProtector, ProtectedForm, ProtectorDecision, RequestInfo } from '@realmgate/spi';
import { realmInfo } from '../events/index.js';
import { providerEventError, type ProviderEventError } from '../model/errors.js';
import type { Realm } from '../model/types.js';
import type { Translator } from './i18n.js';

export interface ProtectorStep {
  id: string;
  instance: FormProtector;
  config: Record<string, string>;
}

const resourceBase = (realm: Realm, id: string) => `/realms/${encodeURIComponent(realm.name)}/${id}`;

/** The hidden fields and scripts of every enabled protector, in flow order. */
export async function protectorMarkup(realm: Realm, form: ProtectedForm, steps: ProtectorStep[], request: RequestInfo, t?: Translator): Promise<string> {
  const parts: string[] = [];
  // A key the bundles lack comes back as the key: the provider's own text is shown then.
  const msg = t ? (key: string, fallback: string) => (t.msg(key) === key ? fallback : t.msg(key)) : undefined;
  for (const step of steps) {
    parts.push(await step.instance.render({ realm: realmInfo(realm), form, config: step.config, request, resourceBaseUrl: resourceBase(realm, step.id), ...(t ? { locale: t.locale, msg } : {}) }));
  }
  return parts.join('\n');
}

/** Runs protectors in order before anything looks at the password; the first refusal stops the form. */
export async function runProtectors(
  realm: Realm,
  form: ProtectedForm,
  steps: ProtectorStep[],
  request: RequestInfo,
  submitted: Record<string, string>,
): Promise<(Omit<Extract<ProtectorDecision, { ok: false }>, 'error'> & { error: ProviderEventError; protector: string }) | null> {
  for (const step of steps) {
    const decision = await step.instance.verify({
      realm: realmInfo(realm),
      form,
      config: step.config,
      request,
      resourceBaseUrl: resourceBase(realm, step.id),
      submitted,
    });
    if (!decision.ok) return { ...decision, error: providerEventError(decision.error), protector: step.id };
  }
  return null;
}

/** Form fields as strings: a repeated field keeps its first value, a missing one is ''. */
export function formValues(body: unknown, names: readonly string[]): Record<string, string> {
  const source = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  const out: Record<string, string> = {};
  for (const [key, raw] of Object.entries(source)) {
    const value = Array.isArray(raw) ? raw[0] : raw;
    if (typeof value === 'string') out[key] = value;
  }
  for (const name of names) out[name] ??= '';
  return out;
}
