/**
 * The generated cases of the differential admission suite (admission.differential.ts): one
 * Namespace, annotated at creation, and one Pod in it. fast-check draws them from small pools of
 * keys, values and effects on purpose: with six toleration keys and four effects, duplicates,
 * supersets and subsets of each other (a wildcard key or effect covers a specific one) come up in
 * most lists, which is where the merge of DefaultTolerationSeconds and PodTolerationRestriction
 * and the whitelist check decide. Invalid shapes (Exists with a value, an empty key with Equal,
 * tolerationSeconds on a NoSchedule toleration, a negative one, Gt/Lt with the gate off) are drawn
 * too: the API server's validation refuses them after the mutating plugins ran, and both sides must
 * refuse alike.
 */
import fc from 'fast-check';
import type { Manifest } from '../cluster/tolerator-on-cluster.js';

export const defaultTolerationsAnnotation = 'scheduler.alpha.kubernetes.io/defaultTolerations';
export const tolerationsWhitelistAnnotation = 'scheduler.alpha.kubernetes.io/tolerationsWhitelist';
export const nodeSelectorAnnotation = 'scheduler.alpha.kubernetes.io/node-selector';

export interface GeneratedToleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
  tolerationSeconds?: number;
}

/** A container's (or the pod's) `resources`, or none. */
type Resources = { requests?: Record<string, string>; limits?: Record<string, string> } | undefined;

export interface AdmissionCase {
  readonly namespace: {
    /** Each annotation's value, or undefined for an annotation that is absent. */
    readonly defaultTolerations: string | undefined;
    readonly tolerationsWhitelist: string | undefined;
    readonly nodeSelector: string | undefined;
    /** Which of PodNodeSelector's per-namespace whitelists (NAMESPACE_WHITELISTS) names this namespace, if any. */
    readonly whitelist: number | undefined;
  };
  readonly pod: {
    /** undefined: no `tolerations` field at all; [] is sent as an empty list. */
    readonly tolerations: GeneratedToleration[] | undefined;
    readonly nodeSelector: Record<string, string> | undefined;
    readonly containers: Resources[];
    readonly initContainers: Resources[];
    /** The init containers are sidecars (`restartPolicy: Always`); QoS counts them either way. */
    readonly initSidecar?: boolean;
    /** Pod-level `spec.resources` (PodLevelResources, beta and on in 1.35). */
    readonly resources: Resources;
  };
}

export const notReadyKey = 'node.kubernetes.io/not-ready';
export const unreachableKey = 'node.kubernetes.io/unreachable';
export const memoryPressureKey = 'node.kubernetes.io/memory-pressure';

/**
 * The cluster-level PodTolerationRestriction configuration both sides get: one default, and a
 * whitelist holding what DefaultTolerationSeconds and the memory-pressure rule add (else nearly
 * every pod of a namespace without a whitelist annotation would be refused), the default, and an
 * Equal entry so that a value decides.
 */
export const CLUSTER_DEFAULT_TOLERATIONS: GeneratedToleration[] = [{ key: 'example.com/spot', operator: 'Exists', effect: 'NoSchedule' }];
export const CLUSTER_WHITELIST: GeneratedToleration[] = [
  { key: notReadyKey, operator: 'Exists', effect: 'NoExecute' },
  { key: unreachableKey, operator: 'Exists', effect: 'NoExecute' },
  { key: memoryPressureKey, operator: 'Exists', effect: 'NoSchedule' },
  { key: 'example.com/spot', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'example.com/spot', operator: 'Exists' },
  { key: 'example.com/gpu', operator: 'Equal', value: 'a' },
  { key: notReadyKey, operator: 'Exists' },
];
export const CLUSTER_DEFAULT_NODE_SELECTOR = 'kubernetes.io/os=linux';
/** PodNodeSelector's per-namespace whitelists: one that holds the default, one that does not, one empty (no restriction). */
export const NAMESPACE_WHITELISTS = ['env=prod, kubernetes.io/os=linux', 'env=dev', ''] as const;

const tolerationKey = fc.constantFrom('', notReadyKey, unreachableKey, memoryPressureKey, 'example.com/spot', 'example.com/gpu');
/** Any shape: every field present or absent, valid or not (Exists with a value, seconds on NoSchedule, Gt/Lt). */
const anyToleration: fc.Arbitrary<GeneratedToleration> = fc.record(
  {
    key: tolerationKey,
    operator: fc.oneof({ weight: 8, arbitrary: fc.constantFrom('Exists', 'Equal') }, { weight: 1, arbitrary: fc.constantFrom('Gt', 'Lt') }),
    value: fc.constantFrom('', 'a', 'b', '5'),
    effect: fc.constantFrom('', 'NoSchedule', 'PreferNoSchedule', 'NoExecute'),
    tolerationSeconds: fc.constantFrom(0, -5, 60, 300, 600),
  },
  { requiredKeys: [] },
);

/**
 * A toleration the API server accepts: Exists without a value (an empty key only with Exists),
 * Equal with one, tolerationSeconds only where the effect is NoExecute or empty. Most generated
 * tolerations are these, so that most cases reach the merge and the whitelist instead of the API
 * server's validation.
 */
const validToleration: fc.Arbitrary<GeneratedToleration> = fc
  .record({
    key: tolerationKey,
    equal: fc.option(fc.constantFrom('', 'a', 'b'), { nil: undefined }),
    operatorWritten: fc.boolean(),
    effect: fc.option(fc.constantFrom('', 'NoSchedule', 'PreferNoSchedule', 'NoExecute'), { nil: undefined }),
    tolerationSeconds: fc.option(fc.constantFrom(0, -5, 60, 300, 600), { nil: undefined, freq: 2 }),
  })
  .map(({ key, equal, operatorWritten, effect, tolerationSeconds }) => {
    const toleration: GeneratedToleration = key === '' ? {} : { key };
    // An empty key with Equal is invalid; Equal is the default operator, so it may go unwritten.
    if (equal === undefined || key === '') toleration.operator = 'Exists';
    else {
      if (operatorWritten) toleration.operator = 'Equal';
      toleration.value = equal;
    }
    if (effect !== undefined) toleration.effect = effect;
    if (tolerationSeconds !== undefined && (effect === undefined || effect === '' || effect === 'NoExecute')) {
      toleration.tolerationSeconds = tolerationSeconds;
    }
    return toleration;
  });

const toleration = fc.oneof({ weight: 4, arbitrary: validToleration }, { weight: 1, arbitrary: anyToleration });

/** A list of up to 4, and sometimes a copy of one of its entries appended (an exact duplicate). */
export const tolerationList: fc.Arbitrary<GeneratedToleration[]> = fc
  .tuple(fc.array(toleration, { maxLength: 4 }), fc.option(fc.nat({ max: 3 }), { freq: 3 }))
  .map(([list, duplicate]) => (duplicate === null || list.length === 0 ? list : [...list, { ...list[duplicate % list.length]! }]));

/**
 * A defaultTolerations or tolerationsWhitelist annotation: absent, empty ("" and "[]" and "null"
 * all mean an empty list, which overrides the cluster list), a generated list, or text that does not
 * decode as a list of tolerations (syntax errors, wrong types, Go's field-type message).
 */
const tolerationsAnnotation = (absent: number): fc.Arbitrary<string | undefined> =>
  fc.oneof(
    { weight: absent, arbitrary: fc.constant(undefined) },
    { weight: 4, arbitrary: fc.constantFrom('', '[]', 'null') },
    { weight: 4, arbitrary: tolerationList.map((list) => JSON.stringify(list)) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '{not json',
        '{}',
        '[1]',
        '"x"',
        '[{"key":5}]',
        '[{"key":"k","operator":"Exists","tolerationSeconds":"5"}]',
        '[{"key":"k","tolerationSeconds":1.5}]',
        // How Go's encoding/json decodes, which tolerator must reproduce: int64's bounds, a
        // number with an exponent, a repeated field (the last wins), field names matched
        // case-insensitively, unknown fields ignored, null leaving the zero value.
        '[{"key":"k","operator":"Exists","effect":"NoExecute","tolerationSeconds":9223372036854775807}]',
        '[{"key":"k","operator":"Exists","effect":"NoExecute","tolerationSeconds":9223372036854775808}]',
        '[{"key":"k","operator":"Exists","effect":"NoExecute","tolerationSeconds":-9223372036854775808}]',
        '[{"key":"k","operator":"Exists","effect":"NoExecute","tolerationSeconds":1e3}]',
        '[{"key":"k","operator":"Exists","effect":"NoExecute","tolerationSeconds":-0}]',
        '[{"key":"example.com/gpu","key":"example.com/spot","operator":"Exists","effect":"NoSchedule"}]',
        '[{"KEY":"example.com/spot","Operator":"Exists","eFFect":"NoSchedule"}]',
        '[{"key":"example.com/spot","operator":"Exists","effect":"NoSchedule","colour":"blue"}]',
        '[{"key":null,"operator":"Exists","effect":null}]',
        '[{"key":"example.com/\\u0073pot","operator":"Exists"}]',
        '[{"key":"k","operator":"Exists"},]',
        ' [ ] ',
        '[null]',
      ),
    },
  );

/** A node-selector annotation: absent, empty (no selector, not the cluster default), valid, or one that does not parse. */
const nodeSelectorValue: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 4, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constant('') },
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      'env=prod',
      'env=dev',
      ' env = prod , tier=web',
      'kubernetes.io/os=linux',
      'env=prod,env=dev',
      'disk=ssd,env=prod',
    ),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'edge',
      'env==prod',
      'a=b=c',
      'bad key=x',
      'env=bad value',
      '!env',
      'env=prod,',
      ',',
      ' ',
      'env=',
      '=prod',
      'env=prod,tier',
      'example.com/zone=a',
      `env=${'a'.repeat(64)}`,
      'env=prod\u00a0,\u2003tier=web',
      'env in (prod)',
    ),
  },
);

const podNodeSelector: fc.Arbitrary<Record<string, string> | undefined> = fc.option(
  fc.dictionary(fc.constantFrom('env', 'tier', 'disk', 'kubernetes.io/os'), fc.constantFrom('prod', 'dev', 'web', 'ssd', 'linux'), {
    maxKeys: 3,
  }),
  { freq: 2 },
);

/**
 * A container's resources, through each QoS rule: none (BestEffort), a cpu request (Burstable), a
 * cpu limit alone (the request is defaulted to it), cpu and memory requests equal to limits
 * (Guaranteed when every container has them), memory unequal (Burstable), a zero request and an
 * ephemeral-storage request (neither counts: BestEffort).
 */
const containerResources: fc.Arbitrary<Resources> = fc.constantFrom<Resources>(
  undefined,
  { requests: { cpu: '100m' } },
  { limits: { cpu: '100m' } },
  { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } },
  { requests: { memory: '64Mi' }, limits: { memory: '128Mi' } },
  { requests: { cpu: '0' } },
  { requests: { 'ephemeral-storage': '1Gi' } },
);

/** Pod-level resources: absent mostly; empty; requests only; limits only (requests defaulted); equal (Guaranteed). */
const podResources: fc.Arbitrary<Resources> = fc.oneof(
  { weight: 5, arbitrary: fc.constant(undefined) },
  {
    weight: 2,
    arbitrary: fc.constantFrom<Resources>(
      {},
      { requests: { cpu: '1' } },
      { limits: { cpu: '1', memory: '1Gi' } },
      { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } },
    ),
  },
);

export const admissionCase: fc.Arbitrary<AdmissionCase> = fc.record({
  namespace: fc.record({
    defaultTolerations: tolerationsAnnotation(6),
    tolerationsWhitelist: tolerationsAnnotation(2),
    nodeSelector: nodeSelectorValue,
    whitelist: fc.oneof(
      { weight: 4, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.nat({ max: NAMESPACE_WHITELISTS.length - 1 }) },
    ),
  }),
  pod: fc.record({
    tolerations: fc.option(tolerationList, { freq: 4, nil: undefined }),
    nodeSelector: podNodeSelector.map((selector) => selector ?? undefined),
    containers: fc.array(containerResources, { minLength: 1, maxLength: 2 }),
    initContainers: fc.array(containerResources, { maxLength: 1 }),
    initSidecar: fc.boolean(),
    resources: podResources,
  }),
});

/** The Namespace of a case: its annotations as generated (an absent one is no key at all). */
export function namespaceManifest(name: string, namespace: AdmissionCase['namespace']): Manifest {
  const annotations: Record<string, string> = {};
  if (namespace.defaultTolerations !== undefined) annotations[defaultTolerationsAnnotation] = namespace.defaultTolerations;
  if (namespace.tolerationsWhitelist !== undefined) annotations[tolerationsWhitelistAnnotation] = namespace.tolerationsWhitelist;
  if (namespace.nodeSelector !== undefined) annotations[nodeSelectorAnnotation] = namespace.nodeSelector;
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, annotations } };
}

function container(name: string, resources: Resources): Record<string, unknown> {
  return { name, image: 'registry.example/app:1', ...(resources === undefined ? {} : { resources }) };
}

/** The Pod of a case, named `pod` (a generated name would differ between the API servers' messages). */
export function podManifest(namespace: string, pod: AdmissionCase['pod']): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'pod', namespace },
    spec: {
      containers: pod.containers.map((resources, i) => container(`app-${i}`, resources)),
      ...(pod.initContainers.length === 0
        ? {}
        : {
            initContainers: pod.initContainers.map((resources, i) => ({
              ...container(`init-${i}`, resources),
              ...(pod.initSidecar === true ? { restartPolicy: 'Always' } : {}),
            })),
          }),
      ...(pod.resources === undefined ? {} : { resources: pod.resources }),
      ...(pod.tolerations === undefined ? {} : { tolerations: pod.tolerations }),
      ...(pod.nodeSelector === undefined ? {} : { nodeSelector: pod.nodeSelector }),
    },
  };
}
