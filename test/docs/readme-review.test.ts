/**
 * The README's quick start shows a patch, then a command that gives "the same" without a server:
 * run that command as written, and it prints that patch (decoded JSON, not the base64 wire form).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const root = join(import.meta.dirname, '..', '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

describe('README: npx tolerator review prints the patch the README shows above it, decoded', () => {
  it('the offline command of the quick start prints the shown patch', () => {
    const shown = /\nallowed: true\n(\[.*\])\n/.exec(readme)?.[1];
    assert.ok(shown !== undefined, 'the README shows the patch after "allowed: true"');
    const command = /without a server[^`]*`npx tolerator (review [^`]+)`/.exec(readme)?.[1];
    assert.ok(command !== undefined, 'the README names the offline review command');
    const result = spawnSync(
      process.execPath,
      ['--enable-experimental-regexp-engine-on-excessive-backtracks', '--import', 'tsx', 'src/main.ts', ...command.split(/\s+/)],
      { cwd: root, encoding: 'utf8', timeout: 60_000 },
    );
    assert.equal(result.status, 0, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), JSON.parse(shown));
  });
});
