import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { goTrimSpace } from '../../src/api/go-strings.js';

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
