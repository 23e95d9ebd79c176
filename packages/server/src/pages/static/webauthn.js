// Realmgate's WebAuthn page script: the options come from the form's data-options (JSON the server made), the
// ceremony runs through @simplewebauthn/browser (served beside this file), and its result, or the error's name,
// is posted with the form. No inline script: the pages' CSP allows scripts from this origin only.
//
// On the sign-in form (data-passkeys, Keycloak 26's passkeys): the passkey autofill (conditional mediation) is
// started at once on the username field (autocomplete "username webauthn"); a passkey picked there is posted with
// the form instead of a name and password. The "Sign in with a passkey" button asks for one in the browser's own
// dialog (it cancels the autofill's request). The browser's refusals are not posted there: the form stays.
(function () {
  'use strict';
  var lib = window.SimpleWebAuthnBrowser;
  if (!lib) return;
  var login = document.getElementById('kc-form-login');
  if (login && login.getAttribute('data-passkeys')) {
    var passkeys = JSON.parse(login.getAttribute('data-passkeys'));
    var sent = false;
    var post = function (response) {
      if (sent) return;
      sent = true;
      login.elements.response.value = JSON.stringify(response);
      login.submit();
    };
    var ignore = function () {};
    if (lib.browserSupportsWebAuthnAutofill) {
      lib.browserSupportsWebAuthnAutofill().then(function (supported) {
        if (supported) lib.startAuthentication({ optionsJSON: passkeys, useBrowserAutofill: true }).then(post, ignore);
      }, ignore);
    }
    var modal = document.getElementById('authenticateWebAuthnButton');
    if (modal) modal.addEventListener('click', function () {
      lib.startAuthentication({ optionsJSON: passkeys }).then(post, ignore);
    });
    return;
  }
  var form = document.getElementById('webauthn-form');
  if (!form) return;
  var options = JSON.parse(form.getAttribute('data-options'));
  var register = form.getAttribute('data-mode') === 'register';
  var button = document.getElementById(register ? 'registerWebAuthn' : 'authenticateWebAuthnButton');
  var busy = false;
  button.addEventListener('click', function () {
    if (busy) return;
    busy = true;
    var ceremony = register ? lib.startRegistration({ optionsJSON: options }) : lib.startAuthentication({ optionsJSON: options });
    ceremony.then(
      function (response) {
        form.elements.response.value = JSON.stringify(response);
        form.submit();
      },
      function (error) {
        form.elements.error.value = String((error && error.name) || 'Error').slice(0, 100);
        form.submit();
      },
    );
  });
})();
