import { FormClient } from './forms.js';

/**
 * A browser for brokering tests against two realms of one test server: the broker realm `down` and the upstream
 * realm `up`, one cookie jar each (the form client ignores cookie paths).
 */
export class BrokerBrowser {
  readonly down: FormClient;
  readonly up: FormClient;
  constructor(base: string) {
    this.down = new FormClient(base);
    this.up = new FormClient(base);
  }
  /** Only this test server is ever asked (the application's redirect URI is looked at, never fetched). */
  private jar(url: string) {
    if (/^https?:/.test(url) && !url.startsWith(this.down.base)) throw new Error(`the test browser does not leave the test server: ${url}`);
    return url.includes('/realms/up/') ? this.up : this.down;
  }
  get(url: string) {
    return this.jar(url).get(url);
  }
  post(url: string, form: Record<string, string>) {
    return this.jar(url).post(url, form);
  }
}
