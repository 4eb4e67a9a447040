import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { goToLower, goTrimSpace } from '../../src/api/go-strings.js';

describe('strings.TrimSpace', () => {
  it('goTrimSpace trims what strings.TrimSpace trims and nothing else', () => {
    assert.equal(goTrimSpace(' \t\n\v\f\r\u0085\u00a0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000x y\u3000 '), 'x y');
    assert.equal(goTrimSpace('\ufeffx\u200b'), '\ufeffx\u200b');
    assert.equal(goTrimSpace(''), '');
    assert.equal(goTrimSpace('   '), '');
  });

  it('spaces between letters stay; long runs at both ends are trimmed', () => {
    const text = `1${' '.repeat(50_000)}x`;
    assert.equal(goTrimSpace(text), text);
    assert.equal(goTrimSpace(`${' '.repeat(50_000)}x${' '.repeat(50_000)}`), 'x');
  });
});

describe('strings.ToLower', () => {
  it('lowers ASCII as toLowerCase does: EC2NodeClass is ec2nodeclass, KWOKNodeClass is kwoknodeclass', () => {
    assert.equal(goToLower('EC2NodeClass'), 'ec2nodeclass');
    assert.equal(goToLower('KWOKNodeClass'), 'kwoknodeclass');
  });
  it("maps each code point by its simple mapping, as unicode.ToLower: İ is i (JavaScript's full mapping gives i and U+0307), a final Σ is σ (not ς)", () => {
    assert.equal(goToLower('\u0130X'), 'ix');
    assert.equal(goToLower('ΑΣ'), 'ασ');
    assert.equal(goToLower('\u212a'), 'k'); // the Kelvin sign, lowered to an ASCII k by both
  });
});
