/**
 * Messages of any size, at the response builder and the Status: what one response carries is
 * bounded in bytes as kube-apiserver encodes it, each item clipped with a count of what was left
 * out, and small texts are sent exactly as they were written.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { boundAuditAnnotations, boundWarnings, buildAdmissionResponse, responseTextBytes } from '../../src/admission/response.js';
import { denialStatus, maxCauses, statusTextBytes } from '../../src/admission/status.js';
import { clipToBytes, goJsonBytes, maxItemBytes, spellOut } from '../../src/api/text-bounds.js';
import { invalid } from '../../src/validation/field-errors.js';

function warningBytes(warnings: readonly string[]): number {
  return warnings.reduce((sum, warning) => sum + goJsonBytes(warning) + 3, 0);
}

describe('messages of any size: the response builder', () => {
  it('n warnings of a kilobyte take at most 8 KiB, the same at n and 4n, the last counting those left out', () => {
    const sizes = [1_000, 4_000].map((n) => {
      const warnings = boundWarnings(Array.from({ length: n }, (_, i) => `warning ${i}: ${'x'.repeat(1_000)}`));
      assert.ok(warningBytes(warnings) <= responseTextBytes.warnings);
      assert.equal(warnings.at(-1), `tolerator: and ${n - (warnings.length - 1)} more warnings, left out`);
      return warningBytes(warnings);
    });
    // The same but for the digits of the count.
    assert.ok(Math.abs((sizes[0] ?? 0) - (sizes[1] ?? 0)) <= 2, `${sizes.join(' and ')} bytes`);
  });

  it('one warning of n characters is clipped to 4 KiB with the count of the characters left out', () => {
    for (const n of [1_000_000, 4_000_000]) {
      const [warning = ''] = boundWarnings(['<'.repeat(n)]);
      // `<` is six bytes in kube-apiserver's JSON: at most 4 KiB of them is 682 characters.
      assert.ok(goJsonBytes(warning) <= maxItemBytes);
      assert.match(warning, new RegExp(`^<+…\\(${n - warning.indexOf('…')} more characters\\)$`));
    }
  });

  it('small warnings and annotations are sent as they were written', () => {
    const warnings = ['DedicatedNodes: a warning'];
    const annotations = { 'dedicated-nodes-decision': 'allowed' };
    assert.equal(boundWarnings(warnings), warnings);
    assert.equal(boundAuditAnnotations(annotations), annotations);
    const { response } = buildAdmissionResponse('admission.k8s.io/v1', 'u', { allowed: true, warnings, auditAnnotations: annotations });
    assert.deepEqual(response.warnings, warnings);
    assert.deepEqual(response.auditAnnotations, annotations);
  });

  it('audit annotations take at most 8 KiB: a long value is clipped, and those that no longer fit are counted', () => {
    const annotations = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`key-${i}`, 'v'.repeat(1_000_000)]));
    const bounded = boundAuditAnnotations(annotations);
    const bytes = Object.entries(bounded).reduce((sum, [key, value]) => sum + goJsonBytes(key) + goJsonBytes(value) + 6, 0);
    assert.ok(bytes <= responseTextBytes.auditAnnotations, `${bytes} bytes`);
    assert.match(bounded['key-0'] ?? '', /^v+…\(\d+ more characters\)$/);
    const kept = Object.keys(bounded).filter((key) => key.startsWith('key-')).length;
    assert.equal(bounded['tolerator-annotations-left-out'], String(40 - kept));
  });
});

describe('messages of any size: the Status', () => {
  it("a denial naming an object of a megabyte-long name stays within the Status's bound (details.name included)", () => {
    // The mutating webhook sees an object before the API server validates its name, so a pod's
    // name may be megabytes long there, and PodNodeSelector's refusal names the pod.
    const name = 'n'.repeat(1024 * 1024);
    const statuses = [
      denialStatus({ reason: 'Forbidden', message: 'refused', object: { group: '', resource: 'pods', name } }),
      denialStatus({ reason: 'Invalid', group: '', kind: 'Pod', name, errors: [invalid('spec.tolerations[0].key', 'k', 'bad')] }),
    ];
    for (const status of statuses) {
      const bytes = Buffer.byteLength(JSON.stringify(status));
      assert.ok(bytes <= statusTextBytes.message + statusTextBytes.causes + 1024, `a Status of ${bytes} bytes`);
      assert.match(status.details?.name ?? '', /^n+…\(\d+ more characters\)$/);
    }
  });

  it('a Forbidden message of n characters is clipped to 32 KiB as kube-apiserver encodes it', () => {
    for (const n of [1_000_000, 4_000_000]) {
      const status = denialStatus({ reason: 'Forbidden', message: '&'.repeat(n) });
      assert.ok(goJsonBytes(status.message) <= statusTextBytes.message);
      assert.match(status.message, /more characters\)$/);
    }
  });

  it(`n field errors give at most ${maxCauses} causes, the last counting the rest, and a message that counts the errors left out`, () => {
    for (const n of [10_000, 40_000]) {
      const errors = Array.from({ length: n }, (_, i) => invalid(`spec.tolerations[${i}].key`, `bad ${i}`, 'must be valid'));
      const status = denialStatus({ reason: 'Invalid', group: '', kind: 'Pod', name: 'p', errors });
      const causes = status.details?.causes ?? [];
      assert.equal(causes.length, maxCauses);
      assert.deepEqual(causes.at(-1), {
        reason: 'FieldValueTooMany',
        message: `and ${n - (maxCauses - 1)} more causes, left out`,
        field: '',
      });
      const causeBytes = causes.reduce((sum, c) => sum + goJsonBytes(c.reason) + goJsonBytes(c.message) + goJsonBytes(c.field), 0);
      assert.ok(causeBytes <= statusTextBytes.causes);
      assert.ok(goJsonBytes(status.message) <= statusTextBytes.message);
      assert.match(
        status.message,
        /^Pod "p" is invalid: \[spec\.tolerations\[0\]\.key: Invalid value: "bad 0": must be valid, .*, and \d+ more errors\]$/,
      );
    }
  });

  it('a few field errors are rendered exactly as upstream, with a cause each', () => {
    const errors = [invalid('spec.a', 'x', 'bad'), invalid('spec.b', 'y', 'bad'), invalid('spec.a', 'x', 'bad')];
    const status = denialStatus({ reason: 'Invalid', group: '', kind: 'Pod', name: 'p', errors });
    assert.equal(status.message, 'Pod "p" is invalid: [spec.a: Invalid value: "x": bad, spec.b: Invalid value: "y": bad]');
    assert.equal(status.details?.causes?.length, 3);
  });
});

describe('messages of any size: the text bounds', () => {
  it('a list is rendered only as far as it is shown', () => {
    let rendered = 0;
    const text = spellOut(
      Array.from({ length: 100_000 }, (_, i) => i),
      (i) => {
        rendered++;
        return String(i);
      },
      ', ',
    );
    assert.equal(text, '0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 99990 more');
    assert.equal(rendered, 10);
  });

  it('a text within its bytes is kept whole, and a longer one never cuts a surrogate pair', () => {
    assert.equal(clipToBytes('short', 64), 'short');
    const clipped = clipToBytes('😀'.repeat(1_000), 100);
    assert.ok(goJsonBytes(clipped) <= 100);
    assert.match(clipped, /^(😀)+…\(\d+ more characters\)$/u);
  });
});
