import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import jsonpatch from 'fast-json-patch';
import {
  diffJson,
  escapePointerToken,
  jsonEqual,
  maxArrayOperations,
  maxPatchOperations,
  type JsonPatchOperation,
} from '../../src/admission/json-patch-diff.js';
import { evanphxCost } from '../support/json-patch-cost.js';
import { mutatingPatch, patchShapes } from '../support/patch-shapes.js';

const a = { key: 'a', operator: 'Exists' };
const b = { key: 'b', operator: 'Exists' };
const c = { key: 'c', operator: 'Exists' };
// 2^53 + 1, as JSON.parse reads it from a review: already rounded to 9007199254740992.
const big = JSON.parse('{"key":"big","operator":"Exists","effect":"NoExecute","tolerationSeconds":9007199254740993}') as Record<
  string,
  unknown
>;

interface Row {
  readonly name: string;
  readonly original: unknown;
  readonly changed: unknown;
  readonly want: JsonPatchOperation[];
}

const rows: Row[] = [
  { name: 'the same reference gives no operation', original: { spec: { tolerations: [a] } }, changed: null, want: [] },
  { name: 'equal values give no operation', original: { x: [1, { y: 'z' }] }, changed: { x: [1, { y: 'z' }] }, want: [] },
  {
    name: 'a new key is added',
    original: { spec: {} },
    changed: { spec: { tolerations: [a] } },
    want: [{ op: 'add', path: '/spec/tolerations', value: [a] }],
  },
  {
    name: 'a key that is gone is removed',
    original: { spec: { nodeName: 'n' } },
    changed: { spec: {} },
    want: [{ op: 'remove', path: '/spec/nodeName' }],
  },
  {
    name: 'a changed scalar is replaced',
    original: { spec: { priority: 0 } },
    changed: { spec: { priority: 1 } },
    want: [{ op: 'replace', path: '/spec/priority', value: 1 }],
  },
  {
    name: 'null replaced by a list is a replace',
    original: { spec: { tolerations: null } },
    changed: { spec: { tolerations: [a] } },
    want: [{ op: 'replace', path: '/spec/tolerations', value: [a] }],
  },
  {
    name: 'keys with / and ~ are escaped as ~1 and ~0',
    original: { metadata: { annotations: {} } },
    changed: { metadata: { annotations: { 'example.com/a~b': 'x' } } },
    want: [{ op: 'add', path: '/metadata/annotations/example.com~1a~0b', value: 'x' }],
  },
  {
    name: 'appended elements are added at their index',
    original: [a],
    changed: [a, b, c],
    want: [
      { op: 'add', path: '/1', value: b },
      { op: 'add', path: '/2', value: c },
    ],
  },
  {
    name: 'an element replaced in place is diffed into its predecessor',
    original: [{ key: 'n', tolerationSeconds: 300 }],
    changed: [{ key: 'n' }],
    want: [{ op: 'remove', path: '/0/tolerationSeconds' }],
  },
  {
    name: 'an element dropped from the middle is removed and the kept ones after it are not re-sent',
    original: [a, big, b],
    changed: [a, b, c],
    want: [
      { op: 'remove', path: '/1' },
      { op: 'add', path: '/2', value: c },
    ],
  },
  {
    name: 'elements removed from the end go from the same index',
    original: [a, b, c],
    changed: [a],
    want: [
      { op: 'remove', path: '/1' },
      { op: 'remove', path: '/1' },
    ],
  },
  {
    name: 'strings in a list are compared by value and position',
    original: { values: ['x', 'y'] },
    changed: { values: ['x', 'z', 'y'] },
    want: [
      { op: 'replace', path: '/values/1', value: 'z' },
      { op: 'add', path: '/values/2', value: 'y' },
    ],
  },
];

describe('diffJson', () => {
  for (const row of rows) {
    it(row.name, () => {
      const changed = row.changed ?? row.original;
      const patch = diffJson(row.original, changed);
      assert.deepEqual(patch, row.want);
      // And the patch really turns the original into the changed value.
      const applied = jsonpatch.applyPatch(
        structuredClone({ root: row.original }),
        patch.map((op) => ({ ...op, path: `/root${op.path}` })) as jsonpatch.Operation[],
        true,
        false,
      ).newDocument;
      assert.deepEqual(applied.root, changed);
    });
  }

  it('never re-sends an int64 above 2^53 that a plugin only moved', () => {
    const patch = JSON.stringify(diffJson({ spec: { tolerations: [a, big, b] } }, { spec: { tolerations: [big, b] } }));
    assert.doesNotMatch(patch, /9007199254740/);
  });

  it('escapes ~ before /, so a literal "~1" survives', () => {
    assert.equal(escapePointerToken('a~1/b'), 'a~01~1b');
  });

  it('jsonEqual ignores key order and tells arrays from objects', () => {
    assert.equal(jsonEqual({ x: 1, y: 2 }, { y: 2, x: 1 }), true);
    assert.equal(jsonEqual([], {}), false);
    assert.equal(jsonEqual({ x: undefined }, {}), false);
  });
});

/** Applies `patch` with fast-json-patch, an RFC 6902 implementation independent of the diff. */
function applied(original: unknown, patch: readonly JsonPatchOperation[]): unknown {
  return jsonpatch.applyPatch(structuredClone(original), patch as jsonpatch.Operation[], true, false).newDocument;
}

/** `count` keys `k0`… with string values. */
function keys(count: number, prefix = 'k'): Record<string, string> {
  return Object.fromEntries(Array.from({ length: count }, (_, i) => [`${prefix}${i}`, 'v']));
}

// 2^60: an int64 a tenant may write (runAsUser, tolerationSeconds), beyond what a double holds exactly.
const unsafe = 2 ** 60;

describe('a patch that is quadratic for the API server to apply', () => {
  // n and 4n: past maxPatchOperations at both, so the old diff's operation count and copies show.
  const n = 2_000;
  for (const shape of patchShapes) {
    it(`${shape.name}: the API server's work to apply the patch is linear at n and 4n, within the operation bound`, async () => {
      const costs = [];
      for (const size of [n, 4 * n]) {
        const { object, patch } = await mutatingPatch(shape, size);
        const cost = evanphxCost(object, patch);
        assert.ok(patch.length <= maxPatchOperations, `${patch.length} operations at n = ${size}`);
        const mutated = shape.expected(object, size);
        assert.deepEqual(cost.result, mutated);
        // Linear with a small constant: applying the patch costs less than reading the object and
        // writing the result, which the API server does anyway.
        const bytes = Buffer.byteLength(JSON.stringify(object)) + Buffer.byteLength(JSON.stringify(mutated));
        assert.ok(cost.total <= bytes, `work ${cost.total} bytes for objects of ${bytes} at n = ${size}`);
        costs.push(cost);
      }
      const [atN, at4N] = costs as [(typeof costs)[0], (typeof costs)[0]];
      // Linear work grows 4-fold from n to 4n, quadratic 16-fold; 5 leaves room for the constant part.
      assert.ok(at4N.total <= 5 * atN.total, `work ${atN.total} at n, ${at4N.total} at 4n`);
      assert.ok(at4N.copiedBytes <= 5 * atN.copiedBytes, `array copies ${atN.copiedBytes} at n, ${at4N.copiedBytes} at 4n`);
    });
  }

  it('an array that would receive more than maxArrayOperations additions or removals is replaced whole', () => {
    const original = { spec: { tolerations: Array.from({ length: 100 }, () => ({ ...a })) } };
    const changed = { spec: { tolerations: [original.spec.tolerations[0], b] } };
    assert.deepEqual(diffJson(original, changed), [{ op: 'replace', path: '/spec/tolerations', value: changed.spec.tolerations }]);
  });

  it('an array that receives maxArrayOperations additions and removals keeps its exact diff', () => {
    const tolerations = Array.from({ length: 10_000 }, (_, i) => ({ key: `k${i}`, operator: 'Exists' }));
    const extra = Array.from({ length: maxArrayOperations }, (_, i) => ({ key: `added-${i}`, operator: 'Exists' }));
    const patch = diffJson({ tolerations }, { tolerations: [...tolerations, ...extra] });
    assert.deepEqual(
      patch,
      extra.map((value, i) => ({ op: 'add', path: `/tolerations/${10_000 + i}`, value })),
    );
  });

  it('a short array keeps its exact diff for a dozen additions, whose copies cost nothing', () => {
    const extra = Array.from({ length: 12 }, (_, i) => ({ key: `default-${i}`, operator: 'Exists' }));
    const patch = diffJson({ tolerations: [a, big] }, { tolerations: [a, big, ...extra] });
    assert.equal(patch.length, 12);
    assert.ok(patch.every((operation) => operation.op === 'add'));
  });

  it('on UPDATE, tolerations appended to a long list replace it with the old ones first and unchanged', () => {
    const old = Array.from({ length: 5_000 }, (_, i) => ({
      key: `k${i}`,
      operator: 'Equal',
      value: 'v',
      effect: 'NoExecute',
      tolerationSeconds: i,
    }));
    const added = Array.from({ length: 20 }, (_, i) => ({ key: `added-${i}`, operator: 'Exists' }));
    const original = { spec: { tolerations: old } };
    const changed = { spec: { tolerations: [...old, ...added] } };
    const patch = diffJson(original, changed);
    assert.deepEqual(patch, [{ op: 'replace', path: '/spec/tolerations', value: changed.spec.tolerations }]);
    const result = applied(original, patch) as typeof changed;
    assert.deepEqual(result.spec.tolerations.slice(0, old.length), old);
  });

  it('an array holding an int64 beyond 2^53 is never re-sent: past the bound the review cannot be decided', () => {
    const withBig = Array.from({ length: 1_000 }, () => ({ ...big }));
    assert.throws(() => diffJson({ spec: { tolerations: withBig } }, { spec: { tolerations: [withBig[0]] } }), /could not decide/);
    assert.throws(
      () => diffJson({ spec: { tolerations: [a] } }, { spec: { tolerations: [a, ...Array.from({ length: 9_000 }, () => ({ ...big }))] } }),
      /could not decide/,
    );
  });

  it('more than maxPatchOperations operations become one replace of the value that holds them', () => {
    const original = { spec: { nodeSelector: {}, securityContext: { runAsUser: unsafe } } };
    const changed = { spec: { ...original.spec, nodeSelector: keys(maxPatchOperations + 1) } };
    const patch = diffJson(original, changed);
    assert.deepEqual(patch, [{ op: 'replace', path: '/spec/nodeSelector', value: changed.spec.nodeSelector }]);
  });

  it('a value that cannot be re-sent has its largest changed parts replaced instead, until the patch is short enough', () => {
    const original = { spec: { runAsUser: unsafe, first: {}, second: {}, third: {} } };
    const changed = {
      spec: { runAsUser: unsafe, first: keys(600, 'a'), second: keys(700, 'b'), third: keys(10, 'c') },
    };
    const patch = diffJson(original, changed);
    assert.ok(patch.length <= maxPatchOperations);
    assert.deepEqual(
      patch.filter((operation) => operation.op === 'replace').map((operation) => operation.path),
      ['/spec/second'],
    );
    assert.equal(patch.length, 600 + 1 + 10);
    assert.deepEqual(applied(original, patch), changed);
    assert.doesNotMatch(JSON.stringify(patch), /1152921504606847/);
  });

  it('a patch that cannot be bounded without re-sending an integer beyond 2^53 is refused', () => {
    const original = { spec: { labels: { big: unsafe } } };
    const changed = { spec: { labels: { big: unsafe, ...keys(maxPatchOperations + 1) } } };
    assert.throws(() => diffJson(original, changed), /could not decide: the patch would hold 1001 operations/);
  });
});
