/**
 * Pods and clusters for the cost tests of SchedulingWarnings (test/scheduling/scheduling-warnings-
 * cost.test.ts and its measuring child, ./scheduling-cost-probe.ts): each growth scenario builds
 * the same shape at n and 4n. Every scenario makes the pod fit no node, so every node is evaluated
 * (the costly path), and tolerates what it must for the part measured to be the part evaluated.
 */
import type { Node, NodeSelectorTerm, Pod, PodSpec, Taint, Toleration } from '../../src/api/types.js';

export const gates = { TaintTolerationComparisonOperators: true };

export function pod(spec: PodSpec): Pod {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'app' }], ...spec } };
}

export function taint(key: string, value: string): Taint {
  return { key, value, effect: 'NoSchedule' };
}

/**
 * `count` nodes with `labels` labels (zone, rack and more) and two NoSchedule taints. The label sets
 * repeat every 51 nodes (3 zones × 17 racks) and are shared between the nodes that have the same:
 * tens of thousands of nodes are built in milliseconds, and each is still looked at whole.
 */
export function cluster(count: number, labels = 10): Node[] {
  const sets = Array.from({ length: 51 }, (_, i) => ({
    zone: `zone-${i % 3}`,
    rack: `rack-${i % 17}`,
    ...Object.fromEntries(Array.from({ length: labels - 2 }, (_, j) => [`example.com/k-${j}`, `v${(i + j) % 5}`])),
  }));
  const taints = [taint('example.com/pool', 'general'), taint('example.com/gen', 'high')];
  return Array.from({ length: count }, (_, i) => ({
    metadata: { name: `node-${i}`, labels: sets[i % sets.length] ?? {} },
    spec: { taints },
  }));
}

export const tolerateAll: Toleration = { operator: 'Exists' };

export function required(...terms: NodeSelectorTerm[]): PodSpec {
  return { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } } };
}

export interface GrowthScenario {
  readonly name: string;
  readonly n: number;
  /** The pod and nodes at size `n` (the scenario's own n, or 4 × it). */
  build(n: number): { pod: Pod; nodes: readonly Node[] };
  /** What the answer at 4n must say: every node evaluated, or the budget's stop. */
  readonly expect: RegExp;
}

const fixedNodes = cluster(300);
const allNodes = (count: number): RegExp => new RegExp(`cannot be scheduled on any of the ${count} known nodes: `);

/** The pod a cluster is measured with: tolerations, a nodeSelector and a term of 1,000 values. */
const fixedPod = pod({
  tolerations: [
    { key: 'example.com/pool', operator: 'Exists' },
    ...Array.from({ length: 100 }, (_, i): Toleration => ({ key: `example.com/t-${i}`, operator: 'Exists' })),
    tolerateAll,
  ],
  nodeSelector: { rack: 'rack-3' },
  ...required({ matchExpressions: [{ key: 'zone', operator: 'In', values: Array.from({ length: 1_000 }, (_, i) => `elsewhere-${i}`) }] }),
});

const unfitPod = pod({
  tolerations: [tolerateAll],
  ...required({ matchExpressions: [{ key: 'zone', operator: 'In', values: ['nowhere'] }] }),
});

export const growthScenarios: readonly GrowthScenario[] = [
  {
    name: 'values in one In requirement',
    n: 1_000,
    build: (n) => ({
      pod: pod({
        tolerations: [tolerateAll],
        ...required({ matchExpressions: [{ key: 'zone', operator: 'In', values: Array.from({ length: n }, (_, i) => `elsewhere-${i}`) }] }),
      }),
      nodes: fixedNodes,
    }),
    expect: allNodes(300),
  },
  {
    name: 'required terms',
    n: 1_000,
    build: (n) => ({
      pod: pod({
        tolerations: [tolerateAll],
        ...required(
          ...Array.from({ length: n }, (_, i) => ({
            matchExpressions: [
              // Values no node carries: each node costs its labels, not the terms (a value that
              // many terms share reaches them all, which the budget, not this test, bounds).
              { key: 'zone', operator: 'In', values: [`elsewhere-${i}`] },
              { key: 'rack', operator: 'NotIn', values: [`elsewhere-${i}`] },
            ],
          })),
        ),
      }),
      nodes: fixedNodes,
    }),
    expect: allNodes(300),
  },
  {
    name: 'expressions in one term',
    n: 1_000,
    build: (n) => ({
      pod: pod({
        tolerations: [tolerateAll],
        ...required({
          matchExpressions: [
            ...Array.from({ length: n }, (_, i) => ({ key: `example.com/k-${i % 8}`, operator: 'NotIn', values: [`elsewhere-${i}`] })),
            { key: 'zone', operator: 'DoesNotExist' },
          ],
        }),
      }),
      nodes: fixedNodes,
    }),
    expect: allNodes(300),
  },
  {
    name: 'tolerations (distinct keys, and one key with many Gt thresholds)',
    n: 1_000,
    build: (n) => ({
      pod: pod({
        tolerations: Array.from({ length: n }, (_, i): Toleration =>
          i % 2 === 0
            ? { key: `example.com/t-${i}`, operator: 'Equal', value: 'v', effect: 'NoSchedule' }
            : { key: 'example.com/gen', operator: 'Gt', value: String(i), effect: 'NoSchedule' },
        ),
      }),
      nodes: fixedNodes,
    }),
    expect: allNodes(300),
  },
  {
    // O(pod + nodes) grows 4× when both do; O(pod × nodes), the cost before, 16×.
    name: 'values and nodes together',
    n: 1_000,
    build: (n) => ({
      pod: pod({
        tolerations: [tolerateAll],
        ...required({ matchExpressions: [{ key: 'zone', operator: 'In', values: Array.from({ length: n }, (_, i) => `elsewhere-${i}`) }] }),
      }),
      nodes: cluster((3 * n) / 10),
    }),
    expect: allNodes(1_200),
  },
  {
    name: 'nodes, for a fixed pod',
    n: 2_000,
    build: (n) => ({ pod: fixedPod, nodes: cluster(n) }),
    expect: allNodes(8_000),
  },
  {
    name: 'nodes of 30 labels past the budget',
    n: 15_000,
    build: (n) => ({ pod: unfitPod, nodes: cluster(n, 30) }),
    expect:
      /^the pod cannot be scheduled on any of the (\d+) known nodes checked \(checked \1 of 60000 known nodes; stopped early; it may fit one of the others\): node-0: /,
  },
];
