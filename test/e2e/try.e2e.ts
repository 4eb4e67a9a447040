/**
 * `npm run try` as the README tells a newcomer to run it: started with npm, the walkthrough's
 * kubectl commands run as written in the README with the export line it printed, each printing
 * what the README shows; then the PID it printed is killed, and no process it started is left
 * and its folder is gone.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT, skipWithoutControlPlane } from '../cluster/binaries.js';
import { pollUntil } from '../cluster/poll.js';

const skip = skipWithoutControlPlane();

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The README's "Try it on a cluster" section: its walkthrough commands and the output it shows. */
function walkthrough(): { commands: string[]; shown: string[] } {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Try it on a cluster'));
  const blocks = [...section.slice(0, section.indexOf('\n## ', 1)).matchAll(/```(\w*)\n([\s\S]*?)```/g)];
  const [, commands, shown] = blocks;
  assert.ok(commands !== undefined && shown !== undefined, 'the section has the start, the walkthrough and its output');
  return { commands: commands[2]!.trim().split('\n'), shown: shown[2]!.trim().split('\n') };
}

describe('npm run try', { skip }, () => {
  it('npm run try starts a cluster with tolerator, the README walkthrough prints what it shows, and killing the printed PID leaves no process', async () => {
    const { commands, shown } = walkthrough();
    const npm = spawn('npm', ['run', 'try'], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    npm.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    npm.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    let pids: number[] = [];
    let tryPid: number | undefined;
    try {
      // Its own deadlines add up to 420 s (run-suite.ts): the control plane, tolerator, the webhooks.
      await pollUntil('npm run try to be ready', () => Promise.resolve(output.includes('\ntry: ready') ? true : undefined), {
        timeoutMs: 480_000,
        describe: () => output,
      });
      const exportLine = /in another shell: (export KUBECONFIG=\S+ PATH=\S+)/.exec(output)?.[1];
      tryPid = Number(/stop: Ctrl-C, or kill (\d+)/.exec(output)?.[1]);
      const dir = /starting Kubernetes \S+ and tolerator in (\S+) /.exec(output)?.[1];
      assert.ok(exportLine !== undefined && dir !== undefined && tryPid > 0, output);
      assert.ok(existsSync(join(dir, 'bin', 'kubectl')), 'the kubectl it names is there');
      pids = readFileSync(join(dir, 'pids'), 'utf8').trim().split('\n').map(Number);
      assert.equal(pids.length, 5, 'etcd, kube-apiserver, kube-scheduler, kube-controller-manager, tolerator');

      const sh = (command: string): { status: number | null; stdout: string; stderr: string } =>
        spawnSync('sh', ['-c', `${exportLine}; ${command}`], { encoding: 'utf8', timeout: 60_000 });
      const [createNamespace, runPod, getPod, escape] = commands;
      assert.equal(sh(createNamespace!).stdout, 'namespace/team-a created\n');
      assert.equal(sh(runPod!).stdout, 'pod/web created\n');
      // The README's reader is slower than the scheduler; this test waits for the binding.
      const got = await pollUntil('the pod to be bound', () => {
        const result = sh(getPod!);
        return Promise.resolve(result.stdout.startsWith('\n') ? undefined : result.stdout);
      });
      assert.deepEqual(got.trim().split('\n'), shown.slice(0, 5));
      const refused = sh(escape!);
      assert.equal(refused.status, 1);
      assert.equal(refused.stderr.trim(), shown[5]);

      process.kill(tryPid, 'SIGTERM');
      await once(npm, 'exit');
      assert.match(output, /try: SIGTERM, stopping tolerator and 4 control plane processes\ntry: stopped\n/);
      assert.deepEqual(
        [...pids, tryPid].filter((pid) => running(pid)),
        [],
        'no process of the run is left',
      );
      assert.equal(existsSync(dir), false, 'its folder is removed');
    } finally {
      if (npm.exitCode === null) npm.kill('SIGKILL');
      if (tryPid !== undefined && running(tryPid)) process.kill(tryPid, 'SIGKILL');
      for (const pid of pids.filter(running)) process.kill(pid, 'SIGKILL');
    }
  });
});
