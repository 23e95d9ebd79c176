/**
 * Every server option, once: its config-file key, environment variable, CLI flag, type and default.
 * The configuration reference in docs/ is generated from this table.
 */
export type OptionType = 'string' | 'integer' | 'boolean' | 'url' | 'enum' | 'list';

export interface OptionSpec {
  key: string;
  env: string;
  flag: string;
  type: OptionType;
  default: string | number | boolean | string[] | null;
  values?: readonly string[];
  min?: number;
  max?: number;
  /** Strings only: the form the value must have, and how the error message describes it. */
  pattern?: RegExp;
  patternHint?: string;
  description: string;
  secret?: boolean;
}

export const options = [
  { key: 'mode', env: 'REALMGATE_MODE', flag: '--mode', type: 'enum', values: ['development', 'production'], default: 'development', description: 'development: readable logs, generated admin password, mails to the log. production: JSON logs; the bootstrap admin password must be given.' },
  { key: 'httpHost', env: 'REALMGATE_HTTP_HOST', flag: '--http-host', type: 'string', default: '0.0.0.0', description: 'Address to listen on.' },
  { key: 'httpPort', env: 'REALMGATE_HTTP_PORT', flag: '--http-port', type: 'integer', min: 0, max: 65535, default: 8080, description: 'Port to listen on (0 picks a free one).' },
  { key: 'metricsPort', env: 'REALMGATE_METRICS_PORT', flag: '--metrics-port', type: 'integer', min: 0, max: 65535, default: null, description: 'When set, /metrics is served on this port of metricsHost only, and the main port answers it with 404 (0 picks a free one). When unset, /metrics is on the main port (behind metricsToken when that is set).' },
  { key: 'metricsHost', env: 'REALMGATE_METRICS_HOST', flag: '--metrics-host', type: 'string', default: '127.0.0.1', description: 'Address the metrics port listens on (loopback by default: a scraper on the same host or in the same pod). Used only with metricsPort.' },
  { key: 'metricsToken', env: 'REALMGATE_METRICS_TOKEN', flag: '--metrics-token', type: 'string', default: null, description: 'When set, /metrics (on whichever port) answers only requests with Authorization: Bearer <token>, others 401. Production mode warns at start when /metrics is on the main port without it.', secret: true },
  { key: 'hostname', env: 'REALMGATE_HOSTNAME', flag: '--hostname', type: 'url', default: null, description: "Public base URL (as Keycloak's hostname option); issuers are <hostname>/realms/<realm>. When unset, taken from each request (development mode, or production with hostname-strict=false)." },
  { key: 'hostnameStrict', env: 'REALMGATE_HOSTNAME_STRICT', flag: '--hostname-strict', type: 'boolean', default: true, description: "As Keycloak's hostname-strict: production mode refuses to start without hostname unless this is false. false takes the public URL from each request (Host, or X-Forwarded-Host and -Proto from a trusted proxy), so it is only safe behind a proxy that sets them. Development mode never requires hostname." },
  { key: 'outboundAllow', env: 'REALMGATE_OUTBOUND_ALLOW', flag: '--outbound-allow', type: 'list', default: [], description: "Comma-separated CIDRs, addresses, host names (`idp.internal`, `*.internal`) or the keywords `loopback` and `private` that the server's own requests to identity providers (token, user info, JWKS endpoints) and clients' JWKS URLs may reach although production mode refuses them (loopback). Link-local (cloud metadata), unspecified and multicast addresses are refused in every mode, by the same guard as webhook targets." },
  { key: 'brokerEndpointOverrides', env: 'REALMGATE_BROKER_ENDPOINT_OVERRIDES', flag: '--broker-endpoint-overrides', type: 'list', default: [], description: "Comma-separated `host=origin` pairs (`github.com=https://github.example.com,api.github.com=https://github.example.com`) that replace the scheme, host and port of the fixed endpoints of the social identity providers (github, google, microsoft, gitlab, facebook, linkedin-openid-connect, bitbucket) whose host is `host`; path and query stay. For tests against loopback mocks and for GitHub Enterprise-like hosts; the requests still go through the outbound guard (outboundAllow). A malformed pair stops the server at start." },
  { key: 'proxyTrustedAddresses', env: 'REALMGATE_PROXY_TRUSTED_ADDRESSES', flag: '--proxy-trusted-addresses', type: 'list', default: [], description: 'Comma-separated IPs or CIDRs of reverse proxies whose X-Forwarded-* headers are believed.' },
  { key: 'x509certLookupProvider', env: 'REALMGATE_X509CERT_LOOKUP_PROVIDER', flag: '--x509cert-lookup-provider', type: 'enum', values: ['default', 'haproxy', 'apache', 'nginx', 'envoy'], default: 'default', description: "As Keycloak's spi-x509cert-lookup provider: where a request's client certificate (mutual TLS: the client-x509 client authenticator, certificate-bound tokens) comes from. default: the TLS connection's own, which this plain-HTTP server never has. haproxy, apache, nginx: the TLS-terminating proxy's header x509certLookupSslClientCert (PEM, URL-encoded PEM or base64 DER); envoy: x-forwarded-client-cert. A header is believed only from a TCP peer listed in proxyTrustedAddresses and ignored from anyone else; the proxy must verify the certificate and overwrite the header." },
  { key: 'x509certLookupSslClientCert', env: 'REALMGATE_X509CERT_LOOKUP_SSL_CLIENT_CERT', flag: '--x509cert-lookup-ssl-client-cert', type: 'string', pattern: /^[A-Za-z0-9_-]{1,100}$/, patternHint: 'a header name', default: null, description: "As Keycloak's ssl-client-cert: the request header holding the client certificate (haproxy, apache, nginx). Unset: SSL_CLIENT_CERT for haproxy and apache, ssl-client-cert for nginx." },
  { key: 'x509certLookupSslCertChainPrefix', env: 'REALMGATE_X509CERT_LOOKUP_SSL_CERT_CHAIN_PREFIX', flag: '--x509cert-lookup-ssl-cert-chain-prefix', type: 'string', pattern: /^[A-Za-z0-9_-]{1,100}$/, patternHint: 'a header name prefix', default: null, description: "As Keycloak's ssl-cert-chain-prefix: the chain's other certificates are read from <prefix>_0 … <prefix>_<length-2> (haproxy, apache, nginx). Used only for a client's x509.casubjectdn." },
  { key: 'x509certLookupCertificateChainLength', env: 'REALMGATE_X509CERT_LOOKUP_CERTIFICATE_CHAIN_LENGTH', flag: '--x509cert-lookup-certificate-chain-length', type: 'integer', min: 1, max: 20, default: 10, description: "As Keycloak's certificate-chain-length: the longest chain read, the client's certificate included." },
  { key: 'dbUrl', env: 'REALMGATE_DB_URL', flag: '--db-url', type: 'string', pattern: /^(sqlite:.+|postgres(ql)?:\/\/.+)$/, patternHint: 'sqlite:<path> or postgres://…', default: 'sqlite:./data/realmgate.db', description: 'sqlite:<path> (embedded) or postgres://user@host:port/db.', secret: true },
  { key: 'dbAcquireTimeoutMs', env: 'REALMGATE_DB_ACQUIRE_TIMEOUT_MS', flag: '--db-acquire-timeout-ms', type: 'integer', min: 0, max: 600000, default: 5000, description: 'PostgreSQL: longest a request waits for a pooled connection before it is answered 503; 0 waits for ever.' },
  { key: 'dbStatementTimeoutMs', env: 'REALMGATE_DB_STATEMENT_TIMEOUT_MS', flag: '--db-statement-timeout-ms', type: 'integer', min: 0, max: 3600000, default: 10000, description: 'PostgreSQL: longest a statement may run, lock waits included (statement_timeout), before the request is answered 503; 0 for none.' },
  { key: 'requestTimeoutMs', env: 'REALMGATE_REQUEST_TIMEOUT_MS', flag: '--request-timeout-ms', type: 'integer', min: 0, max: 3600000, default: 60000, description: 'Longest a request may take before it is answered 503 (Retry-After); its work commits nothing after that, nor after its client has gone. 0 for no limit.' },
  { key: 'redisUrl', env: 'REALMGATE_REDIS_URL', flag: '--redis-url', type: 'url', default: null, description: 'Redis for state shared by several server processes; memory when unset.', secret: true },
  { key: 'bootstrapAdminUsername', env: 'REALMGATE_BOOTSTRAP_ADMIN_USERNAME', flag: '--bootstrap-admin-username', type: 'string', default: 'admin', description: 'Username of the master-realm administrator created on first start.' },
  { key: 'bootstrapAdminPassword', env: 'REALMGATE_BOOTSTRAP_ADMIN_PASSWORD', flag: '--bootstrap-admin-password', type: 'string', default: null, description: 'Its password; generated and printed once in development mode when unset.', secret: true },
  { key: 'providersDir', env: 'REALMGATE_PROVIDERS_DIR', flag: '--providers-dir', type: 'string', default: './providers', description: 'Directory whose packages are loaded as providers at start-up.' },
  { key: 'importRealm', env: 'REALMGATE_IMPORT_REALM', flag: '--import-realm', type: 'string', default: null, description: 'Directory of Keycloak-format realm JSON files imported at start-up, each on its own (realms that exist are skipped; a file that cannot be imported is logged with the JSON path of the problem, see importRealmStrict); ${realmgate.base-url} in any string value becomes the hostname, else http://<host>:<port> of this server. When unset, the CLI imports the repository\'s demo/ directory in development mode and nothing in production.' },
  { key: 'importRealmStrict', env: 'REALMGATE_IMPORT_REALM_STRICT', flag: '--import-realm-strict', type: 'boolean', default: false, description: 'When true, a realm file that --import-realm cannot import stops start-up (exit code 1). When false, the file is refused with its name and the JSON path of the problem in the log, and the server starts with the others.' },
  { key: 'logLevel', env: 'REALMGATE_LOG_LEVEL', flag: '--log-level', type: 'enum', values: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], default: 'info', description: 'Minimum log level.' },
  { key: 'shutdownGraceMs', env: 'REALMGATE_SHUTDOWN_GRACE_MS', flag: '--shutdown-grace-ms', type: 'integer', min: 0, max: 600000, default: 10000, description: 'How long SIGTERM waits for requests and deliveries in flight.' },
  { key: 'bruteForceIpMaxFailures', env: 'REALMGATE_BRUTE_FORCE_IP_MAX_FAILURES', flag: '--brute-force-ip-max-failures', type: 'integer', min: 0, max: 1000000, default: 200, description: 'Failed logins (any realm, any user, unknown ones included) from one client address within bruteForceIpWindowSeconds, after which every login from it is refused (429) until the window slides; on top of the realms\' per-user brute-force detection, so one address cannot spray guesses over many accounts. 0 turns it off.' },
  { key: 'bruteForceIpWindowSeconds', env: 'REALMGATE_BRUTE_FORCE_IP_WINDOW_SECONDS', flag: '--brute-force-ip-window-seconds', type: 'integer', min: 1, max: 86400, default: 600, description: 'The sliding window of bruteForceIpMaxFailures, in seconds.' },
  { key: 'passwordHashingTestCost', env: 'REALMGATE_PASSWORD_HASHING_TEST_COST', flag: '--password-hashing-test-cost', type: 'boolean', default: false, description: "For test suites only: new Argon2id password hashes use 8 KiB of memory (the least Argon2 allows) instead of Keycloak's 7 MiB, so a sign-in costs well under a millisecond instead of tens; iterations still follow the realm's hashIterations. Every hash keeps its own parameters, so hashes of either cost verify, and a sign-in rehashes at the cost in force. Production mode refuses to start with it." },
  { key: 'themeDir', env: 'REALMGATE_THEME_DIR', flag: '--theme-dir', type: 'string', default: null, description: "Directory of themes, Keycloak's layout: <themeDir>/<name>/login/ (and account/, email/) with templates/*.eta overriding the built-in page templates by file name, resources/ (style.css and images) served under the realm's /login-actions/resources/, messages/messages_<locale>.properties or .json, theme.properties parent=. A realm uses one by its loginTheme, accountTheme and emailTheme fields. Read once at start; a template that does not compile stops the start naming its file and line. See packages/server/README.md, Themes." },
] as const satisfies readonly OptionSpec[];

type ValueOf<T extends OptionSpec> = T['type'] extends 'integer'
  ? T['default'] extends null
    ? number | null
    : number
  : T['type'] extends 'boolean'
    ? boolean
    : T['type'] extends 'list'
      ? string[]
      : T['default'] extends null
        ? string | null
        : string;

export type ServerConfig = { -readonly [O in (typeof options)[number] as O['key']]: ValueOf<O> } & {
  /** Sections of the config file for providers, by provider id. */
  providers: Record<string, Record<string, unknown>>;
  /** The config file read, if any. */
  configFile: string | null;
};
