/**
 * What a review costs as the request grows. A tenant allowed to create or update pods in one
 * namespace can send a pod of up to 3 MiB (the API server's request limit) shaped to hit a
 * quadratic path. The webhook answers every review on one thread and the validating webhook fails
 * closed, so one slow review stalls every other review, and with them pod creation in the cluster.
 *
 * Each test builds an adversarial AdmissionReview, shaped as kube-apiserver v1.35 sends it, at size
 * n and at 4n, runs the whole review path on each (bytes decoded and parsed, every mutating
 * plugin, every validating plugin on the mutated object, the patch, the response serialised) and
 * compares the CPU time. Linear work grows 4-fold, n log n about 4.6-fold at these sizes,
 * quadratic work 16-fold; the bound is 8 (see maxRatio). Each cost is the least CPU time of five runs, each
 * after a full garbage collection, following a warm-up run at both sizes (which compiles the code
 * the shape reaches); a ratio over the bound is measured three more times before it counts, so a busy
 * machine cannot fail the test while a quadratic path always does. Before the fixes of the same
 * change the quadratic shapes measured ×7.4 to ×22 here. The review at 4n must also stay under
 * 2 s of CPU (`maxLargeCostMicros`).
 *
 * The cluster states are large on purpose: 10,000 namespaces, and 1 or 5,000 nodes. Every
 * dedicated node is tainted against pods outside its group, and the nodes a pod of no group may
 * use come last, so SchedulingWarnings looks at every node for most pods.
 *
 * n is chosen per shape so that a review at n costs 5 to 30 ms: large enough that the fixed cost
 * of a review (about 1 ms) does not hide the growth, small enough for the file to run in under a
 * minute on a loaded 2-core machine. Linear work also measures more than ×4 when the larger
 * review's data outgrows the CPU caches and the young generation (hash maps of tens of thousands
 * of entries, strings of hundreds of kilobytes: ×5 to ×7), so the sizes stay below that where it
 * showed.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { ClusterFacts } from '../../src/admission/cluster-facts.js';
import { createPipeline, type Pipeline } from '../../src/admission/pipeline.js';
import { buildAdmissionResponse } from '../../src/admission/response.js';
import { parseAdmissionReview } from '../../src/admission/review.js';
import { defaultFeatureGates, type FeatureGates } from '../../src/api/feature-gates.js';
import type { JsonObject, Namespace, Node, Taint, Toleration } from '../../src/api/types.js';
import { staticClusterFacts } from '../../src/kube/cluster-state-file.js';
import { createDedicatedNodes } from '../../src/plugins/dedicated-nodes.js';
import {
  namespaceDefaultTolerationsAnnotation,
  namespaceTolerationsWhitelistAnnotation,
} from '../../src/plugins/pod-toleration-restriction.js';
import { allPluginNames, buildPlugins } from '../../src/plugins/registry.js';
import { namespaceNodeSelectorAnnotation, parseSelectorLabels } from '../../src/scheduling/namespace-node-selector.js';
import { loadPolicyDirectory } from '../../src/tenancy/policy-directory.js';
import { formatPolicyLoadError } from '../../src/tenancy/policy.js';

/**
 * Linear gives 4, n log n about 4.6 for n in the thousands; quadratic gives 16. Linear shapes
 * measured up to ×5.9 on a loaded 2-core machine (a DaemonSet pod: its larger review's maps
 * outgrow the caches) and ×6.66 on a quiet one (8,000 nodeSelector labels looked up in a
 * whitelist of 10,000, best of 4 attempts of 5 runs: 1.6 ms against 10.9 ms), so the bound is 8,
 * the geometric mean of linear and quadratic (√(4 × 16)): twice below quadratic, twice above linear.
 */
const maxRatio = 8;
/** Runs per size after the warm-up; the least is kept. */
const repetitions = 5;
/** A ratio over the bound is measured again this many times in all before the test fails. */
const attempts = 4;
/**
 * The larger review must also cost less than 2 s of CPU. A linear path with a huge constant
 * stalls the webhook as surely as a quadratic one: quantities trimmed and normalised with regular
 * expressions grew 4.8-fold here, but took 6.6 s for a pod of 700 KB once the engine fell back to
 * its linear mode. The costliest review at 4n here takes about 0.3 s (a 5,000-node shape), so 2 s also leaves
 * room for a slow machine.
 */
const maxLargeCostMicros = 2_000_000;

// ---------------------------------------------------------------------------------------------
// Cluster states and pipelines

const policiesDir = fileURLToPath(new URL('../../policies', import.meta.url));

/**
 * The tolerations a whitelisting namespace allows: the three the plugins add, the keys the shapes
 * below use, and enough others (60) that a whitelist checked entry by entry would show.
 */
function whitelist(): Toleration[] {
  return [
    { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
    { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
    { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
    ...Array.from({ length: 60 }, (_, i): Toleration => ({ key: `example.com/allowed-${i}`, operator: 'Exists' })),
    { key: 'example.com/k', operator: 'Exists' },
    { key: 'example.com/k', operator: 'Equal', value: 'v', effect: 'NoExecute', tolerationSeconds: 3600 },
    { operator: 'Exists', effect: 'PreferNoSchedule' },
  ];
}

function namespaces(): Namespace[] {
  const named: Namespace[] = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', labels: { 'kubernetes.io/metadata.name': 'shop' } } },
    // A tenant of the label policy (group gpu) and one of the prefix policy (group team-a).
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ml', labels: { 'kubernetes.io/metadata.name': 'ml', dedicated: 'gpu' } } },
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a-dev', labels: { 'kubernetes.io/metadata.name': 'team-a-dev' } } },
    // Infrastructure under the label policy: may tolerate every group.
    {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: 'monitoring',
        labels: { 'kubernetes.io/metadata.name': 'monitoring', 'tolerator.dev/node-infrastructure': 'true' },
      },
    },
    // PodTolerationRestriction: default tolerations merged into every pod, and a whitelist.
    {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: 'restricted',
        labels: { 'kubernetes.io/metadata.name': 'restricted' },
        annotations: {
          [namespaceDefaultTolerationsAnnotation]: JSON.stringify([
            { key: 'example.com/k', operator: 'Exists', effect: 'NoSchedule' },
            { key: 'example.com/allowed-1', operator: 'Exists' },
          ]),
          [namespaceTolerationsWhitelistAnnotation]: JSON.stringify(whitelist()),
        },
      },
    },
    // PodNodeSelector: a node selector of a few labels, merged into every pod; the second
    // namespace also has a whitelist (podNodeSelectorWhitelist) of many labels.
    // DeviceTolerationRestriction: 16 default device tolerations (the most allowed) and an allow-list.
    {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: 'gpu-team',
        labels: { 'kubernetes.io/metadata.name': 'gpu-team' },
        annotations: {
          'tolerator.dev/default-device-tolerations': JSON.stringify(
            Array.from({ length: 16 }, (_, i) => ({
              key: `example.com/drain-${i}`,
              operator: 'Exists',
              effect: 'NoExecute',
              tolerationSeconds: 600,
            })),
          ),
          'tolerator.dev/device-tolerations-whitelist': JSON.stringify([
            { key: 'example.com/drain-0', operator: 'Exists' },
            { operator: 'Exists', effect: 'NoExecute' },
            ...Array.from({ length: 60 }, (_, i) => ({ key: `example.com/allowed-${i}`, operator: 'Exists' })),
          ]),
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: 'pinned',
        labels: { 'kubernetes.io/metadata.name': 'pinned' },
        annotations: { [namespaceNodeSelectorAnnotation]: 'topology.kubernetes.io/zone=zone-1, example.com/pool=web, example.com/w0=v0' },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: 'pinned-whitelist',
        labels: { 'kubernetes.io/metadata.name': 'pinned-whitelist' },
        annotations: { [namespaceNodeSelectorAnnotation]: 'example.com/w0=v0' },
      },
    },
  ];
  const filler = Array.from({ length: 10_000 }, (_, i): Namespace => ({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name: `ns-${i}`,
      labels: { 'kubernetes.io/metadata.name': `ns-${i}`, ...(i % 3 === 0 ? { dedicated: `group-${i % 40}` } : {}) },
    },
  }));
  return [...named, ...filler];
}

/**
 * PodNodeSelector's whitelist for namespace pinned-whitelist: `example.com/w<i>=v<i>` for i up to
 * 10,000, more than the largest pod of the shapes below selects, so every entry is looked up.
 */
function podNodeSelectorWhitelist(): string {
  return Array.from({ length: 10_000 }, (_, i) => `example.com/w${i}=v${i}`).join(',');
}

function node(name: string, labels: Record<string, string>, taints: Taint[]): Node {
  return { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } }, spec: { taints } };
}

/**
 * `count` nodes: groups' dedicated nodes first (each labelled and tainted for its group, some
 * also with a NoExecute maintenance taint or a non-integer `example.com/sla` taint), then the
 * nodes of group gpu and team-a, and last the nodes anyone may use. With one node, only the last.
 */
function nodes(count: number): Node[] {
  const open = node('worker-1', { 'topology.kubernetes.io/zone': 'a' }, []);
  if (count === 1) {
    return [open];
  }
  const dedicated = Array.from({ length: count - 3 }, (_, i) => {
    const group = `group-${i % 40}`;
    const taints: Taint[] = [{ key: 'dedicated', value: group, effect: 'NoSchedule' }];
    if (i % 7 === 0) taints.push({ key: 'example.com/maintenance', effect: 'NoExecute' });
    if (i % 11 === 0) taints.push({ key: 'example.com/sla', value: 'gold', effect: 'PreferNoSchedule' });
    return node(`node-${i}`, { dedicated: group, 'topology.kubernetes.io/zone': `zone-${i % 3}` }, taints);
  });
  return [
    ...dedicated,
    node('gpu-1', { dedicated: 'gpu' }, [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }]),
    node('team-a-1', { tenant: 'team-a' }, [{ key: 'tenant', value: 'team-a', effect: 'NoSchedule' }]),
    open,
  ];
}

interface Setup {
  readonly name: string;
  /** The 5,000-node cluster, where shapes may use their smaller `nLargeCluster`. */
  readonly large: boolean;
  readonly pipeline: Pipeline;
}

function setup(name: string, large: boolean, facts: ClusterFacts, gates: FeatureGates): Setup {
  const loaded = loadPolicyDirectory(policiesDir);
  assert.deepEqual(loaded.errors.map(formatPolicyLoadError), []);
  const plugins = buildPlugins({
    enabled: allPluginNames,
    defaultTolerationSeconds: {},
    podTolerationRestriction: {},
    podNodeSelector: {
      clusterDefault: new Map(),
      whitelists: new Map([['pinned-whitelist', parseSelectorLabels(podNodeSelectorWhitelist()).labels ?? new Map<string, string>()]]),
    },
    dedicatedNodes: createDedicatedNodes(() => loaded.set),
  });
  return { name, large, pipeline: createPipeline({ ...plugins, gates, clusterFacts: facts }) };
}

const allNamespaces = namespaces();
const setups: readonly Setup[] = [
  setup('1 node', false, staticClusterFacts({ namespaces: allNamespaces, nodes: nodes(1) }), defaultFeatureGates),
  setup('5,000 nodes, Gt/Lt gate on, DRADeviceTaints on', true, staticClusterFacts({ namespaces: allNamespaces, nodes: nodes(5_000) }), {
    ...defaultFeatureGates,
    TaintTolerationComparisonOperators: true,
    DRADeviceTaints: true,
  }),
];

// ---------------------------------------------------------------------------------------------
// Reviews as kube-apiserver v1.35 sends them

type Operation = 'CREATE' | 'UPDATE';

const podKind = { group: '', version: 'v1', kind: 'Pod' };
const podResource = { group: '', version: 'v1', resource: 'pods' };
const daemonSetKind = { group: 'apps', version: 'v1', kind: 'DaemonSet' };
const daemonSetResource = { group: 'apps', version: 'v1', resource: 'daemonsets' };

const claimKind = { group: 'resource.k8s.io', version: 'v1', kind: 'ResourceClaim' };
const claimResource = { group: 'resource.k8s.io', version: 'v1', resource: 'resourceclaims' };

/** A ResourceClaim CREATE in `gpu-team` whose one request holds `tolerations`. */
function claimReview(tolerations: unknown[]): string {
  const object = {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaim',
    metadata: { name: 'gpu', namespace: 'gpu-team' },
    spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu.example.com', tolerations } }] } },
  };
  return review({ namespace: 'gpu-team', operation: 'CREATE', object })
    .replaceAll(JSON.stringify(podKind), JSON.stringify(claimKind))
    .replaceAll(JSON.stringify(podResource), JSON.stringify(claimResource));
}

interface ReviewInput {
  readonly namespace: string;
  readonly operation: Operation;
  readonly object: JsonObject;
  readonly oldObject?: JsonObject;
  readonly daemonSet?: boolean;
}

function review({ namespace, operation, object, oldObject, daemonSet = false }: ReviewInput): string {
  const metadata = object.metadata as { name?: string } | undefined;
  return JSON.stringify({
    kind: 'AdmissionReview',
    apiVersion: 'admission.k8s.io/v1',
    request: {
      uid: '0d1f3c5e-7a9b-4c2d-8e6f-1a3b5c7d9e0f',
      kind: daemonSet ? daemonSetKind : podKind,
      resource: daemonSet ? daemonSetResource : podResource,
      requestKind: daemonSet ? daemonSetKind : podKind,
      requestResource: daemonSet ? daemonSetResource : podResource,
      // A pod CREATE with generateName carries no name yet.
      ...(metadata?.name === undefined ? {} : { name: metadata.name }),
      namespace,
      operation,
      userInfo: {
        username: 'system:serviceaccount:tenant:deployer',
        uid: '5b7d9f1a-3c5e-4a7b-9d1f-2b4c6d8e0a1c',
        groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
      },
      object,
      oldObject: oldObject ?? null,
      dryRun: false,
      options:
        operation === 'CREATE'
          ? { kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1' }
          : { kind: 'UpdateOptions', apiVersion: 'meta.k8s.io/v1' },
    },
  });
}

interface PodParts {
  readonly namespace: string;
  readonly name?: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
  readonly ownerKind?: 'ReplicaSet' | 'DaemonSet';
  readonly ownerReferences?: JsonObject[];
  readonly managedFields?: JsonObject[];
  readonly containers?: JsonObject[];
  readonly tolerations?: Toleration[];
  readonly spec?: JsonObject;
}

function container(name: string, resources: JsonObject = { requests: { cpu: '100m', memory: '128Mi' } }): JsonObject {
  return {
    name,
    image: 'registry.k8s.io/nginx:1.27',
    resources,
    volumeMounts: [{ name: 'kube-api-access-x7k2p', readOnly: true, mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' }],
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    imagePullPolicy: 'IfNotPresent',
  };
}

function managedFields(manager: string): JsonObject {
  return {
    manager,
    operation: 'Update',
    apiVersion: 'v1',
    time: '2026-11-30T05:40:12Z',
    fieldsType: 'FieldsV1',
    fieldsV1: {
      'f:metadata': { 'f:generateName': {}, 'f:labels': { '.': {}, 'f:app': {} } },
      'f:spec': { 'f:containers': { 'k:{"name":"app"}': { '.': {}, 'f:image': {}, 'f:name': {}, 'f:resources': {} } } },
    },
  };
}

/** A Burstable pod (the memory-pressure toleration is merged in) as a ReplicaSet or DaemonSet creates it. */
function pod(parts: PodParts): JsonObject {
  const ownerKind = parts.ownerKind ?? 'ReplicaSet';
  return {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: {
      ...(parts.name === undefined ? { generateName: 'web-7d4b9c8f6d-' } : { name: parts.name }),
      namespace: parts.namespace,
      labels: { app: 'web', 'pod-template-hash': '7d4b9c8f6d', ...parts.labels },
      ...(parts.annotations === undefined ? {} : { annotations: parts.annotations }),
      ownerReferences: parts.ownerReferences ?? [
        {
          apiVersion: 'apps/v1',
          kind: ownerKind,
          name: 'web-7d4b9c8f6d',
          uid: 'b2f0c3de-1a2b-4c5d-8e9f-0a1b2c3d4e5f',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
      managedFields: parts.managedFields ?? [managedFields('kube-controller-manager')],
    },
    spec: {
      volumes: [
        {
          name: 'kube-api-access-x7k2p',
          projected: { sources: [{ serviceAccountToken: { expirationSeconds: 3607, path: 'token' } }], defaultMode: 420 },
        },
      ],
      containers: parts.containers ?? [container('app')],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      dnsPolicy: 'ClusterFirst',
      serviceAccountName: 'default',
      serviceAccount: 'default',
      securityContext: {},
      schedulerName: 'default-scheduler',
      ...(parts.tolerations === undefined ? {} : { tolerations: parts.tolerations }),
      priority: 0,
      enableServiceLinks: true,
      preemptionPolicy: 'PreemptLowerPriority',
      ...parts.spec,
    },
    status: {},
  };
}

/** The pod as it was created: named, with the two NoExecute tolerations DefaultTolerationSeconds added. */
function createdPod(parts: PodParts): JsonObject {
  return pod({
    name: 'web-7d4b9c8f6d-x2x7k',
    ...parts,
    tolerations: [
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      ...(parts.tolerations ?? []),
    ],
  });
}

function daemonSet(namespace: string, templateSpec: JsonObject, templateLabels: Record<string, string> = {}): JsonObject {
  return {
    kind: 'DaemonSet',
    apiVersion: 'apps/v1',
    metadata: {
      name: 'node-agent',
      namespace,
      generation: 1,
      labels: { app: 'node-agent' },
      managedFields: [managedFields('kubectl-client-side-apply')],
    },
    spec: {
      selector: { matchLabels: { app: 'node-agent' } },
      template: {
        metadata: { labels: { app: 'node-agent', ...templateLabels } },
        spec: { containers: [container('agent')], ...templateSpec },
      },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } },
      revisionHistoryLimit: 10,
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Adversarial shapes

/** A deterministic permutation of 0..n-1 (multiplying by a number coprime to n), so orders are mixed but reproducible. */
function shuffled(n: number): number[] {
  let step = 7919;
  while (gcd(step, n) !== 1) step += 2;
  return Array.from({ length: n }, (_, i) => (i * step) % n);
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

const effects = ['NoSchedule', 'PreferNoSchedule', 'NoExecute', ''] as const;

interface Shape {
  readonly name: string;
  /** The size measured against 4× itself. */
  readonly n: number;
  /**
   * A smaller size for the 5,000-node cluster, where SchedulingWarnings judges the pod against
   * every node: its cost is nodes × pod, linear in the pod but 5,000 times over.
   */
  readonly nLargeCluster?: number;
  readonly build: (n: number) => string;
}

const shapes: readonly Shape[] = [
  {
    name: 'many tolerations of one key, each with its own value',
    n: 2_000,
    nLargeCluster: 500,
    build: (n) =>
      review({
        namespace: 'shop',
        operation: 'CREATE',
        object: pod({
          namespace: 'shop',
          tolerations: Array.from({ length: n }, (_, i) => ({
            key: 'example.com/k',
            operator: 'Equal',
            value: `v${i}`,
            effect: 'NoSchedule',
          })),
        }),
      }),
  },
  {
    name: 'many tolerations of one key and one value, every operator spelling and effect',
    n: 2_000,
    build: (n) =>
      review({
        namespace: 'shop',
        operation: 'CREATE',
        object: pod({
          namespace: 'shop',
          tolerations: Array.from({ length: n }, (_, i): Toleration => ({
            key: 'example.com/k',
            ...(i % 3 === 0 ? {} : { operator: i % 3 === 1 ? 'Equal' : '' }),
            value: 'v',
            effect: effects[i % effects.length],
          })),
        }),
      }),
  },
  {
    name: 'many NoExecute Exists tolerations of one key with distinct tolerationSeconds, in mixed order',
    n: 2_000,
    build: (n) =>
      review({
        namespace: 'shop',
        operation: 'CREATE',
        object: pod({
          namespace: 'shop',
          tolerations: shuffled(n).map((s): Toleration => ({
            key: 'example.com/k',
            operator: 'Exists',
            effect: 'NoExecute',
            tolerationSeconds: s,
          })),
        }),
      }),
  },
  {
    name: 'many NoExecute tolerations of one key and value with few distinct tolerationSeconds, some unset',
    n: 2_000,
    build: (n) =>
      review({
        namespace: 'shop',
        operation: 'CREATE',
        object: pod({
          namespace: 'shop',
          tolerations: shuffled(n).map((s): Toleration => ({
            key: 'example.com/k',
            operator: 'Equal',
            value: 'v',
            effect: 'NoExecute',
            ...(s % 13 === 0 ? {} : { tolerationSeconds: (s % 97) - 5 }),
          })),
        }),
      }),
  },
  {
    name: 'many tolerations of a few keys mixed with empty-key Exists tolerations',
    n: 2_000,
    build: (n) =>
      review({
        namespace: 'shop',
        operation: 'CREATE',
        object: pod({
          namespace: 'shop',
          tolerations: Array.from({ length: n }, (_, i): Toleration =>
            i % 50 === 0
              ? { operator: 'Exists', effect: effects[(i / 50) % effects.length] }
              : {
                  key: `example.com/k${i % 3}`,
                  operator: i % 2 === 0 ? 'Exists' : 'Equal',
                  ...(i % 2 === 0 ? {} : { value: `v${i}` }),
                  effect: effects[i % effects.length],
                },
          ),
        }),
      }),
  },
  {
    name: 'a namespace whitelist and default tolerations against many tolerations',
    n: 1_000,
    nLargeCluster: 250,
    build: (n) =>
      review({
        namespace: 'restricted',
        operation: 'CREATE',
        object: pod({
          namespace: 'restricted',
          tolerations: Array.from({ length: n }, (_, i) => ({ key: `example.com/allowed-${i % 60}`, operator: 'Equal', value: `v${i}` })),
        }),
      }),
  },
  {
    name: 'a ResourceClaim with many device tolerations against 16 defaults and an allow-list (DeviceTolerationRestriction)',
    n: 2_000,
    build: (n) =>
      claimReview(
        Array.from({ length: n }, (_, i) => ({
          key: `example.com/allowed-${i % 60}`,
          operator: 'Equal',
          value: `v${i}`,
          effect: i % 2 === 0 ? 'NoExecute' : '',
        })),
      ),
  },
  {
    name: 'a ResourceClaim with many invalid device tolerations (DeviceTolerationValidation)',
    n: 2_000,
    build: (n) =>
      claimReview(Array.from({ length: n }, (_, i) => ({ key: `bad key ${i}`, operator: 'Gt', value: `${i}`, effect: 'Sometimes' }))),
  },
  {
    name: 'a tenant pod with many tolerations (the shipped label policy)',
    n: 2_000,
    build: (n) =>
      review({
        namespace: 'ml',
        operation: 'CREATE',
        object: pod({
          namespace: 'ml',
          tolerations: Array.from({ length: n }, (_, i) => ({
            key: i % 2 === 0 ? 'dedicated' : `example.com/k${i}`,
            operator: 'Equal',
            value: i % 4 === 0 ? 'gpu' : `v${i}`,
            effect: 'NoSchedule',
          })),
        }),
      }),
  },
  {
    name: 'a tenant pod of the prefix policy with Gt and Lt tolerations',
    n: 1_500,
    build: (n) =>
      review({
        namespace: 'team-a-dev',
        operation: 'CREATE',
        object: pod({
          namespace: 'team-a-dev',
          tolerations: Array.from({ length: n }, (_, i) => ({
            key: i % 2 === 0 ? 'example.com/sla' : 'tenant',
            operator: i % 3 === 0 ? 'Lt' : 'Gt',
            value: String(i),
          })),
        }),
      }),
  },
  {
    name: 'many containers without resources (the BestEffort check looks at each)',
    n: 1_500,
    build: (n) =>
      review({
        namespace: 'shop',
        operation: 'CREATE',
        object: pod({
          namespace: 'shop',
          containers: Array.from({ length: n }, (_, i) =>
            container(`c${i}`, i === n - 1 ? { limits: { memory: '1Gi' } } : { requests: { cpu: '0', memory: '0.0' } }),
          ),
          spec: { initContainers: Array.from({ length: n }, (_, i) => container(`i${i}`, {})) },
        }),
      }),
  },
  {
    name: 'many required node-affinity terms of one expression each',
    n: 1_000,
    // SchedulingWarnings judges every term against each of the 5,000 nodes (twice, as no node fits):
    // milliseconds per term, a node × pod cost left to its own change; hence the tiny size there.
    nLargeCluster: 2,
    build: (n) =>
      review({
        namespace: 'ml',
        operation: 'CREATE',
        object: pod({
          namespace: 'ml',
          spec: {
            affinity: {
              nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                  nodeSelectorTerms: Array.from({ length: n }, (_, i) => ({
                    matchExpressions: [{ key: `example.com/l${i}`, operator: 'In', values: [`v${i}`] }],
                  })),
                },
              },
            },
          },
        }),
      }),
  },
  {
    name: 'one required node-affinity term with many expressions on the group label',
    n: 5_000,
    // SchedulingWarnings judges every expression against each of the 5,000 nodes (twice, as no node fits):
    // milliseconds per expression, a node × pod cost left to its own change; hence the tiny size there.
    nLargeCluster: 4,
    build: (n) =>
      review({
        namespace: 'ml',
        operation: 'CREATE',
        object: pod({
          namespace: 'ml',
          spec: {
            affinity: {
              nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                  // On the group label: In lists that include the group, NotIn lists that do not,
                  // so nothing contradicts the group and every plugin runs to the end.
                  nodeSelectorTerms: [
                    {
                      matchExpressions: Array.from({ length: n }, (_, i) =>
                        i % 2 === 1
                          ? { key: `example.com/l${i}`, operator: 'Exists' }
                          : i % 4 === 0
                            ? { key: 'dedicated', operator: 'NotIn', values: [`v${i}`] }
                            : { key: 'dedicated', operator: 'In', values: [`v${i}`, 'gpu'] },
                      ),
                    },
                  ],
                },
              },
            },
          },
        }),
      }),
  },
  {
    name: 'required node-affinity expressions with many values each, In and NotIn',
    n: 4_000,
    // SchedulingWarnings judges every value against each of the 5,000 nodes (twice, as no node fits):
    // milliseconds per value, a node × pod cost left to its own change; hence the tiny size there.
    nLargeCluster: 4,
    build: (n) =>
      review({
        namespace: 'ml',
        operation: 'CREATE',
        object: pod({
          namespace: 'ml',
          spec: {
            nodeSelector: { dedicated: 'gpu' },
            affinity: {
              nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                  nodeSelectorTerms: Array.from({ length: 4 }, (_, t) => ({
                    matchExpressions: [
                      // In with the group among the values, NotIn without it: no contradiction.
                      t % 2 === 0
                        ? { key: 'dedicated', operator: 'In', values: [...Array.from({ length: n }, (_, i) => `group-${i}`), 'gpu'] }
                        : { key: 'dedicated', operator: 'NotIn', values: Array.from({ length: n }, (_, i) => `group-${i}`) },
                      { key: 'example.com/rank', operator: 'Gt', values: ['7'] },
                    ],
                  })),
                },
                preferredDuringSchedulingIgnoredDuringExecution: [
                  {
                    weight: 10,
                    preference: {
                      matchExpressions: [{ key: 'zone', operator: 'In', values: Array.from({ length: n }, (_, i) => `z${i}`) }],
                    },
                  },
                ],
              },
            },
          },
        }),
      }),
  },
  {
    name: 'long strings where no plugin checks them: label and annotation values, a nodeSelector, names',
    n: 50_000,
    build: (n) => {
      const long = (c: string): string => `${c}${'-'.repeat(n)}${c}`;
      return review({
        namespace: 'ml',
        operation: 'CREATE',
        object: pod({
          namespace: 'ml',
          labels: { app: long('a'), 'tolerator.dev/exempt': long('f') },
          annotations: { 'example.com/note': long('x'), 'tolerator.dev/exempt': long('t') },
          containers: [container(long('c'))],
          ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: long('o'), uid: long('u'), controller: true }],
          tolerations: [{ key: 'example.com/k', operator: 'Equal', value: 'v', effect: 'NoSchedule' }],
          spec: { nodeSelector: { [long('s')]: long('t'), dedicated: 'gpu' }, nodeName: '', serviceAccountName: long('s') },
        }),
      });
    },
  },
  {
    name: 'long toleration keys, values, operators and effects: refused, every error reported',
    // Each long string is quoted in some ten error messages, twice over: kept to 40,000 characters at
    // 4n, where the strings still fit the CPU caches (at 80,000 the linear work measures ×5.2).
    n: 10_000,
    build: (n) => {
      const long = (c: string): string => `${c}${'-'.repeat(n)}${c}`;
      return review({
        namespace: 'shop',
        operation: 'CREATE',
        object: pod({
          namespace: 'shop',
          tolerations: [
            { key: long('k'), operator: 'Equal', value: long('v'), effect: 'NoSchedule' },
            // A prefix that is nearly a DNS subdomain, then a long name: the costliest near-miss for a backtracking match.
            { key: `${'a.'.repeat(n / 2)}-/${long('n')}`, operator: 'Exists', value: long('w') },
            { key: 'example.com/k', operator: 'Gt', value: `1${'0'.repeat(n)}` },
            { key: 'example.com/k', operator: long('o'), effect: long('e') },
          ],
        }),
      });
    },
  },
  {
    name: 'long resource quantities (digits, zeros, inner spaces)',
    n: 100_000,
    build: (n) =>
      review({
        namespace: 'shop',
        operation: 'CREATE',
        object: pod({
          namespace: 'shop',
          containers: [
            container('zeros', { requests: { cpu: `0.${'0'.repeat(n)}`, memory: ` ${'0'.repeat(n)} ` } }),
            container('spaces', { requests: { cpu: `1${' '.repeat(n)}x`, memory: `${'0'.repeat(n)}e${'0'.repeat(n)}9` } }),
            container('digits', { limits: { cpu: `1${'0'.repeat(n)}1`, memory: `${'7'.repeat(n)}Ki` } }),
          ],
        }),
      }),
  },
  {
    name: 'many labels, annotations and owner references (policies read labels)',
    n: 2_000,
    nLargeCluster: 1_000,
    build: (n) =>
      review({
        namespace: 'ml',
        operation: 'CREATE',
        object: pod({
          namespace: 'ml',
          labels: Object.fromEntries(Array.from({ length: n }, (_, i) => [`example.com/l${i}`, `v${i}`])),
          annotations: Object.fromEntries(Array.from({ length: n }, (_, i) => [`example.com/a${i}`, `v${i}`])),
          ownerReferences: Array.from({ length: n }, (_, i) => ({
            apiVersion: 'apps/v1',
            kind: i === n - 1 ? 'DaemonSet' : 'ReplicaSet',
            name: `o${i}`,
            uid: `u${i}`,
            controller: i === n - 1,
          })),
        }),
      }),
  },
  {
    name: 'deep nesting just within the limit, many times over (managedFields)',
    n: 150,
    nLargeCluster: 100,
    build: (n) => {
      // The object sits 3 levels down (review, request, object) and fieldsV1 4 more below it
      // (metadata, managedFields, the entry, fieldsV1): 500 more stays under the 512 limit.
      const deep = (): JsonObject => {
        let value: JsonObject = {};
        for (let i = 0; i < 500; i++) value = { [`f:${i % 10}`]: value };
        return value;
      };
      return review({
        namespace: 'shop',
        operation: 'CREATE',
        object: pod({
          namespace: 'shop',
          managedFields: Array.from({ length: n }, (_, i) => ({ ...managedFields(`m${i}`), fieldsV1: deep() })),
        }),
      });
    },
  },
  {
    name: 'tolerations in the pod annotation scheduler.alpha.kubernetes.io/tolerations',
    n: 1_000,
    build: (n) =>
      review({
        namespace: 'shop',
        operation: 'CREATE',
        object: pod({
          namespace: 'shop',
          annotations: {
            'scheduler.alpha.kubernetes.io/tolerations': JSON.stringify(
              Array.from({ length: n }, (_, i) => ({
                KEY: 'example.com/k',
                Operator: 'Equal',
                value: `v${i}`,
                effect: 'NoSchedule',
                tolerationSeconds: null,
              })),
            ),
          },
        }),
      }),
  },
  {
    name: 'an UPDATE adding many tolerations to a pod that has many',
    n: 500,
    build: (n) => {
      const old = Array.from({ length: n }, (_, i): Toleration => ({
        key: `example.com/old${i % 50}`,
        operator: 'Equal',
        value: `v${i}`,
        effect: 'NoSchedule',
      }));
      const added = Array.from({ length: n }, (_, i): Toleration => ({
        key: `example.com/new${i % 50}`,
        operator: 'Equal',
        value: `v${i}`,
        effect: 'NoSchedule',
      }));
      return review({
        namespace: 'ml',
        operation: 'UPDATE',
        object: createdPod({ namespace: 'ml', tolerations: [...old, ...added] }),
        oldObject: createdPod({ namespace: 'ml', tolerations: old }),
      });
    },
  },
  {
    name: 'an UPDATE whose old and new pods differ everywhere, tolerations kept in reverse order',
    n: 500,
    build: (n) => {
      const old = Array.from({ length: n }, (_, i): Toleration => ({
        key: 'example.com/k',
        operator: 'Equal',
        value: `v${i}`,
        effect: effects[i % effects.length],
        ...(i % 4 === 2 ? { tolerationSeconds: i } : {}),
      }));
      const kept = [...old]
        .reverse()
        .map((t, i) => (i % 2 === 0 ? { ...t, ...(t.effect === 'NoExecute' ? { tolerationSeconds: 1 } : {}) } : t));
      const differing = (tag: string, tolerations: Toleration[]): JsonObject =>
        createdPod({
          namespace: 'team-a-dev',
          labels: Object.fromEntries(Array.from({ length: n }, (_, i) => [`example.com/l${i}`, `${tag}${i}`])),
          annotations: Object.fromEntries(Array.from({ length: n }, (_, i) => [`example.com/a${i}`, `${tag}${i}`])),
          containers: Array.from({ length: n / 10 }, (_, i) => container(`${tag}${i}`)),
          tolerations,
          spec: { nodeName: tag === 'new' ? 'team-a-1' : 'worker-1', nodeSelector: { tenant: `team-${tag}` } },
        });
      return review({ namespace: 'team-a-dev', operation: 'UPDATE', object: differing('new', kept), oldObject: differing('old', old) });
    },
  },
  {
    name: 'a DaemonSet pod with many tolerations, some matching the daemon ones',
    n: 2_000,
    nLargeCluster: 1_000,
    build: (n) =>
      review({
        namespace: 'monitoring',
        operation: 'CREATE',
        object: pod({
          namespace: 'monitoring',
          ownerKind: 'DaemonSet',
          spec: { hostNetwork: true },
          tolerations: Array.from({ length: n }, (_, i): Toleration =>
            i % 10 === 0
              ? { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: i }
              : { key: `dedicated`, operator: 'Equal', value: `group-${i}`, effect: effects[i % effects.length] },
          ),
        }),
      }),
  },
  {
    name: 'a DaemonSet pod UPDATE adding many tolerations',
    n: 500,
    build: (n) => {
      const old = Array.from({ length: n }, (_, i): Toleration => ({
        key: `example.com/k${i % 7}`,
        operator: 'Exists',
        effect: effects[i % effects.length],
      }));
      const added = Array.from({ length: n }, (_, i): Toleration => ({ key: `example.com/k${i % 7}`, operator: 'Equal', value: `v${i}` }));
      return review({
        namespace: 'shop',
        operation: 'UPDATE',
        object: createdPod({ namespace: 'shop', ownerKind: 'DaemonSet', tolerations: [...old, ...added] }),
        oldObject: createdPod({ namespace: 'shop', ownerKind: 'DaemonSet', tolerations: old }),
      });
    },
  },
  {
    name: 'a tenant DaemonSet UPDATE whose template changed, with many tolerations and terms',
    n: 300,
    build: (n) => {
      const template = (tag: string, count: number): JsonObject => ({
        tolerations: Array.from({ length: count }, (_, i) => ({
          key: i % 2 === 0 ? 'dedicated' : 'example.com/k',
          operator: 'Equal',
          value: i % 2 === 0 ? 'gpu' : `${tag}${i}`,
          effect: 'NoSchedule',
        })),
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: Array.from({ length: count }, (_, i) => ({
                matchExpressions: [{ key: `example.com/${tag}${i}`, operator: 'Exists' }],
              })),
            },
          },
        },
      });
      return review({
        namespace: 'ml',
        operation: 'UPDATE',
        daemonSet: true,
        object: daemonSet('ml', template('new', 2 * n), { version: 'new' }),
        oldObject: daemonSet('ml', template('old', n), { version: 'old' }),
      });
    },
  },
  {
    name: 'PodNodeSelector: a pod nodeSelector of many labels in a namespace with a node selector, merged and judged against the nodes',
    n: 2_000,
    nLargeCluster: 200,
    build: (n) =>
      review({
        namespace: 'pinned',
        operation: 'CREATE',
        object: pod({
          namespace: 'pinned',
          spec: { nodeSelector: Object.fromEntries(Array.from({ length: n }, (_, i) => [`example.com/label-${i}`, `v${i}`])) },
        }),
      }),
  },
  {
    name: 'PodNodeSelector: a pod nodeSelector of many labels, each looked up in a namespace whitelist of 10,000',
    n: 2_000,
    nLargeCluster: 200,
    build: (n) =>
      review({
        namespace: 'pinned-whitelist',
        operation: 'CREATE',
        object: pod({
          namespace: 'pinned-whitelist',
          spec: { nodeSelector: Object.fromEntries(Array.from({ length: n }, (_, i) => [`example.com/w${i}`, `v${i}`])) },
        }),
      }),
  },
  {
    name: 'PodNodeSelector: a DaemonSet UPDATE whose template of many nodeSelector labels changed, in a namespace with a node selector',
    n: 2_000,
    build: (n) => {
      const selector = (count: number, tag: string): JsonObject => ({
        nodeSelector: Object.fromEntries(Array.from({ length: count }, (_, i) => [`example.com/${tag}-${i}`, `v${i}`])),
      });
      return review({
        namespace: 'pinned',
        operation: 'UPDATE',
        daemonSet: true,
        object: daemonSet('pinned', selector(n, 'new'), { version: 'new' }),
        oldObject: daemonSet('pinned', selector(n, 'old'), { version: 'old' }),
      });
    },
  },
  {
    name: 'many invalid tolerations on UPDATE: every error reported, twice',
    n: 200,
    build: (n) => {
      const bad = Array.from({ length: n }, (_, i): Toleration => ({
        key: `-bad${i}-`,
        operator: i % 2 === 0 ? 'exists' : 'Gt',
        value: `not a label value ${i}`,
        effect: i % 3 === 0 ? 'Sometimes' : 'NoSchedule',
        tolerationSeconds: i,
      }));
      return review({
        namespace: 'shop',
        operation: 'UPDATE',
        object: createdPod({ namespace: 'shop', tolerations: [...bad, ...bad] }),
        oldObject: createdPod({ namespace: 'shop', tolerations: bad }),
      });
    },
  },
];

// ---------------------------------------------------------------------------------------------
// Measuring

/** The path of one review through both webhooks: parse, mutate, validate the result, respond. */
async function runReview(pipeline: Pipeline, body: Buffer): Promise<string> {
  const parsed = parseAdmissionReview(body);
  const { decision } = await pipeline.review(parsed, ['mutate', 'validate']);
  return JSON.stringify(buildAdmissionResponse(parsed.apiVersion, parsed.uid, decision));
}

/**
 * A garbage collection, so that each measured review starts from a clean heap instead of paying
 * for the garbage of the one before. `--expose-gc` set at run time gives a new context a `gc`
 * function without changing how the suite is started.
 */
const collectGarbage: (options: { type: 'major' | 'minor' }) => void = (() => {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as (options: { type: 'major' | 'minor' }) => void;
})();

/**
 * The least CPU time, in microseconds, of `repetitions` reviews of `body`. A full collection
 * starts the series, clearing what the shapes before left in the old generation; between its
 * runs a scavenge clears the young generation, where one review's garbage lives. A full
 * collection before every run, as this once did, re-marks the 10,000 namespaces and 5,000 nodes
 * each time: about 30 ms of CPU each, 42 % of this file's CPU time (17 of 41 s, measured at a load
 * of 13 on 2 cores), for no better reading.
 */
async function leastCpuMicros(pipeline: Pipeline, body: Buffer): Promise<number> {
  let least = Infinity;
  collectGarbage({ type: 'major' });
  for (let i = 0; i < repetitions; i++) {
    if (i > 0) collectGarbage({ type: 'minor' });
    const started = process.cpuUsage();
    await runReview(pipeline, body);
    const used = process.cpuUsage(started);
    least = Math.min(least, used.user + used.system);
  }
  return least;
}

interface Growth {
  readonly small: number;
  readonly large: number;
  readonly ratio: number;
}

async function growth(pipeline: Pipeline, shape: Shape, n: number): Promise<Growth> {
  const small = Buffer.from(shape.build(n));
  const large = Buffer.from(shape.build(4 * n));
  // Warm-up: compiles the code these shapes reach and settles the heap at the larger size.
  await runReview(pipeline, small);
  await runReview(pipeline, large);
  let best: Growth | undefined;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const smallCost = await leastCpuMicros(pipeline, small);
    const largeCost = await leastCpuMicros(pipeline, large);
    // Guard against a zero reading from a coarse clock.
    const ratio = largeCost / Math.max(smallCost, 1);
    if (best === undefined || ratio < best.ratio) {
      best = { small: smallCost, large: largeCost, ratio };
    }
    if (ratio <= maxRatio) {
      break;
    }
  }
  return best!;
}

for (const { name: setupName, large, pipeline } of setups) {
  describe(`review cost grows linearly with the request (${setupName}, 10,000 namespaces)`, () => {
    for (const shape of shapes) {
      const n = large ? (shape.nLargeCluster ?? shape.n) : shape.n;
      it(`${shape.name}: n = ${n} against 4n`, async (t) => {
        const measured = await growth(pipeline, shape, n);
        const text = `${(measured.small / 1000).toFixed(1)} ms at n, ${(measured.large / 1000).toFixed(1)} ms at 4n: ×${measured.ratio.toFixed(2)}`;
        t.diagnostic(text);
        assert.ok(
          measured.ratio <= maxRatio,
          `cost grew ×${measured.ratio.toFixed(2)} for 4× the size (${text}); linear is ×4, quadratic ×16`,
        );
        assert.ok(measured.large <= maxLargeCostMicros, `the review at 4n took ${(measured.large / 1000).toFixed(0)} ms of CPU`);
      });
    }
  });
}
