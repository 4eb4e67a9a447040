/**
 * The container's memory limit, read from its cgroup (src/server/cgroup-memory.ts): cgroup v2's
 * `memory.max` and v1's `memory.limit_in_bytes`, on the process's own path and its ancestors,
 * through a table of files in place of the machine's.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cgroupPaths, parseCgroupLimit, readCgroupMemoryLimit } from '../../src/server/cgroup-memory.js';

const MiB = 1024 * 1024;

function files(table: Record<string, string>): (file: string) => string {
  return (file) => {
    const text = table[file];
    if (text === undefined) throw Object.assign(new Error(`ENOENT: ${file}`), { code: 'ENOENT' });
    return text;
  };
}

describe('the memory limit is read from the cgroup at the edge', () => {
  it('cgroup v2 in a container: /sys/fs/cgroup/memory.max; "max" is no limit', () => {
    const v2 = { '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/memory.max': '536870912\n' };
    assert.deepEqual(readCgroupMemoryLimit(files(v2)), { bytes: 512 * MiB, file: '/sys/fs/cgroup/memory.max' });
    assert.equal(readCgroupMemoryLimit(files({ ...v2, '/sys/fs/cgroup/memory.max': 'max\n' })), undefined);
  });

  it("cgroup v2 outside a cgroup namespace: the process's own group, or the smallest limit of an ancestor", () => {
    const table = {
      '/proc/self/cgroup': '0::/system.slice/tolerator.scope\n',
      '/sys/fs/cgroup/memory.max': 'max',
      '/sys/fs/cgroup/system.slice/memory.max': '1073741824',
      '/sys/fs/cgroup/system.slice/tolerator.scope/memory.max': '536870912',
    };
    assert.deepEqual(readCgroupMemoryLimit(files(table)), {
      bytes: 512 * MiB,
      file: '/sys/fs/cgroup/system.slice/tolerator.scope/memory.max',
    });
    const parentSmaller = { ...table, '/sys/fs/cgroup/system.slice/memory.max': '268435456' };
    assert.deepEqual(readCgroupMemoryLimit(files(parentSmaller)), { bytes: 256 * MiB, file: '/sys/fs/cgroup/system.slice/memory.max' });
  });

  it("cgroup v1 as the fallback: the memory controller's limit_in_bytes; the kernel's unlimited is no limit", () => {
    const v1 = {
      '/proc/self/cgroup': '12:cpu,cpuacct:/\n4:memory:/kubepods/pod1/c1\n0::/\n',
      '/sys/fs/cgroup/memory/memory.limit_in_bytes': '9223372036854771712\n',
      '/sys/fs/cgroup/memory/kubepods/pod1/c1/memory.limit_in_bytes': '536870912\n',
    };
    assert.deepEqual(readCgroupMemoryLimit(files(v1)), {
      bytes: 512 * MiB,
      file: '/sys/fs/cgroup/memory/kubepods/pod1/c1/memory.limit_in_bytes',
    });
    const unlimited = { ...v1, '/sys/fs/cgroup/memory/kubepods/pod1/c1/memory.limit_in_bytes': '9223372036854771712' };
    assert.equal(readCgroupMemoryLimit(files(unlimited)), undefined);
  });

  it('no cgroup files at all (not Linux, a sandbox): no limit, and nothing thrown', () => {
    assert.equal(readCgroupMemoryLimit(files({})), undefined);
  });

  it('what the files hold is parsed strictly: digits only, "max", the unlimited sentinel and garbage are no limit', () => {
    assert.equal(parseCgroupLimit('536870912\n'), 512 * MiB);
    assert.equal(parseCgroupLimit('max'), undefined);
    assert.equal(parseCgroupLimit('0'), undefined);
    assert.equal(parseCgroupLimit('-1'), undefined);
    assert.equal(parseCgroupLimit('12k'), undefined);
    assert.equal(parseCgroupLimit(String(2 ** 62)), undefined);
    assert.deepEqual(cgroupPaths('0::/a/b\n5:memory:/c\n'), { v2: '/a/b', v1Memory: '/c' });
    assert.deepEqual(cgroupPaths('3:cpuset:/x\n'), {});
  });
});
