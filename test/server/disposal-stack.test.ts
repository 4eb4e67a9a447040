/** The disposal stack startServer builds on (src/server/disposal-stack.ts): undone in reverse, once, every step run. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DisposalStack, once } from '../../src/server/disposal-stack.js';

describe('DisposalStack', () => {
  it('undoes what was built last first, each step awaited before the next', async () => {
    const stack = new DisposalStack();
    const undone: string[] = [];
    const gates = stack.use('gates', (name) => {
      undone.push(name);
    });
    stack.use('workers', async (name) => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      undone.push(name);
    });
    stack.defer(() => {
      undone.push('listener');
    });
    assert.equal(gates, 'gates');
    await stack.dispose();
    assert.deepEqual(undone, ['listener', 'workers', 'gates']);
  });

  it('undoes once however often it is disposed, and refuses what is pushed after', async () => {
    const stack = new DisposalStack();
    let runs = 0;
    stack.defer(() => {
      runs++;
    });
    await Promise.all([stack.dispose(), stack.dispose()]);
    await stack.dispose();
    assert.equal(runs, 1);
    assert.throws(() => {
      stack.defer(() => undefined);
    }, /disposed already/);
  });

  it('runs every step when one fails, then throws the first failure', async () => {
    const stack = new DisposalStack();
    const undone: string[] = [];
    stack.defer(() => {
      undone.push('first built');
    });
    stack.defer(() => {
      throw new Error('the informers would not stop');
    });
    stack.defer(() => {
      throw new Error('a later failure');
    });
    await assert.rejects(stack.dispose(), /a later failure/);
    assert.deepEqual(undone, ['first built']);
  });

  it('once runs its action a single time and shares the result', () => {
    let calls = 0;
    const release = once(() => ++calls);
    assert.equal(release(), 1);
    assert.equal(release(), 1);
    assert.equal(calls, 1);
  });
});
