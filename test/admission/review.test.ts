/**
 * parseAdmissionReview's nesting limit, checked two ways (src/admission/review.ts): on the parsed
 * value for a body up to 16 KiB, on its bytes above. Both must give the same answer for the same
 * structure, so each case is sent small and padded past 16 KiB with a long annotation; the bytes
 * are read around strings that hold brackets, quotes and backslashes, which must not count.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { AdmissionError } from '../../src/admission/errors.js';
import { parseAdmissionReview } from '../../src/admission/review.js';

/** A pod CREATE whose annotation `example.com/pad` holds `pad`, and whose managedFields' fieldsV1 holds `nested`. */
function review(nested: unknown, pad: string): Buffer {
  return Buffer.from(
    JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'u',
        kind: { group: '', version: 'v1', kind: 'Pod' },
        resource: { group: '', version: 'v1', resource: 'pods' },
        namespace: 'shop',
        operation: 'CREATE',
        object: {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'p', annotations: { 'example.com/pad': pad }, managedFields: [{ fieldsV1: nested }] },
          spec: { containers: [{ name: 'app' }] },
        },
      },
    }),
  );
}

/** The review's own levels down to fieldsV1: the review, request, object, metadata, managedFields, the entry. */
const levelsAbove = 6;

/** A chain of `depth` objects and arrays, alternating. */
function chain(depth: number): unknown {
  let value: unknown = {};
  for (let i = 1; i < depth; i++) value = i % 2 === 0 ? { [`f:${i}`]: value } : [value];
  return value;
}

/** Text a scan that does not skip strings would count: brackets, escaped quotes, backslashes. */
const tricky = '[{"[\\\\"}]\\"{{[[' + '['.repeat(600);

function outcome(body: Buffer): string {
  try {
    parseAdmissionReview(body);
    return 'parsed';
  } catch (error) {
    return error instanceof AdmissionError ? error.code : 'threw';
  }
}

describe('the nesting limit of 512 levels holds alike for a body under 16 KiB and one over it', () => {
  for (const [depth, want] of [
    [512, 'parsed'],
    [513, 'NestingTooDeep'],
  ] as const) {
    it(`${depth} levels: ${want}, small or padded, with brackets and quotes inside strings`, () => {
      const nested = chain(depth - levelsAbove);
      const small = review(nested, tricky);
      const padded = review(nested, tricky + 'x'.repeat(20 * 1024));
      assert.ok(small.length < 16 * 1024 && padded.length > 16 * 1024);
      assert.equal(outcome(small), want);
      assert.equal(outcome(padded), want);
      // Text: always the walk over the parsed value.
      assert.equal(outcome(Buffer.from(padded.toString('utf8'))), want);
    });
  }

  it('any structure and any string: the bytes and the parsed value agree', () => {
    const text = fc.string({ unit: fc.constantFrom('[', ']', '{', '}', '"', '\\', 'a', 'é', '😀'), maxLength: 40 });
    const tree: fc.Arbitrary<unknown> = fc.letrec<{ node: unknown }>((tie) => ({
      node: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        text,
        fc.array(tie('node'), { maxLength: 3 }),
        fc.dictionary(text, tie('node'), { maxKeys: 3 }),
      ),
    })).node;
    fc.assert(
      fc.property(tree, fc.integer({ min: 400, max: 600 }), (leaf, depth) => {
        let nested: unknown = leaf;
        for (let i = 0; i < depth - levelsAbove; i++) nested = [nested];
        const small = review(nested, '');
        const padded = review(nested, 'x'.repeat(20 * 1024));
        assert.ok(small.length <= 16 * 1024, `${small.length} bytes`);
        assert.equal(outcome(padded), outcome(small));
      }),
      { seed: 1818, numRuns: 300 },
    );
  });
});
