/**
 * `npm run bench`: every figure beside a baseline measured in the same run, as a ratio, because timings on
 * shared machines drift between runs. Never used as a pass/fail gate in tests.
 */
import * as lookup from '../packages/disposable-email/bench/lookup.js';
import * as delivery from '../packages/event-webhook/bench/delivery.js';
import * as powBrowser from '../packages/pow/bench/browser.js';
import * as powVerify from '../packages/pow/bench/verify.js';
import * as webhookLogin from '../packages/event-webhook/bench/login.js';
import * as webhookOutbox from '../packages/event-webhook/bench/outbox.js';
import * as pgRoundTrip from '../packages/event-webhook/bench/round-trip.js';
import * as adminConsole from './console-bench.js';
import * as checkpoints from './checkpoint-bench.js';
import * as host from './host-bench.js';
import * as scale from './scale-bench.js';
import * as signIn from './sign-in-bench.js';
import * as token from './token-bench.js';
import * as logoutDpop from './logout-dpop-bench.js';
import * as authCost from './auth-cost-bench.js';
import * as keycloak from './keycloak-bench.js';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';

/** Merges one section's figures into bench/results.json, so a run of one section keeps the others' last figures. */
function record(section: string, figures: unknown): void {
  const file = resolve(import.meta.dirname, '../bench/results.json');
  let results: Record<string, unknown> = {};
  try {
    results = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch {
    // first run: no file yet
  }
  results[section] = { recordedAt: new Date().toISOString(), figures };
  mkdirSync(resolve(file, '..'), { recursive: true });
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
}

const sections: [string, () => Promise<void>][] = [
  [
    "Host: throughput on Node 24 (node:sqlite) beside the machine's Node (better-sqlite3 on Node 20)",
    async () => {
      const figures = await host.run();
      console.log(host.format(figures));
      record('host', figures);
    },
  ],
  [
    "SQLite checkpoints: the server's thread in slow commits, checkpoints on their own thread beside SQLite's automatic ones",
    async () => {
      const figures = await checkpoints.run();
      console.log(checkpoints.format(figures));
      record('sqlite-checkpoints', figures);
    },
  ],
  [
    'Token endpoint: client_credentials and password grants beside oidc-provider, crypto.sign, Argon2id and SQLite; p99; RSS',
    async () => {
      const figures = await token.run();
      console.log(token.format(figures));
      record('token', figures);
    },
  ],
  [
    'Sign-in flow (issue 35): form logins through the browser flow and password grants, this checkout beside the commit before the flow runner (SIGN_IN_BENCH_BEFORE, 4898357), side by side',
    async () => {
      const figures = await signIn.run();
      console.log(signIn.format(figures));
      record('sign-in-flow', figures);
    },
  ],
  [
    'Issue 40: a DPoP-bound client_credentials grant beside a Bearer one; the logout of a session with 10 back-channel clients beside one without',
    async () => {
      const figures = await logoutDpop.run();
      console.log(logoutDpop.format(figures));
      record('issue-40', figures);
    },
  ],
  [
    'Issue 39 (client-keys): client_credentials with private_key_jwt (RS256, ES256 assertions) beside client_secret_basic; access tokens signed ES256 beside RS256',
    async () => {
      const figures = await authCost.runClientKeys();
      console.log(authCost.format(figures));
      record('issue-39-client-keys', figures);
    },
  ],
  [
    "Issue 38 (passkey): a passkey sign-in's server CPU (options + assertion) beside a password sign-in's without its hash",
    async () => {
      const figures = await authCost.runPasskey();
      console.log(authCost.format(figures));
      record('issue-38-passkey', figures);
    },
  ],
  [
    "Issue 37 (broker): the broker callback's server CPU beside a local password login's without its hash",
    async () => {
      const figures = await authCost.runBroker();
      console.log(authCost.format(figures));
      record('issue-37-broker', figures);
    },
  ],
  [
    'Issue 43 (i18n): the login page in German with realm overrides beside the English page without, and the English page of the same realm (its language menu), same run',
    async () => {
      const figures = await authCost.runI18n();
      console.log(authCost.format(figures));
      record('issue-43-i18n', figures);
    },
  ],
  [
    'Keycloak (issue 44): Keycloak 26.7.3 beside Realmgate, configured alike, warmed until steady, alternating rounds: client_credentials, password grants, browser logins, p99, resident memory, start-up',
    async () => {
      const figures = await keycloak.run();
      console.log(keycloak.format(figures));
      record('keycloak', figures);
    },
  ],
  [
    'Admin console: first load in Chromium, time to the realm list beside the same build from a bare static server; bytes, compression, caching',
    async () => {
      const figures = await adminConsole.run();
      console.log(adminConsole.format(figures));
      record('console', figures);
    },
  ],
  [
    'Account console (issue 42): first load in Chromium, time to the personal-info page beside the same build from a bare static server; bytes, compression, caching',
    async () => {
      const figures = await adminConsole.run('account');
      console.log(adminConsole.format(figures));
      record('account-console', figures);
    },
  ],
  [
    'Data scale: grants and admin user searches with 100, 10,000 and 1,000,000 users, SQLite and PostgreSQL',
    async () => {
      const bench = await scale.run();
      console.log(scale.format(bench));
      record('scale', bench);
    },
  ],
  [
    'Extension A: disposable-email lookups (100,000 addresses) vs mailchecker.isValid',
    async () => console.log(lookup.format(await lookup.run())),
  ],
  [
    'Extension B: webhook delivery engine',
    async () => {
      for (const f of await delivery.run()) {
        console.log(
          `  ${f.name}: ${f.value.toFixed(2)} ${f.unit}  | baseline ${f.baseline.name}: ${f.baseline.value.toFixed(2)} ${f.unit}  | ratio ${f.ratio.toFixed(2)} (${f.higherIsBetter ? 'higher' : 'lower'} is better)`,
        );
      }
    },
  ],
  [
    'Extension B: form login latency, webhook to a receiver that never answers vs no webhook',
    async () => console.log(webhookLogin.format(await webhookLogin.run())),
  ],
  [
    'Extension B: webhook outbox (form login with the outbox on and a dead receiver vs no webhook; deliveries/s outbox vs in-memory)',
    async () => {
      const login = await webhookLogin.run(150, { outbox: true });
      console.log(webhookLogin.format(login, { outbox: true }));
      // The same on PostgreSQL, when one answers at 127.0.0.1:5432 (null otherwise, as the throughput's figure).
      const loginPostgres = await webhookLogin.run(150, { outbox: true, postgres: true }).catch((error: unknown) => {
        console.log(`  PostgreSQL login bench not run: ${error instanceof Error ? error.message : String(error)}`);
        return null;
      });
      if (loginPostgres) console.log(`  on PostgreSQL:\n${webhookLogin.format(loginPostgres, { outbox: true })}`);
      // What one more statement costs such a login (the delivery's write is one): timed back to back and after a pause.
      const roundTrip = loginPostgres ? await pgRoundTrip.run() : null;
      if (roundTrip) console.log(pgRoundTrip.format(roundTrip));
      const throughput = await webhookOutbox.run();
      console.log(webhookOutbox.format(throughput));
      // Issue 44: each figure beside its ceiling or baseline, with its goal.
      const loginEntry = (database: string, result: typeof login) => ({
        name: `form login, outbox on, receiver dead (loopback port that refuses), ${database}, median of ${result.samples}`,
        value: result.webhookMs,
        unit: 'ms',
        baseline: { name: 'the same login without webhooks, same server, alternating', value: result.baselineMs },
        ratio: result.ratio,
        goal: 1.1,
        cpuRatio: result.webhookCpuMs / result.baselineCpuMs,
        load: result.load,
      });
      const entries = [loginEntry('SQLite', login), ...(loginPostgres ? [loginEntry('PostgreSQL', loginPostgres)] : []), ...webhookOutbox.entriesOf(throughput)];
      record('webhook-outbox', { entries, login, loginPostgres, roundTrip, throughput });
    },
  ],
  [
    'Extension C: proof-of-work server verification (defaults, memory store)',
    async () => {
      const figures = await powVerify.run();
      console.log(powVerify.format(figures));
      record('pow-verify', powVerify.entriesOf(figures));
    },
  ],
  [
    'Extension C: proof-of-work solve time in headless Chromium, per profile at base difficulty, normal and with 4x CPU throttling',
    async () => {
      const bench = await powBrowser.run();
      console.log(powBrowser.format(bench));
      record('pow-browser', bench.entries);
    },
  ],
];

const only = process.argv[2];
for (const [title, run] of sections) {
  if (only && !title.toLowerCase().includes(only.toLowerCase())) continue;
  console.log(`\n== ${title}`);
  await run();
}
