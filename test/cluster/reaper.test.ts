/**
 * The reaper (test/cluster/reaper.ts): when the process that started a control plane dies without
 * stopping it, the processes it registered are killed and its temporary folder removed; after a
 * clean close, nothing is. Run with `sleep` processes standing in for etcd and kube-apiserver, so
 * no control plane build is needed.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pollUntil } from './poll.js';

const root = join(import.meta.dirname, '..', '..');

interface Registered {
  readonly reaper: number;
  readonly watched: number;
  readonly forgotten: number;
  readonly dir: string;
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Starts test/support/reaper-child.ts in `mode`, returns what it registered, then SIGKILLs it. */
async function runAndKill(mode: 'die' | 'close'): Promise<Registered> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/reaper-child.ts', mode], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const registered = await pollUntil('the child to register its processes', () =>
    Promise.resolve(output.includes('\n') ? (JSON.parse(output) as Registered) : undefined),
  );
  child.kill('SIGKILL');
  await once(child, 'exit');
  return registered;
}

function cleanUp(registered: Registered): void {
  for (const pid of [registered.watched, registered.forgotten]) if (running(pid)) process.kill(pid, 'SIGKILL');
  rmSync(registered.dir, { recursive: true, force: true });
}

describe('the reaper of a test process', () => {
  it('a test process killed with SIGKILL leaves none of its registered processes running and no temporary folder', async () => {
    const registered = await runAndKill('die');
    try {
      // The watcher acts on the end-of-file it reads at the kill: at once; 30 s is for a busy machine.
      await pollUntil('the watched process to be killed', () => Promise.resolve(running(registered.watched) ? undefined : true), {
        timeoutMs: 30_000,
      });
      assert.equal(existsSync(registered.dir), false, 'the temporary folder is removed');
      // A process reported exited is never killed: its PID may belong to another process by now.
      assert.equal(running(registered.forgotten), true, 'the process reported exited is left alone');
      await pollUntil('the watcher to exit', () => Promise.resolve(running(registered.reaper) ? undefined : true), { timeoutMs: 30_000 });
    } finally {
      cleanUp(registered);
    }
  });

  it('after a clean close, the death of the test process kills nothing and removes nothing, and the watcher has exited', async () => {
    const registered = await runAndKill('close');
    try {
      await pollUntil('the watcher to exit', () => Promise.resolve(running(registered.reaper) ? undefined : true), { timeoutMs: 30_000 });
      assert.equal(running(registered.watched), true);
      assert.equal(existsSync(registered.dir), true);
    } finally {
      cleanUp(registered);
    }
  });
});
