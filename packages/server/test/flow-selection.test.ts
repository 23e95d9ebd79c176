import { describe, expect, it } from 'vitest';
import { runFlow, type Authenticator, type ExecutionStatus } from '../src/flows/engine.js';
import type { AuthExecution, AuthFlow } from '../src/flows/model.js';
import { RealmFlows } from '../src/flows/realm-flows.js';
import type { User } from '../src/model/types.js';

/**
 * "Try another way" in the one flow runner (flows/engine.ts), without pages: which alternatives a challenge names,
 * and what a run given `selected` asks for. Steps here are stand-ins: each challenges with its own name unless the
 * test "posts" an answer for it.
 */

const user = { id: 'u1', username: 'ada', enabled: true } as User;
const flowRow = (id: string, topLevel: boolean): AuthFlow => ({ id, realmId: 'r', alias: id, description: null, providerId: 'basic-flow', topLevel, builtIn: false });
const exec = (id: string, parent: string, authenticator: string | null, requirement: AuthExecution['requirement'], priority: number, subFlowId: string | null = null): AuthExecution => ({
  id,
  realmId: 'r',
  parentFlowId: parent,
  authenticator,
  subFlowId,
  requirement,
  priority,
  configId: null,
});

// top: password (REQUIRED), then "second" (REQUIRED): key, code, recovery (ALTERNATIVE), and a subflow starting with the code.
const flows = new RealmFlows({
  flows: [flowRow('top', true), flowRow('second', false), flowRow('nested', false)],
  executions: [
    exec('e-password', 'top', 'password', 'REQUIRED', 10),
    exec('e-second', 'top', null, 'REQUIRED', 20, 'second'),
    exec('e-key', 'second', 'key', 'ALTERNATIVE', 10),
    exec('e-code', 'second', 'code', 'ALTERNATIVE', 20),
    exec('e-recovery', 'second', 'recovery', 'ALTERNATIVE', 30),
    exec('e-cookie', 'second', 'cookie', 'ALTERNATIVE', 40),
    exec('e-nested', 'second', null, 'ALTERNATIVE', 50, 'nested'),
    exec('e-nested-code', 'nested', 'code', 'REQUIRED', 10),
  ],
  configs: [],
} as never);

interface Env {
  answers: Record<string, boolean>;
  configured: string[];
}

const step = (id: string, selectable: boolean): Authenticator<Env, string, string> => ({
  id,
  requiresUser: id !== 'password',
  selectable,
  configuredFor: async (_user, env) => id === 'password' || env.configured.includes(id),
  async authenticate({ env }) {
    if (id === 'password') return { status: 'success', user };
    if (!(id in env.answers)) return { status: 'challenge', challenge: id };
    return env.answers[id] ? { status: 'success' } : { status: 'failure', failure: id };
  },
});
const steps: Record<string, Authenticator<Env, string, string>> = {
  password: step('password', false),
  key: step('key', true),
  code: step('code', true),
  recovery: step('recovery', true),
  cookie: step('cookie', false),
};

/** A request of the sign-in: from the top, with what earlier requests settled (and the user they named) given back. */
const run = (env: Env, more: { done?: Record<string, ExecutionStatus>; selected?: string } = {}) =>
  runFlow<Env, string, string>({ flows, root: flows.flow('top')!, env, authenticator: (id) => steps[id], condition: () => undefined, ...more, user: more.done ? user : null });

describe('"try another way" in the flow runner', () => {
  it('names the asking step first, then the other alternatives the user has set up (a subflow by its first step)', async () => {
    const result = await run({ answers: {}, configured: ['key', 'code'] });
    expect(result.status).toBe('challenge');
    if (result.status !== 'challenge') return;
    expect(result.challenge).toBe('key');
    // Not the recovery codes (not set up), not the cookie (no page of its own).
    expect(result.alternatives).toEqual([
      { execution: 'e-key', authenticator: 'key' },
      { execution: 'e-code', authenticator: 'code' },
      { execution: 'e-nested', authenticator: 'code' },
    ]);
  });

  it('names none when there is no other way', async () => {
    const result = await run({ answers: {}, configured: ['recovery'] });
    expect(result.status === 'challenge' && result.challenge).toBe('recovery');
    expect(result.status === 'challenge' && result.alternatives).toEqual([]);
  });

  it('asks for the chosen one, and the next request (given what it settled) answers it', async () => {
    const chosen = await run({ answers: {}, configured: ['key', 'code'] }, { selected: 'e-code' });
    expect(chosen.status === 'challenge' && chosen.challenge).toBe('code');
    if (chosen.status !== 'challenge') return;
    expect(chosen.done['e-key']).toBe('attempted');
    // The code posted: the key is not asked again, the code step reads it.
    const next = await run({ answers: { code: true }, configured: ['key', 'code'] }, { done: chosen.done });
    expect(next.status).toBe('success');
    // Switching back to the key from the code's page.
    const back = await run({ answers: {}, configured: ['key', 'code'] }, { done: chosen.done, selected: 'e-key' });
    expect(back.status === 'challenge' && back.challenge).toBe('key');
    expect(back.status === 'challenge' && back.done['e-code']).toBe('attempted');
  });

  it('ignores a choice that is no alternative of a level it reaches: nothing is skipped by it', async () => {
    const result = await run({ answers: {}, configured: ['key', 'code'] }, { selected: 'e-password' });
    expect(result.status === 'challenge' && result.challenge).toBe('key');
    const unknown = await run({ answers: {}, configured: ['key', 'code'] }, { selected: 'no-such-execution' });
    expect(unknown.status === 'challenge' && unknown.challenge).toBe('key');
    // A wrong answer to the chosen step is a failure, not a way around it.
    const chosen = await run({ answers: {}, configured: ['key', 'code'] }, { selected: 'e-code' });
    const wrong = await run({ answers: { code: false }, configured: ['key', 'code'] }, { done: chosen.status === 'challenge' ? chosen.done : {} });
    expect(wrong.status).toBe('failure');
  });
});
