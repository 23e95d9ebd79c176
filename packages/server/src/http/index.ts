export { createHttpApp, FORM_BODY_LIMIT, JSON_BODY_LIMIT, REALM_FILE_LIMIT, REALM_IMPORT_BODY_LIMIT } from './app.js';
export { baseUrl, requestInfo, secureCookies } from './request-info.js';
export { httpsRequired, installSslRequired, isPrivateAddress } from './ssl-required.js';
export { escapeHtml } from './html.js';
export { clearCookie, readCookie, setCookie, type CookieOptions } from './cookies.js';
export { allowCorsForAnyOrigin, allowCorsForClient, answerPreflight, corsPending, originRefused, requestOrigin, webOriginAllowed, MAX_ORIGIN_LENGTH } from './cors.js';
export { outboundRequest, type OutboundResponse } from './outbound.js';
export { isTargetRefusal, outboundGuards, TargetGuard } from './target-guard.js';
export { certificateFrom, certificateThumbprint, clientCertificateLookup, X509_LOOKUP_PROVIDERS, type ClientCertificateLookup } from './client-certificate.js';
