/**
 * Kills what a test process started when that process dies without stopping it. A test file's
 * `after()` stops its control plane, but nothing runs `after()` when the file's process is killed:
 * SIGKILL (a CI job cancelled, an out-of-memory kill, a person's `kill -9`), a SIGTERM it does not
 * handle, or node's test runner ending the file after `--test-timeout` (Node 20 runs no `after()`
 * hook then). etcd and kube-apiserver were reparented to init and ran on, holding their ports and
 * a 64 MB etcd WAL in the temporary folder, for as long as the machine stayed up.
 *
 * Linux has prctl(PR_SET_PDEATHSIG) for this, but Node cannot set it for a child and the tests
 * also run on macOS. So the watch is a tiny process of its own: `node -e` with the source below,
 * in a process group of its own (so a Ctrl-C or a signal to the test's group does not reach it),
 * reading lines from a pipe whose other end only the test process holds. When that process dies,
 * however it dies, the kernel closes its end and the watcher reads end-of-file: it SIGKILLs every
 * process still registered (a test cluster's data is thrown away, so there is nothing for a
 * graceful shutdown to save) and removes the folders registered for removal. A clean `close()`
 * says `close` first, and the watcher exits without touching anything.
 *
 * The protocol, one line each: `+PID` watch a process, `-PID` it exited (so a reused PID is never
 * killed), `rm PATH` remove a folder if the test process dies, `close` a clean end.
 */
import { spawn } from 'node:child_process';
import type { Writable } from 'node:stream';

/** The watcher's program: plain JavaScript for `node -e`, so it starts in tens of milliseconds, without tsx. */
const watcherSource = `
const pids = new Set();
const dirs = [];
let closed = false;
let buffered = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buffered += chunk;
  for (let newline = buffered.indexOf('\\n'); newline !== -1; newline = buffered.indexOf('\\n')) {
    const line = buffered.slice(0, newline);
    buffered = buffered.slice(newline + 1);
    if (line === 'close') closed = true;
    else if (line.startsWith('+')) pids.add(Number(line.slice(1)));
    else if (line.startsWith('-')) pids.delete(Number(line.slice(1)));
    else if (line.startsWith('rm ')) dirs.push(line.slice(3));
  }
});
const reap = () => {
  if (!closed) {
    for (const pid of pids) {
      try { process.kill(pid, 'SIGKILL'); } catch {}
    }
    for (const dir of dirs) {
      try { require('node:fs').rmSync(dir, { recursive: true, force: true }); } catch {}
    }
  }
  process.exit(0);
};
process.stdin.on('end', reap);
process.stdin.on('error', reap);
`;

export interface Reaper {
  /** The watcher's own PID (tests check that it ends). */
  readonly pid: number;
  /** Kill `pid` if this process dies before calling `exited(pid)` or `close()`. */
  watch(pid: number): void;
  /** `pid` has exited: never kill that number, which the system may give to another process. */
  exited(pid: number): void;
  /** Remove `dir` (recursively) if this process dies before `close()`. */
  removeOnDeath(dir: string): void;
  /** A clean end: the watcher exits and kills nothing. */
  close(): void;
}

/** Starts a watcher for the calling process; it costs one idle `node` process until close(). */
export function startReaper(): Reaper {
  const watcher = spawn(process.execPath, ['-e', watcherSource], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
  if (watcher.pid === undefined) throw new Error('the reaper process did not start');
  // Neither the watcher nor the pipe to it may keep a test file's event loop alive: the file
  // ends when its tests do, and that end is what the watcher waits for.
  watcher.unref();
  const stdin = watcher.stdin as Writable & { unref?: () => void };
  stdin.unref?.();
  // A watcher that died (it never should) must not crash the test with EPIPE.
  stdin.on('error', () => undefined);
  let closed = false;
  const send = (line: string): void => {
    if (!closed) stdin.write(`${line}\n`);
  };
  return {
    pid: watcher.pid,
    watch: (pid) => {
      send(`+${pid}`);
    },
    exited: (pid) => {
      send(`-${pid}`);
    },
    removeOnDeath: (dir) => {
      if (dir.includes('\n')) throw new Error(`a folder name with a newline cannot be registered: ${JSON.stringify(dir)}`);
      send(`rm ${dir}`);
    },
    close: () => {
      if (closed) return;
      send('close');
      closed = true;
      stdin.end();
    },
  };
}
