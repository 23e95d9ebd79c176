import { runInNewContext } from 'node:vm';
import { argon2id } from 'hash-wasm';
import { describe, expect, it } from 'vitest';
import { ARGON2ID_BASELINE_WASM, ARGON2ID_SCRIPT, ARGON2ID_SIMD_WASM, loadAssets } from '../src/assets.js';
import { argon2idHash, leadingZeroBits, sha256Hash } from '../src/index.js';

type BrowserArgon2id = (
  params: { password: Uint8Array; salt: Uint8Array; parallelism: number; passes: number; memorySize: number; tagLength: number },
  wasm: { instance: WebAssembly.Instance; memory: WebAssembly.Memory },
) => Uint8Array;

/** The served argon2id.js, run as a browser worker runs it (a classic script defining a global), with a served build. */
async function servedArgon2id(wasmFile: string) {
  const { files } = await loadAssets();
  const scope: { argon2id?: BrowserArgon2id } = { WebAssembly } as never;
  runInNewContext(files.get(ARGON2ID_SCRIPT)!.body.toString('utf8'), scope);
  // The library checks `instanceof Uint8Array` against the context's own class.
  const bytes = (text: string): Uint8Array => new (runInNewContext('Uint8Array', scope) as Uint8ArrayConstructor)(Buffer.from(text, 'utf8'));
  // As pow-worker.js does: 1040 pages, the least the build accepts.
  const memory = new WebAssembly.Memory({ initial: 1040, maximum: 65536 });
  const { instance } = await WebAssembly.instantiate(new Uint8Array(files.get(wasmFile)!.body), { env: { memory } });
  return (params: { id: string; m: number; t: number }, nonce: string) =>
    Buffer.from(
      scope.argon2id!(
        { password: bytes(nonce), salt: bytes(params.id), parallelism: 1, passes: params.t, memorySize: params.m, tagLength: 32 },
        { instance, memory },
      ),
    );
}

interface SolverLib {
  exports: WebAssembly.Exports;
  instance: WebAssembly.Instance;
  memory: WebAssembly.Memory;
  blake2b: unknown;
  wasm: string;
}
type ChallengeHasher = (lib: SolverLib, c: { id: string; m: number; t: number }, driver?: 'package') => (nonce: string) => Uint8Array;

/**
 * The served pow-worker.js (the library script, then the solver), run as a worker runs it, with a served build:
 * its `challengeHasher`, the function the worker hashes with, with the solver's block loop or the package's
 * driver, on one memory for all hashes as in a worker.
 */
async function servedSolver(wasmFile: string) {
  const { files } = await loadAssets();
  const scope: Record<string, unknown> = { WebAssembly, performance, location: { hash: '', search: '' } };
  scope.self = scope;
  runInNewContext(files.get('pow-worker.js')!.body.toString('utf8'), scope);
  // The library checks `instanceof Uint8Array` against the context's own class.
  const ContextUint8Array = runInNewContext('Uint8Array', scope) as Uint8ArrayConstructor;
  scope.TextEncoder = class {
    encode(text: string): Uint8Array {
      return new ContextUint8Array(Buffer.from(text, 'utf8'));
    }
  };
  const memory = new WebAssembly.Memory({ initial: 1040, maximum: 65536 });
  const { instance } = await WebAssembly.instantiate(new Uint8Array(files.get(wasmFile)!.body), { env: { memory } });
  const blake2b = (scope.argon2id as { blake2b: unknown }).blake2b;
  const lib: SolverLib = { exports: instance.exports, instance, memory, blake2b, wasm: wasmFile };
  const challengeHasher = scope.challengeHasher as ChallengeHasher;
  return (params: { id: string; m: number; t: number }, nonce: string, driver?: 'package') =>
    Buffer.from(challengeHasher(lib, params, driver)(nonce));
}

describe('leadingZeroBits', () => {
  it('counts from the most significant bit of the first byte', () => {
    const cases: [number[], number][] = [
      [[0x80], 0],
      [[0x40], 1],
      [[0x01], 7],
      [[0x00, 0xff], 8],
      [[0x00, 0x00, 0x10], 19],
      [[0x00, 0x00], 16],
      [[], 0],
      [[0x7f, 0x00], 1],
    ];
    for (const [bytes, bits] of cases) expect(leadingZeroBits(Uint8Array.from(bytes))).toBe(bits);
  });
});

describe('hashes', () => {
  it('Argon2id on the server equals the browser solver (hash-wasm) for the same inputs', async () => {
    const id = 'AAECAwQFBgcICQoLDA0ODw';
    for (const nonce of ['0', '7', '123456789']) {
      const server = await argon2idHash({ id, m: 64, t: 2 }, nonce);
      const browser = await argon2id({
        password: nonce,
        salt: id,
        iterations: 2,
        parallelism: 1,
        memorySize: 64,
        hashLength: 32,
        outputType: 'binary',
      });
      expect(server.toString('hex')).toBe(Buffer.from(browser).toString('hex'));
    }
  });

  it.each([ARGON2ID_SIMD_WASM, ARGON2ID_BASELINE_WASM])(
    'Argon2id on the server equals the served argon2id library with %s, bit for bit',
    async (wasmFile) => {
      const browser = await servedArgon2id(wasmFile);
      // One-digit nonces too: the library's minimum-length check compares the array itself, not its length.
      const cases: [{ id: string; m: number; t: number }, string][] = [
        [{ id: 'AAECAwQFBgcICQoLDA0ODw', m: 64, t: 2 }, '0'],
        [{ id: 'AAECAwQFBgcICQoLDA0ODw', m: 64, t: 2 }, '7'],
        [{ id: 'AAECAwQFBgcICQoLDA0ODw', m: 1024, t: 1 }, '123456789'],
        [{ id: 'q0Kx9f-3Zr_mW1yTn2cBvA', m: 4096, t: 3 }, '9007199254740991'],
        [{ id: 'q0Kx9f-3Zr_mW1yTn2cBvA', m: 8192, t: 1 }, '42'],
      ];
      for (const [params, nonce] of cases)
        expect(browser(params, nonce).toString('hex'), `${nonce} ${JSON.stringify(params)}`).toBe(
          (await argon2idHash(params, nonce)).toString('hex'),
        );
    },
  );

  it.each([ARGON2ID_SIMD_WASM, ARGON2ID_BASELINE_WASM])(
    "Argon2id on the server equals the solver's own block loop in the served pow-worker.js with %s, bit for bit",
    async (wasmFile) => {
      const solver = await servedSolver(wasmFile);
      const id = 'AAECAwQFBgcICQoLDA0ODw';
      const other = 'q0Kx9f-3Zr_mW1yTn2cBvA';
      // m = 8 (the least), not a multiple of 4 (m' rounds down), one and several passes (data-independent and
      // data-dependent addressing, XOR into old blocks), the README's worked example, and m beyond the memory's
      // first 1040 pages (it grows).
      const cases: [{ id: string; m: number; t: number }, string][] = [
        [{ id, m: 8, t: 1 }, '0'],
        [{ id, m: 64, t: 2 }, '7'],
        [{ id, m: 1024, t: 1 }, '34'],
        [{ id, m: 1030, t: 3 }, '123456789'],
        [{ id: other, m: 4096, t: 3 }, '9007199254740991'],
        [{ id: other, m: 16384, t: 1 }, '42'],
        [{ id: other, m: 32768, t: 2 }, '1'],
        [{ id: other, m: 70000, t: 1 }, '5'],
      ];
      for (const [params, nonce] of cases) {
        const server = (await argon2idHash(params, nonce)).toString('hex');
        expect(solver(params, nonce).toString('hex'), `${nonce} ${JSON.stringify(params)}`).toBe(server);
        // The package's driver on the same memory (it replaces memory.buffer after each hash), then the solver's
        // again: the solver makes its views again and reuses its blocks without clearing them.
        expect(solver(params, nonce, 'package').toString('hex'), `package ${nonce}`).toBe(server);
        expect(solver(params, nonce).toString('hex'), `again ${nonce}`).toBe(server);
      }
    },
  );

  it('SHA-256 hashes id + ":" + nonce', () => {
    // Expected values from coreutils: printf 'abc:1' | sha256sum
    expect(sha256Hash('abc', '1').toString('hex')).toBe('bfcf0b9cbe9d8208b2cddd9a01c31a9a60698a106a0e4fc1664233a15f16acec');
    expect(sha256Hash('AAECAwQFBgcICQoLDA0ODw', '42').toString('hex')).toBe(
      'c0283a84c88b6d0659422b35800e76c624bcc7656fae359d74de26bc93468171',
    );
  });
});

describe('the worker search', () => {
  /** The served pow-worker.js's own search (`searchArgon2id`), its WebAssembly fetched from the served SIMD build. */
  async function servedSearch() {
    const { files } = await loadAssets();
    const wasm = files.get(ARGON2ID_SIMD_WASM)!.body;
    const scope: Record<string, unknown> = {
      WebAssembly,
      performance,
      TextEncoder,
      location: { hash: '', search: '' },
      fetch: async () => new Response(new Uint8Array(wasm), { headers: { 'content-type': 'application/wasm' } }),
    };
    scope.self = scope;
    runInNewContext(files.get('pow-worker.js')!.body.toString('utf8'), scope);
    return scope.searchArgon2id as (
      c: { id: string; d: number; m: number; t: number },
      start: number,
      step: number,
    ) => Promise<{ nonce: string; tried: number }>;
  }

  it('tries 2^d hashes per solve on average, in the nonce order it was given, and answers the first that meets d', async () => {
    const search = await servedSearch();
    const d = 2;
    const ids = Array.from({ length: 200 }, (_, i) => Buffer.from(`challenge-${i}`).toString('base64url').padEnd(22, 'A'));
    let tried = 0;
    for (const [i, id] of ids.entries()) {
      const c = { id, d, m: 8, t: 1 };
      // Worker 1 of 2 (nonces 1, 3, 5, …) for odd challenges, a single worker for even ones.
      const [start, step] = i % 2 ? [1, 2] : [0, 1];
      const answer = await search(c, start, step);
      expect(answer.tried).toBe((Number(answer.nonce) - start) / step + 1);
      for (let n = start; n < Number(answer.nonce); n += step) expect(leadingZeroBits(await argon2idHash(c, String(n)))).toBeLessThan(d);
      expect(leadingZeroBits(await argon2idHash(c, answer.nonce))).toBeGreaterThanOrEqual(d);
      tried += answer.tried;
    }
    // Geometric with p = 2^-d: mean 4, standard error 0.24 over 200 (a fixed set of challenges, so a fixed figure).
    expect(tried / ids.length).toBeGreaterThan(3.4);
    expect(tried / ids.length).toBeLessThan(4.6);
  });
});
