import { SignedState, type AuthSession } from '../authentication/index.js';
import type { PagesContext } from './context.js';
import type { Alternative, ExecutionStatus } from '../flows/index.js';
import type { Realm } from '../model/types.js';
import { authBinding } from './binding.js';
import { actionUrl } from './pages.js';
import { STEP_LIFETIME_MS } from './step-pages.js';

/**
 * The "try another way" link of a step page (pages/select-authenticator.ts shows the list and takes the choice):
 * a key sealed with the realm's state secret, carrying where the sign-in stands and the ways its step offers.
 */

export const SELECT_PURPOSE = 'select-authenticator';

/** Where a step page's sign-in stands, with the ways its step offers (the asking one first). */
export interface WaysProgress {
  sub: string | null;
  done?: Record<string, ExecutionStatus>;
  setup?: string[];
  login?: string;
  checked?: boolean;
  ways?: Alternative[];
}

export interface SelectClaims extends WaysProgress {
  azp: string;
  auth: string;
}

/** Our names for the steps "try another way" lists (Keycloak's ids). */
export const WAYS: Record<string, { name: string; help: string }> = {
  'auth-otp-form': { name: 'Authenticator app', help: 'A one-time code from the authenticator app on your phone.' },
  'webauthn-authenticator': { name: 'Security key', help: 'The security key or passkey registered for this account.' },
  'webauthn-authenticator-passwordless': { name: 'Passkey', help: 'A passkey on this device, or on a security key.' },
  'auth-recovery-authn-code-form': { name: 'Recovery code', help: 'One of the recovery codes you saved.' },
  'auth-password-form': { name: 'Password', help: 'The password of this account.' },
  // The first broker login's two ways to prove an existing account is yours (Keycloak's Account verification options).
  'idp-email-verification': { name: 'Verify by e-mail', help: 'A link sent to the e-mail address of the existing account.' },
  'idp-username-password-form': { name: 'Sign in again', help: 'The password of the existing account.' },
};

/** The "try another way" link of a step page (the layout shows it), or null when its step has no alternative. */
export async function anotherWay(ctx: PagesContext, realm: Realm, auth: AuthSession, progress: WaysProgress): Promise<{ action: string; csrf: string; key: string } | null> {
  if (!progress.ways || progress.ways.length < 2) return null;
  const claims: SelectClaims = { ...progress, azp: auth.clientId, auth: authBinding(auth) };
  return { action: actionUrl(realm, SELECT_PURPOSE), csrf: auth.csrf, key: await new SignedState(ctx.keys).seal(realm.id, SELECT_PURPOSE, claims, STEP_LIFETIME_MS) };
}

