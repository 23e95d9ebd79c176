/*
 * Realmgate proof of work: the solver, one per Web Worker so the page never freezes.
 * Message in:  { challenge: <decoded payload>, start: i, step: n, argon2Url, sha256Url } (hash-wasm UMD URLs)
 * Message out: { nonce: "<decimal>" } when found, or { error: "<text>" }.
 * Worker i of n tries the nonces i, i + n, i + 2n, … so that workers never repeat each other's work.
 */
'use strict';

/** SHA-256 digests requested at once: WebCrypto is asynchronous, one at a time would idle on promise hops. */
var SHA256_BATCH = 256;

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

async function searchArgon2id(c, start, step) {
  for (var nonce = start; ; nonce += step) {
    var hash = await self.hashwasm.argon2id({
      password: String(nonce),
      salt: c.id,
      iterations: c.t,
      parallelism: 1,
      memorySize: c.m,
      hashLength: 32,
      outputType: 'binary',
    });
    if (leadingZeroBits(hash) >= c.d) return String(nonce);
  }
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
      if (leadingZeroBits(new Uint8Array(results[j])) >= c.d) return String(first + j * step);
    }
  }
}

/** WebCrypto exists only in secure contexts; a plain-HTTP deployment gets hash-wasm's SHA-256 instead. */
async function searchSha256Wasm(c, start, step) {
  var hasher = await self.hashwasm.createSHA256();
  for (var nonce = start; ; nonce += step) {
    hasher.init();
    hasher.update(c.id + ':' + nonce);
    if (leadingZeroBits(hasher.digest('binary')) >= c.d) return String(nonce);
  }
}

self.onmessage = function (event) {
  var job = event.data;
  var search;
  if (job.challenge.alg === 'argon2id') {
    importScripts(job.argon2Url);
    search = searchArgon2id(job.challenge, job.start, job.step);
  } else if (job.challenge.alg === 'sha256' && self.crypto && self.crypto.subtle) {
    search = searchSha256(job.challenge, job.start, job.step);
  } else if (job.challenge.alg === 'sha256') {
    importScripts(job.sha256Url);
    search = searchSha256Wasm(job.challenge, job.start, job.step);
  } else {
    search = Promise.reject(new Error('unsupported algorithm ' + job.challenge.alg));
  }
  search.then(
    function (nonce) {
      self.postMessage({ nonce: nonce });
    },
    function (error) {
      self.postMessage({ error: String((error && error.message) || error) });
    },
  );
};
