/**
 * The registration page's inline check, served as a file by the realm resource so that it also runs under
 * a Content-Security-Policy without 'unsafe-inline'. Plain ES2017, no modules: it runs in any browser the
 * pages support. It finds the check endpoint from its own URL (`…/{resource}/assets/email-check.js`).
 */
export function emailCheckScript(message: string): string {
  return `(function () {
  'use strict';
  var script = document.currentScript;
  var input = document.getElementById('email');
  if (!script || !input || typeof fetch !== 'function') return;
  var checkUrl = new URL('../check-email', script.src).href;
  var MESSAGE = ${JSON.stringify(message).replace(/</g, '\\u003c')};
  var ERROR_ID = 'input-error-email';
  var created = null;
  var sequence = 0;

  function describedBy(add) {
    var ids = (input.getAttribute('aria-describedby') || '').split(/\\s+/).filter(Boolean);
    var at = ids.indexOf(ERROR_ID);
    if (add && at < 0) ids.push(ERROR_ID);
    if (!add && at >= 0) ids.splice(at, 1);
    if (ids.length) input.setAttribute('aria-describedby', ids.join(' '));
    else input.removeAttribute('aria-describedby');
  }

  function show() {
    var el = document.getElementById(ERROR_ID);
    if (!el) {
      el = document.createElement('span');
      el.id = ERROR_ID;
      // The class the server's pages give a field's error, so the hint looks like the error on submit.
      el.className = 'field-error';
      el.setAttribute('aria-live', 'polite');
      input.insertAdjacentElement('afterend', el);
      created = el;
    }
    el.textContent = MESSAGE;
    el.hidden = false;
    input.setAttribute('aria-invalid', 'true');
    describedBy(true);
  }

  // Only our own message is cleared: the server may have put another error there (e.g. e-mail taken).
  function clear() {
    var el = document.getElementById(ERROR_ID);
    if (!el || el.textContent.trim() !== MESSAGE) return;
    el.textContent = '';
    input.removeAttribute('aria-invalid');
    if (el === created) {
      el.hidden = true;
      describedBy(false);
    }
  }

  input.addEventListener('blur', function () {
    var value = input.value.trim();
    var current = ++sequence;
    if (value.length > 320 || value.indexOf('@') < 1) {
      clear();
      return;
    }
    fetch(checkUrl + '?email=' + encodeURIComponent(value), {
      headers: { Accept: 'application/json' },
      credentials: 'same-origin'
    })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (body) {
        // A slower answer for an earlier value must not overwrite the latest one.
        if (current !== sequence || !body) return;
        if (body.disposable === true) show();
        else clear();
      })
      .catch(function () {
        // The server-side check on submit stays the gate; a failed hint shows nothing.
      });
  });
})();
`;
}
