/**
 * ListItemSplitter against JSON.parse: for any list, cut into chunks anywhere (inside a string, an
 * escape, a multi-byte character), the items it hands on parse to the list's items and its
 * envelope to the list without them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StringDecoder } from 'node:string_decoder';
import fc from 'fast-check';
import { ListItemSplitter } from '../../src/kube/list-items.js';
import { goJson } from '../support/fake-api-server.js';

function split(text: string, cuts: readonly number[], skip: readonly (readonly string[])[] = []): { items: unknown[]; envelope: unknown } {
  const bytes = Buffer.from(text);
  const items: unknown[] = [];
  const splitter = new ListItemSplitter((item) => items.push(JSON.parse(item)), skip);
  // Decoded chunk by chunk as createApiRequest decodes a body: a cut may fall inside a character.
  const decoder = new StringDecoder('utf8');
  const points = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
  let from = 0;
  for (const point of [...points, bytes.length]) {
    splitter.write(decoder.write(bytes.subarray(from, point)));
    from = point;
  }
  splitter.write(decoder.end());
  return { items, envelope: JSON.parse(splitter.end()) };
}

/** `value` with the value at each path of object keys (where the path exists) replaced by null. */
function nullAt(value: unknown, paths: readonly (readonly string[])[]): unknown {
  const copy: unknown = JSON.parse(JSON.stringify(value));
  for (const path of paths) {
    let at: unknown = copy;
    for (const [index, key] of path.entries()) {
      if (typeof at !== 'object' || at === null || Array.isArray(at) || !Object.hasOwn(at, key)) break;
      const object = at as Record<string, unknown>;
      if (index === path.length - 1) object[key] = null;
      at = object[key];
    }
  }
  return copy;
}

describe('ListItemSplitter', () => {
  it('hands on each item of a list cut anywhere, and the envelope without them, as JSON.parse reads them', () => {
    // Strings of any code points (multi-byte UTF-8, U+2028, lone quotes and backslashes) beside any JSON.
    const item = fc.oneof(
      fc.jsonValue(),
      fc.record({ text: fc.string({ unit: 'binary' }), more: fc.array(fc.string({ unit: 'binary' })) }),
    );
    const list = fc.record({
      kind: fc.string(),
      metadata: fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 3 }),
      items: fc.array(item, { maxLength: 6 }),
      after: fc.jsonValue(),
    });
    fc.assert(
      fc.property(list, fc.array(fc.nat(), { maxLength: 12 }), fc.boolean(), fc.boolean(), (value, cuts, escaped, spaced) => {
        const text = spaced ? JSON.stringify(value, null, 2) : escaped ? goJson(value) : JSON.stringify(value);
        const { items, envelope } = split(text, cuts);
        assert.deepEqual(items, JSON.parse(JSON.stringify(value.items)));
        assert.deepEqual(envelope, JSON.parse(JSON.stringify({ ...value, items: [] })));
      }),
      { numRuns: 2_000 },
    );
  });

  it('writes the values at the skipped paths of each item as null, for a list cut anywhere, and nothing else', () => {
    const keys = fc.constantFrom('status', 'metadata', 'managedFields', 'name', 'spec', 'x');
    const tree: fc.Arbitrary<unknown> = fc.letrec<{ node: unknown }>((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        fc.jsonValue({ maxDepth: 1 }),
        fc.dictionary(keys, tie('node'), { maxKeys: 4 }),
        fc.array(tie('node'), { maxLength: 3 }),
      ),
    })).node;
    const paths = fc.array(fc.array(keys, { minLength: 1, maxLength: 3 }), { maxLength: 3 });
    fc.assert(
      fc.property(
        fc.array(tree, { maxLength: 5 }),
        paths,
        fc.array(fc.nat(), { maxLength: 12 }),
        fc.boolean(),
        (items, skip, cuts, spaced) => {
          const list = { kind: 'List', metadata: { status: 1 }, items };
          const text = spaced ? JSON.stringify(list, null, 1) : goJson(list);
          const got = split(text, cuts, skip);
          assert.deepEqual(
            got.items,
            items.map((item) => nullAt(item, skip)),
          );
          assert.deepEqual(got.envelope, { ...list, items: [] });
        },
      ),
      { numRuns: 3_000 },
    );
  });

  it("skips a Node's status and managedFields: the text handed on is a small part of the item", () => {
    const node = {
      metadata: { name: 'n', managedFields: [{ manager: 'kubelet', fieldsV1: { 'f:status': {} } }], labels: { a: 'b' } },
      spec: { taints: [] },
      status: { images: Array.from({ length: 50 }, (_, i) => ({ names: [`image-${i}`], sizeBytes: i })) },
    };
    const texts: string[] = [];
    const splitter = new ListItemSplitter((item) => texts.push(item), [['status'], ['metadata', 'managedFields']]);
    splitter.write(JSON.stringify({ kind: 'NodeList', items: [node, node] }));
    splitter.end();
    assert.deepEqual(
      texts.map((text) => JSON.parse(text) as unknown),
      [0, 1].map(() => ({ ...node, metadata: { ...node.metadata, managedFields: null }, status: null })),
    );
    assert.ok((texts[0]?.length ?? 0) < JSON.stringify(node).length / 5);
  });

  it('a key written with escapes is not the key it decodes to: its value is kept', () => {
    const text = '{"items":[{"st\\u0061tus":{"a":1},"status":{"b":2}}]}';
    assert.deepEqual(split(text, [], [['status']]).items, [{ status: null }]);
    const only = '{"items":[{"st\\u0061tus":{"a":1}}]}';
    assert.deepEqual(split(only, [], [['status']]).items, [{ status: { a: 1 } }]);
  });

  it('splits only the top-level items: an items key inside metadata or inside an item is not a list', () => {
    const value = {
      metadata: { items: [1, 2], note: '"items":[' },
      items: [{ items: ['a'], text: 'x]}"{' }, { spec: { items: [{}] } }],
      items2: [3],
    };
    const { items, envelope } = split(JSON.stringify(value), [5, 17, 40]);
    assert.deepEqual(items, value.items);
    assert.deepEqual(envelope, { ...value, items: [] });
  });

  it('a body without items is all envelope (a Status)', () => {
    const status = { kind: 'Status', code: 410, message: 'too old' };
    assert.deepEqual(split(JSON.stringify(status), [3]), { items: [], envelope: status });
  });
});
