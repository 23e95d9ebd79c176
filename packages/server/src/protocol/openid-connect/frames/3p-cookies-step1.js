// Third-party cookie check, step 1 of 2 (keycloak-js loads this page in a hidden iframe before a silent check-sso).
// It writes a short-lived test cookie with the attributes of this server's session cookie (SameSite=Lax), then
// moves to step 2, which tells the app whether the cookie came back: if it did, the session cookie reaches this
// server from inside the app's page too.
'use strict';
const secure = location.protocol === 'https:' ? '; Secure' : '';
document.cookie = `REALMGATE_3P_CHECK=supported; Max-Age=60; SameSite=Lax${secure}`;
location.replace('step2.html');
