import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import jsonpatch from 'fast-json-patch';
import { diffJson, escapePointerToken, jsonEqual, type JsonPatchOperation } from '../../src/admission/json-patch-diff.js';

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
