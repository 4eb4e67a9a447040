/**
 * The budget of bodies in flight (src/http/body-budget.ts) on its own: what it lets in, what it
 * keeps for small bodies, and that everything it gives out comes back exactly once.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BodyBudget } from '../../src/http/body-budget.js';

const budget = (): BodyBudget => new BodyBudget({ capacityBytes: 100, smallReserveBytes: 20, smallBodyBytes: 10 });

describe('the budget of bodies in flight', () => {
  it('a declared length is reserved whole or not at all; large bodies stop short of the small bodies’ reserve', () => {
    const b = budget();
    const first = b.reserve(50, 50);
    assert.ok(first !== undefined);
    assert.equal(b.reserve(31, 31), undefined, '50 + 31 > 100 − 20');
    assert.equal(b.held, 50, 'a refusal takes nothing');
    const second = b.reserve(30, 30);
    assert.ok(second !== undefined);
    assert.equal(b.reserve(11, 11), undefined, 'large: 11 bytes is over the small size');
    // Small bodies may use the reserve, up to the whole capacity.
    const smalls = Array.from({ length: 2 }, () => b.reserve(10, 10));
    assert.ok(smalls.every((reservation) => reservation !== undefined));
    assert.equal(b.held, 100);
    assert.equal(b.reserve(1, 1), undefined);
    assert.equal(b.peak, 100);
  });

  it('a body without a length counts as large and grows chunk by chunk; a chunk that does not fit is refused and adds nothing', () => {
    const b = budget();
    const chunked = b.reserve(0, undefined);
    assert.ok(chunked !== undefined);
    assert.equal(chunked.grow(60), true);
    assert.equal(chunked.grow(21), false, '60 + 21 > 80');
    assert.equal(chunked.bytes, 60);
    assert.equal(b.held, 60);
  });

  it('a release gives back everything once, however often it is called; a released reservation cannot grow', () => {
    const b = budget();
    const one = b.reserve(40, 40);
    const two = b.reserve(0, undefined);
    assert.ok(one !== undefined && two !== undefined);
    two.grow(30);
    one.release();
    one.release();
    assert.equal(b.held, 30);
    two.release();
    assert.equal(two.grow(5), false);
    assert.equal(b.held, 0);
    assert.equal(b.peak, 70);
  });
});
