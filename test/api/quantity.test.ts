import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  addQuantities,
  compareQuantities,
  isPositive,
  isPositiveQuantity,
  maxAlignmentDigits,
  parseQuantity,
  parseQuantityString,
  zeroQuantity,
  type Quantity,
} from '../../src/api/quantity.js';

/** The exact value of a quantity as a plain decimal string, for readable expectations. */
function plain(q: Quantity): string {
  const negative = q.coefficient < 0n;
  const digits = (negative ? -q.coefficient : q.coefficient).toString();
  let text: string;
  if (q.exponent >= 0) {
    text = digits + '0'.repeat(q.exponent);
  } else {
    const padded = digits.padStart(-q.exponent + 1, '0');
    text = `${padded.slice(0, q.exponent)}.${padded.slice(q.exponent)}`;
  }
  return negative ? `-${text}` : text;
}

function mustParse(text: string): Quantity {
  const q = parseQuantityString(text);
  assert.ok(q, `${text} should parse`);
  return q;
}

describe('parseQuantityString: the upstream TestQuantityParse table', () => {
  const rows: { name: string; given: string; want: string }[] = [
    // Zeros with every suffix.
    ...['0', '0n', '0u', '0m', '0Ki', '0k', '0Mi', '0M', '0Gi', '0G', '0Ti', '0T'].map((given) => ({
      name: `${given} is zero`,
      given,
      want: '0',
    })),
    { name: 'a number without suffix is allowed', given: '1', want: '1' },
    // Binary suffixes.
    { name: '1Ki is 1024', given: '1Ki', want: '1024' },
    { name: '8Ki is 8 × 1024', given: '8Ki', want: '8192' },
    { name: '7Mi is 7 × 2^20', given: '7Mi', want: String(7 * 2 ** 20) },
    { name: '6Gi is 6 × 2^30', given: '6Gi', want: String(6 * 2 ** 30) },
    { name: '5Ti is 5 × 2^40', given: '5Ti', want: String(5 * 2 ** 40) },
    { name: '4Pi is 4 × 2^50', given: '4Pi', want: String(4n * 2n ** 50n) },
    { name: '3Ei is 3 × 2^60', given: '3Ei', want: String(3n * 2n ** 60n) },
    { name: '10Ti is 10 × 2^40', given: '10Ti', want: String(10 * 2 ** 40) },
    { name: '100Ti is 100 × 2^40', given: '100Ti', want: String(100n * 2n ** 40n) },
    // Decimal suffixes.
    { name: '5n is five nano', given: '5n', want: '0.000000005' },
    { name: '4u is four micro', given: '4u', want: '0.000004' },
    { name: '3m is three milli', given: '3m', want: '0.003' },
    { name: '9 is nine', given: '9', want: '9' },
    { name: '8k is 8000', given: '8k', want: '8000' },
    { name: '50k is 50000', given: '50k', want: '50000' },
    { name: '7M is 7 × 10^6', given: '7M', want: '7000000' },
    { name: '6G is 6 × 10^9', given: '6G', want: '6000000000' },
    { name: '5T is 5 × 10^12', given: '5T', want: '5000000000000' },
    { name: '40T is 4 × 10^13', given: '40T', want: '40000000000000' },
    { name: '300T is 3 × 10^14', given: '300T', want: '300000000000000' },
    { name: '2P is 2 × 10^15', given: '2P', want: '2000000000000000' },
    { name: 'E alone is exa, 10^18', given: '1E', want: '1000000000000000000' },
    // Decimal exponents.
    { name: '1E-3 is a decimal exponent', given: '1E-3', want: '0.001' },
    { name: '1e3 is a decimal exponent', given: '1e3', want: '1000' },
    { name: '1E6 is a decimal exponent', given: '1E6', want: '1000000' },
    { name: '1e9 is a decimal exponent', given: '1e9', want: '1000000000' },
    { name: '1E12 is a decimal exponent', given: '1E12', want: '1000000000000' },
    { name: '1e15 is a decimal exponent', given: '1e15', want: '1000000000000000' },
    { name: '1E18 is a decimal exponent', given: '1E18', want: '1000000000000000000' },
    { name: '1e14 is nonstandard but parses', given: '1e14', want: '100000000000000' },
    { name: '1e13 is nonstandard but parses', given: '1e13', want: '10000000000000' },
    { name: '100.035k is nonstandard but parses', given: '100.035k', want: '100035' },
    // Things that look like floating point.
    { name: '0.001 is one milli', given: '0.001', want: '0.001' },
    { name: '0.0005k is 0.5', given: '0.0005k', want: '0.5' },
    { name: '0.005 is five milli', given: '0.005', want: '0.005' },
    { name: '0.05 is fifty milli', given: '0.05', want: '0.05' },
    { name: '0.5 is a half', given: '0.5', want: '0.5' },
    { name: '0.00050k has a trailing zero', given: '0.00050k', want: '0.5' },
    { name: '0.00500 has trailing zeros', given: '0.00500', want: '0.005' },
    { name: '0.05000 has trailing zeros', given: '0.05000', want: '0.05' },
    { name: '0.50000 has trailing zeros', given: '0.50000', want: '0.5' },
    { name: '0.5e0 is a half', given: '0.5e0', want: '0.5' },
    { name: '0.5e-1 is 0.05', given: '0.5e-1', want: '0.05' },
    { name: '0.5e-2 is 0.005', given: '0.5e-2', want: '0.005' },
    { name: '10.035M is 10035000', given: '10.035M', want: '10035000' },
    { name: '1.2e3 is 1200', given: '1.2e3', want: '1200' },
    { name: '1.3E+6 takes an explicit plus in the exponent', given: '1.3E+6', want: '1300000' },
    { name: '1.40e9 is 1.4 × 10^9', given: '1.40e9', want: '1400000000' },
    { name: '1.53E12 is 1.53 × 10^12', given: '1.53E12', want: '1530000000000' },
    { name: '1.6e15 is 1.6 × 10^15', given: '1.6e15', want: '1600000000000000' },
    { name: '1.7E18 is 1.7 × 10^18', given: '1.7E18', want: '1700000000000000000' },
    { name: '9.01 is exact', given: '9.01', want: '9.01' },
    { name: '8.1k is 8100', given: '8.1k', want: '8100' },
    { name: '7.123456M is 7123456', given: '7.123456M', want: '7123456' },
    { name: '6.987654321G is 6987654321', given: '6.987654321G', want: '6987654321' },
    { name: '5.444T is 5444 × 10^9', given: '5.444T', want: '5444000000000' },
    { name: '40.1T is 401 × 10^11', given: '40.1T', want: '40100000000000' },
    { name: '300.2T is 3002 × 10^11', given: '300.2T', want: '300200000000000' },
    { name: '2.5P is 25 × 10^14', given: '2.5P', want: '2500000000000000' },
    { name: '1.01E is 101 × 10^16', given: '1.01E', want: '1010000000000000000' },
    // Things that saturate or round: up, away from zero, to a multiple of 10^-9.
    { name: '3.001n rounds up to 4n', given: '3.001n', want: '0.000000004' },
    { name: '1.1E-9 rounds up to 2n', given: '1.1E-9', want: '0.000000002' },
    { name: '0.0000000001 rounds up to 1n', given: '0.0000000001', want: '0.000000001' },
    { name: '0.0000000005 rounds up to 1n', given: '0.0000000005', want: '0.000000001' },
    { name: '0.00000000050 rounds up to 1n', given: '0.00000000050', want: '0.000000001' },
    { name: '0.5e-9 rounds up to 1n', given: '0.5e-9', want: '0.000000001' },
    { name: '0.9n rounds up to 1n', given: '0.9n', want: '0.000000001' },
    { name: '0.00000012345 rounds up to 124n', given: '0.00000012345', want: '0.000000124' },
    { name: '0.00000012354 rounds up to 124n', given: '0.00000012354', want: '0.000000124' },
    { name: '9Ei is capped at 2^63 - 1', given: '9Ei', want: '9223372036854775807' },
    { name: '9223372036854775807Ki is capped at 2^63 - 1', given: '9223372036854775807Ki', want: '9223372036854775807' },
    { name: '12E is not capped: only binary quantities are', given: '12E', want: '12000000000000000000' },
    // Fractional binary.
    { name: '100.035Ki is 102435.84', given: '100.035Ki', want: '102435.84' },
    { name: '0.5Mi is 524288', given: '0.5Mi', want: '524288' },
    { name: '0.05Gi is 53687091.2', given: '0.05Gi', want: '53687091.2' },
    { name: '0.025Ti is 27487790694.4', given: '0.025Ti', want: '27487790694.4' },
    // Things written by trolls.
    { name: '0.000000000001Ki rounds up to 2n', given: '0.000000000001Ki', want: '0.000000002' },
    { name: '.001 has no integer part', given: '.001', want: '0.001' },
    { name: '.0001k has no integer part', given: '.0001k', want: '0.1' },
    { name: '1. has an empty fraction', given: '1.', want: '1' },
    { name: '1.G has an empty fraction before the suffix', given: '1.G', want: '1000000000' },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(plain(mustParse(row.given)), row.want);
    });
    it(`${row.name}, with a minus sign`, () => {
      const want = row.want === '0' ? '0' : `-${row.want}`;
      assert.equal(plain(mustParse(`-${row.given}`)), want);
    });
    it(`${row.name}, with a plus sign`, () => {
      assert.equal(plain(mustParse(`+${row.given}`)), row.want);
    });
  }
});

describe('parseQuantityString: inputs upstream rejects', () => {
  const rows: { name: string; given: string }[] = [
    { name: 'the empty string', given: '' },
    { name: 'two decimal points', given: '1.1.M' },
    { name: 'a plus sign inside the number', given: '1+1.0M' },
    { name: 'a lowercase mi suffix', given: '0.1mi' },
    { name: 'an unknown am suffix', given: '0.1am' },
    { name: 'letters only', given: 'aoeu' },
    { name: 'a bare i suffix after a fraction', given: '.5i' },
    { name: 'a bare i suffix', given: '1i' },
    { name: 'a negative with a bare i suffix', given: '-3.01i' },
    { name: 'an exponent sign without digits', given: '-3.01e-' },
    { name: 'leading whitespace (ParseQuantity does not trim)', given: ' 1' },
    { name: 'trailing whitespace (ParseQuantity does not trim)', given: '1 ' },
    { name: 'a bare e', given: '1e' },
    { name: 'a fractional exponent', given: '1e1.5' },
    { name: 'an SI suffix after an exponent', given: '1e3k' },
    { name: 'an uppercase K', given: '1K' },
    { name: 'a lowercase ki', given: '1ki' },
    { name: 'a byte unit after Ki', given: '1KiB' },
    { name: 'an exponent beyond int64', given: '1e9223372036854775808' },
    { name: 'a double sign', given: '++1' },
    { name: 'a comma', given: '1,5' },
    { name: 'a hexadecimal prefix', given: '0x10' },
    { name: 'a fullwidth digit', given: '１' },
    { name: 'the micro sign', given: '1µ' },
    { name: 'a digitless number with a sub-nano exponent', given: '.e-10' },
    { name: 'a digitless number with Pi, which leaves the fast path', given: 'Pi' },
    { name: 'a signed digitless number with Ei', given: '-Ei' },
  ];
  for (const row of rows) {
    it(`rejects ${row.name}`, () => {
      assert.equal(parseQuantityString(row.given), undefined);
    });
  }
});

describe('parseQuantityString: scanner quirks upstream accepts', () => {
  const rows: { name: string; given: string; want: string }[] = [
    { name: 'a lone decimal point is zero', given: '.', want: '0' },
    { name: 'a negative lone decimal point is zero', given: '-.', want: '0' },
    { name: 'a lone minus sign is zero', given: '-', want: '0' },
    { name: 'a lone plus sign is zero', given: '+', want: '0' },
    { name: 'a suffix without a number is zero', given: 'Ki', want: '0' },
    { name: 'Ti without a number still takes the fast path and is zero', given: 'Ti', want: '0' },
    { name: 'milli without a number is zero', given: 'm', want: '0' },
    { name: 'a digitless number at exactly nano is zero', given: '.e-9', want: '0' },
    { name: 'leading zeros count as a digit below nano', given: '0e-10', want: '0' },
    { name: 'leading zeros are ignored', given: '007', want: '7' },
    { name: 'an exponent with leading zeros', given: '1e03', want: '1000' },
    { name: 'an exponent written with E and a plus', given: '2E+2', want: '200' },
    { name: 'an exponent wraps like int32(int64): 2^32 + 3 is 3', given: '1e4294967299', want: '1000' },
    { name: 'the int64 minimum exponent wraps to int32 zero, so 1e-9223372036854775808 is 1', given: '1e-9223372036854775808', want: '1' },
    { name: 'a huge negative exponent rounds up to one nano', given: '1e-2000000000', want: '0.000000001' },
    { name: 'a negative value rounds away from zero', given: '-0.0000000001', want: '-0.000000001' },
    { name: 'a negative binary value is capped at -(2^63 - 1)', given: '-9Ei', want: '-9223372036854775807' },
    { name: '8Ei is 2^63, one above the cap', given: '8Ei', want: '9223372036854775807' },
    { name: '7Ei is below the cap', given: '7Ei', want: String(7n * 2n ** 60n) },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(plain(mustParse(row.given)), row.want);
    });
  }

  it('keeps a huge decimal exponent without expanding it', () => {
    assert.deepEqual(mustParse('1e2000000000'), { coefficient: 1n, exponent: 2000000000 });
  });
});

describe('parseQuantity: JSON values as Quantity.UnmarshalJSON reads them', () => {
  const rows: { name: string; given: string | number; want: string | undefined }[] = [
    { name: 'a string is trimmed of surrounding spaces', given: ' 1Gi ', want: '1073741824' },
    { name: 'a string is trimmed of tabs and newlines', given: '\t500m\n', want: '0.5' },
    { name: 'a string is trimmed of a no-break space, as Go unicode.IsSpace', given: '\u00A02', want: '2' },
    { name: 'a byte-order mark is not Go whitespace', given: '\uFEFF2', want: undefined },
    { name: 'inner whitespace is still rejected', given: '1 Gi', want: undefined },
    { name: 'an integer number', given: 4, want: '4' },
    { name: 'a fractional number', given: 0.5, want: '0.5' },
    { name: 'a large number written in exponent form by JavaScript', given: 1e21, want: '1000000000000000000000' },
    { name: 'a tiny number rounds up to one nano', given: 1e-12, want: '0.000000001' },
    { name: 'a negative number', given: -2, want: '-2' },
    { name: 'not-a-number is rejected', given: Number.NaN, want: undefined },
    { name: 'infinity is rejected', given: Number.POSITIVE_INFINITY, want: undefined },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const got = parseQuantity(row.given);
      assert.equal(got === undefined ? undefined : plain(got), row.want);
    });
  }
});

describe('compareQuantities', () => {
  const rows: { name: string; given: [string, string]; want: -1 | 0 | 1 }[] = [
    { name: '1 equals 1000m', given: ['1', '1000m'], want: 0 },
    { name: '0.5 equals 500m', given: ['0.5', '500m'], want: 0 },
    { name: '1Gi equals 1073741824', given: ['1Gi', '1073741824'], want: 0 },
    { name: '1G is less than 1Gi', given: ['1G', '1Gi'], want: -1 },
    { name: '1Gi is greater than 1G', given: ['1Gi', '1G'], want: 1 },
    { name: '1Ki equals 1.024k', given: ['1Ki', '1.024k'], want: 0 },
    { name: '1e3 equals 1k', given: ['1e3', '1k'], want: 0 },
    { name: 'zero equals zero with another suffix', given: ['0', '0Mi'], want: 0 },
    { name: '100m is greater than 50m (upstream TestQuantityCmp)', given: ['100m', '50m'], want: 1 },
    { name: '50m is less than 100m (upstream TestQuantityCmp)', given: ['50m', '100m'], want: -1 },
    { name: '10000T is greater than 100Gi (upstream TestQuantityCmp)', given: ['10000T', '100Gi'], want: 1 },
    { name: 'a negative is less than zero', given: ['-1', '0'], want: -1 },
    { name: 'a larger negative is less', given: ['-2', '-1'], want: -1 },
    { name: '800m is less than 1 (upstream TestQuantityCmpInt64AndDec)', given: ['800m', '1'], want: -1 },
    { name: '800m is greater than 790m (upstream TestQuantityCmpInt64AndDec)', given: ['800m', '790m'], want: 1 },
    { name: 'digits with the same leading position are aligned', given: ['1.0000001', '1.00000011'], want: -1 },
    { name: 'a huge exponent compares without expansion', given: ['1e2000000000', '9e1999999999'], want: 1 },
    { name: 'a value one nano apart is not equal', given: ['1', '1000000001n'], want: -1 },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const [a, b] = row.given;
      assert.equal(compareQuantities(mustParse(a), mustParse(b)), row.want);
    });
  }
});

describe('addQuantities', () => {
  const rows: { name: string; given: string[]; want: string }[] = [
    { name: '500m plus 500m is 1', given: ['500m', '500m'], want: '1' },
    { name: '1Gi plus 1G is 2073741824', given: ['1Gi', '1G'], want: '2073741824' },
    { name: 'adding zero changes nothing', given: ['3', '0'], want: '3' },
    { name: 'zero plus a value is the value', given: ['0', '7m'], want: '0.007' },
    { name: 'a negative cancels a positive', given: ['1', '-1000m'], want: '0' },
    { name: 'three terms sum exactly', given: ['100m', '200m', '0.7'], want: '1' },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const sum = row.given.map(mustParse).reduce(addQuantities, zeroQuantity);
      assert.equal(plain(sum), row.want);
    });
  }

  it('normalises the sum so that equal values have equal fields', () => {
    assert.deepEqual(addQuantities(mustParse('500m'), mustParse('500m')), mustParse('1'));
  });

  it('throws a RangeError when aligning the terms needs more than maxAlignmentDigits digits', () => {
    assert.throws(() => addQuantities(mustParse(`1e${maxAlignmentDigits + 1}`), mustParse('1')), RangeError);
  });
});

describe('isPositive', () => {
  const rows: { name: string; given: string; want: boolean }[] = [
    { name: 'one nano is positive', given: '1n', want: true },
    { name: 'zero is not positive', given: '0', want: false },
    { name: 'zero with a suffix is not positive', given: '0Gi', want: false },
    { name: 'a negative value is not positive', given: '-1m', want: false },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(isPositive(mustParse(row.given)), row.want);
    });
  }
});

describe('isPositiveQuantity: parseQuantity and isPositive in one pass over the text', () => {
  // Strings near the grammar: signs, leading zeros, fractions, every suffix, exponents with
  // signs, long and wrapping, digitless numbers, Go and non-Go spaces, and a few stray characters.
  const piece = fc.constantFrom(
    '',
    '+',
    '-',
    '0',
    '00',
    '1',
    '7',
    '.',
    '.0',
    '.5',
    '000',
    '0.0001',
    'n',
    'u',
    'm',
    'k',
    'K',
    'M',
    'G',
    'T',
    'P',
    'E',
    'Ki',
    'Mi',
    'Pi',
    'Ei',
    'e',
    'E',
    'e-',
    'e+',
    'e9',
    'e-10',
    'E5',
    'e4294967296',
    'e00000000000000000000003',
    'e99999999999999999999',
    ' ',
    '\t',
    '\u00a0',
    '\u2003',
    '\ufeff',
    'x',
    'i',
    '1e',
  );
  const text = fc.array(piece, { maxLength: 6 }).map((pieces) => pieces.join(''));
  const value = fc.oneof(text, fc.constantFrom(0, -1, 1e-10, 0.5, 3, 1e21, -0));

  it('agrees with parseQuantity followed by isPositive', () => {
    fc.assert(
      fc.property(value, (v) => {
        const parsed = parseQuantity(v);
        assert.equal(isPositiveQuantity(v), parsed !== undefined && isPositive(parsed), JSON.stringify(v));
      }),
      { seed: 0x9a5, numRuns: 20_000 },
    );
  });
});

describe('quantities a hostile pod may write a megabyte long', () => {
  // Each took seconds to minutes when a regular expression trimmed spaces or counted trailing
  // zeros (a restart at every space or zero, each scanning the whole run), or BigInt read a long
  // exponent. A million characters is a third of the API server's 3 MiB body limit.
  const long = 1_000_000;
  const rows: { name: string; given: string; positive: boolean }[] = [
    { name: 'a one, a million spaces and a stray letter', given: `1${' '.repeat(long)}x`, positive: false },
    { name: 'a million spaces around a one', given: `${' '.repeat(long)}1${' '.repeat(long)}`, positive: true },
    { name: 'a one, a million zeros and a one', given: `1${'0'.repeat(long)}1`, positive: true },
    { name: 'a fraction of a million zeros', given: `0.${'0'.repeat(long)}`, positive: false },
    { name: 'an exponent of a million digits', given: `1e${'1'.repeat(long)}`, positive: false },
    { name: 'an exponent with a million leading zeros', given: `1e${'0'.repeat(long)}3`, positive: true },
  ];
  for (const row of rows) {
    it(`${row.name}: answered in one pass`, () => {
      const started = process.cpuUsage();
      assert.equal(isPositiveQuantity(row.given), row.positive);
      const used = process.cpuUsage(started);
      // A pass over a million characters takes a few milliseconds; the quadratic scans took
      // seconds, so 500 ms leaves room for a slow, busy machine.
      assert.ok(used.user + used.system < 500_000, `${((used.user + used.system) / 1000).toFixed(0)} ms`);
    });
  }

  it('parseQuantity counts 200,000 trailing zeros and trims a million spaces in linear time', () => {
    // Fewer zeros: parsing builds the exact BigInt, whose own cost grows faster than its digits.
    const zeros = 200_000;
    const started = process.cpuUsage();
    assert.deepEqual(parseQuantity(`1${'0'.repeat(zeros)}`), { coefficient: 1n, exponent: zeros });
    assert.equal(parseQuantity(`1${' '.repeat(long)}x`), undefined);
    assert.deepEqual(parseQuantity(`${' '.repeat(long)}5m${'\u3000'.repeat(long)}`), { coefficient: 5n, exponent: -3 });
    const used = process.cpuUsage(started);
    // About 100 ms; the regular expressions took 19 s for the zeros alone.
    assert.ok(used.user + used.system < 2_000_000, `${((used.user + used.system) / 1000).toFixed(0)} ms`);
  });
});
