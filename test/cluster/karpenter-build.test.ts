/**
 * `npm run karpenter:build` on a machine whose Go cannot build the module (too old to switch
 * toolchains, or the pinned toolchain not fetchable), the toolchain it builds with, and the pins
 * it reads (test/cluster/karpenter-build.ts). Go is a stand-in (test/support/fake-go.ts).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, cpSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fakeGo, type FakeGo } from '../support/fake-go.js';
import { KARPENTER_TOOLCHAIN, karpenterLdflags, karpenterPin } from './karpenter-build.js';
import { LOCAL_TOOLCHAIN, buildDigest, toolchainSwitchProblem } from './pinned-build.js';

const root = join(import.meta.dirname, '..', '..');

/**
 * A scratch copy of what the builds read (test/cluster/, the tools' go.mod and go.sum), so that a
 * build the stand-in Go fails empties the copy's bin.partial/, never this checkout's, where a real
 * build may be running.
 */
function scratchCheckout(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tolerator-karpenter-build-'));
  cpSync(join(root, 'test', 'cluster'), join(dir, 'test', 'cluster'), { recursive: true });
  for (const tool of ['karpenter', 'kwok']) {
    mkdirSync(join(dir, 'tools', tool), { recursive: true });
    for (const file of ['go.mod', 'go.sum']) copyFileSync(join(root, 'tools', tool, file), join(dir, 'tools', tool, file));
  }
  copyFileSync(join(root, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

/** `npm run SCRIPT -- --force` (test/cluster/SCRIPT.ts) in a scratch checkout on the stand-in Go, with a GOPROXY the error line names. */
function buildWith(go: FakeGo, script = 'karpenter-build'): { status: number | null; stdout: string; stderr: string } {
  const dir = scratchCheckout();
  try {
    const result = spawnSync(process.execPath, ['--import', 'tsx', `test/cluster/${script}.ts`, '--force'], {
      cwd: dir,
      env: { ...go.env, GOPROXY: 'https://proxy.test' },
      encoding: 'utf8',
    });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('karpenter:build', () => {
  it('a Go older than 1.21, which cannot switch toolchains, exits 2 saying so, and asks Go to build nothing', () => {
    const go = fakeGo('go1.20.14');
    try {
      const result = buildWith(go);
      assert.equal(result.status, 2, result.stderr);
      assert.match(
        result.stderr,
        /^karpenter:build: Go 1\.20\.14 is installed, which cannot switch to the toolchain go1\.27\.3 the module builds with \(Go 1\.21 or later can\)$/m,
      );
      assert.deepEqual(
        go.calls().filter((call) => call.includes(' build ')),
        [],
      );
      // The installed Go is asked with GOTOOLCHAIN=local, so it answers for itself.
      assert.deepEqual(
        go.calls().filter((call) => call.endsWith('env GOVERSION')),
        ['local env GOVERSION'],
      );
    } finally {
      go.remove();
    }
  });

  it('a toolchain that cannot be fetched exits 2 with one line saying which and why, and asks Go to build nothing', () => {
    const go = fakeGo('go1.26.8');
    try {
      const result = buildWith(go);
      assert.equal(result.status, 2, result.stderr);
      assert.equal(
        result.stderr.trim(),
        'karpenter:build: could not fetch the Go toolchain go1.27.3 (GOPROXY=https://proxy.test): go: download go1.27.3 for linux/amd64: toolchain not available',
      );
      assert.deepEqual(
        go.calls().filter((call) => call.includes(' build ')),
        [],
      );
      assert.deepEqual(
        go.calls().filter((call) => call.endsWith('env GOVERSION')),
        ['local env GOVERSION', 'go1.27.3 env GOVERSION'],
      );
    } finally {
      go.remove();
    }
  });

  it('builds with GOTOOLCHAIN=go1.27.3 (KARPENTER_TOOLCHAIN) on the installed Go 1.26.8, while the control plane and kwok build with GOTOOLCHAIN=local', () => {
    assert.equal(KARPENTER_TOOLCHAIN, 'go1.27.3');
    const go = fakeGo('go1.26.8', { fetchable: [KARPENTER_TOOLCHAIN] });
    try {
      const result = buildWith(go);
      // The stand-in fails every build: what is asserted is how Go was asked.
      assert.equal(result.status, 1, result.stderr);
      assert.match(result.stdout, /^karpenter:build: building Karpenter v1\.15\.0 \(KWOK provider\) with go1\.27\.3 /m);
      assert.match(result.stderr, /^karpenter:build: go build failed after \d+ s$/m);
      const builds = go.calls().filter((call) => call.includes(' build '));
      assert.equal(builds.length, 1, builds.join('\n'));
      assert.match(builds[0]!, /^go1\.27\.3 build -trimpath /);
      // kwok's build, on the same Go, asks with GOTOOLCHAIN=local and builds with it.
      const kwok = buildWith(go, 'kwok-build');
      assert.equal(kwok.status, 1, kwok.stderr);
      const kwokBuilds = go.calls().filter((call) => call.includes(' build ') && call.includes('sigs.k8s.io/kwok/'));
      assert.equal(kwokBuilds.length, 1, go.calls().join('\n'));
      assert.match(kwokBuilds[0]!, /^local build /);
    } finally {
      go.remove();
    }
  });

  it("the Go that can switch is judged by its minor (1.21), not by the module's go line, and none installed is said plainly", () => {
    assert.equal(toolchainSwitchProblem('go1.27.3', 'go1.21.0'), undefined);
    assert.equal(toolchainSwitchProblem('go1.27.3', 'go1.26.8'), undefined);
    assert.equal(toolchainSwitchProblem('go1.27.3', 'go2.0.0'), undefined);
    assert.equal(toolchainSwitchProblem('go1.27.3', 'devel go1.28-abcdef'), undefined);
    // 1.9 < 1.21: numbers, not strings.
    assert.equal(
      toolchainSwitchProblem('go1.27.3', 'go1.9'),
      'Go 1.9 is installed, which cannot switch to the toolchain go1.27.3 the module builds with (Go 1.21 or later can)',
    );
    assert.equal(
      toolchainSwitchProblem('go1.27.3', undefined),
      'Go is not installed (the module builds with the toolchain go1.27.3, which Go 1.21 or later fetches)',
    );
  });

  it('the build digest covers the named toolchain, and a tool built with the installed Go keeps the digest it had before toolchains were named', () => {
    const inputs = ['-s -w', 'kwok/charts/crds,kwok/apis/crds'];
    const local = buildDigest('go.mod', 'go.sum', 'go1.26.8', LOCAL_TOOLCHAIN, inputs);
    assert.equal(
      local,
      createHash('sha256')
        .update(['go.mod', 'go.sum', 'go1.26.8', ...inputs].join('\0'))
        .digest('hex'),
    );
    const named = buildDigest('go.mod', 'go.sum', 'go1.27.3', KARPENTER_TOOLCHAIN, inputs);
    assert.notEqual(named, buildDigest('go.mod', 'go.sum', 'go1.27.3', LOCAL_TOOLCHAIN, inputs));
    assert.notEqual(named, buildDigest('go.mod', 'go.sum', 'go1.27.3', 'go1.27.3+auto', inputs));
  });

  it('reads the pinned sigs.k8s.io/karpenter from the go.mod, and stamps it as the operator version', () => {
    const goMod = readFileSync(join(root, 'tools', 'karpenter', 'go.mod'), 'utf8');
    assert.equal(karpenterPin(goMod), 'v1.15.0');
    assert.equal(karpenterLdflags('v1.15.0'), '-s -w -X sigs.k8s.io/karpenter/pkg/operator.Version=v1.15.0');
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
