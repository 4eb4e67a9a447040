/**
 * Suites a reader can tell apart: `npm run test:unit` runs every `*.test.ts` under test/, so a
 * real-cluster suite must never carry that suffix, and each real-cluster suffix lives only in its
 * own folder, which its runner (test/cluster/run-suite.ts) reads. A file misnamed either way would
 * run without its control plane, or not at all.
 */
import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function filesUnder(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(root, join(entry.parentPath, entry.name)));
}

const realClusterSuites = [
  { folder: 'test/e2e', suffix: '.e2e.ts' },
  { folder: 'test/differential', suffix: '.differential.ts' },
] as const;

describe('the suites', () => {
  const files = filesUnder('test');

  it('test:unit selects *.test.ts under test/, and no real-cluster folder holds one', () => {
    const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    assert.match(scripts['test:unit'] ?? '', /\$\(find test -name "\*\.test\.ts" -not -path "test\/release\/\*" \| sort\)/);
    const swept = files.filter(
      (file) => file.endsWith('.test.ts') && realClusterSuites.some(({ folder }) => file.startsWith(`${folder}/`)),
    );
    assert.deepEqual(swept, []);
  });

  it('each real-cluster suffix is used only in its own folder', () => {
    const misplaced = files.filter((file) =>
      realClusterSuites.some(
        ({ folder, suffix }) => file.endsWith(suffix) && !file.startsWith(`${folder}/`) && !file.startsWith('test/fixtures/'),
      ),
    );
    assert.deepEqual(misplaced, []);
  });

  /** The files a script's `$(find …)` selects, run as npm runs it (sh, from the root). */
  function selectedBy(script: string): string[] {
    const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    const find = /\$\((find test [^)]*)\)/.exec(scripts[script] ?? '')?.[1];
    assert.ok(find !== undefined, `${script} selects its files with find`);
    return execSync(find, { cwd: root, encoding: 'utf8', shell: '/bin/sh' }).split('\n').filter(Boolean);
  }

  it('release.test.ts runs in test:release only, not inside test:unit (its header says why: about 75 s)', () => {
    const unit = selectedBy('test:unit');
    assert.deepEqual(
      unit.filter((file) => file.startsWith('test/release/')),
      [],
    );
    assert.ok(unit.includes('test/lint/suites.test.ts'));
    assert.ok(unit.includes('test/properties/review-cost.slow.test.ts'), 'test:unit runs the slow files too');
  });

  it('test:unit:fast is test:unit without the *.slow.test.ts files (docs/testing.md: a file named so takes tens of seconds)', () => {
    const unit = selectedBy('test:unit');
    const fast = selectedBy('test:unit:fast');
    assert.deepEqual(
      fast,
      unit.filter((file) => !file.endsWith('.slow.test.ts')),
    );
    assert.ok(fast.length < unit.length);
  });
});
