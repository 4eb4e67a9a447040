/**
 * `npm run control-plane -- --dir DIR` as a contributor runs it: it writes DIR/kubeconfig and
 * DIR/ready, the API server it started answers with that kubeconfig and reports the pinned
 * version, and SIGTERM stops every process it started before it exits 0. Killed with SIGKILL, it
 * runs no handler at all, and still none of its processes outlives it (test/cluster/reaper.ts).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcessByStdio } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { REPO_ROOT, findControlPlane, skipWithoutControlPlane } from '../cluster/binaries.js';
import { pollUntil } from '../cluster/poll.js';
import { stopChild } from '../cluster/tolerator-on-cluster.js';

const skip = skipWithoutControlPlane();

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

interface Launched {
  readonly launcher: ChildProcessByStdio<null, Readable, Readable>;
  /** What it printed so far, for the assertion messages. */
  readonly output: () => string;
  /** The processes it started, from DIR/pids. */
  readonly pids: readonly number[];
}

/** Starts the launcher in `dir` and waits (up to 120 s, two busy cores) for DIR/ready and DIR/pids. */
async function launch(dir: string, extraArgs: readonly string[]): Promise<Launched> {
  const launcher = spawn(process.execPath, ['--import', 'tsx', 'test/cluster/launch.ts', '--dir', dir, ...extraArgs], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  launcher.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  launcher.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 120_000;
  while (!existsSync(join(dir, 'ready')) && launcher.exitCode === null && Date.now() < deadline) await sleep(200);
  assert.ok(existsSync(join(dir, 'ready')), `not ready: ${output}`);
  // DIR/pids is written just after DIR/ready.
  while (!existsSync(join(dir, 'pids')) && Date.now() < deadline) await sleep(50);
  const pids = readFileSync(join(dir, 'pids'), 'utf8').trim().split('\n').map(Number);
  return { launcher, output: () => output, pids };
}

describe('npm run control-plane', { skip }, () => {
  it('serves with DIR/kubeconfig, reports the pinned version, and SIGTERM stops every process it started', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tolerator-launcher-'));
    let launched: Launched | undefined;
    try {
      launched = await launch(dir, ['--scheduler', '--controller-manager']);
      const built = findControlPlane();
      assert.ok(typeof built !== 'string');
      const version = JSON.parse(
        execFileSync(join(dir, 'bin', 'kubectl'), ['--kubeconfig', join(dir, 'kubeconfig'), 'get', '--raw', '/version'], {
          encoding: 'utf8',
        }),
      ) as { gitVersion: string };
      assert.equal(version.gitVersion, built.version);
      const { launcher, pids } = launched;
      assert.equal(pids.length, 4, 'etcd, kube-apiserver, kube-scheduler, kube-controller-manager');
      assert.ok(pids.every(running));

      launcher.kill('SIGTERM');
      const [code] = (await once(launcher, 'exit')) as [number | null];
      assert.equal(code, 0, launched.output());
      assert.deepEqual(pids.filter(running), [], 'every process it started is gone');
    } finally {
      // A failed assertion above must not leave the launcher serving: its piped output would keep
      // this file's process, and the whole suite, waiting on it for ever.
      if (launched !== undefined) await stopChild(launched.launcher, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('killed with SIGKILL, it leaves none of the processes it started running', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tolerator-launcher-'));
    let pids: readonly number[] = [];
    try {
      const launched = await launch(dir, []);
      pids = launched.pids;
      assert.equal(pids.length, 2, 'etcd, kube-apiserver');
      assert.ok(pids.every(running));
      await stopChild(launched.launcher, 'SIGKILL');
      // The watcher kills at the end-of-file it reads when the launcher dies: well within a
      // second; 30 s leaves room for a machine busy with builds.
      await pollUntil('the killed launcher’s processes to be gone', () => Promise.resolve(pids.some(running) ? undefined : true), {
        timeoutMs: 30_000,
        describe: () => `still running: ${pids.filter(running).join(', ')}`,
      });
    } finally {
      // Should the watcher have failed, this test leaves nothing behind either.
      for (const pid of pids.filter(running)) process.kill(pid, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('killing the PID of a backgrounded npm run control-plane leaves no etcd, kube-apiserver, scheduler or controller-manager running', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tolerator-launcher-'));
    let pids: readonly number[] = [];
    // As a person runs it: `npm run control-plane -- --dir DIR ... &`, then `kill $!` (SIGTERM to npm alone).
    const npm = spawn('npm', ['run', '--silent', 'control-plane', '--', '--dir', dir, '--scheduler', '--controller-manager'], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'ignore', 'ignore'],
    });
    try {
      const deadline = Date.now() + 120_000;
      while (!existsSync(join(dir, 'pids')) && npm.exitCode === null && Date.now() < deadline) await sleep(200);
      pids = readFileSync(join(dir, 'pids'), 'utf8').trim().split('\n').map(Number);
      assert.equal(pids.length, 4, 'etcd, kube-apiserver, kube-scheduler, kube-controller-manager');
      npm.kill('SIGTERM');
      await once(npm, 'exit');
      // The launcher polls its parents every 500 ms, then stops each component (SIGTERM, 10 s at most each).
      await pollUntil('the components to be gone after npm was killed', () => Promise.resolve(pids.some(running) ? undefined : true), {
        timeoutMs: 60_000,
        describe: () => `still running: ${pids.filter(running).join(', ')}`,
      });
    } finally {
      if (npm.exitCode === null) npm.kill('SIGKILL');
      for (const pid of pids.filter(running)) process.kill(pid, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
