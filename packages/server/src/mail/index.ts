import type { Realm } from '../model/types.js';
import type { ServerLogger } from '../observability/index.js';

export interface Mail {
  to: string;
  subject: string;
  text: string;
  html: string;
}

/**
 * Sends with the realm's smtpServer settings (Keycloak's keys). Without a host, development mode writes the
 * mail to the log and production mode refuses, so a missing configuration is noticed.
 */
export class Mailer {
  constructor(
    private readonly logger: ServerLogger,
    private readonly mode: string,
  ) {}

  async send(realm: Realm, mail: Mail): Promise<void> {
    const smtp = realm.smtpServer;
    if (!smtp.host) {
      if (this.mode !== 'production') {
        this.logger.info({ realm: realm.name, to: mail.to, subject: mail.subject, body: mail.text }, 'e-mail (no SMTP configured; development mode logs it)');
        return;
      }
      throw new Error(`realm ${realm.name} has no SMTP server configured`);
    }
    const port = smtp.port ? Number(smtp.port) : smtp.ssl === 'true' ? 465 : 25;
    // Imported when the first mail goes out: most processes never send one, and every one paid for the import.
    const { default: nodemailer } = await import('nodemailer');
    const transport = nodemailer.createTransport({
      host: smtp.host,
      port,
      secure: smtp.ssl === 'true',
      requireTLS: smtp.starttls === 'true',
      ignoreTLS: smtp.starttls !== 'true' && smtp.ssl !== 'true',
      auth: smtp.auth === 'true' && smtp.user ? { user: smtp.user, pass: smtp.password ?? '' } : undefined,
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 20_000,
    });
    const from = smtp.from ?? `no-reply@${smtp.host}`;
    try {
      await transport.sendMail({
        from: smtp.fromDisplayName ? { name: smtp.fromDisplayName, address: from } : from,
        ...(smtp.replyTo ? { replyTo: smtp.replyTo } : {}),
        to: mail.to,
        subject: mail.subject,
        text: mail.text,
        html: mail.html,
      });
    } finally {
      transport.close();
    }
  }
}
