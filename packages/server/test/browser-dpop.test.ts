/**
 * DPoP from a browser app (issue 40, item 4): oidc-client-ts 3, unchanged from npm, with its DPoP setting, in
 * headless Chromium on another origin (CORS preflights with the DPoP header): the code it redeems gives DPoP-bound
 * tokens, its proofs call userinfo, and its refresh (a public client's bound refresh token) works with the same key.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inApp, signInThroughApp, startOidcClientTsHarness, type AppHarness } from './support/spa.js';

const REALM = 'dpop-spa';
const CLIENT = 'dpop-app';
const USER = { username: 'dana', password: 'dana-pass-1', email: 'dana@example.com' };

let h: AppHarness;

beforeAll(async () => {
  h = await startOidcClientTsHarness({ realm: REALM, clientId: CLIENT, user: USER, script: 'window.settings.dpop = { store: new oidc.IndexedDbDPoPStore() };' });
});
afterAll(() => h?.close());

const claims = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString()) as Record<string, unknown>;

describe('oidc-client-ts with DPoP', () => {
  it('signs in with DPoP-bound tokens, calls userinfo with a proof, refreshes with the same key', async () => {
    const { t, page, appOrigin } = h;
    expect(await signInThroughApp(page, appOrigin, USER)).toEqual({ before: { ready: true }, after: { signedIn: USER.username } });

    const user = await inApp<{ token_type: string; access_token: string; refresh_token: string }>(page, 'return await manager.getUser();');
    expect(user.token_type).toBe('DPoP');
    const jkt = (claims(user.access_token).cnf as { jkt: string }).jkt;
    expect(jkt).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(claims(user.refresh_token).cnf).toEqual({ jkt });

    // The app calls userinfo (cross-origin, a preflight with the DPoP header) with the library's proof.
    const userinfo = `${t.url}/realms/${REALM}/protocol/openid-connect/userinfo`;
    const answers = await inApp<[number, string]>(
      page,
      `const user = await manager.getUser();
      const proof = await manager.dpopProof(${JSON.stringify(userinfo)}, user, 'GET');
      const withProof = await fetch(${JSON.stringify(userinfo)}, { headers: { authorization: 'DPoP ' + user.access_token, dpop: proof } });
      return [withProof.status, (await withProof.json()).preferred_username];`,
    );
    expect(answers).toEqual([200, USER.username]);

    // Refresh with the bound refresh token: the library signs a proof with the same key.
    const refreshed = await inApp<{ token_type: string; access_token: string }>(page, 'return await manager.signinSilent();');
    expect(refreshed.token_type).toBe('DPoP');
    expect(refreshed.access_token).not.toBe(user.access_token);
    expect(claims(refreshed.access_token).cnf).toEqual({ jkt });
  });
});
