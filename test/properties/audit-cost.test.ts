/**
 * What an audit costs as what it reads grows, compared at n and 4n in one test, as
 * review-cost.slow.test.ts does for reviews: the least CPU time of five runs after a warm-up, a full
 * garbage collection before each, a ratio over the bound measured again before it counts.
 * Linear work grows 4-fold, n log n (the findings are sorted) a little more, quadratic 16-fold.
 *
 * - Many pods: the audit of a cluster's pods must grow with their number and nothing else (one
 *   look-up per pod for its namespace and node, never a scan of the others).
 * - One hostile pod: a tenant writes a pod's tolerations and affinity terms; every toleration is
 *   looked at once per policy and every message is clipped, so a pod of 4n tolerations costs 4
 *   times one of n.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { defaultFeatureGates } from '../../src/api/feature-gates.js';
import type { JsonObject, Namespace, Node, Pod, Toleration } from '../../src/api/types.js';
import { auditPod, type AuditSettings } from '../../src/audit/audit-rules.js';
import { podsAsOnePage, runAudit } from '../../src/server/audit-run.js';
import { staticClusterFacts } from '../../src/kube/cluster-state-file.js';
import { allPluginNames } from '../../src/plugins/registry.js';
import { loadPolicyDirectory } from '../../src/tenancy/policy-directory.js';
import { policiesDir, storedPod } from '../support/audit-fixtures.js';

/** 4 for linear, about 4.6 for n log n, 16 for quadratic (review-cost.slow.test.ts, whose bound is 8); 6.5 leaves a loaded machine room. */
const maxRatio = 6.5;
const repetitions = 5;
const attempts = 4;

const settings: AuditSettings = {
  gates: defaultFeatureGates,
  enabled: new Set(allPluginNames),
  policies: loadPolicyDirectory(policiesDir).set,
  exclusion: { names: new Set(['kube-system']), label: undefined },
  all: false,
};

/** The `dedicated` label of a group, or no label. */
function groupLabel(group: string | undefined): Record<string, string> {
  return group === undefined ? {} : { dedicated: group };
}

/** 200 namespaces (every fourth a tenant of its own group) and 400 nodes (half dedicated). */
const namespaces: Namespace[] = Array.from({ length: 200 }, (_, i) => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name: `ns-${i}`, labels: groupLabel(i % 4 === 0 ? `g${i}` : undefined) },
}));
const nodes: Node[] = Array.from({ length: 400 }, (_, i) => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: `node-${i}`, labels: groupLabel(i % 2 === 0 ? `g${(i / 2) % 200}` : undefined) },
  spec: { taints: i % 2 === 0 ? [{ key: 'dedicated', value: `g${(i / 2) % 200}`, effect: 'NoSchedule' as const }] : [] },
}));
const facts = staticClusterFacts({ namespaces, nodes });

/** n pods spread over the namespaces and nodes, about half of them breaking some rule. */
function manyPods(n: number): JsonObject[] {
  return Array.from({ length: n }, (_, i) =>
    storedPod({
      namespace: `ns-${i % 200}`,
      name: `pod-${i}`,
      node: `node-${i % 400}`,
      tolerations:
        i % 2 === 0
          ? [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }]
          : [{ key: 'dedicated', operator: 'Equal', value: `g${i % 50}`, effect: 'NoSchedule' }],
    }),
  );
}

/** A pod in a namespace of no group with n tolerations: foreign ones, invalid ones, duplicates of the defaults. */
function hostilePod(n: number): Pod {
  const tolerations: Toleration[] = Array.from({ length: n }, (_, i) => {
    switch (i % 4) {
      case 0:
        return { key: 'dedicated', operator: 'Equal', value: `g${i}`, effect: 'NoSchedule' };
      case 1:
        return { key: `bad key ${i}!`, operator: 'Equal', value: 'x' };
      case 2:
        return { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: i };
      default:
        return { key: `example.com/k${i}`, operator: 'Gt', value: String(i), effect: 'NoSchedule' };
    }
  });
  return storedPod({ namespace: 'ns-1', name: 'hostile', node: 'node-0', tolerations });
}

const collectGarbage: () => void = (() => {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
})();

async function leastCpuMicros(run: () => Promise<unknown>): Promise<number> {
  let least = Infinity;
  for (let i = 0; i < repetitions; i++) {
    collectGarbage();
    const started = process.cpuUsage();
    await run();
    const used = process.cpuUsage(started);
    least = Math.min(least, used.user + used.system);
  }
  return least;
}

async function growth(
  small: () => Promise<unknown>,
  large: () => Promise<unknown>,
): Promise<{ small: number; large: number; ratio: number }> {
  await small();
  await large();
  let best: { small: number; large: number; ratio: number } | undefined;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const smallCost = await leastCpuMicros(small);
    const largeCost = await leastCpuMicros(large);
    const ratio = largeCost / Math.max(smallCost, 1);
    if (best === undefined || ratio < best.ratio) best = { small: smallCost, large: largeCost, ratio };
    if (ratio <= maxRatio) break;
  }
  return best!;
}

describe('audit cost grows linearly', () => {
  const shapes: { name: string; n: number; build: (n: number) => () => Promise<unknown> }[] = [
    {
      name: 'pods in the cluster',
      n: 2_000,
      build: (n) => {
        const pods = manyPods(n);
        return () => runAudit(podsAsOnePage(pods), facts, settings);
      },
    },
    {
      name: 'tolerations of one hostile pod',
      // 4,000 tolerations (about 300 KB of pod) cost some 20 ms: enough that the clock and the
      // collector do not decide the ratio, as they did at 1,000 (2 ms).
      n: 4_000,
      build: (n) => {
        const pod = hostilePod(n);
        const surroundings = { namespace: namespaces[1], node: nodes[0], nodesKnown: true };
        return () => Promise.resolve(auditPod(pod, surroundings, settings));
      },
    },
  ];
  for (const shape of shapes) {
    it(`${shape.name}: n = ${shape.n} against 4n`, async (t) => {
      const measured = await growth(shape.build(shape.n), shape.build(4 * shape.n));
      const text = `${(measured.small / 1000).toFixed(1)} ms at n, ${(measured.large / 1000).toFixed(1)} ms at 4n: ×${measured.ratio.toFixed(2)}`;
      t.diagnostic(text);
      assert.ok(
        measured.ratio <= maxRatio,
        `cost grew ×${measured.ratio.toFixed(2)} for 4× the size (${text}); linear is ×4, quadratic ×16`,
      );
    });
  }
});
