import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { int64Max, int64Min, parseInt64 } from '../../src/api/go-strconv.js';
import { isDecimalInteger, parseCanonicalInt64 } from '../../src/tolerations/numeric.js';

const notCanonical = 'must be a valid decimal integer in canonical form';

describe('isDecimalInteger (content.IsDecimalInteger)', () => {
  const rows: { name: string; given: string; want: string[] }[] = [
    { name: 'zero alone is canonical', given: '0', want: [] },
    { name: 'a positive integer without leading zeros is canonical', given: '950', want: [] },
    { name: 'a negative integer is canonical', given: '-5', want: [] },
    { name: 'a value beyond int64 is still canonical: the check is about form, not range', given: '12345678901234567890', want: [] },
    { name: 'the empty string must be non-empty', given: '', want: ['must be non-empty'] },
    { name: 'negative zero is not canonical', given: '-0', want: [notCanonical] },
    { name: 'a leading zero is not canonical', given: '0550', want: [notCanonical] },
    { name: 'double zero is not canonical', given: '00', want: [notCanonical] },
    { name: 'a negative leading zero is not canonical', given: '-05', want: [notCanonical] },
    { name: 'a plus sign is not canonical', given: '+5', want: [notCanonical] },
    { name: 'a lone minus is not canonical', given: '-', want: [notCanonical] },
    { name: 'leading whitespace is not canonical', given: ' 5', want: [notCanonical] },
    { name: 'trailing whitespace is not canonical', given: '5 ', want: [notCanonical] },
    { name: 'a trailing newline is not canonical', given: '5\n', want: [notCanonical] },
    { name: 'a decimal point is not canonical', given: '1.5', want: [notCanonical] },
    { name: 'an exponent is not canonical', given: '1e3', want: [notCanonical] },
    { name: 'a hex prefix is not canonical', given: '0x1F', want: [notCanonical] },
    { name: 'an underscore separator is not canonical', given: '1_000', want: [notCanonical] },
    { name: 'letters are not canonical', given: 'abc', want: [notCanonical] },
    { name: 'non-ASCII digits are not canonical', given: '٣', want: [notCanonical] },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.deepEqual(isDecimalInteger(row.given), row.want);
    });
  }
});

describe('parseInt64 (strconv.ParseInt(s, 10, 64))', () => {
  const syntax = (s: string) => `strconv.ParseInt: parsing ${JSON.stringify(s)}: invalid syntax`;
  const range = (s: string) => `strconv.ParseInt: parsing ${JSON.stringify(s)}: value out of range`;
  const rows: { name: string; given: string; want: { value: bigint } | { error: string } }[] = [
    { name: 'a plain integer parses', given: '950', want: { value: 950n } },
    { name: 'leading zeros are accepted', given: '0550', want: { value: 550n } },
    { name: 'a plus sign is accepted', given: '+5', want: { value: 5n } },
    { name: 'negative zero is accepted as zero', given: '-0', want: { value: 0n } },
    { name: 'the int64 maximum parses', given: '9223372036854775807', want: { value: int64Max } },
    { name: 'the int64 minimum parses', given: '-9223372036854775808', want: { value: int64Min } },
    { name: 'one past the int64 maximum is out of range', given: '9223372036854775808', want: { error: range('9223372036854775808') } },
    { name: 'one below the int64 minimum is out of range', given: '-9223372036854775809', want: { error: range('-9223372036854775809') } },
    { name: 'a value beyond uint64 is out of range', given: '12345678901234567890123', want: { error: range('12345678901234567890123') } },
    { name: 'the empty string is a syntax error', given: '', want: { error: syntax('') } },
    { name: 'a lone sign is a syntax error', given: '-', want: { error: syntax('-') } },
    { name: 'letters are a syntax error', given: 'abc', want: { error: syntax('abc') } },
    { name: 'leading whitespace is a syntax error', given: ' 5', want: { error: syntax(' 5') } },
    { name: 'an underscore is a syntax error with an explicit base 10', given: '1_000', want: { error: syntax('1_000') } },
    { name: 'a hex prefix is a syntax error with an explicit base 10', given: '0x1F', want: { error: syntax('0x1F') } },
    { name: 'a decimal point is a syntax error', given: '1.5', want: { error: syntax('1.5') } },
    {
      name: 'an overflow met before a bad character is a range error, as Go reports the first problem left to right',
      given: '99999999999999999999x',
      want: { error: range('99999999999999999999x') },
    },
    {
      name: 'a bad character met before the overflow is a syntax error',
      given: '9x9999999999999999999',
      want: { error: syntax('9x9999999999999999999') },
    },
    {
      name: 'a value that fits uint64 but not int64 and then a bad character is a syntax error',
      given: '9223372036854775808x',
      want: { error: syntax('9223372036854775808x') },
    },
    {
      name: 'a control character is Go-quoted in the message',
      given: '\t5',
      want: { error: 'strconv.ParseInt: parsing "\\t5": invalid syntax' },
    },
    { name: 'many leading zeros are still zeros', given: `-${'0'.repeat(40)}7`, want: { value: -7n } },
    { name: 'leading zeros only are zero', given: '0000', want: { value: 0n } },
    { name: 'a bad character after leading zeros is a syntax error', given: '000x', want: { error: syntax('000x') } },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const got = parseInt64(row.given);
      if ('value' in row.want) {
        assert.equal(got.value, row.want.value);
        assert.equal(got.error, undefined);
      } else {
        assert.equal(got.error, row.want.error);
        assert.equal(got.value, undefined);
      }
    });
  }
});

describe('parseInt64 on a value a hostile pod may make megabytes long', () => {
  it('steps over 3 million leading zeros in one cheap pass', () => {
    const started = process.cpuUsage();
    assert.equal(parseInt64(`${'0'.repeat(3_000_000)}42`).value, 42n);
    const used = process.cpuUsage(started);
    // About 10 ms (BigInt arithmetic on each zero: 20 to 50 ms); the bound leaves room for a busy machine.
    assert.ok(used.user + used.system < 200_000, `${((used.user + used.system) / 1000).toFixed(0)} ms`);
  });
});

describe('parseCanonicalInt64: what Gt/Lt matching accepts', () => {
  const rows: { name: string; given: string; want: bigint | undefined }[] = [
    { name: 'a canonical in-range value is accepted', given: '-42', want: -42n },
    { name: 'a canonical value out of int64 range is refused', given: '9223372036854775808', want: undefined },
    { name: 'a non-canonical value that ParseInt accepts is refused', given: '0950', want: undefined },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(parseCanonicalInt64(row.given), row.want);
    });
  }
});
