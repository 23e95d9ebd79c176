// Realmgate's WebAuthn page script: the options come from the form's data-options (JSON the server made), the
// ceremony runs through @simplewebauthn/browser (served beside this file), and its result, or the error's name,
// is posted with the form. No inline script: the pages' CSP allows scripts from this origin only.
(function () {
  'use strict';
  var form = document.getElementById('webauthn-form');
  var lib = window.SimpleWebAuthnBrowser;
  if (!form || !lib) return;
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
