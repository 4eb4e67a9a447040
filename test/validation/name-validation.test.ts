import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  isDNS1123Subdomain,
  isQualifiedName,
  isValidLabelValue,
  isValidQualifiedName,
  regexError,
  utf8Length,
} from '../../src/validation/name-validation.js';

/**
 * The max-length wording changed between apimachinery versions ("characters" / "bytes"), so
 * length messages are asserted by their stable start; the regex messages have kept their text
 * (double spaces included) and are asserted whole.
 */
const nameFormat =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const prefixFormat =
  "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const labelValueFormat =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/** Asserts the messages one by one: each `want` entry is the whole message or, ending in '…', its start. */
function assertMessages(got: string[], want: string[]): void {
  assert.equal(got.length, want.length, `messages: ${JSON.stringify(got)}`);
  want.forEach((expected, i) => {
    if (expected.endsWith('…')) {
      assert.ok(got[i]?.startsWith(expected.slice(0, -1)), `message ${i}: ${got[i]}`);
    } else {
      assert.equal(got[i], expected);
    }
  });
}

describe('regexError (content.RegexError)', () => {
  it('lists each example followed by a comma, joined with " or ", which doubles the space', () => {
    assert.equal(regexError('bad', 'x+', 'a', 'b'), "bad (e.g. 'a',  or 'b', regex used for validation is 'x+')");
  });
  it('without examples names only the regex', () => {
    assert.equal(regexError('bad', 'x+'), "bad (regex used for validation is 'x+')");
  });
});

describe('isQualifiedName (validation.IsQualifiedName = content.IsLabelKey)', () => {
  const rows: { name: string; given: string; want: string[] }[] = [
    { name: 'a plain name is valid', given: 'dedicated', want: [] },
    { name: 'a prefixed name is valid', given: 'node.kubernetes.io/not-ready', want: [] },
    { name: 'upper case, dots and underscores are valid in the name part', given: 'example.com/My_Name.v1', want: [] },
    { name: 'a name of exactly 63 bytes is valid', given: 'a'.repeat(63), want: [] },
    { name: 'a name of 64 bytes is too long', given: 'a'.repeat(64), want: ['name part must be no more than 63 …'] },
    { name: 'a bad character in the name gives the format message', given: 'bad key', want: [nameFormat] },
    { name: 'a name ending in a dash gives the format message', given: 'key-', want: [nameFormat] },
    {
      name: 'a too long name with a bad character gives both messages, length first',
      given: `${'a'.repeat(64)}!`,
      want: ['name part must be no more than 63 …', nameFormat],
    },
    { name: 'an empty prefix is reported', given: '/key', want: ['prefix part must be non-empty'] },
    { name: 'an upper-case prefix is not a DNS subdomain', given: 'Example.com/key', want: [prefixFormat] },
    { name: 'a prefix over 253 bytes is too long', given: `${'a'.repeat(254)}/key`, want: ['prefix part must be no more than 253 …'] },
    {
      name: 'an empty name after a prefix is both empty and badly formed',
      given: 'example.com/',
      want: ['name part must be non-empty', nameFormat],
    },
    { name: 'a bad prefix and a bad name are both reported, prefix first', given: 'Bad/-x', want: [prefixFormat, nameFormat] },
    {
      name: 'two slashes give one message and nothing else',
      given: 'a/b/c',
      want: [
        "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
      ],
    },
    { name: 'a non-ASCII letter is outside the character set', given: 'clé', want: [nameFormat] },
    {
      name: 'length counts UTF-8 bytes: 32 two-byte letters are 64 bytes',
      given: 'é'.repeat(32),
      want: ['name part must be no more than 63 …', nameFormat],
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assertMessages(isQualifiedName(row.given), row.want);
    });
  }
});

describe('isValidLabelValue (validation.IsValidLabelValue = content.IsLabelValue)', () => {
  const rows: { name: string; given: string; want: string[] }[] = [
    { name: 'the empty value is valid', given: '', want: [] },
    { name: 'a simple value is valid', given: 'gpu', want: [] },
    { name: 'a value of exactly 63 bytes is valid', given: 'v'.repeat(63), want: [] },
    { name: 'a value of 64 bytes is too long', given: 'v'.repeat(64), want: ['must be no more than 63 …'] },
    { name: 'a slash is not allowed', given: 'a/b', want: [labelValueFormat] },
    { name: 'a value starting with a dot is not allowed', given: '.a', want: [labelValueFormat] },
    {
      name: 'a too long value with a space gives both messages, length first',
      given: `${'v'.repeat(64)} `,
      want: ['must be no more than 63 …', labelValueFormat],
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assertMessages(isValidLabelValue(row.given), row.want);
    });
  }
});

describe('isDNS1123Subdomain', () => {
  const rows: { name: string; given: string; want: number }[] = [
    { name: 'a dotted lower-case name is valid', given: 'example.com', want: 0 },
    { name: 'an underscore is not allowed', given: 'ex_ample.com', want: 1 },
    { name: 'an empty label between dots is not allowed', given: 'a..b', want: 1 },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(isDNS1123Subdomain(row.given).length, row.want);
    });
  }
});

describe('utf8Length (Go len)', () => {
  const rows: { name: string; given: string; want: number }[] = [
    { name: 'ASCII counts one byte each', given: 'abc', want: 3 },
    { name: 'a two-byte letter counts two', given: 'é', want: 2 },
    { name: 'a three-byte character counts three', given: '€', want: 3 },
    { name: 'an astral character counts four, not two UTF-16 units', given: '😀', want: 4 },
    { name: 'a lone surrogate counts as the three bytes of U+FFFD', given: '\uD800', want: 3 },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(utf8Length(row.given), row.want);
    });
  }

  it('counts what Node’s UTF-8 encoder writes, lone surrogates as U+FFFD', () => {
    const units = fc.constantFrom('a', 'é', '€', '😀', '\uD800', '\uDC00', '\uDBFF', '\uDFFF', '\u0000', '\uFFFF');
    fc.assert(
      fc.property(fc.array(units, { maxLength: 10 }), (parts) => {
        const value = parts.join('');
        assert.equal(utf8Length(value), Buffer.byteLength(value, 'utf8'));
      }),
      { seed: 8, numRuns: 5000 },
    );
  });
});

describe('the format scans accept exactly what upstream’s regular expressions accept', () => {
  // The expressions as upstream anchors them (content.IsLabelKey, IsLabelValue, IsDNS1123Subdomain).
  const labelKey = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
  const labelValue = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
  const subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
  // Every character class boundary, a trailing newline (which `$` must not skip) and non-ASCII.
  const text = fc
    .array(fc.constantFrom('a', 'z', 'A', 'Z', '0', '9', '-', '_', '.', '/', ' ', '\n', 'é', '`', '{', '@', '[', ':'), { maxLength: 9 })
    .map((chars) => chars.join(''));
  const params = { seed: 1123, numRuns: 20_000 };

  it('label keys: the name part', () => {
    fc.assert(
      fc.property(text, (value) => {
        const name = value.replaceAll('/', '');
        assert.equal(isQualifiedName(name).includes(nameFormat), !labelKey.test(name), JSON.stringify(name));
      }),
      params,
    );
  });

  it('label values', () => {
    fc.assert(
      fc.property(text, (value) => {
        assert.equal(isValidLabelValue(value).includes(labelValueFormat), !labelValue.test(value), JSON.stringify(value));
      }),
      params,
    );
  });

  it('DNS-1123 subdomains (a label key’s prefix)', () => {
    fc.assert(
      fc.property(text, (value) => {
        const prefix = value.replaceAll('/', '');
        assert.equal(
          isQualifiedName(`${prefix}/name`).includes(prefixFormat),
          prefix !== '' && !subdomain.test(prefix),
          JSON.stringify(prefix),
        );
        // Nine characters at most: never over the length limit, so any message is the format's.
        assert.equal(isDNS1123Subdomain(prefix).length > 0, !subdomain.test(prefix), JSON.stringify(prefix));
      }),
      params,
    );
  });

  it('scans a 3 MB key, value and prefix in a pass each', () => {
    // Each near-miss makes a backtracking engine retry at every character.
    const long = 3_000_000;
    const started = process.cpuUsage();
    assert.ok(isQualifiedName(`${'a.'.repeat(long / 2)}-/${'a'.repeat(long)}!`).length > 0);
    assert.ok(isValidLabelValue(`a${'-'.repeat(long)}`).length > 0);
    assert.ok(isDNS1123Subdomain(`${'a-'.repeat(long / 2)}.`).length > 0);
    const used = process.cpuUsage(started);
    // About 50 ms; the experimental engine took 6 s per 3 MB string.
    assert.ok(used.user + used.system < 1_500_000, `${((used.user + used.system) / 1000).toFixed(0)} ms`);
  });
});

describe('isValidQualifiedName, the yes-or-no of isQualifiedName without its messages', () => {
  it('agrees with isQualifiedName on generated names: prefixes, slashes, lengths at the limits, case, non-ASCII', () => {
    const part = fc.oneof(
      fc.stringMatching(/^[a-z0-9.-]{0,12}$/),
      fc.stringMatching(/^[A-Za-z0-9_.é-]{0,12}$/),
      fc.constantFrom('a'.repeat(63), 'a'.repeat(64), 'a'.repeat(253), 'a'.repeat(254), `${'a'.repeat(62)}é`, ''),
    );
    const name = fc.oneof(
      part,
      fc.tuple(part, part).map(([a, b]) => `${a}/${b}`),
      fc.tuple(part, part, part).map((p) => p.join('/')),
    );
    fc.assert(
      fc.property(name, (value) => isValidQualifiedName(value) === (isQualifiedName(value).length === 0)),
      { numRuns: 2000, seed: 31 },
    );
  });
});
