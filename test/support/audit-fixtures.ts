/**
 * A small cluster for the audit tests, served the same way from a file, from the fake API server
 * and to the pure rules: Namespaces and Nodes of the shipped label policy (policies/, taint and
 * label `dedicated`), and for every audit rule a pod that breaks it and one that keeps it, each
 * with the exact set of rules the audit must report for it.
 *
 * Every "keeps" pod is what tolerator's webhooks produce for it (the defaults, memory-pressure for
 * a pod that is not BestEffort, the group pair for a tenant), changed only where the row says.
 */
import { fileURLToPath } from 'node:url';
import type { JsonObject, Namespace, Node, Toleration } from '../../src/api/types.js';
import type { AuditRuleName } from '../../src/audit/audit-rules.js';

export const policiesDir = fileURLToPath(new URL('../../policies', import.meta.url));

export const auditNamespaces: Namespace[] = [
  {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: 'tenant-a', labels: { 'kubernetes.io/metadata.name': 'tenant-a', dedicated: 'a' } },
  },
  { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shared', labels: { 'kubernetes.io/metadata.name': 'shared' } } },
  {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: 'infra', labels: { 'kubernetes.io/metadata.name': 'infra', 'tolerator.dev/node-infrastructure': 'true' } },
  },
  // Infrastructure under both shipped policies: by its label, and by its name (the prefix policy's list).
  {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: 'monitoring', labels: { 'kubernetes.io/metadata.name': 'monitoring', 'tolerator.dev/node-infrastructure': 'true' } },
  },
  { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kube-system', labels: { 'kubernetes.io/metadata.name': 'kube-system' } } },
  // PodNodeSelector confines its pods to zone=east.
  {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name: 'zoned',
      labels: { 'kubernetes.io/metadata.name': 'zoned' },
      annotations: { 'scheduler.alpha.kubernetes.io/node-selector': 'zone=east' },
    },
  },
  {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: 'opted-out', labels: { 'kubernetes.io/metadata.name': 'opted-out', 'tolerator.dev/ignore': 'true' } },
  },
];

function dedicatedNode(group: string): Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: `node-${group}`, uid: `uid-node-${group}`, labels: { dedicated: group } },
    spec: { taints: [{ key: 'dedicated', value: group, effect: 'NoSchedule' }] },
  };
}

export const auditNodes: Node[] = [
  dedicatedNode('a'),
  dedicatedNode('b'),
  { apiVersion: 'v1', kind: 'Node', metadata: { name: 'plain', uid: 'uid-plain' } },
];

const defaults: Toleration[] = [
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
];
const memoryPressure: Toleration = { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' };
const groupA: Toleration = { key: 'dedicated', operator: 'Equal', value: 'a', effect: 'NoSchedule' };
const requireA = {
  nodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [{ matchExpressions: [{ key: 'dedicated', operator: 'In', values: ['a'] }] }],
    },
  },
};
const daemonSet: Toleration[] = [
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/pid-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
];

interface PodOptions {
  namespace: string;
  name: string;
  node?: string;
  tolerations?: Toleration[];
  burstable?: boolean;
  affinity?: JsonObject;
  annotations?: Record<string, string>;
  ownerReferences?: JsonObject[];
  phase?: string;
  nodeSelector?: Record<string, string>;
}

/** A pod as the API server stores it: bound, Running unless said otherwise, QoS recorded in status. */
export function storedPod(options: PodOptions): JsonObject {
  const burstable = options.burstable ?? true;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: options.name,
      namespace: options.namespace,
      uid: `uid-${options.namespace}-${options.name}`,
      ...(options.annotations === undefined ? {} : { annotations: options.annotations }),
      ...(options.ownerReferences === undefined ? {} : { ownerReferences: options.ownerReferences }),
    },
    spec: {
      containers: [{ name: 'app', image: 'registry.example/app:1', ...(burstable ? { resources: { requests: { cpu: '100m' } } } : {}) }],
      ...(options.node === undefined ? {} : { nodeName: options.node }),
      ...(options.tolerations === undefined ? {} : { tolerations: options.tolerations }),
      ...(options.affinity === undefined ? {} : { affinity: options.affinity }),
      ...(options.nodeSelector === undefined ? {} : { nodeSelector: options.nodeSelector }),
    },
    status: { phase: options.phase ?? 'Running', qosClass: burstable ? 'Burstable' : 'BestEffort' },
  };
}

const shared = (name: string, extra: Partial<PodOptions> = {}): JsonObject =>
  storedPod({ namespace: 'shared', name, node: 'plain', tolerations: [...defaults, memoryPressure], ...extra });
const tenant = (name: string, extra: Partial<PodOptions> = {}): JsonObject =>
  storedPod({
    namespace: 'tenant-a',
    name,
    node: 'node-a',
    tolerations: [...defaults, memoryPressure, groupA],
    affinity: requireA,
    ...extra,
  });
const daemonOwner = [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'agent', uid: 'uid-ds', controller: true }];

export interface AuditRow {
  /** Which rule the row is about, and whether the pod breaks it. */
  readonly about: AuditRuleName;
  readonly breaks: boolean;
  readonly pod: JsonObject;
  /** Every rule the audit reports for the pod (with the default flags and the shipped policies). */
  readonly expected: readonly AuditRuleName[];
}

export const auditRows: AuditRow[] = [
  { about: 'unknown-node', breaks: true, pod: shared('on-ghost', { node: 'ghost' }), expected: ['unknown-node'] },
  { about: 'unknown-node', breaks: false, pod: shared('on-plain'), expected: [] },
  {
    // Admission lets a namespace that every policy calls infrastructure name any node (node agents, debug pods).
    about: 'unknown-node',
    breaks: false,
    pod: storedPod({ namespace: 'monitoring', name: 'agent-on-ghost', node: 'ghost', tolerations: [...defaults, memoryPressure] }),
    expected: [],
  },
  {
    // infra is infrastructure under the label policy only: the prefix policy still refuses the missing node.
    about: 'unknown-node',
    breaks: true,
    pod: storedPod({ namespace: 'infra', name: 'agent-on-ghost', node: 'ghost', tolerations: [...defaults, memoryPressure] }),
    expected: ['unknown-node'],
  },
  { about: 'foreign-node', breaks: true, pod: shared('on-b', { node: 'node-b' }), expected: ['foreign-node'] },
  {
    about: 'foreign-node',
    breaks: false,
    pod: storedPod({ namespace: 'infra', name: 'agent-on-b', node: 'node-b', tolerations: [...defaults, memoryPressure] }),
    expected: [],
  },
  { about: 'outside-group', breaks: true, pod: tenant('tenant-on-plain', { node: 'plain' }), expected: ['outside-group'] },
  { about: 'outside-group', breaks: false, pod: tenant('tenant-on-a'), expected: [] },
  {
    about: 'missing-pair',
    breaks: true,
    pod: tenant('tenant-without-pair', { tolerations: [...defaults, memoryPressure], affinity: {} }),
    expected: ['missing-pair'],
  },
  {
    about: 'missing-pair',
    breaks: false,
    pod: tenant('tenant-with-two-terms', {
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              {
                matchExpressions: [
                  { key: 'dedicated', operator: 'In', values: ['a'] },
                  { key: 'zone', operator: 'In', values: ['x'] },
                ],
              },
              {
                matchExpressions: [
                  { key: 'zone', operator: 'In', values: ['y'] },
                  { key: 'dedicated', operator: 'In', values: ['a'] },
                ],
              },
            ],
          },
        },
      },
    }),
    expected: [],
  },
  {
    about: 'foreign-toleration',
    breaks: true,
    pod: shared('tolerates-b', {
      tolerations: [...defaults, memoryPressure, { key: 'dedicated', operator: 'Equal', value: 'b', effect: 'NoSchedule' }],
    }),
    expected: ['foreign-toleration'],
  },
  {
    about: 'foreign-toleration',
    breaks: false,
    pod: storedPod({
      namespace: 'infra',
      name: 'tolerates-every-group',
      node: 'plain',
      tolerations: [...defaults, memoryPressure, { key: 'dedicated', operator: 'Exists' }],
    }),
    expected: [],
  },
  {
    about: 'missing-default-tolerations',
    breaks: true,
    pod: shared('without-defaults', { tolerations: [memoryPressure] }),
    expected: ['missing-default-tolerations'],
  },
  {
    about: 'missing-default-tolerations',
    breaks: true,
    pod: shared('daemon-without-set', { tolerations: [...defaults, memoryPressure], ownerReferences: daemonOwner }),
    expected: ['missing-default-tolerations'],
  },
  {
    about: 'missing-default-tolerations',
    breaks: false,
    pod: shared('daemon-with-set', { tolerations: daemonSet, ownerReferences: daemonOwner }),
    expected: [],
  },
  {
    about: 'missing-memory-pressure',
    breaks: true,
    pod: shared('burstable-without-memory-pressure', { tolerations: defaults }),
    expected: ['missing-memory-pressure'],
  },
  {
    about: 'missing-memory-pressure',
    breaks: false,
    pod: shared('besteffort-without-memory-pressure', { tolerations: defaults, burstable: false }),
    expected: [],
  },
  {
    about: 'node-selector-conflict',
    breaks: true,
    pod: storedPod({
      namespace: 'zoned',
      name: 'west',
      node: 'plain',
      tolerations: [...defaults, memoryPressure],
      nodeSelector: { zone: 'west' },
    }),
    expected: ['node-selector-conflict'],
  },
  {
    // Created before the namespace was annotated (or while the mutating webhook was skipped).
    about: 'node-selector-conflict',
    breaks: true,
    pod: storedPod({ namespace: 'zoned', name: 'anywhere', node: 'plain', tolerations: [...defaults, memoryPressure] }),
    expected: ['node-selector-conflict'],
  },
  {
    about: 'node-selector-conflict',
    breaks: false,
    pod: storedPod({
      namespace: 'zoned',
      name: 'east',
      node: 'plain',
      tolerations: [...defaults, memoryPressure],
      nodeSelector: { zone: 'east' },
    }),
    expected: [],
  },
  {
    about: 'invalid-toleration',
    breaks: true,
    pod: shared('gt-with-gate-off', {
      tolerations: [...defaults, memoryPressure, { key: 'cpu-gen', operator: 'Gt', value: '5', effect: 'NoSchedule' }],
    }),
    expected: ['invalid-toleration'],
  },
  {
    about: 'invalid-toleration',
    breaks: false,
    pod: shared('exists-toleration', {
      tolerations: [...defaults, memoryPressure, { key: 'cpu-gen', operator: 'Exists', effect: 'NoSchedule' }],
    }),
    expected: [],
  },
];

/** Pods the audit leaves out without --all, and what --all reports for them. */
export const auditSkipRows: {
  reason: 'terminated' | 'mirror' | 'excluded-namespace';
  pod: JsonObject;
  withAll: readonly AuditRuleName[];
}[] = [
  {
    // A kubelet's mirror pod: the annotation and the controller reference to its own Node, UID included.
    reason: 'mirror',
    pod: storedPod({
      namespace: 'shared',
      name: 'etcd-plain',
      node: 'plain',
      annotations: { 'kubernetes.io/config.mirror': 'hash' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'plain', uid: 'uid-plain', controller: true }],
    }),
    withAll: ['missing-default-tolerations', 'missing-memory-pressure'],
  },
  {
    reason: 'excluded-namespace',
    pod: storedPod({ namespace: 'kube-system', name: 'coredns', node: 'plain' }),
    withAll: ['missing-default-tolerations', 'missing-memory-pressure'],
  },
  {
    reason: 'excluded-namespace',
    pod: storedPod({ namespace: 'opted-out', name: 'legacy', node: 'node-b' }),
    withAll: ['foreign-node', 'missing-default-tolerations', 'missing-memory-pressure'],
  },
];

/** Never audited, --all or not. */
export const terminatedPods: JsonObject[] = [
  storedPod({ namespace: 'shared', name: 'job-done', node: 'ghost', phase: 'Succeeded' }),
  storedPod({ namespace: 'shared', name: 'job-failed', node: 'node-b', phase: 'Failed' }),
];

/**
 * The annotation without the kubelet's reference (anyone may write it), or with a reference whose
 * UID is not the Node's: an ordinary pod, audited.
 */
export const fakeMirrorPods: { pod: JsonObject; expected: readonly AuditRuleName[] }[] = [
  {
    pod: storedPod({
      namespace: 'shared',
      name: 'claims-mirror',
      node: 'node-b',
      tolerations: [...defaults, memoryPressure],
      annotations: { 'kubernetes.io/config.mirror': 'x' },
    }),
    expected: ['foreign-node'],
  },
  {
    pod: storedPod({
      namespace: 'shared',
      name: 'guessed-uid',
      node: 'node-b',
      tolerations: [...defaults, memoryPressure],
      annotations: { 'kubernetes.io/config.mirror': 'x' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'node-b', uid: 'guess', controller: true }],
    }),
    expected: ['foreign-node'],
  },
];

/** Every pod of the fixture, for a file or the fake API server. */
export function allAuditPods(): JsonObject[] {
  return [
    ...auditRows.map((row) => row.pod),
    ...auditSkipRows.map((row) => row.pod),
    ...terminatedPods,
    ...fakeMirrorPods.map((row) => row.pod),
  ];
}

export function podKey(pod: JsonObject): string {
  const metadata = pod.metadata as { namespace: string; name: string };
  return `${metadata.namespace}/${metadata.name}`;
}

/** The expected rules by pod (namespace/name), sorted, without --all. */
export function expectedRulesByPod(): Map<string, string[]> {
  const expected = new Map<string, string[]>();
  for (const row of auditRows) expected.set(podKey(row.pod), [...row.expected].sort());
  for (const row of fakeMirrorPods) expected.set(podKey(row.pod), [...row.expected].sort());
  return expected;
}

/** A v1 List of the whole fixture, as `kubectl get namespaces,nodes,pods -A -o json` writes it. */
export function clusterStateJson(): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...auditNamespaces, ...auditNodes, ...allAuditPods()] });
}
