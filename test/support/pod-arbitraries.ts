/**
 * fast-check generators of pods and admission requests for the property tests: containers with
 * every mix of cpu/memory requests and limits (absent included), init containers, tolerations from
 * every operator (valid, misspelt, empty), empty keys and effects, tolerationSeconds negative, zero,
 * null or absent, owner references (a DaemonSet controller among them), hostNetwork, and
 * CREATE or UPDATE with an oldObject derived from the pod.
 */
import fc from 'fast-check';
import type { JsonObject, Toleration } from '../../src/api/types.js';
import { parseAdmissionReview, type ParsedReview } from '../../src/admission/review.js';

/** Every operator the API knows, the misspellings users send, and the empty one (= Equal). */
export const operators = ['Exists', 'Equal', 'Lt', 'Gt', '', 'exists', 'gt', 'In'] as const;
export const effects = ['NoSchedule', 'PreferNoSchedule', 'NoExecute', '', 'noexecute'] as const;
const keys = [
  '',
  'example.com/gpu',
  'dedicated',
  'node.kubernetes.io/not-ready',
  'node.kubernetes.io/unreachable',
  'node.kubernetes.io/memory-pressure',
  'node.kubernetes.io/unschedulable',
  'bad key!',
] as const;
const values = ['', 'true', 'gpu', '5', '-3', '0550', '9223372036854775808', 'x y'] as const;

/** A field that is absent as often as it is set, so "unset" and "empty" both occur. */
function optional<T>(arbitrary: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> {
  return fc.option(arbitrary, { nil: undefined, freq: 3 });
}

export const tolerationArbitrary: fc.Arbitrary<Toleration> = fc
  .record({
    key: optional(fc.constantFrom(...keys)),
    operator: optional(fc.constantFrom(...operators)),
    value: optional(fc.constantFrom(...values)),
    effect: optional(fc.constantFrom(...effects)),
    tolerationSeconds: fc.option(fc.oneof(fc.integer({ min: -1000, max: 100_000 }), fc.constant(null)), { nil: undefined, freq: 2 }),
  })
  .map((record) => {
    // Absent fields are left out of the JSON, as the API server's omitempty does.
    const toleration: Toleration = {};
    for (const [name, value] of Object.entries(record)) {
      if (value !== undefined) {
        (toleration as Record<string, unknown>)[name] = value;
      }
    }
    return toleration;
  });

const quantity = fc.constantFrom('0', '100m', '1', '250m', '128Mi', '1Gi', 2);
const resourceList = fc
  .record({ cpu: optional(quantity), memory: optional(quantity), 'ephemeral-storage': optional(quantity) })
  .map((list) => Object.fromEntries(Object.entries(list).filter(([, value]) => value !== undefined)));

const containerArbitrary = fc
  .record({
    name: fc.constantFrom('app', 'sidecar', 'init'),
    resources: optional(fc.record({ requests: optional(resourceList), limits: optional(resourceList) }, { requiredKeys: [] })),
  })
  .map(({ name, resources }) =>
    resources === undefined ? { name, image: `${name}:1` } : { name, image: `${name}:1`, resources: dropUndefined(resources) },
  );

const ownerReferenceArbitrary = fc.oneof(
  fc.constant({ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'agent', uid: 'd-1', controller: true }),
  fc.constant({ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'agent', uid: 'd-2', controller: false }),
  fc.constant({ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-1', uid: 'r-1', controller: true }),
  fc.constant({ apiVersion: 'extensions/v1beta1', kind: 'DaemonSet', name: 'old', uid: 'd-3', controller: true }),
);

function dropUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as Partial<T>;
}

/** A pod as the API server sends it on CREATE (defaulted, but with any tolerations a client chose). */
export const podArbitrary: fc.Arbitrary<JsonObject> = fc
  .record({
    containers: fc.array(containerArbitrary, { minLength: 1, maxLength: 3 }),
    initContainers: optional(fc.array(containerArbitrary, { maxLength: 2 })),
    tolerations: fc.oneof(
      { weight: 1, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.constant(null) },
      { weight: 6, arbitrary: fc.array(tolerationArbitrary, { maxLength: 6 }) },
    ),
    ownerReferences: optional(fc.array(ownerReferenceArbitrary, { minLength: 1, maxLength: 2 })),
    hostNetwork: optional(fc.boolean()),
    qosClass: fc.option(fc.constantFrom('BestEffort', 'Burstable', 'Guaranteed'), { nil: undefined, freq: 8 }),
  })
  .map(({ containers, initContainers, tolerations, ownerReferences, hostNetwork, qosClass }) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: dropUndefined({ name: 'app', namespace: 'shop', labels: { app: 'web' }, ownerReferences }),
    spec: dropUndefined({ containers, initContainers, tolerations, hostNetwork, restartPolicy: 'Always' }),
    status: qosClass === undefined ? {} : { qosClass },
  }));

export type Operation = 'CREATE' | 'UPDATE';

export interface GeneratedRequest {
  readonly operation: Operation;
  readonly object: JsonObject;
  readonly oldObject: JsonObject | undefined;
}

/**
 * CREATE of a pod, or UPDATE where the old pod held a prefix of the new pod's tolerations (what
 * a client appending tolerations sends) — the new list keeps every old entry, as the API server
 * requires of an update.
 */
export const requestArbitrary: fc.Arbitrary<GeneratedRequest> = fc
  .tuple(podArbitrary, fc.constantFrom<Operation>('CREATE', 'UPDATE'), fc.nat())
  .map(([object, operation, cut]) => {
    if (operation === 'CREATE') {
      return { operation, object, oldObject: undefined };
    }
    const spec = object.spec as { tolerations?: Toleration[] | null };
    const tolerations = spec.tolerations ?? [];
    const kept = tolerations.slice(0, cut % (tolerations.length + 1));
    const oldObject = structuredClone(object);
    (oldObject.spec as { tolerations?: Toleration[] }).tolerations = kept;
    return { operation, object, oldObject };
  });

/** The AdmissionReview the API server would send for a generated request, as wire text. */
export function reviewText(request: GeneratedRequest, namespace = 'shop', uid = 'prop-uid'): string {
  const object = structuredClone(request.object);
  (object.metadata as Record<string, unknown>).namespace = namespace;
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      namespace,
      name: 'app',
      operation: request.operation,
      object,
      oldObject: request.oldObject ?? null,
      dryRun: false,
    },
  });
}

export function parsedReview(request: GeneratedRequest, namespace = 'shop'): ParsedReview {
  return parseAdmissionReview(reviewText(request, namespace));
}
