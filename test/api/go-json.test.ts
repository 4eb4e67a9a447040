import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { goJsonNodeFromValue, goValueWord, parseGoJson, type GoJsonNode } from '../../src/api/go-json.js';

describe("parseGoJson: encoding/json's scanner and its SyntaxError texts", () => {
  const rows: { name: string; given: string; want: string }[] = [
    { name: 'an empty input is the end of input', given: '   ', want: 'unexpected end of JSON input' },
    { name: 'a bare word is an invalid character', given: 'hello', want: "invalid character 'h' looking for beginning of value" },
    { name: 'a trailing comma in an array', given: '[{"key":"k"},]', want: "invalid character ']' looking for beginning of value" },
    {
      name: 'a trailing comma in an object',
      given: '[{"key":"k",}]',
      want: "invalid character '}' looking for beginning of object key string",
    },
    { name: 'a missing colon', given: '[{"key" "k"}]', want: `invalid character '"' after object key` },
    {
      name: 'a missing comma between fields',
      given: '[{"key":"k" "value":"v"}]',
      want: `invalid character '"' after object key:value pair`,
    },
    { name: 'a missing comma between elements', given: '[{} {}]', want: "invalid character '{' after array element" },
    { name: 'text after the value', given: '[] x', want: "invalid character 'x' after top-level value" },
    { name: 'single quotes', given: "['k']", want: "invalid character '\\'' looking for beginning of value" },
    { name: 'a misspelt literal', given: '[nul]', want: "invalid character ']' in literal null (expecting 'l')" },
    { name: 'a leading zero', given: '[01]', want: "invalid character '1' after array element" },
    { name: 'a bad escape', given: '["\\x"]', want: "invalid character 'x' in string escape code" },
    { name: 'a raw control character in a string', given: '["a\tb"]', want: "invalid character '\\t' in string literal" },
    {
      name: 'a non-ASCII character is named by its first UTF-8 byte',
      given: '[é]',
      want: "invalid character 'Ã' looking for beginning of value",
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.deepEqual(parseGoJson(row.given), { syntaxError: row.want });
    });
  }
});

describe('parseGoJson: the tree a decoder walks', () => {
  it('keeps number literals, decoded strings, and object entries in order with repeats', () => {
    const want: GoJsonNode = {
      kind: 'array',
      items: [
        {
          kind: 'object',
          entries: [
            ['a', { kind: 'number', raw: '1.50' }],
            ['a', { kind: 'string', value: 'x\n' }],
            ['b', { kind: 'null' }],
          ],
        },
        { kind: 'bool' },
      ],
    };
    assert.deepEqual(parseGoJson(' [{"a":1.50,"a":"x\\n","b":null}, true] '), { node: want });
  });

  it('turns an unpaired surrogate escape into U+FFFD, as Go does', () => {
    assert.deepEqual(parseGoJson('"\\ud800"'), { node: { kind: 'string', value: '\uFFFD' } });
  });
});

describe('goJsonNodeFromValue and goValueWord', () => {
  it('gives a parsed value the tree its JSON would have', () => {
    assert.deepEqual(goJsonNodeFromValue({ k: [1.5, true, null, 'v'] }), {
      kind: 'object',
      entries: [
        [
          'k',
          { kind: 'array', items: [{ kind: 'number', raw: '1.5' }, { kind: 'bool' }, { kind: 'null' }, { kind: 'string', value: 'v' }] },
        ],
      ],
    });
  });

  it("names a value as Go's UnmarshalTypeError does", () => {
    assert.equal(goValueWord({ kind: 'object', entries: [] }), 'object');
    assert.equal(goValueWord({ kind: 'number', raw: '1' }), 'number');
  });
});
