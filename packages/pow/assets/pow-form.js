/*
 * Realmgate proof of work: form wiring. For each `[data-rg-pow]` container rendered inside a form, solves
 * its challenge in Web Workers, fills `pow_nonce`, and holds the submit until the solution is there and
 * `data-min-solve-ms` has passed (the server rejects faster answers as solved offline).
 * Loaded `async` right after the container, it starts the workers as soon as it runs, while the rest of the
 * page is still being parsed; each worker loads and compiles the hashing WebAssembly as it starts.
 * All hashing happens in workers: the main thread only posts messages.
 */
(function () {
  'use strict';

  var MAX_WORKERS = 8;
  var CHECKING_EN = 'Checking your browser\u2026';
  var READY_EN = 'Ready';
  var FAILED_EN = 'Your browser could not be checked. Please reload the page to try again.';

  /**
   * Performance marks for whoever measures the page (the bench): `rg-pow-challenge` when the solver has the
   * challenge, `rg-pow-solved` when the first answer reaches the page.
   */
  function mark(name) {
    try {
      if (typeof performance.mark === 'function') performance.mark(name);
    } catch (error) {
      // Marks are a convenience; a browser without them solves all the same.
    }
  }

  /**
   * One worker per core, up to 8, but no more than half the hashes a solve is expected to take (2^d): every
   * worker pays a thread's start and maps its own m KiB before its first hash (16 MiB: 80-95 ms of its thread's
   * CPU in Chromium traces on the development machine, four to five warm hashes), so a worker expected to hash
   * once at most costs more than it can save and slows the others down on a busy or small device. At d = 1 one
   * worker solves; from d = 2 the cores count.
   */
  function workersFor(d, cores) {
    var expectedHashes = Math.pow(2, Math.max(0, Number(d) || 0));
    return Math.max(1, Math.min(MAX_WORKERS, cores || 2, Math.floor(expectedHashes / 2)));
  }

  function decodePayload(token) {
    var b64 = token.split('.')[0].replace(/-/g, '+').replace(/_/g, '/');
    var binary = atob(b64 + '==='.slice((b64.length + 3) % 4));
    var bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return JSON.parse(new TextDecoder().decode(bytes));
  }

  function protect(container) {
    var form = container.closest('form');
    var challengeInput = container.querySelector('input[name="pow_challenge"]');
    var nonceInput = container.querySelector('input[name="pow_nonce"]');
    var status = container.querySelector('.rg-pow-status');
    if (!form || !challengeInput || !nonceInput || !status) return;
    // The host's texts in the page's language, when it gave them.
    var CHECKING = container.getAttribute('data-text-checking') || CHECKING_EN;
    var READY = container.getAttribute('data-text-ready') || READY_EN;
    var FAILED = container.getAttribute('data-text-failed') || FAILED_EN;

    // Timed from now rather than from the challenge's iat: the page arrived after iat on the server's
    // clock, so this never submits early even when the browser's clock is off.
    var readyAt = performance.now() + (Number(container.getAttribute('data-min-solve-ms')) || 0);
    var assets = container.getAttribute('data-assets');
    var version = '?v=' + encodeURIComponent(container.getAttribute('data-version') || '');
    var state = 'solving';
    var pendingSubmit = false;
    var submitter = null;
    var workers = [];

    function say(text) {
      if (status.textContent !== text) status.textContent = text;
    }

    function stopWorkers() {
      for (var i = 0; i < workers.length; i++) workers[i].terminate();
      workers = [];
    }

    function fail() {
      state = 'failed';
      stopWorkers();
      say(FAILED);
    }

    function ready() {
      var wait = readyAt - performance.now();
      if (wait > 0) {
        setTimeout(ready, wait);
        return;
      }
      state = 'ready';
      say(READY);
      if (pendingSubmit) {
        pendingSubmit = false;
        if (typeof form.requestSubmit === 'function') form.requestSubmit(submitter);
        else form.submit();
      }
    }

    form.addEventListener('submit', function (event) {
      if (state === 'ready') return;
      event.preventDefault();
      if (state === 'failed') return;
      pendingSubmit = true;
      submitter = event.submitter && event.submitter.form === form ? event.submitter : null;
      say(CHECKING);
    });

    say(CHECKING);
    var challenge;
    try {
      challenge = decodePayload(challengeInput.value);
    } catch (error) {
      fail();
      return;
    }
    mark('rg-pow-challenge');
    if (typeof Worker !== 'function') {
      fail();
      return;
    }

    var count = workersFor(challenge.d, navigator.hardwareConcurrency);
    var failures = 0;
    // The fragment tells the worker which library to load, and for Argon2id how much memory to map, before the
    // challenge message reaches it.
    var workerUrl =
      assets +
      'pow-worker.js' +
      version +
      '#' +
      encodeURIComponent(String(challenge.alg)) +
      (challenge.alg === 'argon2id' ? ':' + encodeURIComponent(String(challenge.m)) : '');
    for (var i = 0; i < count; i++) {
      var worker;
      try {
        worker = new Worker(workerUrl);
      } catch (error) {
        fail();
        return;
      }
      worker.onmessage = function (event) {
        if (state !== 'solving') return;
        if (typeof event.data.nonce === 'string') {
          mark('rg-pow-solved');
          state = 'waiting';
          stopWorkers();
          nonceInput.value = event.data.nonce;
          if (event.data.wasm) container.setAttribute('data-rg-pow-wasm', event.data.wasm);
          ready();
        } else if (++failures === count) {
          fail();
        }
      };
      worker.onerror = function (event) {
        event.preventDefault();
        if (state === 'solving' && ++failures === count) fail();
      };
      workers.push(worker);
      worker.postMessage({
        challenge: challenge,
        start: i,
        step: count,
        sha256Url: assets + 'sha256.umd.min.js' + version,
      });
    }
  }

  function start() {
    var containers = document.querySelectorAll('[data-rg-pow]');
    for (var i = 0; i < containers.length; i++) {
      if (containers[i].getAttribute('data-rg-pow-started')) continue;
      containers[i].setAttribute('data-rg-pow-started', 'true');
      protect(containers[i]);
    }
  }

  // Now for the containers already parsed (the one this script follows), and once more after parsing for any
  // further down the page.
  start();
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
})();
