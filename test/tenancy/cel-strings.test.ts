/**
 * Kubernetes CEL's `lowerAscii()`, `upperAscii()` and `trim()` (cel-go ext/strings.go) as the API
 * server runs them, not as JavaScript's toLowerCase/toUpperCase/trim: only ASCII letters change
 * case, and trim removes Go's unicode.IsSpace, no more and no less. A rule that compares a
 * requester's name after one of them answers as the API server's CEL would for the same name.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileExpression, toCelVariables } from '../../src/tenancy/cel.js';

function evaluate(source: string, userInfo: Record<string, unknown> = {}): unknown {
  const compiled = compileExpression(source, 'bool');
  assert.equal(compiled.error, undefined, compiled.error?.message);
  return compiled.expression.evaluate(toCelVariables({ object: {}, oldObject: undefined, namespaceObject: {}, request: { userInfo } }));
}

describe('lowerAscii(), upperAscii() and trim() are cel-go’s', () => {
  const rows: { name: string; source: string }[] = [
    { name: 'lowerAscii() lowers A-Z', source: "'Team-A'.lowerAscii() == 'team-a'" },
    // JavaScript's toLowerCase makes the Kelvin sign a k and É an é.
    { name: 'lowerAscii() leaves the Kelvin sign (U+212A) as it is', source: "'\\u212A'.lowerAscii() == '\\u212A'" },
    { name: 'lowerAscii() leaves É as it is', source: "'É'.lowerAscii() == 'É'" },
    { name: 'upperAscii() raises a-z', source: "'team-a'.upperAscii() == 'TEAM-A'" },
    // JavaScript's toUpperCase makes ß two letters, SS, and ſ (long s) an S.
    { name: 'upperAscii() leaves ß as one letter', source: "'ß'.upperAscii() == 'ß'" },
    { name: 'upperAscii() leaves the long s (U+017F) as it is', source: "'\\u017F'.upperAscii() == '\\u017F'" },
    { name: 'lowerAscii() copies an astral character whole', source: "'😀A'.lowerAscii() == '😀a'" },
    { name: 'trim() removes ASCII spaces at both ends', source: "' \\t\\n x y \\r\\v\\f'.trim() == 'x y'" },
    { name: 'trim() removes U+0085 (NEL), which Go counts as a space', source: "'\\u0085x\\u0085'.trim() == 'x'" },
    { name: 'trim() keeps U+FEFF, which Go does not count as a space', source: "'\\uFEFFx'.trim() == '\\uFEFFx'" },
    { name: 'trim() removes the Unicode spaces Go knows', source: "'\\u00A0\\u3000\\u2028x\\u205F\\u1680'.trim() == 'x'" },
    { name: 'trim() of spaces only is empty', source: "'  '.trim() == ''" },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(evaluate(row.source), true);
    });
  }

  it("an exemption by 'platform-kit' after lowerAscii() does not take a requester named with the Kelvin sign", () => {
    const rule = "request.userInfo.username.lowerAscii() == 'platform-kit'";
    assert.equal(evaluate(rule, { username: 'Platform-Kit' }), true);
    assert.equal(evaluate(rule, { username: 'platform-\u212Ait' }), false);
  });

  it("an exemption by 'admin' after trim() does not take a requester named admin and U+FEFF", () => {
    const rule = "request.userInfo.username.trim() == 'admin'";
    assert.equal(evaluate(rule, { username: ' admin ' }), true);
    assert.equal(evaluate(rule, { username: 'admin\uFEFF' }), false);
  });

  it('type errors name lowerAscii(), as the author wrote it', () => {
    const result = compileExpression('1.lowerAscii() == 1', 'bool');
    assert.match(result.error?.message ?? '', /no matching overload for 'int\.lowerAscii\(\)'/);
  });
});
