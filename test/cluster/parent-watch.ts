/**
 * Notices that the process which started this one is gone, so a foreground tool (`npm run
 * control-plane`, `npm run try`) stops what it started when a person kills the PID they see.
 *
 * `npm run X &` then `kill $!` signals npm only. npm passes the signal to the `sh -c` that runs the
 * script and exits; the shell dies of it without passing it on, and node, the script itself, is
 * reparented and runs on with everything it started (measured with npm 11 and dash: etcd,
 * kube-apiserver, kube-scheduler and kube-controller-manager, about 600 MB, until the machine
 * stops). Linux's PR_SET_PDEATHSIG would tell us, but Node cannot set it, and it would only cover
 * the shell, not npm. So this polls: on Linux each watched ancestor is identified by its PID and
 * its start time (field 22 of /proc/PID/stat), so a PID the system reuses is not taken for the
 * process that was there; elsewhere, the parent's PID changing is the sign.
 *
 * The ancestors watched: the parent, and, when npm ran the script (npm sets npm_lifecycle_event),
 * each ancestor up to npm's own process (whose title npm sets to `npm run …`), at most three levels.
 */
import { readFileSync } from 'node:fs';

interface ProcessIdentity {
  readonly pid: number;
  readonly ppid: number;
  /** Clock ticks after boot: with the PID, names one process for as long as the machine runs. */
  readonly startTime: string;
  readonly command: string;
}

/** /proc/PID/stat of a running process (Linux), or undefined. The command sits in parentheses and may hold spaces. */
function identity(pid: number): ProcessIdentity | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const close = stat.lastIndexOf(')');
  const command = stat.slice(stat.indexOf('(') + 1, close);
  // After ") ": state(3) ppid(4) … starttime(22); index 0 here is field 3.
  const fields = stat.slice(close + 2).split(' ');
  const ppid = Number(fields[1]);
  const startTime = fields[19] ?? '';
  return { pid, ppid, startTime, command };
}

/** The ancestors to watch, nearest first (see the module comment). */
export function watchedAncestors(env: NodeJS.ProcessEnv = process.env): ProcessIdentity[] {
  const parent = identity(process.ppid);
  if (parent === undefined) return [];
  const chain = [parent];
  if (env.npm_lifecycle_event === undefined) return chain;
  let current = parent;
  for (let level = 0; level < 3 && !current.command.startsWith('npm'); level++) {
    const next = identity(current.ppid);
    if (next === undefined || next.pid <= 1) break;
    chain.push(next);
    current = next;
  }
  // npm not found within three levels: something else runs the script; its parent is enough.
  return current.command.startsWith('npm') ? chain : [parent];
}

/**
 * Calls `onGone` once, with a sentence saying which process went, when a watched ancestor exits.
 * Returns the function that stops watching. The timer does not keep the event loop alive.
 */
export function watchParents(onGone: (why: string) => void, intervalMs = 500): () => void {
  const ancestors = watchedAncestors();
  const initialParent = process.ppid;
  const check = (): string | undefined => {
    if (ancestors.length === 0) {
      return process.ppid === initialParent ? undefined : `the parent process ${initialParent} exited`;
    }
    for (const ancestor of ancestors) {
      const now = identity(ancestor.pid);
      if (now === undefined || now.startTime !== ancestor.startTime) return `${ancestor.command} (PID ${ancestor.pid}) exited`;
    }
    return undefined;
  };
  const timer = setInterval(() => {
    const why = check();
    if (why === undefined) return;
    clearInterval(timer);
    onGone(why);
  }, intervalMs);
  timer.unref();
  return () => {
    clearInterval(timer);
  };
}
