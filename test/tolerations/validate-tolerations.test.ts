import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Toleration } from '../../src/api/types.js';
import { aggregateMessage, errorMessage, type FieldError, type FieldErrorType } from '../../src/validation/field-errors.js';
import {
  allowsComparisonOperators,
  validateOnlyAddedTolerations,
  validateTolerations,
  validateTolerationsInAnnotations,
} from '../../src/tolerations/validate-tolerations.js';

const P = 'spec.tolerations';
const on = { allowComparisonOperators: true };
const off = { allowComparisonOperators: false };

const emptyKeyDetail = 'operator must be Exists when `key` is empty, which means "match all values and all keys"';
const secondsDetail = "effect must be 'NoExecute' when `tolerationSeconds` is set";
const labelValueFormat =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const nameFormat =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const allFour = 'supported values: "Equal", "Exists", "Lt", "Gt"';
const twoOperators = 'supported values: "Equal", "Exists"';
const threeEffects = 'supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"';
const canonical = 'must be a valid decimal integer in canonical form';

/** [cause type, rendered message] for each error, in order. */
type Want = [FieldErrorType, string][];
const rendered = (errors: readonly FieldError[]): Want => errors.map((e) => [e.type, errorMessage(e)]);

interface Row {
  name: string;
  given: { tolerations: Toleration[]; allow?: boolean };
  want: Want;
}

function runRows(rows: Row[]): void {
  for (const row of rows) {
    it(row.name, () => {
      const got = validateTolerations(row.given.tolerations, P, row.given.allow === true ? on : off);
      assert.deepEqual(rendered(got), row.want);
    });
  }
}

describe('validateTolerations: valid tolerations', () => {
  runRows([
    {
      name: 'an Equal toleration with a label value is valid',
      given: { tolerations: [{ key: 'k', operator: 'Equal', value: 'v', effect: 'NoSchedule' }] },
      want: [],
    },
    { name: 'an empty operator means Equal and is valid', given: { tolerations: [{ key: 'k', value: 'v' }] }, want: [] },
    { name: 'Equal with an empty value is not checked further', given: { tolerations: [{ key: 'k', operator: 'Equal' }] }, want: [] },
    {
      name: 'Exists with an empty key and effect tolerates everything and is valid',
      given: { tolerations: [{ operator: 'Exists' }] },
      want: [],
    },
    {
      name: 'a negative tolerationSeconds is allowed',
      given: { tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: -10 }] },
      want: [],
    },
    {
      name: 'a zero tolerationSeconds is allowed',
      given: { tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 0 }] },
      want: [],
    },
    {
      name: 'a null tolerationSeconds is unset',
      given: { tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoSchedule', tolerationSeconds: null }] },
      want: [],
    },
    {
      name: 'duplicate tolerations are not validated',
      given: {
        tolerations: [
          { key: 'k', operator: 'Exists' },
          { key: 'k', operator: 'Exists' },
        ],
      },
      want: [],
    },
    {
      name: 'Gt with a canonical value is valid when allowed',
      given: { tolerations: [{ key: 'k', operator: 'Gt', value: '950' }], allow: true },
      want: [],
    },
    {
      name: 'Lt with a negative value is valid when allowed: no label-value rules apply',
      given: { tolerations: [{ key: 'k', operator: 'Lt', value: '-5' }], allow: true },
      want: [],
    },
    {
      name: 'Gt with tolerationSeconds and NoExecute is valid',
      given: { tolerations: [{ key: 'k', operator: 'Gt', value: '5', effect: 'NoExecute', tolerationSeconds: 30 }], allow: true },
      want: [],
    },
    {
      name: 'Gt with each effect and with no effect is valid',
      given: {
        tolerations: ['NoSchedule', 'PreferNoSchedule', 'NoExecute', ''].map((effect) => ({
          key: 'k',
          operator: 'Gt',
          value: '1',
          effect,
        })),
        allow: true,
      },
      want: [],
    },
  ]);
});

describe('validateTolerations: one upstream error case each (pkg/apis/core/validation, validateTolerations)', () => {
  runRows([
    {
      name: 'row 1: a key with a bad character is Invalid at .key',
      given: { tolerations: [{ key: 'bad key', operator: 'Exists' }] },
      want: [['FieldValueInvalid', `${P}[0].key: Invalid value: "bad key": ${nameFormat}`]],
    },
    {
      name: 'row 2: an empty key with Equal is Invalid at .operator with the operator as bad value',
      given: { tolerations: [{ operator: 'Equal', value: 'v' }] },
      want: [['FieldValueInvalid', `${P}[0].operator: Invalid value: "Equal": ${emptyKeyDetail}`]],
    },
    {
      name: 'row 2: an empty key with no operator prints the empty operator quoted',
      given: { tolerations: [{}] },
      want: [['FieldValueInvalid', `${P}[0].operator: Invalid value: "": ${emptyKeyDetail}`]],
    },
    {
      name: 'row 3: tolerationSeconds with NoSchedule is Invalid at .effect',
      given: { tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoSchedule', tolerationSeconds: 60 }] },
      want: [['FieldValueInvalid', `${P}[0].effect: Invalid value: "NoSchedule": ${secondsDetail}`]],
    },
    {
      name: 'row 3: tolerationSeconds with PreferNoSchedule is Invalid at .effect',
      given: { tolerations: [{ key: 'k', operator: 'Exists', effect: 'PreferNoSchedule', tolerationSeconds: 60 }] },
      want: [['FieldValueInvalid', `${P}[0].effect: Invalid value: "PreferNoSchedule": ${secondsDetail}`]],
    },
    {
      name: 'row 3: tolerationSeconds with an empty effect is Invalid too',
      given: { tolerations: [{ key: 'k', operator: 'Exists', tolerationSeconds: 60 }] },
      want: [['FieldValueInvalid', `${P}[0].effect: Invalid value: "": ${secondsDetail}`]],
    },
    {
      name: 'a bad Equal value is reported at .operator with the value as bad value',
      given: { tolerations: [{ key: 'k', operator: 'Equal', value: 'a b' }] },
      want: [['FieldValueInvalid', `${P}[0].operator: Invalid value: "a b": ${labelValueFormat}`]],
    },
    {
      name: 'a 64-byte value gives one error whose messages are joined with ";"',
      given: { tolerations: [{ key: 'k', value: `${'v'.repeat(63)}-` }] },
      want: [
        ['FieldValueInvalid', `${P}[0].operator: Invalid value: "${'v'.repeat(63)}-": must be no more than 63 bytes;${labelValueFormat}`],
      ],
    },
    {
      name: 'Exists with a value is Invalid at .operator with the value as bad value',
      given: { tolerations: [{ key: 'k', operator: 'Exists', value: 'v' }] },
      want: [['FieldValueInvalid', `${P}[0].operator: Invalid value: "v": value must be empty when \`operator\` is 'Exists'`]],
    },
    {
      name: 'Gt without the option is NotSupported listing all four operators, value unchecked',
      given: { tolerations: [{ key: 'k', operator: 'Gt', value: 'not-a-number' }] },
      want: [['FieldValueNotSupported', `${P}[0].operator: Unsupported value: "Gt": ${allFour}`]],
    },
    {
      name: 'Lt without the option is NotSupported too',
      given: { tolerations: [{ key: 'k', operator: 'Lt', value: '5' }] },
      want: [['FieldValueNotSupported', `${P}[0].operator: Unsupported value: "Lt": ${allFour}`]],
    },
    {
      name: 'Gt with a leading zero is Invalid at .value',
      given: { tolerations: [{ key: 'k', operator: 'Gt', value: '0550' }], allow: true },
      want: [['FieldValueInvalid', `${P}[0].value: Invalid value: "0550": ${canonical}`]],
    },
    {
      name: "Gt with an out-of-range canonical value is Invalid at .value with Go's text",
      given: { tolerations: [{ key: 'k', operator: 'Gt', value: '9223372036854775808' }], allow: true },
      want: [
        [
          'FieldValueInvalid',
          `${P}[0].value: Invalid value: "9223372036854775808": strconv.ParseInt: parsing "9223372036854775808": value out of range`,
        ],
      ],
    },
    {
      name: 'a lower-case operator is NotSupported listing Equal and Exists only',
      given: { tolerations: [{ key: 'k', operator: 'exists' }] },
      want: [['FieldValueNotSupported', `${P}[0].operator: Unsupported value: "exists": ${twoOperators}`]],
    },
    {
      name: 'an unknown operator lists two operators even with the option on',
      given: { tolerations: [{ key: 'k', operator: 'GreaterThan', value: '5' }], allow: true },
      want: [['FieldValueNotSupported', `${P}[0].operator: Unsupported value: "GreaterThan": ${twoOperators}`]],
    },
    {
      name: 'row 5: an effect in the wrong case is NotSupported',
      given: { tolerations: [{ key: 'k', operator: 'Exists', effect: 'noschedule' }] },
      want: [['FieldValueNotSupported', `${P}[0].effect: Unsupported value: "noschedule": ${threeEffects}`]],
    },
    {
      name: 'row 5: an unknown effect is NotSupported',
      given: { tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoScheduleNoAdmit' }] },
      want: [['FieldValueNotSupported', `${P}[0].effect: Unsupported value: "NoScheduleNoAdmit": ${threeEffects}`]],
    },
  ]);
});

describe('validateTolerations: numeric values give 0, 1 or 2 errors, all at .value', () => {
  const value = (v: string) => `${P}[0].value: Invalid value: ${JSON.stringify(v)}: `;
  const rows: { name: string; given: string; want: string[] }[] = [
    { name: '"950" gives no error', given: '950', want: [] },
    { name: '"-0" gives only the canonical-form error', given: '-0', want: [value('-0') + canonical] },
    { name: '"+5" gives only the canonical-form error', given: '+5', want: [value('+5') + canonical] },
    {
      name: '"9223372036854775808" gives only the range error',
      given: '9223372036854775808',
      want: [`${value('9223372036854775808')}strconv.ParseInt: parsing "9223372036854775808": value out of range`],
    },
    {
      name: '"abc" gives both errors, canonical form first',
      given: 'abc',
      want: [value('abc') + canonical, `${value('abc')}strconv.ParseInt: parsing "abc": invalid syntax`],
    },
    {
      name: '"" gives "must be non-empty" and the syntax error',
      given: '',
      want: [`${value('')}must be non-empty`, `${value('')}strconv.ParseInt: parsing "": invalid syntax`],
    },
    {
      name: '"1_000" gives both errors',
      given: '1_000',
      want: [value('1_000') + canonical, `${value('1_000')}strconv.ParseInt: parsing "1_000": invalid syntax`],
    },
    {
      name: '" 5" gives both errors',
      given: ' 5',
      want: [value(' 5') + canonical, `${value(' 5')}strconv.ParseInt: parsing " 5": invalid syntax`],
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const got = validateTolerations([{ key: 'k', operator: 'Gt', value: row.given }], P, on);
      assert.deepEqual(got.map(errorMessage), row.want);
      assert.ok(got.every((e) => e.type === 'FieldValueInvalid' && e.field === `${P}[0].value`));
    });
  }
});

describe('validateTolerations: combinations report every failing check, in order', () => {
  runRows([
    {
      name: 'an empty-key Gt with the option on reports the key rule and still checks the value',
      given: { tolerations: [{ operator: 'Gt', value: '05' }], allow: true },
      want: [
        ['FieldValueInvalid', `${P}[0].operator: Invalid value: "Gt": ${emptyKeyDetail}`],
        ['FieldValueInvalid', `${P}[0].value: Invalid value: "05": ${canonical}`],
      ],
    },
    {
      name: 'an empty-key Gt with the option off reports Invalid then NotSupported at .operator',
      given: { tolerations: [{ operator: 'Gt', value: '5' }] },
      want: [
        ['FieldValueInvalid', `${P}[0].operator: Invalid value: "Gt": ${emptyKeyDetail}`],
        ['FieldValueNotSupported', `${P}[0].operator: Unsupported value: "Gt": ${allFour}`],
      ],
    },
    {
      name: 'Gt with tolerationSeconds and NoSchedule is rejected by the effect rule',
      given: { tolerations: [{ key: 'k', operator: 'Gt', value: '5', effect: 'NoSchedule', tolerationSeconds: 5 }], allow: true },
      want: [['FieldValueInvalid', `${P}[0].effect: Invalid value: "NoSchedule": ${secondsDetail}`]],
    },
    {
      name: 'a bad key, an unknown operator and an unknown effect with seconds are all reported in table order',
      given: { tolerations: [{ key: '-k', operator: 'In', effect: 'Never', tolerationSeconds: 1 }] },
      want: [
        ['FieldValueInvalid', `${P}[0].key: Invalid value: "-k": ${nameFormat}`],
        ['FieldValueInvalid', `${P}[0].effect: Invalid value: "Never": ${secondsDetail}`],
        ['FieldValueNotSupported', `${P}[0].operator: Unsupported value: "In": ${twoOperators}`],
        ['FieldValueNotSupported', `${P}[0].effect: Unsupported value: "Never": ${threeEffects}`],
      ],
    },
    {
      name: 'each toleration is checked at its own index',
      given: {
        tolerations: [
          { key: 'ok', operator: 'Exists' },
          { key: 'k', operator: 'Exists', value: 'x' },
        ],
      },
      want: [['FieldValueInvalid', `${P}[1].operator: Invalid value: "x": value must be empty when \`operator\` is 'Exists'`]],
    },
  ]);
});

describe('validateTolerations: key messages', () => {
  const rows: { name: string; given: string; want: string[] }[] = [
    { name: 'a 64-byte key is too long', given: 'k'.repeat(64), want: ['name part must be no more than 63'] },
    { name: 'a key with a bad character fails the format', given: 'a:b', want: ['name part must consist of alphanumeric characters'] },
    {
      name: 'a key with an upper-case prefix fails the prefix rule',
      given: 'Example.com/key',
      want: ['prefix part a lowercase RFC 1123 subdomain'],
    },
    { name: 'a key with an empty prefix is reported', given: '/key', want: ['prefix part must be non-empty'] },
    { name: 'a key with two slashes gives one message', given: 'a/b/c', want: ['a valid label key must consist of'] },
    {
      name: 'a too long key with a bad character gives one error per message',
      given: `${'k'.repeat(64)}!`,
      want: ['name part must be no more than 63', 'name part must consist of'],
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const got = validateTolerations([{ key: row.given, operator: 'Exists' }], P, off);
      assert.equal(got.length, row.want.length);
      got.forEach((error, i) => {
        assert.equal(error.field, `${P}[0].key`);
        assert.equal(error.type, 'FieldValueInvalid');
        assert.equal(error.badValue, row.given);
        assert.ok(error.detail.startsWith(row.want[i]!), error.detail);
      });
    });
  }
});

describe('validateOnlyAddedTolerations', () => {
  const forbiddenMessage = `${P}: Forbidden: existing toleration can not be modified except its tolerationSeconds`;
  const base: Toleration = { key: 'k', operator: 'Equal', value: 'v', effect: 'NoExecute', tolerationSeconds: 60 };
  const rows: { name: string; given: { old: Toleration[]; new: Toleration[] }; want: string[] }[] = [
    { name: 'an unchanged list is allowed', given: { old: [base], new: [base] }, want: [] },
    { name: 'adding a toleration is allowed', given: { old: [base], new: [base, { key: 'x', operator: 'Exists' }] }, want: [] },
    {
      name: 'reordering is allowed',
      given: { old: [base, { key: 'x', operator: 'Exists' }], new: [{ key: 'x', operator: 'Exists' }, base] },
      want: [],
    },
    { name: 'changing tolerationSeconds is allowed', given: { old: [base], new: [{ ...base, tolerationSeconds: 10 }] }, want: [] },
    { name: 'dropping tolerationSeconds is allowed', given: { old: [base], new: [{ ...base, tolerationSeconds: undefined }] }, want: [] },
    {
      name: 'setting tolerationSeconds from unset is allowed',
      given: { old: [{ ...base, tolerationSeconds: null }], new: [base] },
      want: [],
    },
    { name: 'one new entry may match two identical old ones', given: { old: [base, base], new: [base] }, want: [] },
    { name: 'an absent operator equals an empty one', given: { old: [{ key: 'k', operator: '' }], new: [{ key: 'k' }] }, want: [] },
    { name: 'removing a toleration is Forbidden at the list path', given: { old: [base], new: [] }, want: [forbiddenMessage] },
    { name: 'changing the value is Forbidden', given: { old: [base], new: [{ ...base, value: 'w' }] }, want: [forbiddenMessage] },
    {
      name: 'changing the effect is Forbidden',
      given: { old: [base], new: [{ ...base, effect: 'NoSchedule', tolerationSeconds: undefined }] },
      want: [forbiddenMessage],
    },
    {
      name: 'filling in an empty operator with Equal is Forbidden',
      given: { old: [{ key: 'k', value: 'v' }], new: [{ key: 'k', operator: 'Equal', value: 'v' }] },
      want: [forbiddenMessage],
    },
    {
      name: 'a Forbidden stops the check: the new list is not validated',
      given: { old: [base], new: [{ key: 'k', operator: 'Exists', value: 'x' }] },
      want: [forbiddenMessage],
    },
    {
      name: 'when nothing is forbidden the new list is validated',
      given: { old: [base], new: [base, { key: 'k', operator: 'Exists', value: 'x' }] },
      want: [`${P}[1].operator: Invalid value: "x": value must be empty when \`operator\` is 'Exists'`],
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const got = validateOnlyAddedTolerations(row.given.new, row.given.old, P, off);
      assert.deepEqual(got.map(errorMessage), row.want);
    });
  }

  it('a Forbidden carries the FieldValueForbidden cause type', () => {
    assert.equal(validateOnlyAddedTolerations([], [base], P, off)[0]?.type, 'FieldValueForbidden');
  });

  it('errors found twice on UPDATE render once in the aggregate message', () => {
    const bad: Toleration[] = [{ key: 'k', operator: 'Gt', value: '1' }];
    const errors = [...validateTolerations(bad, P, off), ...validateOnlyAddedTolerations(bad, [], P, off)];
    assert.equal(errors.length, 2);
    assert.equal(aggregateMessage(errors), `${P}[0].operator: Unsupported value: "Gt": ${allFour}`);
  });
});

describe('allowsComparisonOperators (the ratchet)', () => {
  const rows: { name: string; given: { gate: boolean; old: Toleration[] | undefined }; want: boolean }[] = [
    { name: 'gate on, no old object: allowed', given: { gate: true, old: undefined }, want: true },
    { name: 'gate off, no old object (CREATE): refused', given: { gate: false, old: undefined }, want: false },
    { name: 'gate off, old object without Gt/Lt: refused', given: { gate: false, old: [{ key: 'k', operator: 'Exists' }] }, want: false },
    {
      name: 'gate off, old object with a Gt: allowed',
      given: { gate: false, old: [{ key: 'k', operator: 'Gt', value: '1' }] },
      want: true,
    },
    {
      name: 'gate off, old object with an Lt: allowed',
      given: { gate: false, old: [{ key: 'k', operator: 'Lt', value: '1' }] },
      want: true,
    },
    {
      name: 'gate off, a lower-case gt does not count',
      given: { gate: false, old: [{ key: 'k', operator: 'gt', value: '1' }] },
      want: false,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(allowsComparisonOperators({ TaintTolerationComparisonOperators: row.given.gate }, row.given.old), row.want);
    });
  }
});

describe('validateTolerationsInAnnotations', () => {
  const A = 'metadata.annotations';
  const key = 'scheduler.alpha.kubernetes.io/tolerations';
  const rows: { name: string; given: Record<string, string> | undefined; want: string[] }[] = [
    { name: 'no annotations: nothing to check', given: undefined, want: [] },
    { name: 'an empty annotation is skipped', given: { [key]: '' }, want: [] },
    { name: 'a valid list passes', given: { [key]: '[{"key":"k","operator":"Exists","effect":"NoSchedule"}]' }, want: [] },
    { name: 'null is an empty list', given: { [key]: 'null' }, want: [] },
    {
      name: 'a bad toleration is reported under the annotation path',
      given: { [key]: '[{"key":"k","operator":"Exists","value":"x"}]' },
      want: [`${A}.${key}[0].operator: Invalid value: "x": value must be empty when \`operator\` is 'Exists'`],
    },
    {
      name: 'a Gt follows the same option',
      given: { [key]: '[{"key":"k","operator":"Gt","value":"1"}]' },
      want: [`${A}.${key}[0].operator: Unsupported value: "Gt": ${allFour}`],
    },
    {
      name: "bad JSON is Invalid at the annotations path with the key as bad value and Go's error",
      given: { [key]: '[{' },
      want: [`${A}: Invalid value: "${key}": unexpected end of JSON input`],
    },
    {
      name: 'a JSON object is a type error',
      given: { [key]: '{"key":"k"}' },
      want: [`${A}: Invalid value: "${key}": json: cannot unmarshal object into Go value of type []core.Toleration`],
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.deepEqual(validateTolerationsInAnnotations(row.given, A, off).map(errorMessage), row.want);
    });
  }
});
