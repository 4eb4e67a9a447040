import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { goQuote } from '../../src/validation/field-errors.js';

/** strconv.Quote a code point at a time, as goQuote first did: the reference for the faster one. */
function quoteByCharacter(value: string): string {
  let out = '"';
  for (const char of value) {
    const code = char.codePointAt(0) ?? 0;
    const named: Record<string, string> = {
      '"': '\\"',
      '\\': '\\\\',
      '\u0007': '\\a',
      '\b': '\\b',
      '\f': '\\f',
      '\n': '\\n',
      '\r': '\\r',
      '\t': '\\t',
      '\v': '\\v',
    };
    if (Object.hasOwn(named, char)) {
      out += named[char] ?? '';
    } else if (code >= 0xd800 && code <= 0xdfff) {
      out += '\uFFFD';
    } else if (/^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u.test(char)) {
      out += char;
    } else if (code < 0x80) {
      out += `\\x${code.toString(16).padStart(2, '0')}`;
    } else if (code < 0x10000) {
      out += `\\u${code.toString(16).padStart(4, '0')}`;
    } else {
      out += `\\U${code.toString(16).padStart(8, '0')}`;
    }
  }
  return `${out}"`;
}

describe('goQuote (strconv.Quote)', () => {
  const rows: { name: string; given: string; want: string }[] = [
    { name: 'plain text as it is', given: 'example.com/key', want: '"example.com/key"' },
    { name: 'a quote and a backslash escaped', given: 'a"b\\c', want: '"a\\"b\\\\c"' },
    { name: 'named control characters', given: '\u0007\b\f\n\r\t\v', want: '"\\a\\b\\f\\n\\r\\t\\v"' },
    { name: 'other control characters and DEL in hex', given: '\u0000\u001f\u007f', want: '"\\x00\\x1f\\x7f"' },
    { name: 'printable letters, marks and symbols beyond ASCII as they are', given: 'é\u0301€😀', want: '"é\u0301€😀"' },
    { name: 'non-printable code points beyond ASCII escaped', given: '\u00a0\u2028\u{e0001}', want: '"\\u00a0\\u2028\\U000e0001"' },
    { name: 'lone surrogates as U+FFFD', given: 'a\ud800b\udc00', want: '"a\uFFFDb\uFFFD"' },
    { name: 'the empty string', given: '', want: '""' },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(goQuote(row.given), row.want);
    });
  }

  it('quotes like the character-at-a-time reference', () => {
    const unit = fc.constantFrom(
      'a',
      ' ',
      '"',
      '\\',
      '\n',
      '\u0000',
      '\u007f',
      'é',
      '\u0301',
      '\u00a0',
      '\u2028',
      '😀',
      '\ud800',
      '\udc00',
      '\u{e0001}',
      '~',
    );
    fc.assert(
      fc.property(fc.array(unit, { maxLength: 12 }), (units) => {
        const value = units.join('');
        assert.equal(goQuote(value), quoteByCharacter(value));
      }),
      { seed: 34, numRuns: 5000 },
    );
  });

  it('quotes a 3 MB value in slices, not a character at a time', () => {
    // A toleration key the size of the API server's body limit, a quote and a control character
    // in every kilobyte.
    const value = `${'k'.repeat(1_000)}"\u0000`.repeat(3_000);
    const started = process.cpuUsage();
    assert.equal(goQuote(value).length, 2 + 3_000 * (1_000 + 2 + 4));
    const used = process.cpuUsage(started);
    // About 30 ms; a character at a time took 0.5 to 0.8 s.
    assert.ok(used.user + used.system < 300_000, `${((used.user + used.system) / 1000).toFixed(0)} ms`);
  });
});
