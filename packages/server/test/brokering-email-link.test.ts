import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { firstForm, pkce } from './support/forms.js';
import { BrokerBrowser as Browser } from './support/broker-browser.js';
import { adminToken, api, eventually, startServer, type TestServer } from './support/server.js';
import { linkIn, startSmtp } from './support/smtp.js';

/**
 * Issue 37: idp-email-verification ("Verify existing account by Email") in the first broker login flow, against a
 * second realm of the same server as the upstream and a real SMTP server on loopback. An upstream account whose
 * e-mail is a local user's reaches the local account only through the link mailed to that account's address
 * (or its password, beside it): the link is single use, bound to its sign-in, upstream account and user, and expires.
 */

const APP_REDIRECT = 'http://app.test/callback';
const SECRET = 'upstream-client-secret';
const { challenge } = pkce();
const authQuery = new URLSearchParams({ client_id: 'app', redirect_uri: APP_REDIRECT, response_type: 'code', scope: 'openid', state: 's', code_challenge: challenge, code_challenge_method: 'S256' }).toString();

describe('first broker login: verifying the existing account by e-mail', () => {
  let t: TestServer;
  let token: string;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  const admin = (method: string, path: string, body?: unknown) => api(t.url, method, `/admin/realms${path}`, token, body);
  const events = async (type: string) => (await admin('GET', `/down/events?type=${type}&max=100`)).body as { type: string; userId?: string; error?: string; details?: Record<string, string> }[];
  const downUser = async (username: string) => ((await admin('GET', `/down/users?username=${username}&exact=true`)).body as { id: string; emailVerified?: boolean }[])[0];
  const links = async (username: string) => (await admin('GET', `/down/users/${(await downUser(username)).id}/federated-identity`)).body as { userName: string }[];
  const mailsTo = (address: string) => smtp.mails.filter((m) => m.to.includes(address));
  const smtpServer = () => ({ host: '127.0.0.1', port: String(smtp.port), from: 'noreply@down.example' });

  /** The login page, the provider's button, the upstream's login: the broker's first answer. */
  async function signInUpstream(browser: Browser, username: string) {
    const page = await browser.get(`/realms/down/protocol/openid-connect/auth?${authQuery}`);
    const href = /id="social-up"[^>]*href="([^"]+)"/.exec(page.text);
    expect(href).not.toBeNull();
    const toUpstream = await browser.get(href![1].replace(/&amp;/g, '&'));
    const login = await browser.get(toUpstream.location!);
    const form = firstForm(login.text);
    const back = await browser.post(form.action, { ...form.hidden, username, password: 'Up-pass-123' });
    expect(back.location).toContain('/realms/down/broker/up/endpoint?');
    return browser.get(back.location!);
  }

  /** Through "Account already exists" to the page saying the link was mailed. */
  async function toEmailPage(browser: Browser, username: string) {
    const confirm = await signInUpstream(browser, username);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('Account already exists');
    const form = firstForm(confirm.text);
    const page = await browser.post(form.action, { ...form.hidden, submitAction: 'linkAccount' });
    return page;
  }

  beforeAll(async () => {
    smtp = await startSmtp();
    t = await startServer();
    token = await adminToken(t.url);
    const upUser = (username: string, email: string) => ({ username, enabled: true, email, emailVerified: true, firstName: 'Up', lastName: username, credentials: [{ type: 'password', value: 'Up-pass-123', temporary: false }] });
    expect(
      (
        await api(t.url, 'POST', '/admin/realms', token, {
          realm: 'up',
          enabled: true,
          duplicateEmailsAllowed: true,
          clients: [{ clientId: 'broker-client', enabled: true, publicClient: false, secret: SECRET, redirectUris: [`${t.url}/realms/down/broker/up/endpoint`], standardFlowEnabled: true }],
          users: [
            upUser('a1', 'alice@down.example'),
            upUser('b1', 'bob@down.example'),
            upUser('b2', 'bob@down.example'),
            upUser('c1', 'carl@down.example'),
            upUser('d1', 'dora@down.example'),
            upUser('d2', 'dora@down.example'),
            upUser('erin', 'erin@up.example'),
            upUser('f1', 'frank@down.example'),
            upUser('g1', 'gina@down.example'),
            upUser('h1', 'hank@down.example'),
            upUser('i1', 'ivan@down.example'),
          ],
        })
      ).status,
    ).toBe(201);
    const base = `${t.url}/realms/up/protocol/openid-connect`;
    const localUser = (username: string, email?: string) => ({ username, enabled: true, ...(email ? { email } : {}), emailVerified: false, firstName: username, lastName: 'Local', credentials: [{ type: 'password', value: `${username}-Pass-123`, temporary: false }] });
    expect(
      (
        await api(t.url, 'POST', '/admin/realms', token, {
          realm: 'down',
          enabled: true,
          eventsEnabled: true,
          smtpServer: smtpServer(),
          clients: [{ clientId: 'app', enabled: true, publicClient: true, redirectUris: [APP_REDIRECT], standardFlowEnabled: true }],
          users: [localUser('alice', 'alice@down.example'), localUser('bob', 'bob@down.example'), localUser('carl', 'carl@down.example'), localUser('dora', 'dora@down.example'), localUser('erin'), localUser('frank', 'frank@down.example'), localUser('gina', 'gina@down.example'), localUser('hank', 'hank@down.example'), localUser('ivan', 'ivan@down.example')],
          identityProviders: [
            {
              alias: 'up',
              displayName: 'Upstream',
              providerId: 'keycloak-oidc',
              enabled: true,
              config: { clientId: 'broker-client', clientSecret: SECRET, authorizationUrl: `${base}/auth`, tokenUrl: `${base}/token`, userInfoUrl: `${base}/userinfo`, jwksUrl: `${base}/certs`, issuer: `${t.url}/realms/up`, validateSignature: 'true', useJwksUrl: 'true', pkceEnabled: 'true', pkceMethod: 'S256', syncMode: 'IMPORT' },
            },
          ],
        })
      ).status,
    ).toBe(201);
  });

  afterAll(async () => {
    await t?.close();
    await smtp?.close();
  });

  it('mails the link to the existing account, not again on a repost, again on "send again"; the link in the same browser links and signs in', async () => {
    const browser = new Browser(t.url);
    const page = await toEmailPage(browser, 'a1');
    expect(page.status).toBe(200);
    expect(page.text).toContain('id="instruction1"');
    expect(page.text).toContain('a1');
    const first = await eventually(() => mailsTo('alice@down.example')[0]);
    expect(first.raw.replace(/=\r?\n/g, '')).toContain('the Upstream account of user a1');
    // The page posted again ("continue" before the link was followed): no second mail, no link, the same page.
    const form = firstForm(page.text);
    const again = await browser.post(form.action, { ...form.hidden, emailLink: 'continue' });
    expect(again.status).toBe(200);
    expect(again.text).toContain('id="instruction1"');
    const resent = await browser.post(form.action, { ...form.hidden, emailLink: 'resend' });
    expect(resent.status).toBe(200);
    await eventually(() => mailsTo('alice@down.example').length === 2);
    expect(await links('alice')).toEqual([]);
    const aliceId = (await downUser('alice')).id;
    const sent = await eventually(async () => {
      const mine = (await events('SEND_IDENTITY_PROVIDER_LINK')).filter((e) => e.userId === aliceId);
      return mine.length === 2 ? mine : null;
    });
    expect(sent[0].details).toMatchObject({ identity_provider: 'up', identity_provider_identity: 'a1', username: 'alice', email: 'alice@down.example' });

    // The first link, in the browser that is signing in: linked, and the application gets its code.
    const link = linkIn(first);
    const done = await browser.get(link);
    expect(done.status).toBe(302);
    expect(done.location).toMatch(/^http:\/\/app\.test\/callback\?.*code=/);
    expect(await links('alice')).toMatchObject([{ userName: 'a1' }]);
    expect((await downUser('alice')).emailVerified).toBe(true);
    const linked = await eventually(async () => (await events('IDENTITY_PROVIDER_LINK_ACCOUNT')).find((e) => e.userId === aliceId));
    expect(linked?.details).toMatchObject({ identity_provider: 'up', identity_provider_identity: 'a1', email: 'alice@down.example' });

    // Used: the same link again, or the second one (its sign-in is over), opens nothing.
    expect((await browser.get(link)).status).toBe(400);
    expect((await browser.get(linkIn(mailsTo('alice@down.example')[1]))).status).toBe(400);
    await eventually(async () => (await events('IDENTITY_PROVIDER_LINK_ACCOUNT_ERROR')).some((e) => e.error === 'invalid_token'));
  });

  it('an upstream account with the same e-mail gets nowhere without the link: not by reposting, not by a password, not by another sign-in’s link', async () => {
    const victim = new Browser(t.url);
    await toEmailPage(victim, 'b1');
    const attacker = new Browser(t.url);
    const page = await toEmailPage(attacker, 'b2');
    expect(page.status).toBe(200);
    await eventually(() => mailsTo('bob@down.example').length === 2);
    const form = firstForm(page.text);
    const tries: Record<string, string>[] = [{ emailLink: 'continue' }, { password: 'guess' }, { submitAction: 'linkAccount' }, {}];
    for (const fields of tries) {
      const answer = await attacker.post(form.action, { ...form.hidden, ...fields });
      expect(answer.location).toBeNull();
    }
    expect(await links('bob')).toEqual([]);
    // b1's link opened in b2's browser is another browser's link: it asks first, and confirms only b1's sign-in.
    const b1Link = linkIn(mailsTo('bob@down.example')[0]);
    const ask = await attacker.get(b1Link);
    expect(ask.status).toBe(200);
    expect(ask.text).toContain('kc-idp-link-confirm-form');
    expect(await links('bob')).toEqual([]);
    const confirm = firstForm(ask.text);
    const confirmed = await attacker.post(confirm.action, confirm.hidden);
    expect(confirmed.status).toBe(200);
    const stillNothing = await attacker.post(form.action, { ...form.hidden, emailLink: 'continue' });
    expect(stillNothing.location).toBeNull();
    expect(await links('bob')).toEqual([]);
    // b2 starting again is not helped by b1's proof either.
    const restart = await signInUpstream(new Browser(t.url), 'b2');
    expect(restart.location).toBeNull();
    expect(restart.text).toContain('Account already exists');
    expect(await links('bob')).toEqual([]);
  });

  it('in another browser: asks, confirms, and the first browser continues; a later first login of the same upstream account takes the proof once', async () => {
    const browser = new Browser(t.url);
    const page = await toEmailPage(browser, 'c1');
    const mail = await eventually(() => mailsTo('carl@down.example')[0]);
    const phone = new Browser(t.url);
    const ask = await phone.get(linkIn(mail));
    expect(ask.status).toBe(200);
    expect(await links('carl')).toEqual([]);
    const confirm = firstForm(ask.text);
    const done = await phone.post(confirm.action, confirm.hidden);
    expect(done.status).toBe(200);
    expect(done.location).toBeNull();
    // The confirmation is spent.
    expect((await new Browser(t.url).post(confirm.action, confirm.hidden)).status).toBe(400);
    const form = firstForm(page.text);
    const continued = await browser.post(form.action, { ...form.hidden, emailLink: 'continue' });
    expect(continued.status).toBe(302);
    expect(continued.location).toMatch(/code=/);
    expect(await links('carl')).toMatchObject([{ userName: 'c1' }]);

    // The original browser gone: a new first login of the same upstream account is linked by the proof, once.
    const abandoned = new Browser(t.url);
    await toEmailPage(abandoned, 'd1');
    const doraMail = await eventually(() => mailsTo('dora@down.example')[0]);
    const other = new Browser(t.url);
    const doraAsk = await other.get(linkIn(doraMail));
    expect((await other.post(firstForm(doraAsk.text).action, firstForm(doraAsk.text).hidden)).status).toBe(200);
    // Another upstream account with the same e-mail does not get it.
    const d2 = await signInUpstream(new Browser(t.url), 'd2');
    expect(d2.text).toContain('Account already exists');
    const fresh = await signInUpstream(new Browser(t.url), 'd1');
    expect(fresh.status).toBe(302);
    expect(fresh.location).toMatch(/code=/);
    expect(await links('dora')).toMatchObject([{ userName: 'd1' }]);
  });

  it('an expired link opens nothing', async () => {
    const browser = new Browser(t.url);
    await toEmailPage(browser, 'f1');
    const mail = await eventually(() => mailsTo('frank@down.example')[0]);
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 301_000 });
    try {
      const late = await browser.get(linkIn(mail));
      expect(late.status).toBe(400);
      expect(late.location).toBeNull();
    } finally {
      vi.useRealTimers();
    }
    expect(await links('frank')).toEqual([]);
  });

  it("the realm's actionTokenGeneratedByUserLifespan sets the link's lifetime, and its override for idp-verify-account-via-email wins", async () => {
    const before = (await admin('GET', '/down')).body as { attributes: Record<string, string>; actionTokenGeneratedByUserLifespan: number };
    expect(before.actionTokenGeneratedByUserLifespan).toBe(300);
    expect((await admin('PUT', '/down', { actionTokenGeneratedByUserLifespan: 3600 })).status).toBe(204);
    expect(((await admin('GET', '/down')).body as { actionTokenGeneratedByUserLifespan: number }).actionTokenGeneratedByUserLifespan).toBe(3600);
    try {
      // An hour for every user action: the link followed ten minutes later still links.
      const browser = new Browser(t.url);
      await toEmailPage(browser, 'g1');
      const mail = await eventually(() => mailsTo('gina@down.example')[0]);
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 601_000 });
      try {
        const done = await browser.get(linkIn(mail));
        expect(done.status).toBe(302);
        expect(done.location).toMatch(/^http:\/\/app\.test\/callback\?.*code=/);
      } finally {
        vi.useRealTimers();
      }
      expect(await links('gina')).toMatchObject([{ userName: 'g1' }]);
      // The console's per-type override (a realm attribute) wins: 60 seconds for this link, expired at 61.
      const attributes = { ...before.attributes, 'actionTokenGeneratedByUserLifespan.idp-verify-account-via-email': '60' };
      expect((await admin('PUT', '/down', { attributes })).status).toBe(204);
      const other = new Browser(t.url);
      await toEmailPage(other, 'h1');
      const late = await eventually(() => mailsTo('hank@down.example')[0]);
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 61_000 });
      try {
        expect((await other.get(linkIn(late))).status).toBe(400);
      } finally {
        vi.useRealTimers();
      }
      expect(await links('hank')).toEqual([]);
    } finally {
      expect((await admin('PUT', '/down', { actionTokenGeneratedByUserLifespan: 300, attributes: before.attributes })).status).toBe(204);
    }
  });

  it('"try another way" from the e-mail page: the two ways listed, re-authentication chosen, back to the e-mail, then the password links', async () => {
    const browser = new Browser(t.url);
    /** The layout's "try another way" form of a page, posted. */
    const tryAnotherWay = (html: string) => {
      const at = html.indexOf('<form id="kc-select-try-another-way-form"');
      expect(at).toBeGreaterThan(-1);
      const form = firstForm(html.slice(at));
      expect(form.hidden.tryAnotherWay).toBe('on');
      return browser.post(form.action, form.hidden);
    };
    /** The ways a select page lists: their names and the executions they choose. */
    const waysOf = (html: string) => [...html.matchAll(/name="authenticationExecution" value="([^"]+)"><strong>([^<]+)<\/strong>/g)].map((m) => ({ execution: m[1], name: m[2] }));
    const choose = (html: string, execution: string) => browser.post(firstForm(html).action, { ...firstForm(html).hidden, authenticationExecution: execution });

    const emailPage = await toEmailPage(browser, 'i1');
    expect(emailPage.text).toContain('id="instruction1"');
    await eventually(() => mailsTo('ivan@down.example').length === 1);
    const select = await tryAnotherWay(emailPage.text);
    expect(select.status).toBe(200);
    const ways = waysOf(select.text);
    // The asking way first (as Keycloak lists it), then re-authentication.
    expect(ways.map((w) => w.name)).toEqual(['Verify by e-mail', 'Sign in again']);

    // A way that was not offered (another execution's id, made up) is refused with the list again: nothing passes.
    const forged = await choose(select.text, 'not-an-offered-execution');
    expect(forged.status).toBe(400);
    expect(forged.location).toBeNull();
    expect(waysOf(forged.text)).toEqual(ways);

    const password = await choose(select.text, ways[1].execution);
    expect(password.status).toBe(200);
    expect(password.text).toContain('kc-form-login');
    expect(password.text).not.toContain('instruction1');
    // Back to the e-mail from the password page: the page again, no second mail (the link was mailed already).
    const back = await choose((await tryAnotherWay(password.text)).text, ways[0].execution);
    expect(back.status).toBe(200);
    expect(back.text).toContain('id="instruction1"');
    const again = await choose((await tryAnotherWay(back.text)).text, ways[1].execution);
    expect(again.text).toContain('kc-form-login');
    const form = firstForm(again.text);
    const wrong = await browser.post(form.action, { ...form.hidden, password: 'ivan-wrong-123' });
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain('kc-select-try-another-way-form');
    expect(await links('ivan')).toEqual([]);
    const done = await browser.post(form.action, { ...form.hidden, password: 'ivan-Pass-123' });
    expect(done.status).toBe(302);
    expect(done.location).toMatch(/^http:\/\/app\.test\/callback\?.*code=/);
    expect(await links('ivan')).toMatchObject([{ userName: 'i1' }]);
    expect(mailsTo('ivan@down.example')).toHaveLength(1);
  });

  it('without SMTP, or for an account without an address, re-authentication is the way (the step is attempted)', async () => {
    // erin has no e-mail here: found by username, she is asked for her password.
    const erin = await toEmailPage(new Browser(t.url), 'erin');
    expect(erin.status).toBe(200);
    expect(erin.text).toContain('kc-form-login');
    expect(erin.text).not.toContain('instruction1');
    expect((await admin('PUT', '/down', { smtpServer: {} })).status).toBe(204);
    try {
      const frank = await toEmailPage(new Browser(t.url), 'f1');
      expect(frank.text).toContain('kc-form-login');
      expect(frank.text).not.toContain('instruction1');
      // No mail to offer: the password page has no "try another way".
      expect(frank.text).not.toContain('kc-select-try-another-way-form');
    } finally {
      expect((await admin('PUT', '/down', { smtpServer: smtpServer() })).status).toBe(204);
    }
  });

  it('an SMTP server that refuses the mail: the page still answers, and SEND_IDENTITY_PROVIDER_LINK_ERROR email_send_failed is recorded', async () => {
    const closed = await startSmtp();
    await closed.close();
    expect((await admin('PUT', '/down', { smtpServer: { host: '127.0.0.1', port: String(closed.port), from: 'noreply@down.example' } })).status).toBe(204);
    try {
      const page = await toEmailPage(new Browser(t.url), 'f1');
      expect(page.status).toBe(200);
      expect(page.text).toContain('id="instruction1"');
      const failed = await eventually(async () => (await events('SEND_IDENTITY_PROVIDER_LINK_ERROR')).find((e) => e.details?.identity_provider_identity === 'f1'));
      expect(failed).toMatchObject({ error: 'email_send_failed', details: { username: 'frank', email: 'frank@down.example' } });
    } finally {
      expect((await admin('PUT', '/down', { smtpServer: smtpServer() })).status).toBe(204);
    }
    expect(await links('frank')).toEqual([]);
  });
});
