/**
 * Pods whose mutation changes one part of them n times, for the tests of what tolerator's patch
 * costs the API server (test/admission/json-patch-diff.test.ts, with a model of the library the
 * API server applies it with, and test/admission/kubectl-patch.test.ts, with that library itself).
 *
 * - n copies of one toleration: PodTolerationRestriction's merge keeps one (upstream's
 *   MergeTolerations), so the diff drops n − 1 elements of one array;
 * - n empty tolerations `{}`: the same, with the smallest element there is (3 bytes of JSON);
 * - a tenant pod with n ORed required node selector terms: DedicatedNodes ANDs its group's
 *   requirement into each, one change in each of n arrays.
 */
import { parseAdmissionReview } from '../../src/admission/review.js';
import type { JsonPatchOperation } from '../../src/admission/json-patch-diff.js';
import { loadReviewFixture, pipelineFromArgs } from './harness.js';

type Json = Record<string, unknown>;

export interface PatchShape {
  readonly name: string;
  /** The object the API server sends, with its part of size n. */
  build(n: number): { readonly args: readonly string[]; readonly review: Json; readonly object: Json };
  /** What the mutated object's changed part must be (for the kubectl result). */
  expected(object: Json, n: number): Json;
}

const duplicated = { key: 'example.com/gpu', operator: 'Exists', effect: 'NoSchedule' };
const defaultTolerations = [
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
];
const memoryPressure = { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' };
const groupToleration = { key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' };
const groupRequirement = { key: 'dedicated', operator: 'In', values: ['gpu'] };

function fromFixture(name: string, spec: (spec: Json) => void): { args: readonly string[]; review: Json; object: Json } {
  const fixture = loadReviewFixture(name);
  const object = fixture.review.request.object as Json;
  spec(object.spec as Json);
  return { args: fixture.args, review: fixture.review, object };
}

function withSpec(object: Json, changes: Json): Json {
  return { ...object, spec: { ...(object.spec as Json), ...changes } };
}

function term(i: number): Json {
  return { matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: [`zone-${i}`] }] };
}

export const patchShapes: readonly PatchShape[] = [
  {
    name: 'n copies of one toleration',
    build: (n) =>
      fromFixture('burstable-create-no-tolerations', (spec) => {
        spec.tolerations = Array.from({ length: n }, () => ({ ...duplicated }));
      }),
    expected: (object) => withSpec(object, { tolerations: [duplicated, ...defaultTolerations, memoryPressure] }),
  },
  {
    name: 'n empty tolerations {}',
    build: (n) =>
      fromFixture('burstable-create-no-tolerations', (spec) => {
        spec.tolerations = Array.from({ length: n }, () => ({}));
      }),
    // `{}` has an empty key and every effect, so DefaultTolerationSeconds finds not-ready and
    // unreachable tolerated already and adds neither; the merge keeps one `{}` and adds memory-pressure.
    expected: (object) => withSpec(object, { tolerations: [{}, memoryPressure] }),
  },
  {
    name: 'a tenant pod with n ORed node selector terms',
    build: (n) =>
      fromFixture('tenant-pod-two-ored-terms-create', (spec) => {
        const affinity = spec.affinity as { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: Json } };
        affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms = Array.from({ length: n }, (_, i) =>
          term(i),
        );
      }),
    expected: (object, n) => {
      const spec = object.spec as Json;
      const affinity = spec.affinity as { nodeAffinity: Json };
      return withSpec(object, {
        tolerations: [...(spec.tolerations as unknown[]), groupToleration],
        affinity: {
          ...affinity,
          nodeAffinity: {
            ...affinity.nodeAffinity,
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: Array.from({ length: n }, (_, i) => ({
                matchExpressions: [...(term(i).matchExpressions as unknown[]), groupRequirement],
              })),
            },
          },
        },
      });
    },
  },
];

/** The mutating webhook's patch for the shape at size n, with the object it applies to. */
export async function mutatingPatch(shape: PatchShape, n: number): Promise<{ object: Json; patch: JsonPatchOperation[] }> {
  const { args, review, object } = shape.build(n);
  const parsed = parseAdmissionReview(JSON.stringify(review));
  const { decision } = await pipelineFromArgs(args).review(parsed, ['mutate']);
  if (!decision.allowed) throw new Error(`${shape.name} (n = ${n}) was denied`);
  return { object, patch: [...(decision.patch ?? [])] };
}
