// Third-party cookie check, step 2 of 2: reports to the app ("supported" or "unsupported") whether the test
// cookie step 1 wrote is readable here, then removes it.
'use strict';
const supported = document.cookie.split(';').some((pair) => pair.trim() === 'REALMGATE_3P_CHECK=supported');
const secure = location.protocol === 'https:' ? '; Secure' : '';
document.cookie = `REALMGATE_3P_CHECK=; Max-Age=0; SameSite=Lax${secure}`;
window.parent.postMessage(supported ? 'supported' : 'unsupported', '*');
