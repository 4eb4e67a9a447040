/**
 * `npm run karpenter:build` on a machine whose Go cannot build the module, and the pins it reads
 * (test/cluster/karpenter-build.ts). Go is a stand-in (test/support/fake-go.ts).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { lstatSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fakeGo } from '../support/fake-go.js';
import { karpenterLdflags, karpenterPin } from './karpenter-build.js';

const root = join(import.meta.dirname, '..', '..');

describe('karpenter:build', () => {
  it("a Go older than tools/karpenter's go line exits 2 saying so, and asks Go to build nothing", () => {
    const go = fakeGo('go1.25.4');
    try {
      const result = spawnSync(process.execPath, ['--import', 'tsx', 'test/cluster/karpenter-build.ts'], {
        cwd: root,
        env: go.env,
        encoding: 'utf8',
      });
      assert.equal(result.status, 2, result.stderr);
      assert.match(result.stderr, /^karpenter:build: Go 1\.25\.4 is installed, and the module needs Go 1\.26\.6 or later$/m);
      assert.deepEqual(
        go.calls().filter((call) => call.includes(' build ')),
        [],
      );
      // Asked with GOTOOLCHAIN=local, so an older Go never fetches a newer one to answer for it.
      assert.deepEqual(
        go.calls().filter((call) => call.endsWith('env GOVERSION')),
        ['local env GOVERSION'],
      );
    } finally {
      go.remove();
    }
  });

  it('reads the pinned sigs.k8s.io/karpenter from the go.mod, and stamps it as the operator version', () => {
    const goMod = readFileSync(join(root, 'tools', 'karpenter', 'go.mod'), 'utf8');
    assert.equal(karpenterPin(goMod), 'v1.14.1');
    assert.equal(karpenterLdflags('v1.14.1'), '-s -w -X sigs.k8s.io/karpenter/pkg/operator.Version=v1.14.1');
    assert.throws(() => karpenterPin('module x\n\ngo 1.26.6\n'), /pins no sigs\.k8s\.io\/karpenter/);
  });

  it('its bin/ and an interrupted bin.partial/ are ignored by git', (t) => {
    if (spawnSync('git', ['rev-parse', '--is-inside-work-tree'], { cwd: root }).status !== 0) {
      t.skip('not a git checkout');
      return;
    }
    for (const folder of ['bin', 'bin.partial']) {
      const linked = lstatSync(join(root, 'tools/karpenter', folder), { throwIfNoEntry: false })?.isSymbolicLink() === true;
      const path = linked ? `tools/karpenter/${folder}` : `tools/karpenter/${folder}/karpenter-kwok`;
      const result = spawnSync('git', ['check-ignore', '--no-index', '--quiet', path], { cwd: root });
      assert.equal(result.status, 0, `${path} is not ignored`);
    }
  });
});
