/**
 * How many review workers a replica runs (src/http/transport-limits.ts, `reviewWorkerCount`), and
 * what the reviews decided at once may build (`reviewPeakEstimate`, `reviewMemoryBytes`): pure
 * arithmetic on the memory limit, the measured peaks and the CPUs. How the limit is read is
 * test/server/cgroup-memory.test.ts; how the pool keeps to it, test/server/review-pool.test.ts.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { processBytes, reviewPeakEstimate, reviewWorkerCount, transportLimits, workerPeakBytes } from '../../src/http/transport-limits.js';

const MiB = 1024 * 1024;

describe('the number of review workers follows the memory the replica may use', () => {
  it("the Deployment's memory limit gives two review workers, each with the heap the worst review needs", () => {
    const deployment = parse(readFileSync(new URL('../../deploy/base/deployment.yaml', import.meta.url), 'utf8')) as {
      spec: { template: { spec: { containers: { name: string; resources: { limits: { memory: string } } }[] } } };
    };
    const limit = deployment.spec.template.spec.containers[0]?.resources.limits.memory ?? '';
    assert.equal(limit, '512Mi', 'the figure below is derived from this limit');
    const bytes = 512 * MiB;
    const limits = transportLimits({ constrainedMemoryBytes: bytes, totalMemoryBytes: 64 * 1024 * MiB, cpus: 2 });
    assert.equal(limits.reviewWorkers, 2);
    assert.equal(limits.workerHeapMib, 160);
    // What the two may build at once: another team's 120 KB pod beside a tenant's 3 MiB one, not two 3 MiB pods.
    assert.ok(reviewPeakEstimate(3 * MiB) + reviewPeakEstimate(120_000) <= limits.reviewMemoryBytes);
    assert.ok(2 * reviewPeakEstimate(3 * MiB) > limits.reviewMemoryBytes);
  });

  it('as many measured peaks as fit beside the reserve, at most one per CPU, at least one', () => {
    const count = (memoryMib: number, cpus: number): number =>
      reviewWorkerCount({ memoryBytes: memoryMib * MiB, reserveBytes: 288 * MiB, workerPeakBytes, cpus });
    assert.equal(workerPeakBytes, 96 * MiB);
    assert.equal(count(512, 2), 2, '(512 − 288) / 96 = 2.3');
    assert.equal(count(479, 8), 1, 'one MiB short of two peaks: one');
    assert.equal(count(480, 8), 2);
    assert.equal(count(2048, 4), 4, 'memory for eighteen, four CPUs: four');
    assert.equal(count(256, 4), 1, 'no room at all: still one, or a large review would hold the main thread');
    assert.equal(count(1024, 1), 1);
  });

  it('an explicit --review-workers wins over the derived count; 0 keeps every review on the main thread', () => {
    const machine = { constrainedMemoryBytes: 512 * MiB, totalMemoryBytes: 64 * 1024 * MiB, cpus: 2 };
    assert.equal(transportLimits(machine, 5).reviewWorkers, 5);
    assert.equal(transportLimits(machine, 0).reviewWorkers, 0);
    assert.equal(transportLimits(machine).reviewWorkers, 2);
    // The process's part of the reserve is a fixed, measured figure, not a share of the limit.
    assert.equal(processBytes, 160 * MiB);
  });

  it("a review's memory is estimated from its body alone: 44 bytes a byte, at most the worst measured", () => {
    assert.equal(reviewPeakEstimate(120_000), 120_000 * 44);
    assert.equal(reviewPeakEstimate(3 * MiB), 132 * MiB);
    assert.equal(reviewPeakEstimate(37 * MiB), 176 * MiB, 'escaped bodies are large but build little: the cap holds');
  });
});
