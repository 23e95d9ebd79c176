import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FastifyReply } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { Realm, User } from '../src/model/types.js';
import { bundles, englishKey, translator } from '../src/pages/i18n.js';
import { PageRenderer } from '../src/pages/render.js';
import { defaultBrowserSecurityHeaders } from '../src/model/browser-security-headers.js';
import { executeActionsMail, identityProviderLinkMail, orgInviteMail, resetPasswordMail, verifyEmailMail } from '../src/pages/emails.js';

/**
 * Issue 43 item 1, the guard: every page and every e-mail in German has no English text of ours. Each template is
 * rendered in English and in German with the same data; a visible text (or aria-label, title, placeholder, alt) that
 * is the same in both and is not the data itself is English left in a template. The handlers' sentences (passed to
 * the pages as errors, messages, titles) must each be a sentence of the English bundle, so the page can show them in
 * its language.
 */

const src = (path: string) => fileURLToPath(new URL(`../src/${path}`, import.meta.url));
const templatesDir = src('pages/templates/');
const PARTIALS = new Set(['layout', 'field']);

const realm = {
  id: 'realm-1',
  name: 'acme',
  displayName: 'Acme',
  attributes: { internationalizationEnabled: 'true', supportedLocales: 'en,de', defaultLocale: 'en' },
  browserSecurityHeaders: defaultBrowserSecurityHeaders(),
} as unknown as Realm;

/** Data every template may read: values that are data (names, codes) are listed so the comparison leaves them out. */
const DATA_TEXTS = ['Acme', 'anna', 'GitHub', 'anna@github', 'Demo TV', 'profile', 'email', 'Demo App', 'ABCD-EFGH', 'JBSWY3DPEHPK3PXP', 'SHA1', 'My phone', 'Deutsch', 'English', 'A1B2C3D4E5', '6', '30', '1', 'Terms of Acme'];
/** Words German shares with English. */
const SAME_IN_GERMAN = ['Passkey'];
const data: Record<string, unknown> = {
  action: '/x', csrf: 'c', key: 'k', base: '/realms/acme/account', tab: 'profile', deleteAllowed: true, cancelAia: true,
  username: 'anna', providerName: 'GitHub', identityUsername: 'anna@github', duplicateField: 'e-mail', clientName: 'Demo TV',
  scopes: ['profile', 'email'], frames: [{ name: 'Demo App', url: 'http://127.0.0.1:9/logout' }], next: '/next', script: '/s.js',
  grant: 'g', consent: 'c', hidden: { a: 'b' }, logoutUrl: '/logout', resetUrl: '/reset', registerUrl: '/register', loginUrl: '/login',
  identityProviders: [{ alias: 'github', displayName: 'GitHub', href: '/broker/github' }], passkeys: true, passwordless: false, loginWithEmail: true,
  qrSvg: '<svg aria-hidden="true"></svg>', manualKey: 'JBSWY3DPEHPK3PXP', algorithm: 'SHA1', digits: 6, period: 30, number: 1,
  codes: ['A1B2C3D4E5'], title: 'Check your e-mail', text: 'You can now sign in.', protectorHtml: '', assetsHtml: '', link: { href: '/x', label: 'Back to sign in' }, termsText: 'Terms of Acme', label: 'My phone', options: {}, values: {}, errors: {},
  ways: [
    { execution: 'e1', name: 'Authenticator app', help: 'A one-time code from the authenticator app on your phone.' },
    { execution: 'e2', name: 'Passkey', help: 'A passkey on this device, or on a security key.' },
  ],
};

/** Renders a template as a request with this Accept-Language would see it. */
async function render(template: string, acceptLanguage: string, extra: Record<string, unknown> = {}): Promise<string> {
  let html = '';
  const reply = {
    request: { query: {}, headers: { 'accept-language': acceptLanguage }, url: '/realms/acme/login-actions/authenticate', method: 'GET' },
    code: () => reply,
    type: () => reply,
    headers: () => reply,
    header: () => reply,
    send: (body: string) => {
      html = body;
      return reply;
    },
  };
  await new PageRenderer().send(reply as unknown as FastifyReply, realm, template, { ...data, ...extra });
  return html;
}

const decode = (s: string) => s.replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n))).replace(/&quot;/g, '"').replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&#39;/g, "'");

/** The texts a person sees or hears: text between tags and the labelling attributes. */
function visibleTexts(html: string): string[] {
  const out: string[] = [];
  const body = html.replace(/<script[\s\S]*?<\/script>/g, '').replace(/<style[\s\S]*?<\/style>/g, '');
  for (const m of body.matchAll(/\s(?:aria-label|title|placeholder|alt)="([^"]*)"/g)) out.push(decode(m[1]));
  for (const part of body.replace(/<[^>]*>/g, '\n').split('\n')) out.push(decode(part));
  return out.map((s) => s.trim()).filter((s) => /\p{L}/u.test(s) && !DATA_TEXTS.includes(s) && !SAME_IN_GERMAN.includes(s));
}

const templates = readdirSync(templatesDir)
  .filter((f) => f.endsWith('.eta') && !PARTIALS.has(f.slice(0, -4)))
  .map((f) => f.slice(0, -4));

describe('every page in German has no English text of ours (issue 43 item 1)', () => {
  it('covers the account, device, broker and logout pages among all templates', () => {
    for (const t of ['account', 'device-verify', 'device-consent', 'idp-review-profile', 'idp-confirm-link', 'idp-reauth', 'login-idp-link-email', 'login-idp-link-confirm', 'link-idp-action', 'logout-confirm', 'frontchannel-logout', 'delete-account-confirm', 'delete-credential-confirm']) {
      expect(templates).toContain(t);
    }
  });

  for (const template of templates) {
    it(`${template}: no text is the same in English and German but the data`, async () => {
      const tabs = template === 'account' ? ['profile', 'password', 'delete'] : [undefined];
      for (const tab of tabs) {
        const extra = tab ? { tab } : {};
        const [en, de] = [await render(template, 'en', extra), await render(template, 'de', extra)];
        expect(de).toContain('lang="de"');
        const english = new Set(visibleTexts(en));
        const same = visibleTexts(de).filter((text) => english.has(text));
        expect(same, `${template}${tab ? ` (${tab})` : ''}`).toEqual([]);
      }
    });
  }

  it('the account page in each of the 7 languages has that language\'s texts', async () => {
    for (const locale of Object.keys(bundles)) {
      const localized = { ...realm, attributes: { ...realm.attributes, supportedLocales: Object.keys(bundles).join(',') } } as Realm;
      let html = '';
      const reply = { request: { query: {}, headers: { 'accept-language': locale }, url: '/realms/acme/account', method: 'GET' }, code: () => reply, type: () => reply, headers: () => reply, send: (b: string) => ((html = b), reply) };
      await new PageRenderer().send(reply as unknown as FastifyReply, localized, 'account', { ...data, tab: 'password' });
      expect(html, locale).toContain(`lang="${locale}"`);
      expect(decode(html), locale).toContain(bundles[locale].doChangePassword);
      expect(decode(html), locale).toContain(bundles[locale].accountTitle);
    }
  });
});

describe("the handlers' sentences are the English bundle's", () => {
  /** The files whose sentences reach a page (errors, messages, info and error pages, the ways, the device and logout pages). */
  const files = [
    ...readdirSync(src('pages')).filter((f) => f.endsWith('.ts') && !['themes.ts', 'theme-resources.ts', 'messages-route.ts'].includes(f)).map((f) => `pages/${f}`),
    'protocol/openid-connect/device.ts',
    'protocol/openid-connect/logout.ts',
    'authentication/registration.ts',
    'authentication/reset-credentials.ts',
  ];

  it('each sentence literal is a bundle sentence (exactly, or with its parameters filled in)', () => {
    const missing: string[] = [];
    for (const file of files) {
      for (const line of readFileSync(src(file), 'utf8').split('\n')) {
        // Comments and what no person reads on a page: logs, exceptions, events' reasons, protocol error descriptions.
        if (/^\s*(\/\/|\*|\/\*)/.test(line) || /logger|log\(|throw |Error\(|error_description|console\./.test(line)) continue;
        for (const m of line.replace(/reason: [^,]*,/g, '').matchAll(/(['`"])([A-Z][^'`"\n]*? [^'`"\n]*?)\1/g)) {
          const filled = m[2].replace(/\$\{[^}]*\}/g, 'X');
          if (!/[a-z]/.test(filled) || !filled.includes(' ')) continue;
          if (!englishKey(filled)) missing.push(`${file}: ${m[2]}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('a sentence with its parameter filled in is shown in the page language with the same parameter', () => {
    expect(translator('de').text('Linking GitHub failed.')).toBe('Die Verknüpfung mit GitHub ist fehlgeschlagen.');
    expect(translator('es').text('We sent a link to a@b.c. Your e-mail address changes when you open it.')).toContain('a@b.c');
    expect(translator('fr').text('The password needs at least 12 characters.')).toBe('Le mot de passe doit comporter au moins 12 caractères.');
    expect(translator('de').text('You have 3 recovery codes left. Set up new ones soon.')).toContain('3 Wiederherstellungscodes');
    expect(translator('de').text('You have 1 recovery code left. Set up new ones soon.')).toContain('1 Wiederherstellungscode.');
    // Something that only looks like a pattern stays as it is; a parameter keeps its markup, which the page escapes.
    expect(translator('de').text('Linking failed')).toBe('Linking failed');
    expect(translator('de').text('Linking <b>x</b> failed.')).toBe('Die Verknüpfung mit <b>x</b> ist fehlgeschlagen.');
  });
});

describe('every e-mail in German has no English text of ours', () => {
  const user = { id: 'u', username: 'anna', email: 'anna@example.test', attributes: {} } as unknown as User;
  const mails = (locale: string) => {
    const t = translator(locale);
    return [
      resetPasswordMail(t, realm, user, 'http://127.0.0.1/l'),
      verifyEmailMail(t, realm, user.email!, 'http://127.0.0.1/l', 3600),
      executeActionsMail(t, realm, user, 'http://127.0.0.1/l', ['UPDATE_PASSWORD', 'VERIFY_EMAIL'], 43200),
      orgInviteMail(t, realm, user.email!, { firstName: 'Anna', lastName: 'Berg' }, 'Acme Org', 'http://127.0.0.1/l', 86400),
      identityProviderLinkMail(t, realm, user, 'GitHub', 'anna@github', 'http://127.0.0.1/l', 300),
    ];
  };

  it('subjects, text and HTML bodies differ from the English in every sentence', async () => {
    const [en, de] = [await Promise.all(mails('en')), await Promise.all(mails('de'))];
    const sentences = (s: string) => s.split(/[\n:.·]|<[^>]*>/).map((x) => x.trim()).filter((x) => /\p{L}{3}/u.test(x) && !/^(http|Acme|anna|GitHub)/.test(x));
    en.forEach((mail, i) => {
      for (const part of ['subject', 'text', 'html'] as const) {
        const english = new Set(sentences(mail[part]!));
        expect(sentences(de[i][part]!).filter((s) => english.has(s)), `${i} ${part}`).toEqual([]);
      }
    });
  });
});
