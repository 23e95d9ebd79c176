import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { processTree, steady, treeCpuMs, treeRssMb, warmUntilSteady } from '../../../scripts/bench-support.js';
import { figuresOf, loginForm } from '../../../scripts/keycloak-bench.js';

/** The parts of the Keycloak bench (scripts/keycloak-bench.ts, issue 44) that need no Java. */

const ROOT = resolve(import.meta.dirname, '../../..');

describe('steady state', () => {
  it('holds when the last two rounds agree within 5% of the larger', () => {
    expect(steady([100])).toBe(false);
    expect(steady([])).toBe(false);
    expect(steady([50, 100, 105])).toBe(true);
    expect(steady([100, 95])).toBe(true);
    expect(steady([100, 94.9])).toBe(false);
    expect(steady([94.9, 100])).toBe(false);
    expect(steady([100, 104, 120])).toBe(false);
    expect(steady([0, 0])).toBe(false);
    expect(steady([100, 92], 0.1)).toBe(true);
  });

  it('warms until two consecutive rounds agree', async () => {
    const rates = [100, 150, 180, 185, 186];
    let clock = 0;
    const warm = await warmUntilSteady(
      async () => {
        clock += 10_000;
        return rates.shift()!;
      },
      { capSeconds: 300, now: () => clock },
    );
    expect(warm).toEqual({ rounds: [100, 150, 180, 185], steady: true, seconds: 40 });
  });

  it('stops at the cap and says it did not settle', async () => {
    let rate = 100;
    let clock = 0;
    const warm = await warmUntilSteady(
      async () => {
        clock += 10_000;
        return (rate *= 1.2);
      },
      { capSeconds: 35, now: () => clock },
    );
    expect(warm.steady).toBe(false);
    expect(warm.rounds).toHaveLength(4);
    expect(warm.seconds).toBe(40);
  });
});

describe('the login form', () => {
  it("takes Keycloak's form: the action with its query, the hidden inputs, not the visible ones", () => {
    const html = `<html><body><form id="kc-form-login" onsubmit="login.disabled = true; return true;"
      action="http://127.0.0.1:8280/realms/scale/login-actions/authenticate?session_code=abc&amp;execution=e-1&amp;client_id=bench-browser&amp;tab_id=t1" method="post">
      <input tabindex="2" id="username" class="pf-c-form-control" name="username" value="" type="text" autofocus autocomplete="username">
      <input tabindex="3" id="password" name="password" type="password" autocomplete="current-password">
      <input type="hidden" id="id-hidden-input" name="credentialId" value=""/>
      <input tabindex="4" name="login" id="kc-login" type="submit" value="Sign In"/>
    </form></body></html>`;
    expect(loginForm('http://127.0.0.1:8280', html)).toEqual({
      action: 'http://127.0.0.1:8280/realms/scale/login-actions/authenticate?session_code=abc&execution=e-1&client_id=bench-browser&tab_id=t1',
      fields: { credentialId: '' },
    });
  });

  it('takes a relative action and escaped hidden values', () => {
    const html = `<form method="post" action="/realms/scale/login-actions/authenticate?tab_id=x"><input name="session_code" type="hidden" value="a&#x2F;b&amp;c"><input name="username"></form>`;
    expect(loginForm('http://127.0.0.1:4000', html)).toEqual({
      action: 'http://127.0.0.1:4000/realms/scale/login-actions/authenticate?tab_id=x',
      fields: { session_code: 'a/b&c' },
    });
  });

  it('fails plainly on a page without a form', () => {
    expect(() => loginForm('http://127.0.0.1:4000', '<p>We are sorry...</p>')).toThrow(/no login form/);
  });
});

describe('figures', () => {
  it('gives realmgate / keycloak with each goal met or missed, and no ratio without Keycloak', () => {
    const samples = {
      'realmgate client_credentials rate': [3000, 3300, 3100],
      'keycloak client_credentials rate': [1000, 1100, 1050],
      'realmgate browser login rate': [90],
      'keycloak browser login rate': [50],
      'realmgate rss start': [150],
      'keycloak rss start': [600],
      'realmgate restart': [2],
      'keycloak restart': [10],
    };
    const byName = (figures: ReturnType<typeof figuresOf>, start: string) => figures.find((f) => f.name.startsWith(start))!;
    const figures = figuresOf(samples, true);
    expect(byName(figures, 'client_credentials')).toMatchObject({ realmgate: 3100, keycloak: 1050, goal: { atLeast: 3 }, met: false });
    expect(byName(figures, 'client_credentials').ratio).toBeCloseTo(3100 / 1050);
    expect(byName(figures, 'browser logins')).toMatchObject({ ratio: 1.8, met: false });
    expect(byName(figures, 'resident memory after')).toMatchObject({ ratio: 0.25, goal: { atMost: 0.5 }, met: true });
    expect(byName(figures, 'start-up: spawn to the discovery document, existing')).toMatchObject({ ratio: 0.2, met: true });
    expect(byName(figures, 'password grants')).toMatchObject({ met: null, goal: null });
    const alone = figuresOf(samples, false);
    expect(alone.every((f) => f.keycloak === null && f.ratio === null && f.met === null)).toBe(true);
    expect(byName(alone, 'client_credentials').realmgate).toBe(3100);
  });
});

/** Whether `pid` is a live process (a zombie nobody reaped counts as gone). */
function alive(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').pop()![0] !== 'Z';
  } catch {
    return false;
  }
}

/** Runs the fixture with `how`; resolves with the pids it printed and a promise of its exit code. */
function fixture(how: 'fail' | 'wait' | 'stop') {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'packages/server/test/fixtures/bench/spawn-group-child.ts'), how], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  const pids = new Promise<{ leader: number; sleep: number; dir: string }>((done, fail) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) done(JSON.parse(line));
    });
    child.on('exit', () => fail(new Error(`the fixture exited before printing its pids: ${out}`)));
  });
  return { child, exited, pids };
}

async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  return !alive(pid);
}

describe.runIf(process.platform === 'linux')('the process group the bench starts Keycloak in', () => {
  it('is killed, grandchild too, and the working directory removed, when the run fails', async () => {
    const run = fixture('fail');
    const { leader, sleep, dir } = await run.pids;
    expect(alive(sleep)).toBe(true);
    expect(existsSync(dir)).toBe(true);
    run.child.stdin.write('fail now\n');
    expect(await run.exited).toBe(1);
    expect(await gone(sleep)).toBe(true);
    expect(await gone(leader)).toBe(true);
    expect(existsSync(dir)).toBe(false);
  }, 60_000);

  it('is killed and the working directory removed when the run is interrupted (SIGINT, as Ctrl-C)', async () => {
    const run = fixture('wait');
    const { sleep, dir } = await run.pids;
    expect(alive(sleep)).toBe(true);
    run.child.kill('SIGINT');
    expect(await run.exited).toBe(130);
    expect(await gone(sleep)).toBe(true);
    expect(existsSync(dir)).toBe(false);
  }, 60_000);

  it('is stopped whole by stop()', async () => {
    const run = fixture('stop');
    const { sleep } = await run.pids;
    expect(await run.exited).toBe(0);
    expect(await gone(sleep)).toBe(true);
  }, 60_000);

  it("counts the resident memory and CPU time of the whole tree, a process's children with it", async () => {
    const run = fixture('wait');
    const { leader, sleep } = await run.pids;
    try {
      const tree = processTree(run.child.pid!);
      expect(tree).toEqual(expect.arrayContaining([run.child.pid, leader, sleep]));
      const own = treeRssMb(sleep);
      expect(own).toBeGreaterThan(0);
      expect(treeRssMb(run.child.pid!)).toBeGreaterThan(treeRssMb(leader) + 10);
      expect(treeRssMb(leader)).toBeGreaterThan(own);
      // The Node process started and ran tsx: its CPU time is counted with its group's.
      expect(treeCpuMs(run.child.pid!)).toBeGreaterThan(treeCpuMs(leader));
    } finally {
      run.child.kill('SIGTERM');
      await run.exited;
    }
    expect(await gone(sleep)).toBe(true);
  }, 60_000);
});
