/**
 * Generated cases for the ExtendedResourceToleration differential suite
 * (extended-resource.differential.ts): pods whose containers, init containers (sidecars too),
 * ephemeral containers and pod-level resources request names from a pool that spans every rule of
 * helper.IsExtendedResourceName (extended names, native ones with and without a `kubernetes.io/`
 * domain, the DRA implicit `deviceclass.resource.kubernetes.io/…`, `requests.`-prefixed and
 * malformed ones), by requests, limits or both; tolerations drawn so that they often match the
 * added ones (the same key, operator, value and effect, with and without tolerationSeconds) or
 * nearly (another effect, operator, value); a namespace whitelist now and then (the in-tree
 * PodTolerationRestriction judges the added tolerations); and an UPDATE of the stored pod.
 */
import fc from 'fast-check';
import type { Manifest } from '../cluster/tolerator-on-cluster.js';
import { tolerationsWhitelistAnnotation } from './cases.js';

/** The resource names a case draws from: each rule of IsExtendedResourceName, several times over. */
export const RESOURCE_NAMES = [
  // Extended.
  'nvidia.com/gpu',
  'example.com/foo',
  'example.com/bar',
  'example.com/Foo_Bar.baz',
  'a.b/c',
  'z.io/0',
  // Native: no "/", or a kubernetes.io domain anywhere in the name.
  'cpu',
  'memory',
  'ephemeral-storage',
  'hugepages-2Mi',
  'kubernetes.io/foo',
  'example.kubernetes.io/foo',
  'deviceclass.resource.kubernetes.io/gpu-class',
  // Neither: refused by validation whoever adds what.
  'requests.example.com/foo',
  'Example.com/x',
  'example.com/x/y',
  'example.com/-x',
] as const;

type ResourceName = (typeof RESOURCE_NAMES)[number];

/** A quantity the name takes: extended resources must be whole numbers, the rest take what they usually do. */
function quantityOf(name: ResourceName, variant: number): string {
  // Variant 3: pod-level cpu and memory, above 5 containers' most (1 cpu, 128Mi each).
  if (variant === 3) return name === 'cpu' ? '16' : '16Gi';
  if (name === 'cpu') return ['100m', '250m', '1'][variant % 3]!;
  if (name === 'memory' || name === 'hugepages-2Mi' || name === 'ephemeral-storage') return ['64Mi', '128Mi', '2Mi'][variant % 3]!;
  return ['1', '2', '0'][variant % 3]!;
}

/** How a container asks for one resource: a request, a limit, both equal, or both different. */
type Ask = 'requests' | 'limits' | 'both' | 'both-different';

export interface GeneratedRequest {
  readonly name: ResourceName;
  readonly ask: Ask;
  readonly variant: number;
}

/** The names a valid pod may ask for in its containers (hugepages would need cpu or memory beside them, left to the other half). */
const ACCEPTED_NAMES: readonly ResourceName[] = [
  ...RESOURCE_NAMES.slice(0, 6),
  'cpu',
  'memory',
  'ephemeral-storage',
  'kubernetes.io/foo',
  'example.kubernetes.io/foo',
  'deviceclass.resource.kubernetes.io/gpu-class',
];

/** Requests a valid pod makes: accepted names, by limits alone or both equal (extended resources cannot overcommit). */
const acceptedRequest: fc.Arbitrary<GeneratedRequest> = fc.record({
  // Extended names twice as often: they are what the plugin acts on.
  name: fc.oneof(
    { weight: 2, arbitrary: fc.constantFrom(...RESOURCE_NAMES.slice(0, 6)) },
    { weight: 1, arbitrary: fc.constantFrom(...ACCEPTED_NAMES) },
  ),
  ask: fc.constantFrom<Ask>('limits', 'both'),
  variant: fc.nat({ max: 2 }),
});

/** Any request: every name, every way, most of them refused by validation whatever admission did. */
const anyRequest: fc.Arbitrary<GeneratedRequest> = fc.record({
  name: fc.constantFrom(...RESOURCE_NAMES),
  ask: fc.constantFrom<Ask>('limits', 'both', 'requests', 'both-different'),
  variant: fc.nat({ max: 2 }),
});

export interface GeneratedToleration {
  readonly key?: string;
  readonly operator?: string;
  readonly value?: string;
  readonly effect?: string;
  readonly tolerationSeconds?: number;
}

/** Tolerations that match an added one exactly, or in all but one field, or not at all. */
const toleration: fc.Arbitrary<GeneratedToleration> = fc
  .record({
    key: fc.constantFrom<string | undefined>(...RESOURCE_NAMES.slice(0, 6), 'cpu', 'example.com/other', undefined),
    shape: fc.constantFrom(
      'exact',
      'exact',
      'exact-with-seconds',
      'explicit-empty-value',
      'no-effect',
      'no-operator',
      'equal-value',
      'no-execute',
      'no-execute-with-seconds',
      'prefer-no-schedule',
    ),
  })
  .map(({ key, shape }): GeneratedToleration => {
    const keyed = key === undefined ? {} : { key };
    switch (shape) {
      case 'exact':
        return { ...keyed, operator: 'Exists', effect: 'NoSchedule' };
      case 'exact-with-seconds':
        // Invalid as written (tolerationSeconds needs NoExecute); upstream's replacement drops it.
        return { ...keyed, operator: 'Exists', effect: 'NoSchedule', tolerationSeconds: 30 };
      case 'explicit-empty-value':
        return { ...keyed, operator: 'Exists', value: '', effect: 'NoSchedule' };
      case 'no-effect':
        return { ...keyed, operator: 'Exists' };
      case 'no-operator':
        return { ...keyed, value: '', effect: 'NoSchedule' };
      case 'equal-value':
        return { ...keyed, operator: 'Equal', value: 'x', effect: 'NoSchedule' };
      case 'no-execute':
        return { ...keyed, operator: 'Exists', effect: 'NoExecute' };
      case 'no-execute-with-seconds':
        return { ...keyed, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 60 };
      default:
        return { ...keyed, operator: 'Exists', effect: 'PreferNoSchedule' };
    }
  });

/** What the UPDATE of a stored pod changes. */
export type UpdateKind =
  /** A label only: the plugin runs on UPDATE and must change nothing. */
  | 'relabel'
  /** The tolerations for the requested extended resources left out: upstream appends them again. */
  | 'drop-added'
  /** tolerationSeconds written onto them: upstream's replacement drops it again. */
  | 'seconds-on-added'
  /** One generated toleration appended. */
  | 'append';

export interface ExtendedResourceCase {
  readonly containers: readonly (readonly GeneratedRequest[])[];
  readonly initContainers: readonly (readonly GeneratedRequest[])[];
  readonly initSidecar: boolean;
  /** An ephemeral container at create: validation refuses it on every API server. */
  readonly ephemeral: readonly GeneratedRequest[] | undefined;
  /** Pod-level resources (spec.resources): the plugin never reads them. */
  readonly podLevel: readonly GeneratedRequest[] | undefined;
  readonly tolerations: readonly GeneratedToleration[] | undefined;
  /** The namespace's tolerationsWhitelist: which extended resource tolerations it admits, if set. */
  readonly whitelist: 'gpu-only' | 'any-no-schedule' | undefined;
  readonly update: { readonly kind: UpdateKind; readonly appended: GeneratedToleration };
}

/** Absent `1 - 1/rarity` of the time. */
function sometimes<T>(rarity: number, arbitrary: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: rarity - 1, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary });
}

function caseOf(request: fc.Arbitrary<GeneratedRequest>, valid: boolean): fc.Arbitrary<ExtendedResourceCase> {
  const requests = fc.array(request, { maxLength: 3 });
  return fc.record({
    containers: fc.array(requests, { minLength: 1, maxLength: 3 }),
    initContainers: fc.array(requests, { maxLength: 2 }),
    initSidecar: fc.boolean(),
    // An ephemeral container at create is refused by validation: only among the invalid cases.
    ephemeral: valid ? fc.constant(undefined) : sometimes(4, requests),
    // Pod-level cpu and memory above what any case's containers ask, or anything when invalid.
    podLevel: sometimes(
      6,
      valid
        ? fc.constant<GeneratedRequest[]>([
            { name: 'cpu', ask: 'both', variant: 3 },
            { name: 'memory', ask: 'both', variant: 3 },
          ])
        : requests,
    ),
    tolerations: sometimes(2, fc.array(toleration, { maxLength: 4 })),
    whitelist: sometimes(6, fc.constantFrom('gpu-only' as const, 'any-no-schedule' as const)),
    update: fc.record({
      kind: fc.constantFrom<UpdateKind>('relabel', 'drop-added', 'seconds-on-added', 'append'),
      appended: toleration,
    }),
  });
}

/** Four cases in five ask only for what validation accepts, so that the stored tolerations are compared, on create and update. */
export const extendedResourceCase: fc.Arbitrary<ExtendedResourceCase> = fc.oneof(
  { weight: 4, arbitrary: caseOf(acceptedRequest, true) },
  { weight: 1, arbitrary: caseOf(anyRequest, false) },
);

/**
 * The whitelists: the default tolerations of every pod (DefaultTolerationSeconds' NoExecute pair,
 * PodTolerationRestriction's memory-pressure) and then either only `nvidia.com/gpu`'s toleration
 * or every NoSchedule toleration.
 */
const whitelists: Record<NonNullable<ExtendedResourceCase['whitelist']>, readonly object[]> = {
  'gpu-only': [
    { operator: 'Exists', effect: 'NoExecute' },
    { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
  ],
  'any-no-schedule': [
    { operator: 'Exists', effect: 'NoExecute' },
    { operator: 'Exists', effect: 'NoSchedule' },
  ],
};

export function extendedResourceNamespace(name: string, generated: ExtendedResourceCase): Manifest {
  const annotations =
    generated.whitelist === undefined ? {} : { [tolerationsWhitelistAnnotation]: JSON.stringify(whitelists[generated.whitelist]) };
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, annotations } };
}

function resourcesOf(asks: readonly GeneratedRequest[]): Record<string, Record<string, string>> | undefined {
  if (asks.length === 0) return undefined;
  const requested: Record<string, string> = {};
  const limited: Record<string, string> = {};
  for (const { name, ask, variant } of asks) {
    const quantity = quantityOf(name, variant);
    if (ask !== 'limits') requested[name] = quantity;
    if (ask === 'limits' || ask === 'both') limited[name] = quantity;
    if (ask === 'both-different') limited[name] = quantityOf(name, variant + 1);
  }
  return {
    ...(Object.keys(requested).length > 0 ? { requests: requested } : {}),
    ...(Object.keys(limited).length > 0 ? { limits: limited } : {}),
  };
}

function container(name: string, asks: readonly GeneratedRequest[]): Record<string, unknown> {
  const resources = resourcesOf(asks);
  return { name, image: 'registry.example/app:1', ...(resources === undefined ? {} : { resources }) };
}

/** The Pod of a case, named `pod` in its own namespace. */
export function extendedResourcePod(namespace: string, generated: ExtendedResourceCase): Manifest {
  const podLevel = generated.podLevel === undefined ? undefined : resourcesOf(generated.podLevel);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'pod', namespace },
    spec: {
      containers: generated.containers.map((asks, i) => container(`app-${i}`, asks)),
      ...(generated.initContainers.length === 0
        ? {}
        : {
            initContainers: generated.initContainers.map((asks, i) => ({
              ...container(`init-${i}`, asks),
              ...(generated.initSidecar ? { restartPolicy: 'Always' } : {}),
            })),
          }),
      ...(generated.ephemeral === undefined
        ? {}
        : { ephemeralContainers: [{ ...container('debug', generated.ephemeral), targetContainerName: 'app-0' }] }),
      ...(podLevel === undefined ? {} : { resources: podLevel }),
      ...(generated.tolerations === undefined ? {} : { tolerations: generated.tolerations }),
    },
  };
}

/** The names the pod requests that the in-tree plugin calls extended, by the test's own list (not tolerator's code). */
const EXTENDED_IN_POOL = new Set<string>(RESOURCE_NAMES.slice(0, 6));

/**
 * The stored pod as the case's UPDATE sends it back. The tolerations the plugin added are
 * recognised by their shape and the requested extended names (from the test's own list, not
 * tolerator's code).
 */
export function updatedPod(stored: Manifest, generated: ExtendedResourceCase): Manifest {
  const spec = stored.spec as { tolerations?: GeneratedToleration[] };
  const requested = new Set<string>(
    [...generated.containers, ...generated.initContainers].flat().flatMap(({ name }) => (EXTENDED_IN_POOL.has(name) ? [name] : [])),
  );
  const isAdded = (t: GeneratedToleration): boolean =>
    t.key !== undefined && requested.has(t.key) && t.operator === 'Exists' && t.effect === 'NoSchedule' && (t.value ?? '') === '';
  const tolerations = spec.tolerations ?? [];
  let next: GeneratedToleration[];
  switch (generated.update.kind) {
    case 'relabel':
      next = tolerations;
      break;
    case 'drop-added':
      next = tolerations.filter((t) => !isAdded(t));
      break;
    case 'seconds-on-added':
      next = tolerations.map((t) => (isAdded(t) ? { ...t, tolerationSeconds: 15 } : t));
      break;
    default:
      next = [...tolerations, generated.update.appended];
  }
  const metadata = stored.metadata as { labels?: Record<string, string> };
  return {
    ...stored,
    metadata: { ...stored.metadata, labels: { ...metadata.labels, updated: 'yes' } },
    spec: { ...spec, tolerations: next },
  };
}
