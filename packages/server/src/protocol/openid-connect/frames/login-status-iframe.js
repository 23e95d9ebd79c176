// The session-status frame keycloak-js keeps open (checkLoginIframe). The app posts "<client_id> <session_state>";
// this frame answers "unchanged" while the browser's session here is still the one the app's tokens belong to,
// "changed" when it ended or another began, and "error" when the app's origin is not one the client allows.
'use strict';
const allowed = new Map();

/** Whether the client allows the app's origin (asked once per client and origin). */
function originAllowed(clientId, origin) {
  const key = `${clientId} ${origin}`;
  if (!allowed.has(key)) {
    const query = new URLSearchParams({ client_id: clientId, origin });
    allowed.set(key, fetch(`login-status-iframe.html/init?${query}`, { credentials: 'same-origin', cache: 'no-store' }).then((r) => r.status === 204, () => false));
  }
  return allowed.get(key);
}

window.addEventListener('message', async (event) => {
  if (event.source !== window.parent || typeof event.data !== 'string') return;
  const [clientId, sessionState = ''] = event.data.split(' ');
  const reply = (status) => event.source.postMessage(status, event.origin);
  try {
    if (!clientId || !(await originAllowed(clientId, event.origin))) return reply('error');
    const response = await fetch('login-status-iframe.html/status', {
      method: 'POST',
      credentials: 'same-origin',
      cache: 'no-store',
      body: new URLSearchParams({ session_state: sessionState }),
    });
    if (!response.ok) return reply('error');
    reply((await response.json()).status);
  } catch {
    reply('error');
  }
});
