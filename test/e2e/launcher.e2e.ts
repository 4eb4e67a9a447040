/**
 * `npm run control-plane -- --dir DIR` as a contributor runs it: it writes DIR/kubeconfig and
 * DIR/ready, the API server it started answers with that kubeconfig and reports the pinned
 * version, and SIGTERM stops every process it started before it exits 0.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { REPO_ROOT, findControlPlane, skipWithoutControlPlane } from '../cluster/binaries.js';

const skip = skipWithoutControlPlane();

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('npm run control-plane', { skip }, () => {
  it('serves with DIR/kubeconfig, reports the pinned version, and SIGTERM stops every process it started', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tolerator-launcher-'));
    try {
      const launcher = spawn(
        process.execPath,
        ['--import', 'tsx', 'test/cluster/launch.ts', '--dir', dir, '--scheduler', '--controller-manager'],
        {
          cwd: REPO_ROOT,
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let output = '';
      launcher.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      launcher.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const deadline = Date.now() + 120_000;
      while (!existsSync(join(dir, 'ready')) && launcher.exitCode === null && Date.now() < deadline) await sleep(200);
      assert.ok(existsSync(join(dir, 'ready')), `not ready: ${output}`);
      // DIR/pids is written just after DIR/ready.
      while (!existsSync(join(dir, 'pids')) && Date.now() < deadline) await sleep(50);

      const built = findControlPlane();
      assert.ok(typeof built !== 'string');
      const version = JSON.parse(
        execFileSync(join(dir, 'bin', 'kubectl'), ['--kubeconfig', join(dir, 'kubeconfig'), 'get', '--raw', '/version'], {
          encoding: 'utf8',
        }),
      ) as { gitVersion: string };
      assert.equal(version.gitVersion, built.version);
      const pids = readFileSync(join(dir, 'pids'), 'utf8').trim().split('\n').map(Number);
      assert.equal(pids.length, 4, 'etcd, kube-apiserver, kube-scheduler, kube-controller-manager');
      assert.ok(pids.every(running));

      launcher.kill('SIGTERM');
      const [code] = (await once(launcher, 'exit')) as [number | null];
      assert.equal(code, 0, output);
      assert.deepEqual(pids.filter(running), [], 'every process it started is gone');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
