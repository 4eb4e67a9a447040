/**
 * `npm run test:e2e` (test/cluster/run-suite.ts) as CI and people run it: with a build named by
 * TOLERATOR_CONTROL_PLANE_BIN nothing is built, and every test and hook is bounded, so a test that
 * never finishes fails the run instead of hanging it. Go is a stand-in (test/support/fake-go.ts)
 * and the suites are fixtures (test/fixtures/e2e/) that need no control plane.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fakeGo } from '../support/fake-go.js';

const root = join(import.meta.dirname, '..', '..');

function runSuite(
  files: readonly string[],
  env: NodeJS.ProcessEnv,
  folder: 'e2e' | 'differential' = 'e2e',
): { status: number | null; output: string } {
  // Without this file's NODE_TEST_CONTEXT: node's test runner would take the nested run for one
  // of its own files and report to it instead of exiting with the run's status.
  const { NODE_TEST_CONTEXT: _context, ...own } = env;
  const result = spawnSync(process.execPath, ['--import', 'tsx', 'test/cluster/run-suite.ts', folder, ...files], {
    cwd: root,
    env: own,
    encoding: 'utf8',
    // The hang detector, not a speed bound: the runs below take seconds.
    timeout: 120_000,
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

describe('npm run test:e2e', () => {
  it('with TOLERATOR_CONTROL_PLANE_BIN set, runs the suites on that build and asks Go to build nothing', () => {
    // A Go whose version matches no build here: a run that built would call `go build`, which fails.
    const go = fakeGo('go1.99.0');
    const bin = mkdtempSync(join(tmpdir(), 'tolerator-named-bin-'));
    try {
      const run = runSuite(['test/fixtures/e2e/passes.e2e.ts'], { ...go.env, TOLERATOR_CONTROL_PLANE_BIN: bin });
      assert.equal(run.status, 0, run.output);
      assert.match(run.output, /^ℹ pass 1$/m);
      assert.deepEqual(
        go.calls().filter((call) => call.includes(' build ')),
        [],
      );
    } finally {
      go.remove();
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it('a suite whose setup never ends fails at the bound (--test-timeout) instead of hanging the run', () => {
    const bin = mkdtempSync(join(tmpdir(), 'tolerator-named-bin-'));
    try {
      const run = runSuite(['test/fixtures/e2e/never-ends.e2e.ts'], {
        ...process.env,
        TOLERATOR_CONTROL_PLANE_BIN: bin,
        TOLERATOR_E2E_TIMEOUT_MS: '2000',
      });
      assert.equal(run.status, 1, run.output);
      assert.match(run.output, /timed out after 2000ms/);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it('runs the suites one at a time, whatever the number of cores (node would run cores - 1 files at once)', () => {
    // On this project's 2-core machines node's default is one file at a time already; on a CI
    // runner with 4 cores it was 3 control planes at once, which docs/testing.md says never happens.
    const bin = mkdtempSync(join(tmpdir(), 'tolerator-named-bin-'));
    try {
      const run = runSuite(['test/fixtures/e2e/one-at-a-time-first.e2e.ts', 'test/fixtures/e2e/one-at-a-time-second.e2e.ts'], {
        ...process.env,
        TOLERATOR_CONTROL_PLANE_BIN: bin,
        TOLERATOR_FIXTURE_LOCK: join(bin, 'lock'),
      });
      assert.equal(run.status, 0, run.output);
      assert.match(run.output, /^ℹ pass 2$/m);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it('refuses a TOLERATOR_E2E_TIMEOUT_MS that is not a number of milliseconds', () => {
    const bin = mkdtempSync(join(tmpdir(), 'tolerator-named-bin-'));
    try {
      const run = runSuite(['test/fixtures/e2e/passes.e2e.ts'], {
        ...process.env,
        TOLERATOR_CONTROL_PLANE_BIN: bin,
        TOLERATOR_E2E_TIMEOUT_MS: '10m',
      });
      assert.notEqual(run.status, 0);
      assert.match(run.output, /TOLERATOR_E2E_TIMEOUT_MS must be a positive number of milliseconds, not "10m"/);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it('npm run test:differential runs *.differential.ts suites the same way, and refuses a folder it does not know', () => {
    const bin = mkdtempSync(join(tmpdir(), 'tolerator-named-bin-'));
    try {
      const run = runSuite(
        ['test/fixtures/differential/passes.differential.ts'],
        { ...process.env, TOLERATOR_CONTROL_PLANE_BIN: bin },
        'differential',
      );
      assert.equal(run.status, 0, run.output);
      assert.match(run.output, /runs as a differential suite/);
      assert.match(run.output, /^ℹ pass 1$/m);
      const unknown = spawnSync(process.execPath, ['--import', 'tsx', 'test/cluster/run-suite.ts', 'scheduler'], {
        cwd: root,
        encoding: 'utf8',
      });
      assert.equal(unknown.status, 2);
      assert.match(unknown.stderr, /usage: .* e2e\|differential \[FILE\.\.\.\]/);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it('--version MINOR runs the suites on that minor (TOLERATOR_CONTROL_PLANE_VERSION for them), wherever it stands', () => {
    const bin = mkdtempSync(join(tmpdir(), 'tolerator-named-bin-'));
    try {
      const { TOLERATOR_CONTROL_PLANE_VERSION: _inherited, ...env } = process.env;
      const run = runSuite(['--version', '1.37', 'test/fixtures/e2e/reports-version.e2e.ts'], {
        ...env,
        TOLERATOR_CONTROL_PLANE_BIN: bin,
        TOLERATOR_FIXTURE_EXPECT_VERSION: '1.37',
      });
      assert.equal(run.status, 0, run.output);
      assert.match(run.output, /^ℹ pass 1$/m);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it('a kwok suite where Go is too old for kwok and no kwok is built: left out with one line, the others run; a failure with TOLERATOR_REQUIRE_CONTROL_PLANE=1', () => {
    // Go 1.25 builds the control plane (go 1.25.0) but not kwok (go 1.26.0).
    const go = fakeGo('go1.25.0');
    const bin = mkdtempSync(join(tmpdir(), 'tolerator-named-bin-'));
    try {
      const files = ['test/fixtures/e2e/needs-kwok.e2e.ts', 'test/fixtures/e2e/passes.e2e.ts'];
      const { TOLERATOR_REQUIRE_CONTROL_PLANE: _require, ...env } = go.env;
      const named = { TOLERATOR_CONTROL_PLANE_BIN: bin, TOLERATOR_KWOK_BIN: bin };
      const skipped = runSuite(files, { ...env, ...named });
      assert.equal(skipped.status, 0, skipped.output);
      const line =
        /^e2e: 1 kwok suites skipped \(test\/fixtures\/e2e\/needs-kwok\.e2e\.ts\): Go 1\.25\.0 is installed, and the module needs Go 1\.26\.0 or later, so kwok cannot be built \(TOLERATOR_REQUIRE_CONTROL_PLANE=1 makes this a failure\)$/m;
      assert.match(skipped.output, line);
      assert.match(skipped.output, /^ℹ pass 1$/m);
      assert.doesNotMatch(skipped.output, /runs with kwok/);
      const required = runSuite(files, { ...env, ...named, TOLERATOR_REQUIRE_CONTROL_PLANE: '1' });
      assert.equal(required.status, 1, required.output);
      assert.match(required.output, /kwok suites skipped .*\(TOLERATOR_REQUIRE_CONTROL_PLANE=1: a failure\)$/m);
      assert.deepEqual(
        go.calls().filter((call) => call.includes(' build ')),
        [],
      );
    } finally {
      go.remove();
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it("a Karpenter suite where tools/karpenter's toolchain (go1.27.3) cannot be fetched and it is not built: left out with one line, the others run; a failure with TOLERATOR_REQUIRE_CONTROL_PLANE=1", () => {
    // Go 1.26.8 builds kwok (go 1.26.0) and can switch toolchains, but the stand-in fetches none.
    const go = fakeGo('go1.26.8');
    const bin = mkdtempSync(join(tmpdir(), 'tolerator-named-bin-'));
    try {
      const files = ['test/fixtures/e2e/needs-karpenter.e2e.ts', 'test/fixtures/e2e/passes.e2e.ts'];
      const { TOLERATOR_REQUIRE_CONTROL_PLANE: _require, ...env } = go.env;
      const named = { TOLERATOR_CONTROL_PLANE_BIN: bin, TOLERATOR_KWOK_BIN: bin, TOLERATOR_KARPENTER_BIN: bin };
      const skipped = runSuite(files, { ...env, ...named });
      assert.equal(skipped.status, 0, skipped.output);
      assert.match(
        skipped.output,
        /^e2e: 1 karpenter suites skipped \(test\/fixtures\/e2e\/needs-karpenter\.e2e\.ts\): could not fetch the Go toolchain go1\.27\.3(?: \(GOPROXY=[^)]*\))?: go: download go1\.27\.3 for linux\/amd64: toolchain not available, so karpenter cannot be built \(TOLERATOR_REQUIRE_CONTROL_PLANE=1 makes this a failure\)$/m,
      );
      // The skip check asks with the build's toolchain, as the build would.
      assert.ok(go.calls().includes('go1.27.3 env GOVERSION'), go.calls().join('\n'));
      assert.match(skipped.output, /^ℹ pass 1$/m);
      assert.doesNotMatch(skipped.output, /runs with karpenter/);
      const required = runSuite(files, { ...env, ...named, TOLERATOR_REQUIRE_CONTROL_PLANE: '1' });
      assert.equal(required.status, 1, required.output);
      assert.match(required.output, /karpenter suites skipped .*\(TOLERATOR_REQUIRE_CONTROL_PLANE=1: a failure\)$/m);
      assert.deepEqual(
        go.calls().filter((call) => call.includes(' build ')),
        [],
      );
    } finally {
      go.remove();
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it('--version of a minor without a module is a failure (exit 2), not a skip', () => {
    const { TOLERATOR_CONTROL_PLANE_BIN: _bin, ...env } = process.env;
    const run = runSuite(['test/fixtures/e2e/passes.e2e.ts', '--version', '1.99'], env);
    assert.equal(run.status, 2, run.output);
    assert.match(run.output, /no module for Kubernetes 1\.99 \(tools\/controlplane\/1\.99\/go\.mod\)/);
  });
});
