/**
 * `npm run control-plane:build` on a machine whose Go cannot build the module: said plainly, with
 * exit 2, and nothing built (test/cluster/build.ts). Go is a stand-in (test/support/fake-go.ts).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fakeGo } from '../support/fake-go.js';
import { goToolchainProblem } from './pinned-build.js';

const root = join(import.meta.dirname, '..', '..');

describe('control-plane:build and the installed Go', () => {
  it("a Go older than the module's go line (a distribution's Go on a fresh machine) exits 2 saying so, and asks Go to build nothing", () => {
    const go = fakeGo('go1.22.2');
    try {
      const result = spawnSync(process.execPath, ['--import', 'tsx', 'test/cluster/build.ts', '--version', '1.35'], {
        cwd: root,
        env: go.env,
        encoding: 'utf8',
      });
      assert.equal(result.status, 2, result.stderr);
      assert.match(result.stderr, /^control-plane:build: Go 1\.22\.2 is installed, and the module needs Go 1\.25\.0 or later$/m);
      assert.deepEqual(
        go.calls().filter((call) => call.includes(' build ')),
        [],
      );
    } finally {
      go.remove();
    }
  });

  it('asks the installed Go for its version with GOTOOLCHAIN=local, so an older Go does not fetch and report a newer one', () => {
    const go = fakeGo('go1.22.2');
    try {
      spawnSync(process.execPath, ['--import', 'tsx', 'test/cluster/build.ts', '--version', '1.35'], { cwd: root, env: go.env });
      assert.deepEqual(
        go.calls().filter((call) => call.endsWith('env GOVERSION')),
        ['local env GOVERSION'],
      );
    } finally {
      go.remove();
    }
  });

  it("an interrupted build's bin.partial/ is ignored by git, as bin/ is, so its hundreds of MB are never committed", (t) => {
    if (spawnSync('git', ['rev-parse', '--is-inside-work-tree'], { cwd: root }).status !== 0) {
      t.skip('not a git checkout');
      return;
    }
    for (const folder of ['bin', 'bin.partial']) {
      // A bin/ that is a symlink to a build made elsewhere (docs/testing.md) is ignored as itself:
      // git refuses to look at a path beyond a symlink.
      const linked = lstatSync(join(root, 'tools/controlplane/1.35', folder), { throwIfNoEntry: false })?.isSymbolicLink() === true;
      const path = linked ? `tools/controlplane/1.35/${folder}` : `tools/controlplane/1.35/${folder}/kube-apiserver`;
      const result = spawnSync('git', ['check-ignore', '--no-index', '--quiet', path], { cwd: root });
      assert.equal(result.status, 0, `${path} is not ignored`);
    }
  });

  it("compares the Go version with the module's go line component by component", () => {
    const goMod = 'module x\n\ngo 1.25.0\n';
    assert.equal(goToolchainProblem(goMod, 'go1.25.0'), undefined);
    assert.equal(goToolchainProblem(goMod, 'go1.26.8'), undefined);
    assert.equal(goToolchainProblem(goMod, 'go2.0.0'), undefined);
    assert.equal(goToolchainProblem(goMod, 'go1.24.9'), 'Go 1.24.9 is installed, and the module needs Go 1.25.0 or later');
    // 1.9 < 1.25: numbers, not strings.
    assert.equal(goToolchainProblem(goMod, 'go1.9'), 'Go 1.9 is installed, and the module needs Go 1.25.0 or later');
    assert.equal(goToolchainProblem(goMod, undefined), 'Go is not installed (the module needs Go 1.25 or later)');
    assert.equal(goToolchainProblem(goMod, 'devel go1.27-abcdef'), undefined);
  });
});
