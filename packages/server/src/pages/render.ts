import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';
import type { FastifyReply } from 'fastify';
import type { Realm } from '../model/types.js';

const builtinDir = fileURLToPath(new URL('./templates/', import.meta.url));
const staticDir = fileURLToPath(new URL('./static/', import.meta.url));

// Scripts only from this origin: protector and form-action assets are served by their realm resources.
const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "style-src 'self'",
  "img-src 'self' data:",
  "worker-src 'self' blob:",
  "connect-src 'self'",
  "form-action 'self' http: https:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/** An http(s) origin as URL.origin writes it: nothing that could end or extend a CSP directive. */
const isOrigin = (origin: string) => /^https?:\/\/[a-z0-9.\-[\]:]+$/i.test(origin);

export interface FieldErrors {
  [field: string]: string;
}

/** Templates with auto-escaping; a theme directory's file of the same name wins over the built-in one. */
export class PageRenderer {
  private readonly eta: Eta;

  constructor(private readonly themeDir: string | null) {
    this.eta = new Eta({ views: builtinDir, autoEscape: true, cache: true, defaultExtension: '.eta' });
    const theme = themeDir ? resolve(themeDir) : null;
    this.eta.resolvePath = (template: string) => {
      const file = template.endsWith('.eta') ? template : `${template}.eta`;
      if (!/^[a-z0-9-]+\.eta$/.test(file)) throw new Error(`bad template name ${template}`);
      if (theme && existsSync(join(theme, file))) return join(theme, file);
      return join(builtinDir, file);
    };
  }

  /** `frameSrc`: origins the page may frame (the front-channel logout page's clients), besides its own. */
  async send(reply: FastifyReply, realm: Realm, template: string, data: Record<string, unknown>, status = 200, options: { frameSrc?: string[] } = {}): Promise<FastifyReply> {
    const html = await this.eta.renderAsync(template, {
      realmName: realm.name,
      realmTitle: realm.displayName || realm.name,
      resources: `/realms/${encodeURIComponent(realm.name)}/login-actions/resources`,
      errors: {},
      values: {},
      ...data,
    });
    return reply
      .code(status)
      .type('text/html; charset=utf-8')
      .headers({
        'cache-control': 'no-store',
        'content-security-policy': options.frameSrc?.length ? `${contentSecurityPolicy}; frame-src 'self' ${options.frameSrc.filter(isOrigin).join(' ')}` : contentSecurityPolicy,
        'x-frame-options': 'DENY',
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
      })
      .send(html);
  }

  /** The stylesheet: the theme's `style.css` when it has one. */
  stylesheet(): string {
    const themed = this.themeDir ? join(resolve(this.themeDir), 'style.css') : null;
    return readFileSync(themed && existsSync(themed) ? themed : join(staticDir, 'style.css'), 'utf8');
  }
}
