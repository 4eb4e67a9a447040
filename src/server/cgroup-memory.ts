/**
 * The memory limit of the container this process runs in, read from its memory cgroup: what the
 * number of review workers and every other bound of src/http/transport-limits.ts is derived from.
 *
 * Read here rather than through `process.constrainedMemory()`, whose answer without a limit
 * changed between Node.js releases (undefined, 0, or 2^64 − 1 as a double) and which says nothing
 * of where the figure came from: the start's log line names the file.
 *
 * Where the limit is:
 * - cgroup v2 (Kubernetes' default since 1.25 on current distributions): `memory.max` of the
 *   process's cgroup, "max" when unlimited. A container has a cgroup namespace of its own, so its
 *   cgroup is the root of /sys/fs/cgroup; outside one, /proc/self/cgroup's `0::/path` names it.
 * - cgroup v1: `memory.limit_in_bytes` under the memory controller's hierarchy
 *   (/sys/fs/cgroup/memory), named by the `N:memory:/path` line; unlimited is the largest page-aligned
 *   signed 64-bit number (9223372036854771712), so anything from 2^62 up counts as none.
 * A limit may also be set on an ancestor (the pod's cgroup above the container's, a systemd slice
 * above a scope): the smallest limit on the path from the process's cgroup to the root is the one
 * the kernel enforces.
 */
import { readFileSync } from 'node:fs';

export interface CgroupMemoryLimit {
  readonly bytes: number;
  /** The file it was read from. */
  readonly file: string;
}

/** At and above this, a v1 limit is the kernel's "unlimited" (2^63 − 4096 rounded to pages), not a limit. */
const unlimitedFrom = 2 ** 62;

/** The bytes a `memory.max` or `memory.limit_in_bytes` holds; undefined for "max", unlimited, or what is not a number. */
export function parseCgroupLimit(text: string): number | undefined {
  const value = text.trim();
  if (!/^\d+$/.test(value)) return undefined;
  const bytes = Number(value);
  return bytes > 0 && bytes < unlimitedFrom ? bytes : undefined;
}

/** The cgroup paths /proc/self/cgroup names: v2's (`0::/path`) and v1's memory controller's (`N:memory,…:/path`). */
export function cgroupPaths(procSelfCgroup: string): { v2?: string; v1Memory?: string } {
  const paths: { v2?: string; v1Memory?: string } = {};
  for (const line of procSelfCgroup.split('\n')) {
    const match = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (match === null) continue;
    const [, id, controllers = '', path = '/'] = match;
    if (id === '0' && controllers === '') paths.v2 = path;
    else if (controllers.split(',').includes('memory')) paths.v1Memory = path;
  }
  return paths;
}

/** `/a/b` and its ancestors down to `/`, as directories under `root`. */
function ancestry(root: string, path: string): string[] {
  const parts = path.split('/').filter((part) => part !== '' && part !== '.' && part !== '..');
  const dirs: string[] = [];
  for (let depth = parts.length; depth >= 0; depth--) dirs.push([root, ...parts.slice(0, depth)].join('/'));
  return dirs;
}

/**
 * The smallest memory limit on the process's cgroup path, v2 first, then v1; undefined when there
 * is none (no cgroup file readable, or every one unlimited). `read` is the file reader (tests pass
 * a table); a file that cannot be read is skipped.
 */
export function readCgroupMemoryLimit(
  read: (file: string) => string = (file) => readFileSync(file, 'utf8'),
): CgroupMemoryLimit | undefined {
  const tryRead = (file: string): string | undefined => {
    try {
      return read(file);
    } catch {
      return undefined;
    }
  };
  const paths = cgroupPaths(tryRead('/proc/self/cgroup') ?? '');
  const candidates = [
    ...ancestry('/sys/fs/cgroup', paths.v2 ?? '/').map((dir) => `${dir}/memory.max`),
    ...ancestry('/sys/fs/cgroup/memory', paths.v1Memory ?? '/').map((dir) => `${dir}/memory.limit_in_bytes`),
  ];
  let smallest: CgroupMemoryLimit | undefined;
  for (const file of new Set(candidates)) {
    const text = tryRead(file);
    const bytes = text === undefined ? undefined : parseCgroupLimit(text);
    if (bytes !== undefined && (smallest === undefined || bytes < smallest.bytes)) smallest = { bytes, file };
  }
  return smallest;
}
