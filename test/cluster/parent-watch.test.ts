/**
 * test/cluster/parent-watch.ts: a script run through a shell (as `npm run` runs it) notices that
 * the shell, or npm above it, was killed, however it was killed. Uses `sh` and a stand-in for
 * npm, so no control plane is needed; test/e2e/launcher.e2e.ts kills a real `npm run
 * control-plane`.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pollUntil } from './poll.js';

const root = join(import.meta.dirname, '..', '..');
const child = 'node --import tsx test/support/parent-watch-child.ts';

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Runs `command` with sh, waits for the child's PID, kills `victim` of the chain, returns what the child said. */
async function killAncestor(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<{ pid: number; gone: string }> {
  const shell = spawn(argv[0] ?? 'sh', argv.slice(1), { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  shell.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const lines = (): { pid?: number; gone?: string }[] =>
    output
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { pid?: number; gone?: string });
  const pid = await pollUntil('the child to start', () => Promise.resolve(lines().find((line) => line.pid !== undefined)?.pid));
  shell.kill('SIGKILL');
  await once(shell, 'exit');
  try {
    const gone = await pollUntil('the child to notice', () => Promise.resolve(lines().find((line) => line.gone !== undefined)?.gone), {
      timeoutMs: 30_000,
    });
    await pollUntil('the child to exit', () => Promise.resolve(running(pid) ? undefined : true), { timeoutMs: 30_000 });
    return { pid, gone };
  } finally {
    if (running(pid)) process.kill(pid, 'SIGKILL');
  }
}

describe('killing the PID of a backgrounded npm run control-plane: the script notices its parents are gone', () => {
  it('its parent shell killed with SIGKILL: it notices and exits', async () => {
    const { gone } = await killAncestor(['sh', '-c', `${child}; true`], { ...process.env, npm_lifecycle_event: undefined });
    assert.match(gone, /^sh \(PID \d+\) exited$|^the parent process \d+ exited$/);
  });

  it('run by npm (npm_lifecycle_event set), npm killed and the shell left running: it notices npm is gone', async () => {
    // A shell under a name that starts with "npm" (the kernel names a process after the file it
    // ran, a link's own name) stands in for npm; it runs the shell that runs the script, and
    // only it is killed.
    const dir = mkdtempSync(join(tmpdir(), 'tolerator-parent-watch-'));
    try {
      const standIn = join(dir, 'npm-stand-in');
      symlinkSync('/bin/sh', standIn);
      const { gone } = await killAncestor([standIn, '-c', `sh -c '${child}; true'; true`], {
        ...process.env,
        npm_lifecycle_event: 'control-plane',
      });
      assert.match(gone, /^npm-stand-in \(PID \d+\) exited$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
