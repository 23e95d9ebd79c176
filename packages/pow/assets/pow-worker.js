/*
 * Realmgate proof of work: the solver, one per Web Worker so the page never freezes.
 *
 * Served with the argon2id package's classic script (`argon2id.js`: its BLAKE2b and its own Argon2id driver)
 * in front of this file, so the worker makes no synchronous `importScripts` request before it can hash.
 *
 * pow-form.js starts it while the page is being parsed, with the challenge's algorithm and memory in the URL's
 * fragment (`pow-worker.js?v=…#argon2id:16384`): an Argon2id worker then fetches and compiles the package's
 * WebAssembly and allocates and maps its memory at once, before it reads its first message. The SIMD build is
 * tried first; where it does not compile (no WebAssembly SIMD, e.g. Safari before 16.4) the build without
 * SIMD is used. The compiled module is not passed between workers: V8 keeps one per renderer process for the
 * same bytes (a Chromium trace shows the second worker's compile served by `wasm.GetNativeModuleFromCache`, and
 * one top-tier compile for both), and compiling on the page would need `'wasm-unsafe-eval'` in the page's CSP.
 *
 * Argon2id is computed by `argon2idHasher` below: the package's WebAssembly (the compression function G, its
 * address generator G2, xor, and getLZ, the reference-block index) and the package's BLAKE2b, driven by a
 * block loop of our own instead of the package's `argon2id()`. Both compute RFC 9106 Argon2id, bit for bit
 * the same (test/hash.test.ts, test/browser.test.ts); ours keeps one memory layout per worker for all its
 * hashes and allocates nothing per block, where the package's makes a typed-array view per block, a
 * generator per segment and grows (so replaces) the memory's buffer after every hash. That matters most on a
 * page load, where every worker's first hash runs before V8 has optimised anything: in Chromium traces of
 * one page load each on the development machine, a worker's first hash took 41–67 ms of its thread's CPU
 * with the package's driver and 21–31 ms with this loop (warm: 17–35 against 11–19 ms), and V8's background
 * compilers 26–54 against 15–16 ms.
 *
 * Messages in:
 *   { challenge: <decoded payload>, start: i, step: n, sha256Url }: search. Worker i of n tries the nonces
 *     i, i + n, i + 2n, … so that workers never repeat each other's work. Answers { nonce: "<decimal>", wasm,
 *     tried, timing } when found (wasm: "simd" or "baseline" for Argon2id, null otherwise; tried: hashes this
 *     worker computed; timing: see `timing` below), or { error: "<text>" }.
 *   { challenge, nonces: ["0", …], driver }: hashes exactly those nonces (Argon2id only), for tests and the
 *     bench, with this solver's driver or, with driver: "package", the package's argon2id(). Answers
 *     { hashes: ["<hex>", …], ms: [<time of each>, …], wasm, timing } or { error }.
 */
'use strict';

/**
 * When this worker reached each step, in ms of its own clock (performance.now(); `origin` is its
 * performance.timeOrigin, so a page can put the steps on its own clock). Sent with every answer, for the
 * bench's breakdown of a solve; a few numbers, no cost worth counting.
 */
var timing = {
  origin: performance.timeOrigin,
  script: performance.now(),
  memory: -1,
  wasm: -1,
  message: -1,
  firstHash: -1,
  hashes: [],
};
/** Hash times kept in `timing.hashes`, the first ones: enough for the bench at any difficulty it uses. */
var TIMED_HASHES = 64;

/** SHA-256 digests requested at once: WebCrypto is asynchronous, one at a time would idle on promise hops. */
var SHA256_BATCH = 256;
/** Pages of 64 KiB: the least the argon2id build accepts for the memory it imports; it grows for larger m. */
var ARGON2_INITIAL_PAGES = 1040;
var ARGON2_MAXIMUM_PAGES = 65536;

/*
 * The worker's Argon2id memory, one WebAssembly.Memory for all its hashes. Byte offsets, every block aligned
 * on 1024 bytes. No block needs clearing between hashes: each is written before it is read.
 */
var BLOCK = 1024;
var SCRATCH_AT = 0; // G's working block
var ADDRESSES_AT = 1024; // the current block of data-independent reference pairs (J1, J2)
var INPUT_AT = 2048; // the address generator's input block
var ZERO_AT = 3072; // zeros, G2's first operand
var LZ_AT = 4096; // getLZ's answer (lane, index)
var NEXT_AT = 5120; // G's output on passes after the first, XORed into the block it replaces
var BLOCKS_AT = 6144; // the m' blocks of the hash
var ADDRESSES_PER_BLOCK = 128;
var SLICES = 4;
var ARGON2ID_TYPE = 2;
var ARGON2_VERSION = 0x13;
var TAG_LENGTH = 32;

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

function le32(bytes, at, n) {
  bytes[at] = n & 255;
  bytes[at + 1] = (n >>> 8) & 255;
  bytes[at + 2] = (n >>> 16) & 255;
  bytes[at + 3] = (n >>> 24) & 255;
}

/** H' of RFC 9106 section 3.3: `length` bytes (32 or 1024 here) of `input` into `out`. */
function hPrime(blake2b, length, input, out) {
  var first = new Uint8Array(4 + input.length);
  le32(first, 0, length);
  first.set(input, 4);
  if (length <= 64) {
    blake2b(length).update(first).digest(out);
    return;
  }
  var r = Math.ceil(length / 32) - 2;
  var v = new Uint8Array(64);
  blake2b(64).update(first).digest(v);
  out.set(v.subarray(0, 32), 0);
  for (var i = 1; i < r; i++) {
    blake2b(64).update(v).digest(v);
    out.set(v.subarray(0, 32), i * 32);
  }
  var last = new Uint8Array(length - 32 * r);
  blake2b(length - 32 * r).update(v).digest(last);
  out.set(last, r * 32);
}

/**
 * Argon2id(password, salt, m KiB, t passes, parallelism 1, 32-byte tag, version 0x13, no secret or associated
 * data) on `lib` (the package's WebAssembly exports and the worker's memory): a function of the password
 * bytes. Grows the memory once if m needs more than it has.
 */
function argon2idHasher(lib, salt, m, t) {
  var exports = lib.exports;
  var memory = lib.memory;
  var blake2b = lib.blake2b;
  var G = exports.G;
  var G2 = exports.G2;
  var xor = exports.xor;
  var getLZ = exports.getLZ;
  var q = 4 * Math.floor(m / 4); // m', the blocks used, with one lane
  var segment = q / SLICES;
  if (segment < 2) throw new Error('Argon2id memory below 8 KiB');
  var needed = BLOCKS_AT + q * BLOCK;
  if (memory.buffer.byteLength < needed) memory.grow(Math.ceil((needed - memory.buffer.byteLength) / 65536));
  var lastAt = BLOCKS_AT + (q - 1) * BLOCK;
  // Views of the memory, made again only if it was grown since (growing replaces memory.buffer; the package's
  // own argon2id(), which the bench also runs in this memory, does that after every hash).
  var bytes = null;
  var words = null;
  function view() {
    if (bytes && bytes.buffer === memory.buffer) return;
    bytes = new Uint8Array(memory.buffer);
    words = new Uint32Array(memory.buffer);
  }

  var header = new Uint8Array(24); // p, T, m, t, version, type
  le32(header, 0, 1);
  le32(header, 4, TAG_LENGTH);
  le32(header, 8, m);
  le32(header, 12, t);
  le32(header, 16, ARGON2_VERSION);
  le32(header, 20, ARGON2ID_TYPE);
  var seed = new Uint8Array(72); // H0 || LE32(block index) || LE32(lane)

  /** The next block of data-independent reference pairs for the segment whose input block is set. */
  var counter = 0;
  function nextAddresses() {
    counter++;
    le32(bytes, INPUT_AT + 48, counter);
    G2(ZERO_AT, INPUT_AT, ADDRESSES_AT, SCRATCH_AT);
  }

  function fillSegment(pass, slice) {
    var independent = pass === 0 && slice < 2;
    var first = pass === 0 && slice === 0 ? 2 : 0;
    if (independent) {
      // Z = LE64(pass) || LE64(lane) || LE64(slice) || LE64(m') || LE64(t) || LE64(type) || LE64(counter) || 0…
      bytes.fill(0, INPUT_AT, INPUT_AT + BLOCK);
      le32(bytes, INPUT_AT, pass);
      le32(bytes, INPUT_AT + 16, slice);
      le32(bytes, INPUT_AT + 24, q);
      le32(bytes, INPUT_AT + 32, t);
      le32(bytes, INPUT_AT + 40, ARGON2ID_TYPE);
      counter = 0;
      if (first !== 0) nextAddresses();
    }
    var at = BLOCKS_AT + (slice * segment + first) * BLOCK;
    for (var index = first; index < segment; index++, at += BLOCK) {
      var previousAt = at === BLOCKS_AT ? lastAt : at - BLOCK;
      var pairAt = previousAt; // data-dependent: J1, J2 are the previous block's first 8 bytes
      if (independent) {
        if (index % ADDRESSES_PER_BLOCK === 0) nextAddresses();
        pairAt = ADDRESSES_AT + (index % ADDRESSES_PER_BLOCK) * 8;
      }
      getLZ(LZ_AT, pairAt, 0, 1, pass, slice, index, SLICES, segment);
      var referenceAt = BLOCKS_AT + words[(LZ_AT >> 2) + 1] * BLOCK;
      if (pass === 0) {
        G(previousAt, referenceAt, at, SCRATCH_AT);
      } else {
        G(previousAt, referenceAt, NEXT_AT, SCRATCH_AT);
        xor(at, NEXT_AT, at);
      }
    }
  }

  return function (password) {
    view();
    bytes.fill(0, ZERO_AT, ZERO_AT + BLOCK);
    var input = new Uint8Array(24 + 4 + password.length + 4 + salt.length + 8);
    input.set(header, 0);
    le32(input, 24, password.length);
    input.set(password, 28);
    le32(input, 28 + password.length, salt.length);
    input.set(salt, 32 + password.length);
    // secret and associated data: lengths 0, left as zeros
    blake2b(64).update(input).digest(seed);
    le32(seed, 64, 0);
    hPrime(blake2b, BLOCK, seed, bytes.subarray(BLOCKS_AT, BLOCKS_AT + BLOCK));
    le32(seed, 64, 1);
    hPrime(blake2b, BLOCK, seed, bytes.subarray(BLOCKS_AT + BLOCK, BLOCKS_AT + 2 * BLOCK));
    for (var pass = 0; pass < t; pass++) {
      for (var slice = 0; slice < SLICES; slice++) fillSegment(pass, slice);
    }
    var tag = new Uint8Array(TAG_LENGTH);
    hPrime(blake2b, TAG_LENGTH, bytes.subarray(lastAt, lastAt + BLOCK), tag);
    return tag;
  };
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
 * Writes one byte in each 4 KiB page of the memory a hash of `memoryKb` KiB uses, so that the operating system
 * maps those pages now rather than one by one during the first hash (16 MiB is 4096 page faults: 10–45 ms on
 * the development machine, against 11–30 ms for a whole warm hash). Called while the WebAssembly downloads
 * and compiles on other threads, so the wait is spent on work the first hash would do anyway.
 */
function touch(memory, memoryKb) {
  var needed = BLOCKS_AT + 4 * Math.floor(memoryKb / 4) * BLOCK;
  if (memory.buffer.byteLength < needed) memory.grow(Math.ceil((needed - memory.buffer.byteLength) / 65536));
  var bytes = new Uint8Array(memory.buffer, 0, needed);
  for (var at = 0; at < needed; at += 4096) bytes[at] = 0;
}

/**
 * Resolves to { exports, memory, blake2b, wasm, instance } once the WebAssembly is compiled and instantiated
 * (on the worker's memory, allocated here, once). With `memoryKb` (the challenge's m, known from the URL),
 * the memory a hash needs is touched while the WebAssembly loads.
 */
function loadArgon2id(memoryKb) {
  if (typeof self.argon2id !== 'function' || typeof self.argon2id.blake2b !== 'function')
    return Promise.reject(new Error('the argon2id library is missing'));
  var memory = new WebAssembly.Memory({ initial: ARGON2_INITIAL_PAGES, maximum: ARGON2_MAXIMUM_PAGES });
  var imports = { env: { memory: memory } };
  function loaded(wasm) {
    return function (result) {
      timing.wasm = performance.now();
      var instance = result.instance;
      return { exports: instance.exports, instance: instance, memory: memory, blake2b: self.argon2id.blake2b, wasm: wasm };
    };
  }
  var ready = instantiate('argon2id-simd.wasm', imports).then(loaded('simd'), function () {
    return instantiate('argon2id-baseline.wasm', imports).then(loaded('baseline'));
  });
  if (memoryKb > 0) {
    try {
      touch(memory, memoryKb);
    } catch (error) {
      // Out of memory: the hash will say so, with the page's status to match.
    }
  }
  timing.memory = performance.now();
  return ready;
}

/*
 * Started now, not when the challenge arrives: the fragment is `#argon2id:<m>` (or `#argon2id`, or the other
 * algorithm's name) for the page's challenge, so the WebAssembly is fetched and compiled and the memory
 * mapped before the challenge message is read.
 */
var fragment = /^#argon2id(?::([0-9]{1,7}))?$/.exec((self.location && self.location.hash) || '');
var argon2idReady = fragment ? loadArgon2id(fragment[1] ? Number(fragment[1]) : 0) : null;

function withArgon2id() {
  if (!argon2idReady) argon2idReady = loadArgon2id(0);
  return argon2idReady;
}

/** A function of the nonce string giving Argon2id(nonce, salt = id, m, t, p = 1, 32 bytes). */
function challengeHasher(lib, c, driver) {
  var encoder = new TextEncoder();
  var salt = encoder.encode(c.id);
  if (driver === 'package') {
    return function (nonce) {
      return self.argon2id(
        { password: encoder.encode(nonce), salt: salt, parallelism: 1, passes: c.t, memorySize: c.m, tagLength: 32 },
        { instance: lib.instance, memory: lib.memory },
      );
    };
  }
  var hash = argon2idHasher(lib, salt, c.m, c.t);
  return function (nonce) {
    return hash(encoder.encode(nonce));
  };
}

/** Times one hash into `timing`, returns it. */
function timed(hash, nonce) {
  var started = performance.now();
  if (timing.firstHash < 0) timing.firstHash = started;
  var result = hash(nonce);
  if (timing.hashes.length < TIMED_HASHES) timing.hashes.push(performance.now() - started);
  return result;
}

/** Each hash is synchronous and the worker has nothing else to do: terminate() ends the loop. */
function searchArgon2id(c, start, step) {
  return withArgon2id().then(function (lib) {
    var hash = challengeHasher(lib, c);
    for (var nonce = start, tried = 1; ; nonce += step, tried++) {
      if (leadingZeroBits(timed(hash, String(nonce))) >= c.d) return { nonce: String(nonce), wasm: lib.wasm, tried: tried };
    }
  });
}

function hashNonces(c, nonces, driver) {
  return withArgon2id().then(function (lib) {
    var hash = challengeHasher(lib, c, driver);
    var hashes = [];
    var ms = [];
    for (var i = 0; i < nonces.length; i++) {
      var started = performance.now();
      hashes.push(hex(timed(hash, nonces[i])));
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
  if (timing.message < 0) timing.message = performance.now();
  var work;
  try {
    if (job.challenge.alg === 'argon2id') {
      work = job.nonces
        ? hashNonces(job.challenge, job.nonces, job.driver)
        : searchArgon2id(job.challenge, job.start, job.step);
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
      answer.timing = timing;
      self.postMessage(answer);
    },
    function (error) {
      self.postMessage({ error: String((error && error.message) || error) });
    },
  );
};
