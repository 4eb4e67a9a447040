import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Toleration } from '../../src/api/types.js';
import {
  decodeParsedTolerations,
  goFieldType,
  goUnmarshalTypeError,
  unmarshalTolerations,
  type TolerationListDecoding,
  type TolerationTypeMismatch,
} from '../../src/tolerations/go-json-tolerations.js';

describe('unmarshalTolerations: json.Unmarshal into []core.Toleration', () => {
  const rows: { name: string; given: string; want: { tolerations: Toleration[] } | { error: string } }[] = [
    {
      name: 'decodes the five fields',
      given: '[{"key":"k","operator":"Equal","value":"v","effect":"NoExecute","tolerationSeconds":30}]',
      want: { tolerations: [{ key: 'k', operator: 'Equal', value: 'v', effect: 'NoExecute', tolerationSeconds: 30 }] },
    },
    {
      name: 'matches field names case-insensitively, as Go does',
      given: '[{"KEY":"k","Operator":"Exists"}]',
      want: { tolerations: [{ key: 'k', operator: 'Exists' }] },
    },
    { name: 'ignores unknown fields', given: '[{"key":"k","colour":"red"}]', want: { tolerations: [{ key: 'k' }] } },
    { name: 'a null element is an empty toleration', given: '[null]', want: { tolerations: [{}] } },
    { name: 'a null string field leaves it unset', given: '[{"key":null}]', want: { tolerations: [{}] } },
    { name: 'whitespace around values is allowed', given: ' [ { "key" : "k" } ] \n', want: { tolerations: [{ key: 'k' }] } },
    {
      name: 'a string instead of a list',
      given: '"k"',
      want: { error: 'json: cannot unmarshal string into Go value of type []core.Toleration' },
    },
    { name: 'a number element', given: '[1]', want: { error: 'json: cannot unmarshal number into Go value of type core.Toleration' } },
    {
      name: 'a number key',
      given: '[{"key":1}]',
      want: { error: 'json: cannot unmarshal number into Go struct field Toleration.Key of type string' },
    },
    {
      name: 'a bool operator names its Go type',
      given: '[{"operator":true}]',
      want: { error: 'json: cannot unmarshal bool into Go struct field Toleration.Operator of type core.TolerationOperator' },
    },
    {
      name: 'an array effect names its Go type',
      given: '[{"effect":[]}]',
      want: { error: 'json: cannot unmarshal array into Go struct field Toleration.Effect of type core.TaintEffect' },
    },
    {
      name: 'a fractional tolerationSeconds names the literal',
      given: '[{"tolerationSeconds":1.5}]',
      want: { error: 'json: cannot unmarshal number 1.5 into Go struct field Toleration.TolerationSeconds of type int64' },
    },
    {
      name: 'a string tolerationSeconds',
      given: '[{"tolerationSeconds":"30"}]',
      want: { error: 'json: cannot unmarshal string into Go struct field Toleration.TolerationSeconds of type int64' },
    },
    {
      name: 'the first type error wins',
      given: '[{"key":1},{"value":2}]',
      want: { error: 'json: cannot unmarshal number into Go struct field Toleration.Key of type string' },
    },
    { name: 'a syntax error anywhere beats an earlier type error', given: '[{"key":1},', want: { error: 'unexpected end of JSON input' } },
    {
      name: 'a later key that folds to the same field wins, as Go assigns in order',
      given: '[{"key":"x","KEY":"y"}]',
      want: { tolerations: [{ key: 'y' }] },
    },
    { name: 'the Kelvin sign folds to k', given: '[{"\u212Aey":"k"}]', want: { tolerations: [{ key: 'k' }] } },
    {
      name: 'a null tolerationSeconds after a number unsets it',
      given: '[{"tolerationSeconds":5,"TolerationSeconds":null}]',
      want: { tolerations: [{}] },
    },
    {
      name: 'empty strings are left out, as the API server serialises them',
      given: '[{"key":"k","value":"","effect":""}]',
      want: { tolerations: [{ key: 'k' }] },
    },
    { name: 'null is the empty list', given: 'null', want: { tolerations: [] } },
    {
      name: 'the largest int64 tolerationSeconds is accepted, read as the nearest double',
      given: '[{"tolerationSeconds":9223372036854775807}]',
      want: { tolerations: [{ tolerationSeconds: Number(2n ** 63n - 1n) }] },
    },
    {
      name: 'a tolerationSeconds beyond int64 names the literal',
      given: '[{"tolerationSeconds":9223372036854775808}]',
      want: { error: 'json: cannot unmarshal number 9223372036854775808 into Go struct field Toleration.TolerationSeconds of type int64' },
    },
    {
      name: 'a whole tolerationSeconds with an exponent names the literal',
      given: '[{"tolerationSeconds":1e3}]',
      want: { error: 'json: cannot unmarshal number 1e3 into Go struct field Toleration.TolerationSeconds of type int64' },
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.deepEqual(unmarshalTolerations(row.given, 'core'), row.want);
    });
  }
});

describe('unmarshalTolerations: json.Unmarshal into []v1.Toleration names the v1 types', () => {
  const rows: { name: string; given: string; want: { error: string } }[] = [
    {
      name: 'a list of the wrong type',
      given: '{}',
      want: { error: 'json: cannot unmarshal object into Go value of type []v1.Toleration' },
    },
    {
      name: 'an element of the wrong type',
      given: '["k"]',
      want: { error: 'json: cannot unmarshal string into Go value of type v1.Toleration' },
    },
    {
      name: 'an operator of the wrong type',
      given: '[{"operator":1}]',
      want: { error: 'json: cannot unmarshal number into Go struct field Toleration.operator of type v1.TolerationOperator' },
    },
    {
      name: 'an effect of the wrong type',
      given: '[{"effect":{}}]',
      want: { error: 'json: cannot unmarshal object into Go struct field Toleration.effect of type v1.TaintEffect' },
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.deepEqual(unmarshalTolerations(row.given, 'v1'), row.want);
    });
  }
});

describe('decodeParsedTolerations: a parsed value, exact field names', () => {
  const rows: { name: string; given: unknown; want: TolerationListDecoding }[] = [
    { name: "null is Go's nil slice, kept apart from the empty list", given: null, want: { tolerations: null } },
    { name: 'an empty list', given: [], want: { tolerations: [] } },
    {
      name: 'fields come out in declaration order without empty strings',
      given: [{ tolerationSeconds: 60, effect: 'NoExecute', value: '', operator: 'Equal', key: 'k', extra: true }],
      want: { tolerations: [{ key: 'k', operator: 'Equal', effect: 'NoExecute', tolerationSeconds: 60 }] },
    },
    { name: 'exact field names do not fold case', given: [{ Key: 'k', key: 'x' }], want: { tolerations: [{ key: 'x' }] } },
    { name: 'a null element is an empty toleration', given: [null], want: { tolerations: [{}] } },
    { name: 'a list of the wrong type has no index', given: { key: 'k' }, want: { mismatch: { got: 'object' } } },
    { name: 'an element of the wrong type has no field', given: [{}, 'k'], want: { mismatch: { index: 1, got: 'string' } } },
    { name: 'a bool operator', given: [{ operator: true }], want: { mismatch: { index: 0, field: 'operator', got: 'bool' } } },
    { name: 'a list as a value', given: [{ value: ['v'] }], want: { mismatch: { index: 0, field: 'value', got: 'array' } } },
    {
      name: 'a fractional tolerationSeconds names the number',
      given: [{ tolerationSeconds: 1.5 }],
      want: { mismatch: { index: 0, field: 'tolerationSeconds', got: 'number 1.5' } },
    },
    {
      name: 'a tolerationSeconds of 2^63 is out of int64 range, named as JavaScript prints it',
      given: [{ tolerationSeconds: 2 ** 63 }],
      want: { mismatch: { index: 0, field: 'tolerationSeconds', got: 'number 9223372036854776000' } },
    },
    {
      name: 'a string tolerationSeconds',
      given: [{ tolerationSeconds: '30' }],
      want: { mismatch: { index: 0, field: 'tolerationSeconds', got: 'string' } },
    },
    {
      name: 'the first mismatch in document order wins',
      given: [{ key: 1, value: 2 }, { effect: 3 }],
      want: { mismatch: { index: 0, field: 'key', got: 'number' } },
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.deepEqual(decodeParsedTolerations(row.given), row.want);
    });
  }
});

describe('a mistyped field is named as kube-apiserver names it', () => {
  it("core.Toleration has no json tags, so a pod annotation's error names the Go field: Toleration.TolerationSeconds (kube-apiserver v1.35.8)", () => {
    assert.deepEqual(unmarshalTolerations('[{"key":"k","operator":"Exists","tolerationSeconds":"5"}]', 'core'), {
      error: 'json: cannot unmarshal string into Go struct field Toleration.TolerationSeconds of type int64',
    });
  });
  it("v1.Toleration's json tags name a namespace annotation's field: Toleration.tolerationSeconds", () => {
    assert.deepEqual(unmarshalTolerations('[{"key":"k","operator":"Exists","tolerationSeconds":"5"}]', 'v1'), {
      error: 'json: cannot unmarshal string into Go struct field Toleration.tolerationSeconds of type int64',
    });
  });
});

describe('goUnmarshalTypeError and goFieldType', () => {
  const rows: { name: string; given: TolerationTypeMismatch; want: string }[] = [
    { name: 'the list itself', given: { got: 'string' }, want: 'json: cannot unmarshal string into Go value of type []v1.Toleration' },
    { name: 'an element', given: { index: 2, got: 'bool' }, want: 'json: cannot unmarshal bool into Go value of type v1.Toleration' },
    {
      name: 'a field',
      given: { index: 0, field: 'tolerationSeconds', got: 'number 1.5' },
      want: 'json: cannot unmarshal number 1.5 into Go struct field Toleration.tolerationSeconds of type int64',
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(goUnmarshalTypeError(row.given, 'v1'), row.want);
    });
  }

  it("names each field's Go type in the package given", () => {
    const fields = ['key', 'operator', 'value', 'effect', 'tolerationSeconds'] as const;
    assert.deepEqual(
      fields.map((field) => goFieldType(field, 'core')),
      ['string', 'core.TolerationOperator', 'string', 'core.TaintEffect', 'int64'],
    );
    assert.deepEqual(
      fields.map((field) => goFieldType(field, 'v1')),
      ['string', 'v1.TolerationOperator', 'string', 'v1.TaintEffect', 'int64'],
    );
  });
});
