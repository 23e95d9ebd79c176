/*
 * Realmgate proof of work: the solver, one per Web Worker so the page never freezes.
 *
 * pow-form.js starts it while the page is being parsed, with the challenge's algorithm in the URL's fragment
 * (`pow-worker.js?v=…#argon2id`): an Argon2id worker then loads the argon2id library and fetches and compiles
 * its WebAssembly at once, before it reads its first message. The SIMD build is tried first; where it does not
 * compile (no WebAssembly SIMD, e.g. Safari before 16.4) the build without SIMD is used.
 *
 * Messages in:
 *   { challenge: <decoded payload>, start: i, step: n, sha256Url }: search. Worker i of n tries the nonces
 *     i, i + n, i + 2n, … so that workers never repeat each other's work. Answers { nonce: "<decimal>", wasm,
 *     readyAt, tried } when found (wasm: "simd" or "baseline" for Argon2id, null otherwise; readyAt: when the
 *     library was ready, in ms of this worker's clock, which starts as the worker does; tried: hashes computed),
 *     or { error: "<text>" }.
 *   { challenge, nonces: ["0", …] }: hashes exactly those nonces (Argon2id only), for tests and the bench.
 *     Answers { hashes: ["<hex>", …], ms: [<time of each>, …], wasm } or { error }.
 */
'use strict';

/** SHA-256 digests requested at once: WebCrypto is asynchronous, one at a time would idle on promise hops. */
var SHA256_BATCH = 256;
/** Pages of 64 KiB: the least the argon2id build accepts for the memory it imports; it grows for larger m. */
var ARGON2_INITIAL_PAGES = 1040;
var ARGON2_MAXIMUM_PAGES = 65536;

function leadingZeroBits(bytes) {
  var bits = 0;
  for (var i = 0; i < bytes.length; i++) {
    if (bytes[i] === 0) {
      bits += 8;
      continue;
    }
    return bits + Math.clz32(bytes[i]) - 24;
  }
  return bits;
}

function hex(bytes) {
  var out = '';
  for (var i = 0; i < bytes.length; i++) out += (bytes[i] < 16 ? '0' : '') + bytes[i].toString(16);
  return out;
}

/** Same directory and version as this script. */
function sibling(file) {
  return file + self.location.search;
}

function instantiate(file, imports) {
  if (typeof WebAssembly.instantiateStreaming === 'function')
    return WebAssembly.instantiateStreaming(fetch(sibling(file)), imports);
  return fetch(sibling(file))
    .then(function (response) {
      if (!response.ok) throw new Error(file + ': HTTP ' + response.status);
      return response.arrayBuffer();
    })
    .then(function (bytes) {
      return WebAssembly.instantiate(bytes, imports);
    });
}

/**
 * Resolves to { instance, memory, wasm, readyAt } once the library is loaded and its WebAssembly compiled.
 * The WebAssembly is requested first: it downloads and compiles on other threads while importScripts holds
 * this one.
 */
function loadArgon2id() {
  var memory = new WebAssembly.Memory({ initial: ARGON2_INITIAL_PAGES, maximum: ARGON2_MAXIMUM_PAGES });
  var imports = { env: { memory: memory } };
  function loaded(wasm) {
    return function (result) {
      return { instance: result.instance, memory: memory, wasm: wasm, readyAt: performance.now() };
    };
  }
  var compiled = instantiate('argon2id-simd.wasm', imports).then(loaded('simd'), function () {
    return instantiate('argon2id-baseline.wasm', imports).then(loaded('baseline'));
  });
  try {
    importScripts(sibling('argon2id.js'));
  } catch (error) {
    compiled.catch(function () {});
    return Promise.reject(error);
  }
  return compiled;
}

// Started now, not when the challenge arrives: the fragment says which algorithm the page's challenge uses.
var argon2idReady = self.location.hash === '#argon2id' ? loadArgon2id() : null;

/** A function of the nonce string giving Argon2id(nonce, salt = id, m, t, p = 1, 32 bytes). */
function argon2idHasher(lib, c) {
  var encoder = new TextEncoder();
  var salt = encoder.encode(c.id);
  return function (nonce) {
    return self.argon2id(
      { password: encoder.encode(nonce), salt: salt, parallelism: 1, passes: c.t, memorySize: c.m, tagLength: 32 },
      { instance: lib.instance, memory: lib.memory },
    );
  };
}

function withArgon2id() {
  if (!argon2idReady) argon2idReady = loadArgon2id();
  return argon2idReady;
}

/** Each hash is synchronous and the worker has nothing else to do: terminate() ends the loop. */
function searchArgon2id(c, start, step) {
  return withArgon2id().then(function (lib) {
    var hash = argon2idHasher(lib, c);
    for (var nonce = start, tried = 1; ; nonce += step, tried++) {
      if (leadingZeroBits(hash(String(nonce))) >= c.d)
        return { nonce: String(nonce), wasm: lib.wasm, readyAt: lib.readyAt, tried: tried };
    }
  });
}

function hashNonces(c, nonces) {
  return withArgon2id().then(function (lib) {
    var hash = argon2idHasher(lib, c);
    var hashes = [];
    var ms = [];
    for (var i = 0; i < nonces.length; i++) {
      var started = performance.now();
      hashes.push(hex(hash(nonces[i])));
      ms.push(performance.now() - started);
    }
    return { hashes: hashes, ms: ms, wasm: lib.wasm };
  });
}

async function searchSha256(c, start, step) {
  var encoder = new TextEncoder();
  for (var first = start; ; first += step * SHA256_BATCH) {
    var digests = [];
    for (var k = 0; k < SHA256_BATCH; k++) {
      digests.push(crypto.subtle.digest('SHA-256', encoder.encode(c.id + ':' + (first + k * step))));
    }
    var results = await Promise.all(digests);
    for (var j = 0; j < results.length; j++) {
      if (leadingZeroBits(new Uint8Array(results[j])) >= c.d) return { nonce: String(first + j * step), wasm: null };
    }
  }
}

/** WebCrypto exists only in secure contexts; a plain-HTTP deployment gets hash-wasm's SHA-256 instead. */
async function searchSha256Wasm(c, start, step) {
  var hasher = await self.hashwasm.createSHA256();
  for (var nonce = start; ; nonce += step) {
    hasher.init();
    hasher.update(c.id + ':' + nonce);
    if (leadingZeroBits(hasher.digest('binary')) >= c.d) return { nonce: String(nonce), wasm: null };
  }
}

self.onmessage = function (event) {
  var job = event.data;
  var work;
  try {
    if (job.challenge.alg === 'argon2id') {
      work = job.nonces ? hashNonces(job.challenge, job.nonces) : searchArgon2id(job.challenge, job.start, job.step);
    } else if (job.challenge.alg === 'sha256' && self.crypto && self.crypto.subtle) {
      work = searchSha256(job.challenge, job.start, job.step);
    } else if (job.challenge.alg === 'sha256') {
      importScripts(job.sha256Url);
      work = searchSha256Wasm(job.challenge, job.start, job.step);
    } else {
      work = Promise.reject(new Error('unsupported algorithm ' + job.challenge.alg));
    }
  } catch (error) {
    work = Promise.reject(error);
  }
  work.then(
    function (answer) {
      self.postMessage(answer);
    },
    function (error) {
      self.postMessage({ error: String((error && error.message) || error) });
    },
  );
};
