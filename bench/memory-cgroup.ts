/**
 * A memory cgroup of the Deployment's limit for a benchmarked server, where this machine lets the
 * bench make one (root, and cgroup v1's memory hierarchy or a cgroup v2 tree with the memory
 * controller delegated).
 *
 * Why it matters: Node.js sizes V8's heap from the memory its process may use — the cgroup's
 * limit when there is one (src/api/environment.cc, SetIsolateCreateParamsForNode:
 * uv_get_constrained_memory, then ResourceConstraints::ConfigureDefaults) — and V8 takes the young
 * generation's size from the old generation's. On a machine of 24 GiB a server gets a 4 GiB heap
 * limit and semi-spaces that grow to 16 MiB; in a container limited to 512 MiB, a 259 MiB heap
 * limit and a young generation of 2 MiB (`v8.getHeapSpaceStatistics()` after a burst of short-lived
 * allocations: new_space 32.0 MiB outside, 2.0 MiB inside such a cgroup, on this machine). RSS
 * measured outside the container's limit is not the RSS the container has.
 */
import { mkdirSync, readFileSync, rmdirSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

export interface MemoryCgroup {
  /** The file a process writes its PID into to join the group. */
  readonly procsFile: string;
  /** `512 MiB, the Deployment's limit (cgroup v1)` — for the table. */
  readonly description: string;
  /** Removes the group; its processes must have exited. */
  readonly remove: () => void;
}

const v1Root = '/sys/fs/cgroup/memory';
const v2Root = '/sys/fs/cgroup';

/**
 * A new memory cgroup limited to `bytes`, or the reason there is none (not root, no memory
 * controller, a read-only hierarchy). `name` must be unique on the machine (the bench adds its PID).
 */
export function createMemoryCgroup(name: string, bytes: number): MemoryCgroup | { readonly reason: string } {
  const attempts: string[] = [];
  const v1 = join(v1Root, name);
  if (existsSync(join(v1Root, 'memory.limit_in_bytes'))) {
    try {
      mkdirSync(v1);
      writeFileSync(join(v1, 'memory.limit_in_bytes'), String(bytes));
      return {
        procsFile: join(v1, 'cgroup.procs'),
        description: `${bytes / 1024 / 1024} MiB, the Deployment's limit (cgroup v1)`,
        remove: () => {
          removeQuietly(v1);
        },
      };
    } catch (error) {
      removeQuietly(v1);
      attempts.push(`${v1Root}: ${(error as Error).message}`);
    }
  }
  const controllers = readQuietly(join(v2Root, 'cgroup.subtree_control'));
  if (controllers !== undefined && controllers.split(/\s+/).includes('memory')) {
    const v2 = join(v2Root, name);
    try {
      mkdirSync(v2);
      writeFileSync(join(v2, 'memory.max'), String(bytes));
      return {
        procsFile: join(v2, 'cgroup.procs'),
        description: `${bytes / 1024 / 1024} MiB, the Deployment's limit (cgroup v2)`,
        remove: () => {
          removeQuietly(v2);
        },
      };
    } catch (error) {
      removeQuietly(v2);
      attempts.push(`${v2Root}: ${(error as Error).message}`);
    }
  } else {
    attempts.push(`${v2Root}: no memory controller delegated`);
  }
  return { reason: attempts.join('; ') };
}

/** The command that joins the cgroup and then runs `command` (the shell replaced by it: same PID). */
export function inCgroup(cgroup: MemoryCgroup, command: readonly string[]): string[] {
  return ['sh', '-c', 'echo $$ > "$0" && exec "$@"', cgroup.procsFile, ...command];
}

/** The Deployment's memory limit in bytes, read from deploy/base/deployment.yaml (`memory: 512Mi`). */
export function deploymentMemoryLimitBytes(root: string): number {
  const text = readFileSync(join(root, 'deploy/base/deployment.yaml'), 'utf8');
  const limits = text.slice(text.indexOf('limits:'));
  const match = /memory:\s*"?(\d+)Mi"?/.exec(limits);
  if (match?.[1] === undefined) throw new Error('deploy/base/deployment.yaml: no memory limit in Mi under limits:');
  return Number(match[1]) * 1024 * 1024;
}

function readQuietly(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function removeQuietly(path: string): void {
  try {
    rmdirSync(path);
  } catch {
    // Already gone, or never made.
  }
}
