import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeRequirement, messageBounds, unbounded } from '../../src/api/node-selector-text.js';
import type { NodeSelectorRequirement } from '../../src/api/types.js';
import { warningBounds } from '../../src/scheduling/warning-text.js';

describe('describeRequirement: one description of a node-selector requirement', () => {
  const rows: { requirement: NodeSelectorRequirement; want: string }[] = [
    { requirement: { key: 'dedicated', operator: 'In', values: ['gpu', 'tpu'] }, want: 'dedicated In [gpu, tpu]' },
    { requirement: { key: 'dedicated', operator: 'NotIn', values: ['gpu'] }, want: 'dedicated NotIn [gpu]' },
    { requirement: { key: 'cpu', operator: 'Gt', values: ['900'] }, want: 'cpu Gt [900]' },
    // A list the operator requires shows even empty: that is what the API server refuses.
    { requirement: { key: 'dedicated', operator: 'In', values: [] }, want: 'dedicated In []' },
    { requirement: { key: 'dedicated', operator: 'In' }, want: 'dedicated In []' },
    { requirement: { key: 'gpu', operator: 'Exists' }, want: 'gpu Exists' },
    { requirement: { key: 'gpu', operator: 'DoesNotExist', values: [] }, want: 'gpu DoesNotExist' },
    { requirement: { key: 'gpu', operator: 'Exists', values: ['x'] }, want: 'gpu Exists [x]' },
  ];
  for (const { requirement, want } of rows) {
    it(`${JSON.stringify(requirement)} → ${want}`, () => {
      for (const bounds of [messageBounds, unbounded, warningBounds]) {
        assert.equal(describeRequirement(requirement, bounds), want);
      }
    });
  }

  it('copies what the bounds allow of a tenant-sized requirement, the same at n and 4n values', () => {
    const sized = (n: number): NodeSelectorRequirement => ({
      key: 'k'.repeat(5_000),
      operator: 'In',
      values: Array.from({ length: n }, (_, i) => `v${i}`),
    });
    for (const bounds of [messageBounds, warningBounds]) {
      const small = describeRequirement(sized(25_000), bounds);
      const large = describeRequirement(sized(100_000), bounds);
      assert.ok(small.length < 2_000, `${small.length} characters`);
      assert.ok(Math.abs(large.length - small.length) <= 2, `${small.length} and ${large.length} characters`);
      assert.match(large, /more characters\)/);
      assert.match(large, /more values/);
    }
    assert.equal(describeRequirement(sized(3), unbounded), `${'k'.repeat(5_000)} In [v0, v1, v2]`);
  });
});
