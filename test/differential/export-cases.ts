/**
 * The generated pods of the export differential (export.differential.ts): what the exported
 * MutatingAdmissionPolicy claims to reproduce, so every draw is inside what `tolerator export`
 * covers (a namespace without PodTolerationRestriction's annotations, no tenancy).
 *
 * The pools are small on purpose, as in the admission differential: with a handful of keys,
 * effects and values, duplicates, supersets and subsets of each other (an empty key with Exists,
 * an empty effect) come up in most lists, which is where MergeTolerations, DefaultTolerationSeconds'
 * coverage and the DaemonSet controller's AddOrUpdate decide. Invalid shapes (Exists with a
 * value, tolerationSeconds on NoSchedule, a negative one, Gt without the gate) are drawn too: the
 * API server's validation refuses them after mutating admission, and both subjects must refuse
 * alike, with the same message (which names the mutated list's indices).
 */
import fc from 'fast-check';
import type { Manifest } from '../cluster/tolerator-on-cluster.js';

export interface GeneratedToleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
  tolerationSeconds?: number;
}

type Resources = { requests?: Record<string, string>; limits?: Record<string, string> } | undefined;

export interface ExportCase {
  readonly tolerations: GeneratedToleration[] | undefined;
  readonly containers: Resources[];
  readonly initContainers: Resources[];
  /** Pod-level spec.resources (PodLevelResources, beta and on in 1.35). */
  readonly resources: Resources;
  /** A client-supplied status.qosClass, which GetPodQOS honours in admission. */
  readonly qosClass: string | undefined;
  /** Owned by a DaemonSet: apps/v1 with controller true, or a near miss. */
  readonly owner: 'daemonset' | 'daemonset-not-controller' | 'replicaset' | undefined;
  readonly hostNetwork: boolean | undefined;
}

const toleration: fc.Arbitrary<GeneratedToleration> = fc.record(
  {
    key: fc.constantFrom(
      '',
      'node.kubernetes.io/not-ready',
      'node.kubernetes.io/unreachable',
      'node.kubernetes.io/memory-pressure',
      'node.kubernetes.io/disk-pressure',
      'node.kubernetes.io/network-unavailable',
      'example.com/a',
    ),
    operator: fc.oneof({ weight: 10, arbitrary: fc.constantFrom('Exists', 'Equal') }, { weight: 1, arbitrary: fc.constant('Gt') }),
    value: fc.constantFrom('', 'a', 'b'),
    effect: fc.constantFrom('', 'NoSchedule', 'PreferNoSchedule', 'NoExecute'),
    tolerationSeconds: fc.constantFrom(0, -5, 60, 300, 600),
  },
  { requiredKeys: [] },
);

/** Up to 5, and sometimes a copy of one of its entries appended (an exact duplicate). */
const tolerationList: fc.Arbitrary<GeneratedToleration[]> = fc
  .tuple(fc.array(toleration, { maxLength: 5 }), fc.option(fc.nat({ max: 4 }), { freq: 3 }))
  .map(([list, duplicate]) => (duplicate === null || list.length === 0 ? list : [...list, { ...list[duplicate % list.length]! }]));

const quantity = fc.constantFrom('0', '100m', '1', '0.5', '64Mi', '1Gi');
const resourceList = fc.dictionary(fc.constantFrom('cpu', 'memory', 'ephemeral-storage'), quantity, { maxKeys: 2 });
const resources: fc.Arbitrary<Resources> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 4, arbitrary: fc.record({ requests: resourceList, limits: resourceList }, { requiredKeys: [] }) },
);

export const exportCase: fc.Arbitrary<ExportCase> = fc.record({
  tolerations: fc.option(tolerationList, { nil: undefined, freq: 5 }),
  containers: fc.array(resources, { minLength: 1, maxLength: 2 }),
  initContainers: fc.array(resources, { maxLength: 1 }),
  resources: fc.oneof({ weight: 6, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: resources }),
  qosClass: fc.oneof(
    { weight: 8, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constantFrom('BestEffort', 'Burstable') },
  ),
  owner: fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    { weight: 3, arbitrary: fc.constant('daemonset' as const) },
    { weight: 1, arbitrary: fc.constantFrom('daemonset-not-controller' as const, 'replicaset' as const) },
  ),
  hostNetwork: fc.option(fc.boolean(), { nil: undefined }),
});

/** The cases of one run: fixed by the seed, so a difference found once is found again. */
export function exportCases(count: number, seed: number): ExportCase[] {
  return fc.sample(exportCase, { numRuns: count, seed });
}

function container(name: string, own: Resources): Manifest {
  return { name, image: 'registry.k8s.io/pause:3.10', ...(own === undefined ? {} : { resources: own }) } as unknown as Manifest;
}

/** The case as a Pod named `name` in `namespace`, as a client sends it. */
export function podOf(item: ExportCase, name: string, namespace: string): Manifest {
  const owners = {
    daemonset: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'ds', uid: '6f1b3c3e-0000-4000-8000-000000000001', controller: true }],
    'daemonset-not-controller': [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'ds', uid: '6f1b3c3e-0000-4000-8000-000000000002' }],
    replicaset: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: '6f1b3c3e-0000-4000-8000-000000000003', controller: true }],
  };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, ...(item.owner === undefined ? {} : { ownerReferences: owners[item.owner] }) },
    spec: {
      containers: item.containers.map((own, index) => container(`c${index}`, own)),
      ...(item.initContainers.length === 0 ? {} : { initContainers: item.initContainers.map((own, index) => container(`i${index}`, own)) }),
      ...(item.resources === undefined ? {} : { resources: item.resources }),
      ...(item.tolerations === undefined ? {} : { tolerations: item.tolerations }),
      ...(item.hostNetwork === undefined ? {} : { hostNetwork: item.hostNetwork }),
    },
    ...(item.qosClass === undefined ? {} : { status: { qosClass: item.qosClass } }),
  };
}

/**
 * The namespaces of the tenancy cases, under the one policy the export translates
 * (policies/dedicated-by-namespace-label.yaml): a group, a numeric group (where a `Gt`/`Lt`
 * toleration or requirement on the group label decides), an exempt tenant namespace, an
 * infrastructure namespace, one that is both a group and infrastructure, and `cases` (no group).
 */
export const tenancyNamespaces: Record<string, Record<string, string>> = {
  cases: {},
  gpu: { dedicated: 'gpu' },
  numeric: { dedicated: '2024' },
  'exempt-gpu': { dedicated: 'gpu', 'tolerator.dev/exempt': 'true' },
  infra: { 'tolerator.dev/node-infrastructure': 'true' },
  'infra-gpu': { dedicated: 'gpu', 'tolerator.dev/node-infrastructure': 'true' },
};

interface Requirement {
  key: string;
  operator: string;
  values?: string[];
}

export interface TenancyCase {
  readonly namespace: string;
  readonly tolerations: GeneratedToleration[] | undefined;
  readonly nodeSelector: Record<string, string> | undefined;
  /** Required node-affinity terms; an empty list is sent as such (the webhook then adds a term). */
  readonly terms: { matchExpressions?: Requirement[]; matchFields?: Requirement[] }[] | undefined;
  readonly nodeName: string | undefined;
  /** Burstable (memory-pressure added) or BestEffort: the group toleration comes after PodTolerationRestriction's. */
  readonly burstable: boolean;
}

/**
 * Hostile tolerations of the dedicated taint: every group (Exists, the empty key), another group,
 * the own groups, the empty value, the wrong effect, Gt/Lt around the numeric group 2024, and a
 * node-condition toleration so the lists merge with the defaults.
 */
const tenancyToleration: fc.Arbitrary<GeneratedToleration> = fc.constantFrom<GeneratedToleration>(
  { key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' },
  { key: 'dedicated', operator: 'Equal', value: 'gpu' },
  { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' },
  { key: 'dedicated', operator: 'Equal', value: '2024', effect: 'NoSchedule' },
  { key: 'dedicated', operator: 'Equal', value: 'pci', effect: 'NoSchedule' },
  { key: 'dedicated', operator: 'Equal', value: '', effect: 'NoSchedule' },
  { key: 'dedicated', operator: 'Equal', value: 'pci', effect: 'NoExecute' },
  { key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'dedicated', operator: 'Exists' },
  { operator: 'Exists' },
  { operator: 'Exists', effect: 'NoSchedule' },
  { key: 'dedicated', operator: 'Gt', value: '100', effect: 'NoSchedule' },
  { key: 'dedicated', operator: 'Lt', value: '3000' },
  { key: 'example.com/a', operator: 'Exists' },
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 60 },
);

/** Requirements on the group label that admit or exclude gpu or 2024, and some on other keys. */
const requirement: fc.Arbitrary<Requirement> = fc.constantFrom<Requirement>(
  { key: 'dedicated', operator: 'In', values: ['gpu'] },
  { key: 'dedicated', operator: 'In', values: ['gpu', 'gpu'] },
  { key: 'dedicated', operator: 'In', values: ['2024'] },
  { key: 'dedicated', operator: 'In', values: ['gpu', 'pci'] },
  { key: 'dedicated', operator: 'In', values: ['pci'] },
  { key: 'dedicated', operator: 'NotIn', values: ['pci'] },
  { key: 'dedicated', operator: 'NotIn', values: ['gpu'] },
  { key: 'dedicated', operator: 'Exists' },
  { key: 'dedicated', operator: 'DoesNotExist' },
  { key: 'dedicated', operator: 'Gt', values: ['100'] },
  { key: 'dedicated', operator: 'Gt', values: ['0002023'] },
  { key: 'dedicated', operator: 'Lt', values: ['2024'] },
  { key: 'dedicated', operator: 'Lt', values: ['99999'] },
  { key: 'zone', operator: 'In', values: ['a'] },
);

const term = fc.record(
  {
    matchExpressions: fc.array(requirement, { maxLength: 2 }),
    matchFields: fc.constant<Requirement[]>([{ key: 'metadata.name', operator: 'In', values: ['n1'] }]),
  },
  { requiredKeys: [] },
);

/** `arbitrary` one time in `of`, else undefined (fc.option's freq is the other way round: 1 in freq is nil). */
function sometimes<T>(arbitrary: fc.Arbitrary<T>, of: number): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: of - 1, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary });
}

export const tenancyCase: fc.Arbitrary<TenancyCase> = fc.record({
  namespace: fc.constantFrom(...Object.keys(tenancyNamespaces)),
  tolerations: fc.option(fc.array(tenancyToleration, { maxLength: 3 }), { nil: undefined, freq: 3 }),
  nodeSelector: sometimes(fc.constantFrom<Record<string, string>>({ dedicated: 'gpu' }, { dedicated: 'pci' }, { zone: 'a' }), 4),
  terms: sometimes(fc.array(term, { maxLength: 2 }), 2),
  nodeName: sometimes(fc.constant('n1'), 8),
  burstable: fc.boolean(),
});

export function tenancyCases(count: number, seed: number): TenancyCase[] {
  return fc.sample(tenancyCase, { numRuns: count, seed });
}

/** The tenancy case as a Pod named `name`, in its namespace. */
export function tenancyPodOf(item: TenancyCase, name: string): Manifest {
  const resources = item.burstable ? { resources: { requests: { cpu: '100m' } } } : {};
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: item.namespace },
    spec: {
      containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', ...resources }],
      ...(item.tolerations === undefined ? {} : { tolerations: item.tolerations }),
      ...(item.nodeSelector === undefined ? {} : { nodeSelector: item.nodeSelector }),
      ...(item.terms === undefined
        ? {}
        : { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: item.terms } } } }),
      ...(item.nodeName === undefined ? {} : { nodeName: item.nodeName }),
    },
  };
}
