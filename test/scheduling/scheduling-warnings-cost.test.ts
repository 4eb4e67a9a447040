/**
 * What SchedulingWarnings costs (src/scheduling/scheduling-warnings.ts): O(pod + nodes), and never
 * more than its work budget; no long string copied into a warning; the case that took 24 s and
 * 800 MB before within a small heap.
 *
 * Growth: the same work at n and 4n (test/support/scheduling-cost-fixtures.ts), measured by
 * test/support/scheduling-cost-probe.ts in a process of its own (CPU time of the one thread that
 * works, the least of three runs of each size taken in turn). Linear work grows 4×; the tests
 * allow 6.5× for what noise remains (see maxGrowth). Growing the pod with the nodes fixed, or the nodes with the pod
 * fixed, O(pod × nodes) — the cost before — grows 4× as well; growing both together tells them
 * apart (4× against 16×), and so does a quadratic term in either. Past the budget, more nodes
 * cost nothing more: at most 2×.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import type { Node, Toleration } from '../../src/api/types.js';
import { schedulingWarnings, schedulingWarningsBudget } from '../../src/scheduling/scheduling-warnings.js';
import { cluster, gates, growthScenarios, pod, required, tolerateAll } from '../support/scheduling-cost-fixtures.js';

const root = join(import.meta.dirname, '..', '..');
/**
 * 4n against n: linear is 4, O(pod × nodes) grown together or a quadratic term 16. 6.5 leaves room
 * for a loaded machine (one run here, alongside other test processes, crossed 5) and is still 2.5
 * times below quadratic; the same bound as test/properties/review-cost.slow.test.ts.
 */
const maxGrowth = 6.5;
/** Past the budget the work is the budget's, whatever the cluster: 2× for noise. */
const maxGrowthPastBudget = 2;

interface Measured {
  readonly name: string;
  readonly smallMs: number;
  readonly largeMs: number;
  readonly answer: string[];
}

function measureGrowth(): Map<string, Measured> {
  const probe = spawnSync(process.execPath, ['--single-threaded', '--import', 'tsx', 'test/support/scheduling-cost-probe.ts'], {
    cwd: root,
    encoding: 'utf8',
    timeout: 120_000,
  });
  assert.equal(probe.status, 0, `the probe failed: ${probe.stderr}`);
  const lines = probe.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Measured);
  return new Map(lines.map((line) => [line.name, line]));
}

describe('SchedulingWarnings costs O(pod + nodes), and no more than its budget', () => {
  let measured: Map<string, Measured> | undefined;
  for (const scenario of growthScenarios) {
    const pastBudget = /past the budget/.test(scenario.name);
    const most = pastBudget ? maxGrowthPastBudget : maxGrowth;
    it(`${scenario.name}: ${scenario.n.toLocaleString('en-US')} → ${(4 * scenario.n).toLocaleString('en-US')} grows at most ${most}×`, () => {
      measured ??= measureGrowth();
      const result = measured.get(scenario.name);
      assert.ok(result !== undefined, 'measured');
      const last = result.answer.at(-1) ?? '';
      assert.match(last, scenario.expect, last.slice(0, 300));
      for (const warning of result.answer) assert.ok(warning.length < 4096, `a warning of ${warning.length} characters`);
      // Below a millisecond a run is mostly the measurement itself: count it as one.
      const ratio = result.largeMs / Math.max(result.smallMs, 1);
      assert.ok(ratio <= most, `${result.smallMs.toFixed(1)} ms → ${result.largeMs.toFixed(1)} ms (${ratio.toFixed(1)}×)`);
    });
  }
});

describe('SchedulingWarnings stays within its budget', () => {
  const unfit = pod({
    tolerations: [tolerateAll],
    ...required({ matchExpressions: [{ key: 'zone', operator: 'In', values: ['nowhere'] }] }),
  });

  it(`a full pass over 5,000 nodes of 40 labels and 2 taints fits the budget of ${schedulingWarningsBudget.toLocaleString('en-US')} units`, () => {
    const [warning = ''] = schedulingWarnings(unfit, cluster(5_000, 40), gates);
    assert.match(warning.slice(0, 300), /^the pod cannot be scheduled on any of the 5000 known nodes: /);
  });

  it('a budget too small for one node: a warning that says nothing was checked, no exception', () => {
    assert.deepEqual(schedulingWarnings(unfit, cluster(3), gates, 5), [
      "the pod: where it can be scheduled was not worked out (checked 0 of 3 known nodes; stopped early: the pod is too large to check within the webhook's work limit)",
    ]);
  });

  it('a budget that runs out while explaining a node: the node is counted, its reason says it was not worked out', () => {
    // 40 units: 5 to read the pod (its toleration, once for each warning, and its term: a unit
    // for the term, one for its requirement, one for its value), 6 to read the zone label of the
    // three nodes, 25 to check node-0 (3 for its taints, 22 for its ten labels read twice and the
    // name), 4 left of the 27 its reason needs.
    const [warning = ''] = schedulingWarnings(unfit, cluster(3), gates, 40);
    assert.match(
      warning,
      /^the pod cannot be scheduled on any of the 1 known nodes checked \(checked 1 of 3 known nodes; stopped early; it may fit one of the others\): node-0: not explained: the webhook stopped early \(work limit\)$/,
    );
  });

  it('the non-integer taint warning stops early too, and says so', () => {
    const gt = pod({ tolerations: [{ key: 'example.com/gen', operator: 'Gt', value: '5', effect: 'NoSchedule' }, tolerateAll] });
    // 9 units: 2 to read the pod's two tolerations, 3 for each of two nodes (itself and its two taints).
    const [warning = ''] = schedulingWarnings(gt, cluster(10), gates, 9);
    assert.equal(
      warning,
      'spec.tolerations[0] (example.com/gen Gt 5): the taint example.com/gen has a value that is not a canonical integer on node-0 ("high"); node-1 ("high"); Gt never tolerates such a taint (checked 2 of 10 known nodes; stopped early)',
    );
  });
});

describe('SchedulingWarnings copies no long string into a warning', () => {
  it('a 1 MB label value, key and node name are clipped with a marker', () => {
    const huge = 'x'.repeat(1_000_000);
    const nodes: Node[] = [{ metadata: { name: `n-${huge}`, labels: { zone: huge } }, spec: {} }];
    const [warning = ''] = schedulingWarnings(pod({ nodeSelector: { [`k-${huge}`]: huge } }), nodes, gates);
    assert.ok(warning.length < 1_000, `${warning.length} characters`);
    assert.match(
      warning,
      /^the pod cannot be scheduled on any of the 1 known nodes: n-x{62}…\(999938 more characters\): spec\.nodeSelector requires the label k-x{62}…\(999938 more characters\)=x{64}…\(999936 more characters\); the node does not have k-x{62}…/,
    );
  });

  it('100,000 values are shown as the first few and a count', () => {
    const values = Array.from({ length: 100_000 }, (_, i) => `elsewhere-${i}`);
    const [warning = ''] = schedulingWarnings(
      pod({ tolerations: [tolerateAll], ...required({ matchExpressions: [{ key: 'zone', operator: 'In', values }] }) }),
      cluster(1),
      gates,
    );
    assert.match(warning, /\(zone In \[elsewhere-0, elsewhere-1, .*, …\(99\d\d\d more values\)\]\): the node has zone=zone-0$/);
  });

  it('thousands of failing terms: the first few are named, the rest counted', () => {
    const terms = Array.from({ length: 5_000 }, (_, i) => ({
      matchExpressions: [{ key: 'zone', operator: 'In', values: [`elsewhere-${i}`] }],
    }));
    const [warning = ''] = schedulingWarnings(pod({ tolerations: [tolerateAll], ...required(...terms) }), cluster(1), gates);
    assert.match(
      warning,
      /^the pod cannot be scheduled on any of the 1 known nodes: node-0: required node affinity matches none of its 5000 terms \(ORed\): nodeSelectorTerms\[0\]\.matchExpressions\[0\] \(zone In \[elsewhere-0\]\): the node has zone=zone-0; .*; …\(\d+ more terms\)$/,
    );
    assert.ok(warning.length < 1_000);
  });

  it('20,000 Gt tolerations on a key tainted with a word: three warnings and a count, not 20,000', () => {
    const tolerations = Array.from({ length: 20_000 }, (_, i): Toleration => ({
      key: 'example.com/gen',
      operator: 'Gt',
      value: String(i),
      effect: 'NoSchedule',
    }));
    const warnings = schedulingWarnings(pod({ tolerations: [...tolerations, tolerateAll] }), cluster(2), gates);
    assert.equal(warnings.length, 4);
    assert.equal(
      warnings[3],
      'spec.tolerations: 19997 more Gt/Lt tolerations are on keys whose taints have values that are not canonical integers on some known node; they never tolerate those taints',
    );
  });
});

describe('one required term of 100,000 values against 1,000 nodes (24 s and 800 MB before)', () => {
  it('is answered in a worker limited to a 64 MiB heap within 5 s', async () => {
    const outcome = await runWorker({ values: 100_000, nodes: 1_000 }, { maxOldGenerationSizeMb: 64 }, 5_000);
    assert.equal(outcome.timedOut, false, 'ran past 5 s');
    assert.equal(outcome.warnings?.length, 1, 'one warning');
    assert.match(outcome.warnings[0] ?? '', /^the pod cannot be scheduled on any of the 1000 known nodes: node-0: .*; and 995 more$/);
  });
});

interface WorkerOutcome {
  readonly timedOut: boolean;
  readonly ms?: number;
  readonly warnings?: string[];
}

/** test/support/scheduling-warnings-worker.ts with a heap limit and a deadline from when it is loaded. */
function runWorker(
  scenario: { values: number; nodes: number },
  resourceLimits: { maxOldGenerationSizeMb: number },
  deadlineMs: number,
): Promise<WorkerOutcome> {
  const workerUrl = new URL('../support/scheduling-warnings-worker.ts', import.meta.url);
  const bootstrap = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((tsx) => { tsx.register(); return import(${JSON.stringify(workerUrl.href)}); })`;
  return new Promise((resolve, reject) => {
    const worker = new Worker(bootstrap, { eval: true, workerData: scenario, resourceLimits });
    const giveUp = (): void => {
      void worker.terminate();
      resolve({ timedOut: true });
    };
    // Loading tsx and the modules in a new thread is not what is measured (30 s at most on a loaded machine).
    let timer = setTimeout(giveUp, 30_000);
    worker.on('message', (message: { ready?: boolean; ms?: number; warnings?: string[] }) => {
      clearTimeout(timer);
      if (message.ready === true) {
        timer = setTimeout(giveUp, deadlineMs);
        return;
      }
      void worker.terminate();
      resolve({
        timedOut: false,
        ...(message.ms === undefined ? {} : { ms: message.ms }),
        ...(message.warnings === undefined ? {} : { warnings: message.warnings }),
      });
    });
    // Out of heap, the worker stops with ERR_WORKER_OUT_OF_MEMORY: the test fails with it.
    worker.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}
