import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Taint, Toleration } from '../../src/api/types.js';
import {
  matchingTolerationIn,
  matchTaint,
  matchToleration,
  toleratesTaint,
  tolerationsTolerateTaint,
} from '../../src/tolerations/matching.js';

const gateOn = { TaintTolerationComparisonOperators: true };
const gateOff = { TaintTolerationComparisonOperators: false };

type MatchRow = { name: string; given: { toleration: Toleration; taint: Taint; gate?: boolean }; want: boolean };

function runMatchRows(rows: readonly MatchRow[]): void {
  for (const row of rows) {
    it(row.name, () => {
      const gates = row.given.gate === false ? gateOff : gateOn;
      assert.equal(toleratesTaint(row.given.toleration, row.given.taint, gates), row.want);
    });
  }
}

describe('toleratesTaint: the upstream TestTolerationToleratesTaint table', () => {
  const sla = 'node.kubernetes.io/sla';
  runMatchRows([
    {
      name: 'same key and effect, Exists, taint without value: tolerated',
      given: {
        toleration: { key: 'foo', operator: 'Exists', effect: 'NoSchedule' },
        taint: { key: 'foo', effect: 'NoSchedule' },
        gate: false,
      },
      want: true,
    },
    {
      name: 'same key and effect, Exists, taint with a value: tolerated',
      given: {
        toleration: { key: 'foo', operator: 'Exists', effect: 'NoSchedule' },
        taint: { key: 'foo', value: 'bar', effect: 'NoSchedule' },
        gate: false,
      },
      want: true,
    },
    {
      name: 'same effect, empty key with Exists matches every taint: tolerated',
      given: {
        toleration: { key: '', operator: 'Exists', effect: 'NoSchedule' },
        taint: { key: 'foo', value: 'bar', effect: 'NoSchedule' },
        gate: false,
      },
      want: true,
    },
    {
      name: 'same key, effect and value with Equal: tolerated',
      given: {
        toleration: { key: 'foo', operator: 'Equal', value: 'bar', effect: 'NoSchedule' },
        taint: { key: 'foo', value: 'bar', effect: 'NoSchedule' },
        gate: false,
      },
      want: true,
    },
    {
      name: 'same key and effect but different values with Equal: not tolerated',
      given: {
        toleration: { key: 'foo', operator: 'Equal', value: 'value1', effect: 'NoSchedule' },
        taint: { key: 'foo', value: 'value2', effect: 'NoSchedule' },
        gate: false,
      },
      want: false,
    },
    {
      name: 'same key and value but different effects with Equal: not tolerated',
      given: {
        toleration: { key: 'foo', operator: 'Equal', value: 'bar', effect: 'NoSchedule' },
        taint: { key: 'foo', value: 'bar', effect: 'NoExecute' },
        gate: false,
      },
      want: false,
    },
    {
      name: 'Gt with the taint value below the toleration value: not tolerated',
      given: {
        toleration: { key: sla, operator: 'Gt', value: '950', effect: 'NoSchedule' },
        taint: { key: sla, value: '800', effect: 'NoSchedule' },
      },
      want: false,
    },
    {
      name: 'Gt with the taint value above the toleration value: tolerated',
      given: {
        toleration: { key: sla, operator: 'Gt', value: '750', effect: 'NoSchedule' },
        taint: { key: sla, value: '950', effect: 'NoSchedule' },
      },
      want: true,
    },
    {
      name: 'Lt with the taint value above the toleration value: not tolerated',
      given: {
        toleration: { key: sla, operator: 'Lt', value: '800', effect: 'NoSchedule' },
        taint: { key: sla, value: '950', effect: 'NoSchedule' },
      },
      want: false,
    },
    {
      name: 'Lt with the taint value below the toleration value: tolerated',
      given: {
        toleration: { key: sla, operator: 'Lt', value: '950', effect: 'NoSchedule' },
        taint: { key: sla, value: '800', effect: 'NoSchedule' },
      },
      want: true,
    },
    {
      name: 'Gt with an equal numeric taint value: not tolerated, the comparison is strict',
      given: {
        toleration: { key: sla, operator: 'Gt', value: '950', effect: 'NoSchedule' },
        taint: { key: sla, value: '950', effect: 'NoSchedule' },
      },
      want: false,
    },
    {
      name: 'Gt with a non-numeric taint value: not tolerated',
      given: {
        toleration: { key: sla, operator: 'Gt', value: '950', effect: 'NoSchedule' },
        taint: { key: sla, value: 'high', effect: 'NoSchedule' },
      },
      want: false,
    },
    {
      name: 'Gt with negative values, taint below the threshold: not tolerated',
      given: {
        toleration: { key: 'test-key', operator: 'Gt', value: '-100', effect: 'NoSchedule' },
        taint: { key: 'test-key', value: '-200', effect: 'NoSchedule' },
      },
      want: false,
    },
    {
      name: 'Gt with a large int64 threshold and a small taint value: not tolerated',
      given: {
        toleration: { key: 'test-key', operator: 'Gt', value: '9223372036854775806', effect: 'NoSchedule' },
        taint: { key: 'test-key', value: '100', effect: 'NoSchedule' },
      },
      want: false,
    },
  ]);
});

describe('toleratesTaint: the upstream TestCompareNumericValues table', () => {
  const rows: { name: string; given: { operator: string; toleration: string; taint: string }; want: boolean }[] = [
    { name: 'Gt, taint greater than toleration', given: { operator: 'Gt', toleration: '100', taint: '200' }, want: true },
    { name: 'Gt, taint less than toleration', given: { operator: 'Gt', toleration: '200', taint: '100' }, want: false },
    { name: 'Gt, taint equal to toleration', given: { operator: 'Gt', toleration: '100', taint: '100' }, want: false },
    { name: 'Gt, negative numbers, taint greater', given: { operator: 'Gt', toleration: '-100', taint: '-50' }, want: true },
    { name: 'Gt, negative numbers, taint less', given: { operator: 'Gt', toleration: '-50', taint: '-100' }, want: false },
    { name: 'Gt, zero and positive', given: { operator: 'Gt', toleration: '0', taint: '1' }, want: true },
    {
      name: 'Gt, large int64 values, taint greater',
      given: { operator: 'Gt', toleration: '9223372036854775806', taint: '9223372036854775807' },
      want: true,
    },
    { name: 'Lt, taint less than toleration', given: { operator: 'Lt', toleration: '200', taint: '100' }, want: true },
    { name: 'Lt, taint greater than toleration', given: { operator: 'Lt', toleration: '100', taint: '200' }, want: false },
    { name: 'Lt, taint equal to toleration', given: { operator: 'Lt', toleration: '100', taint: '100' }, want: false },
    { name: 'Lt, negative numbers, taint less', given: { operator: 'Lt', toleration: '-50', taint: '-100' }, want: true },
    { name: 'Lt, negative numbers, taint greater', given: { operator: 'Lt', toleration: '-100', taint: '-50' }, want: false },
    { name: 'Lt, zero and negative', given: { operator: 'Lt', toleration: '0', taint: '-1' }, want: true },
    { name: 'Gt, non-numeric toleration value', given: { operator: 'Gt', toleration: 'abc', taint: '100' }, want: false },
    { name: 'Gt, empty toleration value', given: { operator: 'Gt', toleration: '', taint: '100' }, want: false },
    { name: 'Gt, toleration value with a leading zero', given: { operator: 'Gt', toleration: '0100', taint: '200' }, want: false },
    { name: 'Gt, toleration value with a plus sign', given: { operator: 'Gt', toleration: '+100', taint: '200' }, want: false },
    { name: 'Gt, floating-point toleration value', given: { operator: 'Gt', toleration: '100.5', taint: '200' }, want: false },
    { name: 'Gt, toleration value that is just a minus sign', given: { operator: 'Gt', toleration: '-', taint: '100' }, want: false },
    { name: 'Gt, non-numeric taint value', given: { operator: 'Gt', toleration: '100', taint: 'xyz' }, want: false },
    { name: 'Gt, empty taint value', given: { operator: 'Gt', toleration: '100', taint: '' }, want: false },
    { name: 'Gt, taint value with a leading zero', given: { operator: 'Gt', toleration: '100', taint: '0200' }, want: false },
    { name: 'Lt, taint value with a plus sign', given: { operator: 'Lt', toleration: '100', taint: '+200' }, want: false },
    { name: 'Lt, taint value with spaces', given: { operator: 'Lt', toleration: '100', taint: ' 200 ' }, want: false },
    { name: 'Gt, both zero', given: { operator: 'Gt', toleration: '0', taint: '0' }, want: false },
    { name: 'Lt, both zero', given: { operator: 'Lt', toleration: '0', taint: '0' }, want: false },
    { name: 'Gt, max int64 as taint', given: { operator: 'Gt', toleration: '0', taint: '9223372036854775807' }, want: true },
    { name: 'Lt, min int64 as taint', given: { operator: 'Lt', toleration: '0', taint: '-9223372036854775808' }, want: true },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const { operator, toleration, taint } = row.given;
      assert.equal(
        toleratesTaint({ key: 'k', operator, value: toleration }, { key: 'k', value: taint, effect: 'NoSchedule' }, gateOn),
        row.want,
      );
    });
  }
});

describe('toleratesTaint: 64-bit boundaries', () => {
  const gt = (threshold: string, value: string): MatchRow['given'] => ({
    toleration: { key: 'k', operator: 'Gt', value: threshold },
    taint: { key: 'k', value, effect: 'NoSchedule' },
  });
  const lt = (threshold: string, value: string): MatchRow['given'] => ({
    toleration: { key: 'k', operator: 'Lt', value: threshold },
    taint: { key: 'k', value, effect: 'NoSchedule' },
  });
  runMatchRows([
    {
      name: 'Gt 9223372036854775806 tolerates 9223372036854775807, one above, exactly',
      given: gt('9223372036854775806', '9223372036854775807'),
      want: true,
    },
    {
      name: 'Lt 9223372036854775807 tolerates 9223372036854775806, one below, exactly',
      given: lt('9223372036854775807', '9223372036854775806'),
      want: true,
    },
    { name: 'Gt 9223372036854775807 does not tolerate itself', given: gt('9223372036854775807', '9223372036854775807'), want: false },
    {
      name: 'Lt -9223372036854775807 tolerates -9223372036854775808',
      given: lt('-9223372036854775807', '-9223372036854775808'),
      want: true,
    },
    {
      name: 'Gt -9223372036854775808 tolerates -9223372036854775807',
      given: gt('-9223372036854775808', '-9223372036854775807'),
      want: true,
    },
    { name: 'a taint value of 2^63 is beyond int64 and never matches', given: gt('0', '9223372036854775808'), want: false },
    { name: 'a taint value of -2^63 - 1 is beyond int64 and never matches', given: lt('0', '-9223372036854775809'), want: false },
    { name: 'a toleration value of 2^63 is beyond int64 and never matches', given: lt('9223372036854775808', '1'), want: false },
    { name: 'a twenty-digit taint value never matches', given: gt('0', '12345678901234567890'), want: false },
  ]);
});

describe('toleratesTaint: non-canonical taint values never match Gt or Lt', () => {
  const rows: { name: string; given: string }[] = [
    { name: 'a leading zero', given: '0950' },
    { name: 'a plus sign', given: '+5' },
    { name: 'minus zero', given: '-0' },
    { name: 'a leading space', given: ' 10' },
    { name: 'a decimal fraction', given: '10.5' },
    { name: 'a word', given: 'high' },
    { name: 'the empty string', given: '' },
  ];
  for (const row of rows) {
    it(`${row.name} (${JSON.stringify(row.given)}) matches neither Gt -1000 nor Lt 1000`, () => {
      const taint: Taint = { key: 'k', value: row.given, effect: 'NoSchedule' };
      assert.equal(toleratesTaint({ key: 'k', operator: 'Gt', value: '-1000' }, taint, gateOn), false);
      assert.equal(toleratesTaint({ key: 'k', operator: 'Lt', value: '1000' }, taint, gateOn), false);
    });
  }

  it('an absent taint value is the empty string and never matches Gt', () => {
    assert.equal(toleratesTaint({ key: 'k', operator: 'Gt', value: '-1' }, { key: 'k', effect: 'NoSchedule' }, gateOn), false);
  });
});

describe('toleratesTaint: the TaintTolerationComparisonOperators gate', () => {
  const taint: Taint = { key: 'sla', value: '950', effect: 'NoSchedule' };
  runMatchRows([
    {
      name: 'with the gate off a Gt that would match does not',
      given: { toleration: { key: 'sla', operator: 'Gt', value: '900' }, taint, gate: false },
      want: false,
    },
    {
      name: 'with the gate off an Lt that would match does not',
      given: { toleration: { key: 'sla', operator: 'Lt', value: '1000' }, taint, gate: false },
      want: false,
    },
    {
      name: 'with the gate on the same Gt matches',
      given: { toleration: { key: 'sla', operator: 'Gt', value: '900' }, taint },
      want: true,
    },
    {
      name: 'with the gate off Equal still matches',
      given: { toleration: { key: 'sla', operator: 'Equal', value: '950' }, taint, gate: false },
      want: true,
    },
    {
      name: 'with the gate off an empty-key Gt does not match',
      given: { toleration: { operator: 'Gt', value: '900' }, taint, gate: false },
      want: false,
    },
    {
      name: 'with the gate on an empty-key Gt matches any key, as the key check is skipped',
      given: { toleration: { operator: 'Gt', value: '900' }, taint },
      want: true,
    },
  ]);
});

describe('toleratesTaint: operator spelling, keys and effects', () => {
  const taint: Taint = { key: 'k', value: '950', effect: 'NoSchedule' };
  runMatchRows([
    {
      name: 'a lowercase gt never matches, even with the gate on',
      given: { toleration: { key: 'k', operator: 'gt', value: '900' }, taint },
      want: false,
    },
    { name: 'a lowercase exists never matches', given: { toleration: { key: 'k', operator: 'exists' }, taint }, want: false },
    { name: 'an unknown operator never matches', given: { toleration: { key: 'k', operator: 'In', value: '950' }, taint }, want: false },
    { name: 'an empty operator means Equal', given: { toleration: { key: 'k', operator: '', value: '950' }, taint }, want: true },
    { name: 'an absent operator means Equal', given: { toleration: { key: 'k', value: '950' }, taint }, want: true },
    { name: 'an absent operator with another value does not match', given: { toleration: { key: 'k', value: '951' }, taint }, want: false },
    {
      name: 'Equal compares values case-sensitively',
      given: { toleration: { key: 'k', operator: 'Equal', value: 'High' }, taint: { key: 'k', value: 'high', effect: 'NoSchedule' } },
      want: false,
    },
    {
      name: 'Equal does not compare numerically: 0950 is not 950',
      given: { toleration: { key: 'k', operator: 'Equal', value: '0950' }, taint },
      want: false,
    },
    {
      name: 'Equal with an empty value matches a taint without value',
      given: { toleration: { key: 'k', operator: 'Equal' }, taint: { key: 'k', effect: 'NoSchedule' } },
      want: true,
    },
    {
      name: 'an (invalid) empty-key Equal tolerates any taint with that value: the key check is skipped',
      given: { toleration: { key: '', operator: 'Equal', value: '950' }, taint: { key: 'other', value: '950', effect: 'NoSchedule' } },
      want: true,
    },
    {
      name: 'an empty-key Equal does not tolerate a taint with another value',
      given: { toleration: { operator: 'Equal', value: 'x' }, taint: { key: 'other', value: '950', effect: 'NoSchedule' } },
      want: false,
    },
    {
      name: 'an empty-key Exists with no effect tolerates everything',
      given: { toleration: { operator: 'Exists' }, taint: { key: 'any', value: 'v', effect: 'NoExecute' } },
      want: true,
    },
    { name: 'a different key never matches', given: { toleration: { key: 'j', operator: 'Exists' }, taint }, want: false },
    { name: 'keys compare case-sensitively', given: { toleration: { key: 'K', operator: 'Exists' }, taint }, want: false },
    {
      name: 'an empty effect matches every effect',
      given: { toleration: { key: 'k', operator: 'Exists', effect: '' }, taint: { key: 'k', effect: 'PreferNoSchedule' } },
      want: true,
    },
    {
      name: 'a different effect never matches',
      given: { toleration: { key: 'k', operator: 'Exists', effect: 'NoExecute' }, taint },
      want: false,
    },
    {
      name: 'tolerationSeconds plays no part in matching',
      given: {
        toleration: { key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: -10 },
        taint: { key: 'k', effect: 'NoExecute' },
      },
      want: true,
    },
  ]);
});

describe('tolerationsTolerateTaint', () => {
  const taint: Taint = { key: 'k', value: 'v', effect: 'NoSchedule' };
  const rows: { name: string; given: Toleration[]; want: boolean }[] = [
    { name: 'an empty list tolerates nothing', given: [], want: false },
    {
      name: 'a list tolerates when one toleration does',
      given: [
        { key: 'x', operator: 'Exists' },
        { key: 'k', operator: 'Equal', value: 'v' },
      ],
      want: true,
    },
    {
      name: 'a list of non-matching tolerations does not tolerate',
      given: [
        { key: 'x', operator: 'Exists' },
        { key: 'k', operator: 'Equal', value: 'w' },
      ],
      want: false,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(tolerationsTolerateTaint(row.given, taint, gateOn), row.want);
    });
  }

  it('passes the gate through: a Gt-only list tolerates nothing with the gate off', () => {
    const numeric: Taint = { key: 'k', value: '5', effect: 'NoSchedule' };
    assert.equal(tolerationsTolerateTaint([{ key: 'k', operator: 'Gt', value: '1' }], numeric, gateOff), false);
    assert.equal(tolerationsTolerateTaint([{ key: 'k', operator: 'Gt', value: '1' }], numeric, gateOn), true);
  });
});

describe('matchToleration', () => {
  const rows: { name: string; given: [Toleration, Toleration]; want: boolean }[] = [
    {
      name: 'identical tolerations match',
      given: [
        { key: 'k', operator: 'Equal', value: 'v', effect: 'NoSchedule' },
        { key: 'k', operator: 'Equal', value: 'v', effect: 'NoSchedule' },
      ],
      want: true,
    },
    {
      name: 'tolerationSeconds is ignored',
      given: [
        { key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 5 },
        { key: 'k', operator: 'Exists', effect: 'NoExecute' },
      ],
      want: true,
    },
    {
      name: 'absent fields equal empty strings',
      given: [{ operator: 'Exists' }, { key: '', operator: 'Exists', value: '', effect: '' }],
      want: true,
    },
    {
      name: 'an empty operator does not match Equal: operators compare literally',
      given: [
        { key: 'k', value: 'v' },
        { key: 'k', operator: 'Equal', value: 'v' },
      ],
      want: false,
    },
    {
      name: 'a different key does not match',
      given: [
        { key: 'k', operator: 'Exists' },
        { key: 'j', operator: 'Exists' },
      ],
      want: false,
    },
    {
      name: 'a different effect does not match',
      given: [
        { key: 'k', operator: 'Exists', effect: 'NoSchedule' },
        { key: 'k', operator: 'Exists' },
      ],
      want: false,
    },
    {
      name: 'a different value does not match',
      given: [
        { key: 'k', operator: 'Equal', value: 'a' },
        { key: 'k', operator: 'Equal', value: 'b' },
      ],
      want: false,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(matchToleration(...row.given), row.want);
    });
  }
});

describe('matchingTolerationIn', () => {
  // Strings that could run together if the four fields were simply joined: quotes, commas,
  // brackets and a backslash, absent next to empty.
  const part = fc.constantFrom<string | undefined>(undefined, '', 'a', 'a,', ',a', '"', '\\', '["a"]', 'a","b');
  const toleration = fc
    .record({
      key: part,
      operator: part,
      value: part,
      effect: part,
      tolerationSeconds: fc.constantFrom<number | null | undefined>(undefined, null, 0, 5),
    })
    .map((fields) => Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as Toleration);

  it('answers as matchToleration against each element would', () => {
    fc.assert(
      fc.property(fc.array(toleration, { maxLength: 8 }), toleration, (list, t) => {
        assert.equal(
          matchingTolerationIn(list)(t),
          list.some((element) => matchToleration(element, t)),
        );
      }),
      { seed: 241, numRuns: 3000 },
    );
  });
});

describe('matchTaint', () => {
  const rows: { name: string; given: [Taint, Taint]; want: boolean }[] = [
    {
      name: 'same key and effect match whatever the values',
      given: [
        { key: 'k', value: 'a', effect: 'NoSchedule' },
        { key: 'k', value: 'b', effect: 'NoSchedule' },
      ],
      want: true,
    },
    {
      name: 'a different effect does not match',
      given: [
        { key: 'k', effect: 'NoSchedule' },
        { key: 'k', effect: 'NoExecute' },
      ],
      want: false,
    },
    {
      name: 'a different key does not match',
      given: [
        { key: 'k', effect: 'NoSchedule' },
        { key: 'j', effect: 'NoSchedule' },
      ],
      want: false,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(matchTaint(...row.given), row.want);
    });
  }
});
