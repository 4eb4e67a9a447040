/**
 * `toleratesTaint` with `Gt` and `Lt` against a reference model written with BigInt from
 * docs/kubernetes-rules.md#toleration-matching: both values must be canonical decimal integers
 * (`0`, or an optional `-` and a non-zero leading digit) within int64, and the comparison is
 * strict, "taint < toleration" for Lt and "taint > toleration" for Gt. With the gate off neither
 * operator ever matches.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Taint, Toleration } from '../../src/api/types.js';
import { toleratesTaint } from '../../src/tolerations/matching.js';

const int64Min = -(2n ** 63n);
const int64Max = 2n ** 63n - 1n;
const gateOn = { TaintTolerationComparisonOperators: true };
const gateOff = { TaintTolerationComparisonOperators: false };
const options = { numRuns: 500, seed: 0x5471 };

/** The reference: a value both checks accept, as a BigInt; undefined otherwise. */
function modelParse(text: string): bigint | undefined {
  if (!/^(0|-?[1-9][0-9]*)$/.test(text)) return undefined;
  const value = BigInt(text);
  return value < int64Min || value > int64Max ? undefined : value;
}

function modelTolerates(operator: 'Gt' | 'Lt', tolerationValue: string, taintValue: string): boolean {
  const threshold = modelParse(tolerationValue);
  const actual = modelParse(taintValue);
  if (threshold === undefined || actual === undefined) return false;
  return operator === 'Lt' ? actual < threshold : actual > threshold;
}

const int64 = fc.bigInt(int64Min, int64Max);
/** Near the edges as well as anywhere: the bounds, ±1 around them, and just outside int64. */
const edgy = fc.oneof(
  int64,
  fc.constantFrom(int64Min, int64Min + 1n, -1n, 0n, 1n, int64Max - 1n, int64Max, int64Max + 1n, int64Min - 1n, 2n ** 64n, 10n ** 20n),
  fc.bigInt(-(2n ** 70n), 2n ** 70n),
);

/** A value written in a form the canonical check refuses (or, for some, that Go's ParseInt refuses). */
const nonCanonical = fc
  .tuple(edgy, fc.constantFrom('plus', 'zeros', 'space', 'negzero', 'fraction', 'exponent', 'hex', 'underscore', 'empty', 'unicode'))
  .map(([value, form]) => {
    const text = value.toString();
    const abs = (value < 0n ? -value : value).toString();
    switch (form) {
      case 'plus':
        return value < 0n ? `+${abs}` : `+${text}`;
      case 'zeros':
        return value < 0n ? `-0${abs}` : `0${text}`;
      case 'space':
        return ` ${text}`;
      case 'negzero':
        return '-0';
      case 'fraction':
        return `${text}.0`;
      case 'exponent':
        return `${text}e0`;
      case 'hex':
        return `0x${abs}`;
      case 'underscore':
        return `${text}_0`;
      case 'empty':
        return '';
      case 'unicode':
        // Arabic-Indic digits: digits to \d in some engines, never to Go.
        return text.replace(/[0-9]/g, (d) => String.fromCharCode(0x0660 + Number(d)));
    }
    return text;
  });

const valueText = fc.oneof({ weight: 3, arbitrary: edgy.map((v) => v.toString()) }, { weight: 1, arbitrary: nonCanonical });

function pair(operator: 'Gt' | 'Lt', tolerationValue: string, taintValue: string, effect?: string): [Toleration, Taint] {
  return [
    { key: 'example.com/generation', operator, value: tolerationValue, ...(effect === undefined ? {} : { effect }) },
    { key: 'example.com/generation', value: taintValue, effect: 'NoSchedule' },
  ];
}

describe('Gt and Lt against a BigInt model', () => {
  it('agree with the model for every pair of int64 values with the gate on', () => {
    fc.assert(
      fc.property(fc.constantFrom<'Gt' | 'Lt'>('Gt', 'Lt'), int64, int64, (operator, a, b) => {
        const [toleration, taint] = pair(operator, a.toString(), b.toString());
        assert.equal(toleratesTaint(toleration, taint, gateOn), operator === 'Lt' ? b < a : b > a);
      }),
      options,
    );
  });

  it('agree with the model for canonical, out-of-range and non-canonical strings on either side', () => {
    fc.assert(
      fc.property(fc.constantFrom<'Gt' | 'Lt'>('Gt', 'Lt'), valueText, valueText, (operator, tolerationValue, taintValue) => {
        const [toleration, taint] = pair(operator, tolerationValue, taintValue);
        assert.equal(toleratesTaint(toleration, taint, gateOn), modelTolerates(operator, tolerationValue, taintValue));
      }),
      options,
    );
  });

  it('never match an equal value: both comparisons are strict', () => {
    fc.assert(
      fc.property(fc.constantFrom<'Gt' | 'Lt'>('Gt', 'Lt'), int64, (operator, a) => {
        const [toleration, taint] = pair(operator, a.toString(), a.toString());
        assert.equal(toleratesTaint(toleration, taint, gateOn), false);
      }),
      options,
    );
  });

  it('never match with the gate off, whatever the values', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<'Gt' | 'Lt'>('Gt', 'Lt'),
        valueText,
        valueText,
        fc.constantFrom(undefined, '', 'NoSchedule'),
        (operator, x, y, effect) => {
          const [toleration, taint] = pair(operator, x, y, effect);
          assert.equal(toleratesTaint(toleration, taint, gateOff), false);
        },
      ),
      options,
    );
  });

  it('never match a taint of another key or effect, even when the numbers agree', () => {
    fc.assert(
      fc.property(int64, int64, (a, b) => {
        fc.pre(b > a);
        const toleration: Toleration = { key: 'k', operator: 'Gt', value: a.toString(), effect: 'NoExecute' };
        assert.equal(toleratesTaint(toleration, { key: 'other', value: b.toString(), effect: 'NoExecute' }, gateOn), false);
        assert.equal(toleratesTaint(toleration, { key: 'k', value: b.toString(), effect: 'NoSchedule' }, gateOn), false);
        assert.equal(toleratesTaint(toleration, { key: 'k', value: b.toString(), effect: 'NoExecute' }, gateOn), true);
      }),
      options,
    );
  });
});
