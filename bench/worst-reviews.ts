/**
 * The most expensive reviews a client can make kube-apiserver send: adversarial pods of up to
 * 3 MiB (kube-apiserver's MaxRequestBodyBytes bounds what a client may send, so one object is at
 * most 3 MiB) and an UPDATE whose object and oldObject are both that large (about 6 MiB; made
 * of characters the API server escapes as six bytes, bench/escaped-reviews.ts, about 36 MiB, next
 * to the webhook's body limit of 37 MiB, src/admission/body-limits.ts). All in a tenant namespace
 * (`ml`, group `gpu` under the shipped policies), so that DedicatedNodes and its CEL policies run,
 * and each pod fits no known node, so that SchedulingWarnings, on the validating side, evaluates
 * every node.
 *
 * Two families beyond those. Shapes of many tiny items, where the cost is per item rather than per
 * byte: a million empty tolerations `{}`, a nodeSelector of about 330,000 keys, a million empty
 * nodeSelectorTerms, and a DaemonSet UPDATE carrying two such templates. And escaped shapes:
 * kube-apiserver's JSON encoder writes `<`, `>` and `&` as `\u003c`, `\u003e`, `\u0026` (six
 * bytes a character), so an object of 3 MiB as its author sent it reaches the webhook as up to
 * 18 MiB of JSON, an UPDATE as up to 36 MiB; those shapes are built of such strings, measured at
 * 3 MiB unescaped and sent escaped.
 *
 * Pure builders, no I/O beyond reading the two fixtures they start from: bench/worst.ts measures
 * them against the real server, and test/faults/one-review-starves-none.slow.test.ts sends them.
 */
import { readFileSync } from 'node:fs';
import { escapedUpdateReview } from './escaped-reviews.js';
import type { LoadRequest } from './protocol.js';

type Json = Record<string, unknown>;

/** kube-apiserver's MaxRequestBodyBytes: the largest object a client can send. */
export const maxObjectBytes = 3 * 1024 * 1024;

export interface WorstReview {
  readonly shape: string;
  /** Why the shape misses a target where it does: printed under the table when it misses. */
  readonly why?: string;
  readonly path: LoadRequest['path'];
  readonly operation: 'CREATE' | 'UPDATE';
  /** Builds the body: several MiB, so only when it is sent. */
  build(): string;
}

const fixtureDir = new URL('../test/fixtures/reviews/', import.meta.url);

function fixtureReview(file: string): Json {
  return (JSON.parse(readFileSync(new URL(file, fixtureDir), 'utf8')) as { review: Json }).review;
}

/** The tenant pod as the mutating webhook first sees it, and as the validating one sees it after mutation. */
function base(path: LoadRequest['path']): { review: Json; object: Json; spec: Json } {
  const review = fixtureReview(path === '/mutate' ? 'tenant-pod-create.json' : 'tenant-pod-after-mutation-create.json');
  const object = (review.request as Json).object as Json;
  return { review, object, spec: object.spec as Json };
}

/** The group's own toleration and requirement, which the validating side requires of a tenant pod. */
const groupToleration = { key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' };
const groupRequirement = { key: 'dedicated', operator: 'In', values: ['gpu'] };
/** A requirement no node satisfies: the pod fits nowhere, so every node is evaluated and explained. */
const nowhere = { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['zone-nowhere'] };

/**
 * As many items as fit: `count` items made by `item`, where `count` is the largest found that
 * keeps `measure()` (the object's JSON length with `set(items)` applied) within `limit`. The size
 * per item is re-estimated from each attempt (items grow with their index), a few times.
 */
function fill<T>(limit: number, item: (i: number) => T, set: (items: T[]) => void, measure: () => number): number {
  set([]);
  const empty = measure();
  const sample = Array.from({ length: 100 }, (_, i) => item(i));
  let perItem = (JSON.stringify(sample).length - 2) / sample.length;
  let count = Math.floor((limit - empty) / perItem);
  let best = 0;
  for (let attempt = 0; attempt < 8; attempt++) {
    set(Array.from({ length: count }, (_, i) => item(i)));
    const size = measure();
    perItem = (size - empty) / Math.max(count, 1);
    if (size <= limit) {
      best = Math.max(best, count);
      // Within two items of the limit: close enough.
      if (limit - size < 2 * perItem) break;
    }
    count = Math.floor((limit - empty) / perItem) - 1;
  }
  set(Array.from({ length: best }, (_, i) => item(i)));
  return best;
}

function objectBytes(object: Json): () => number {
  return () => Buffer.byteLength(JSON.stringify(object));
}

/**
 * JSON as kube-apiserver writes it: Go's encoding/json (HTMLEscape) escapes `<`, `>` and `&` as
 * `\u003c`, `\u003e`, `\u0026`, so each such character costs six bytes on the wire.
 */
export function goJson(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&]/g, (c) => `\\u00${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** Characters that kube-apiserver escapes (six bytes each on the wire), for the escaped shapes. */
const escaped = '<>&';

/** `length` characters of `<>&` in turn. */
function escapedText(length: number): string {
  return escaped.repeat(Math.ceil(length / escaped.length)).slice(0, length);
}

interface Shape {
  readonly name: string;
  /** Grows the pod (its spec or metadata) up to maxObjectBytes; `validate` is true on the validating side. */
  grow(object: Json, spec: Json, validate: boolean): void;
  /** Sent as kube-apiserver writes it (goJson): its `<>&` escaped, six bytes each. */
  readonly escaped?: boolean;
  /** Why it misses a target where it does (WorstReview.why). */
  readonly why?: string;
}

/** What the shapes of a million small objects share. */
const millionObjects =
  'a million objects: JSON.parse alone takes most of the time and holds 56 MiB (an empty object is 48 bytes on a 64-bit heap, its slot in the array 8 more), which the review keeps while it reads them';
/** What the escaped shapes share. */
const escapedWhy =
  'up to six bytes on the wire for each byte of the object as sent: the text to decode and parse, and the body held while it is, are what the wire holds';

/** Tolerations on keys no policy owns (a tenant may add them), after the ones the pod already has. */
function growTolerations(item: (i: number) => Json): Shape['grow'] {
  return (object, spec) => {
    const own = (spec.tolerations as Json[] | undefined) ?? [];
    fill(maxObjectBytes, item, (items) => (spec.tolerations = [...own, ...items]), objectBytes(object));
  };
}

const shapes: readonly Shape[] = [
  {
    name: 'tolerations, one key, distinct values',
    grow: growTolerations((i) => ({ key: 'example.com/pool', operator: 'Equal', value: `v${i}`, effect: 'NoSchedule' })),
  },
  {
    name: 'tolerations, one key and value repeated',
    grow: growTolerations(() => ({ key: 'example.com/pool', operator: 'Equal', value: 'batch', effect: 'NoSchedule' })),
  },
  {
    name: 'tolerations, one key, distinct tolerationSeconds',
    grow: growTolerations((i) => ({ key: 'example.com/drain', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: i })),
  },
  {
    name: 'tolerations, distinct keys',
    grow: growTolerations((i) => ({ key: `example.com/k${i}`, operator: 'Exists', effect: 'NoSchedule' })),
  },
  {
    name: 'containers with resources',
    grow: (object, spec) => {
      fill(
        maxObjectBytes,
        (i) => ({
          name: `c${i}`,
          image: 'registry.k8s.io/pause:3.10',
          resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { cpu: '20m', memory: '32Mi' } },
        }),
        (items) => (spec.containers = items),
        objectBytes(object),
      );
    },
  },
  {
    name: 'required node affinity, one term, one expression, many values',
    grow: (object, spec, validate) => {
      const expression = { key: 'topology.kubernetes.io/zone', operator: 'In', values: [] as string[] };
      spec.affinity = {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [...(validate ? [groupRequirement] : []), expression] }],
          },
        },
      };
      fill(
        maxObjectBytes,
        (i) => `z${i}`,
        (items) => (expression.values = items),
        objectBytes(object),
      );
    },
  },
  {
    name: 'required node affinity, many terms × expressions × values',
    grow: (object, spec, validate) => {
      // 10 expressions of 5 values each per term, terms as many as fit, none matching. On the
      // validating side every term also holds the group's requirement (dedicated In [gpu]), which
      // every gpu node reaches: SchedulingWarnings' index visits every term for those nodes, its
      // worst case, which its budget bounds.
      const term = (i: number): Json => ({
        matchExpressions: [
          ...(validate ? [groupRequirement] : []),
          ...Array.from({ length: 10 }, (_, j) => ({
            key: j === 0 ? 'topology.kubernetes.io/zone' : `example.com/k${j}`,
            operator: j % 2 === 0 ? 'In' : 'NotIn',
            values: Array.from({ length: 5 }, (_, k) => `t${i}-${j}-${k}`),
          })),
        ],
      });
      const required = { nodeSelectorTerms: [] as Json[] };
      spec.affinity = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: required } };
      fill(maxObjectBytes, term, (items) => (required.nodeSelectorTerms = items), objectBytes(object));
    },
  },
  {
    name: 'long strings',
    grow: (object, spec, validate) => {
      // Four strings of about 3/4 MiB each where the plugins read them: a label (tenancy's CEL
      // reads labels), an annotation, a toleration's value and a nodeSelector value.
      const quarter = Math.floor((maxObjectBytes - Buffer.byteLength(JSON.stringify(object))) / 4) - 200;
      const metadata = object.metadata as Json;
      metadata.labels = { ...(metadata.labels as Json), 'example.com/long': 'l'.repeat(quarter) };
      metadata.annotations = { 'example.com/long': 'a'.repeat(quarter) };
      spec.tolerations = [
        ...((spec.tolerations as Json[] | undefined) ?? []),
        { key: 'example.com/long', operator: 'Equal', value: 'v'.repeat(quarter), effect: 'NoSchedule' },
      ];
      spec.nodeSelector = { 'topology.kubernetes.io/zone': 's'.repeat(quarter) };
      if (validate)
        spec.affinity = {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [groupRequirement, nowhere] }] },
          },
        };
    },
  },
  {
    name: 'deep nesting (managedFields, 500 levels)',
    grow: (object) => {
      // fieldsV1 is free-form JSON. The review body nests 7 levels before it (review, request,
      // object, metadata, managedFields, the entry, fieldsV1): chains of 500 levels stay within
      // the accepted 512, as many chains as fit.
      const chain = (i: number): Json => {
        let value: Json = { [`f:leaf-${i}`]: {} };
        for (let depth = 1; depth < 500; depth++) value = { 'f:x': value };
        return value;
      };
      const metadata = object.metadata as Json;
      const entry = { manager: 'bench', operation: 'Update', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: {} as Json };
      metadata.managedFields = [entry];
      fill(
        maxObjectBytes,
        chain,
        (items) => (entry.fieldsV1 = Object.fromEntries(items.map((value, i) => [`f:c${i}`, value]))),
        objectBytes(object),
      );
    },
  },
  {
    name: 'tolerations, a million empty {}',
    why: `${millionObjects}. On /mutate most of the rest is the patch: one remove for each of the 999,999 copies PodTolerationRestriction's merge drops, 46 MiB of JSON Patch (the patch diff's to bound, not the review's)`,
    // `{},` is three bytes: about a million tolerations in 3 MiB, each an object to parse, check
    // and merge, and (all alike) all but one redundant for PodTolerationRestriction's merge.
    grow: growTolerations(() => ({})),
  },
  {
    name: 'nodeSelector of 330,000 keys',
    why: 'V8 builds an object of 330,000 keys as a hash table while JSON.parse reads it (most of the time), and enumerates one by collecting all its keys first (about 0.3 µs a key): the shape check reads every value once, and SchedulingWarnings counts the keys once',
    // Upstream bounds neither the number of nodeSelector entries nor checks them before the
    // mutating webhooks: short distinct keys (base 36) with empty values, about 9 bytes each.
    grow: (object, spec) => {
      fill(
        maxObjectBytes,
        (i) => i.toString(36),
        (keys) => (spec.nodeSelector = Object.fromEntries(keys.map((key) => [key, '']))),
        objectBytes(object),
      );
    },
  },
  {
    name: 'required node affinity, a million empty nodeSelectorTerms',
    why: millionObjects,
    // An empty term matches no node (NewNodeSelector skips it); on the validating side the first
    // term requires the group and a zone no node has, so the pod fits nowhere.
    grow: (object, spec, validate) => {
      const first = validate ? [{ matchExpressions: [groupRequirement, nowhere] }] : [];
      const required = { nodeSelectorTerms: [] as Json[] };
      spec.affinity = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: required } };
      fill(
        maxObjectBytes,
        () => ({}),
        (items) => (required.nodeSelectorTerms = [...first, ...items]),
        objectBytes(object),
      );
    },
  },
  {
    name: 'tolerations, values of <>&',
    escaped: true,
    why: escapedWhy,
    grow: growTolerations((i) => ({ key: 'example.com/pool', operator: 'Equal', value: `${escapedText(60)}${i}`, effect: 'NoSchedule' })),
  },
  {
    name: 'nodeSelector, keys of <>&',
    escaped: true,
    why: escapedWhy,
    grow: (object, spec) => {
      fill(
        maxObjectBytes,
        (i) => `${escapedText(24)}${i.toString(36)}`,
        (keys) => (spec.nodeSelector = Object.fromEntries(keys.map((key) => [key, escapedText(12)]))),
        objectBytes(object),
      );
    },
  },
  {
    name: 'long strings of <>&',
    escaped: true,
    why: escapedWhy,
    grow: (object, spec, validate) => {
      // As "long strings", of characters the API server escapes: 3 MiB as sent, 18 MiB on the wire.
      const quarter = Math.floor((maxObjectBytes - Buffer.byteLength(JSON.stringify(object))) / 4) - 200;
      const metadata = object.metadata as Json;
      metadata.labels = { ...(metadata.labels as Json), 'example.com/long': escapedText(quarter) };
      metadata.annotations = { 'example.com/long': escapedText(quarter) };
      spec.tolerations = [
        ...((spec.tolerations as Json[] | undefined) ?? []),
        { key: 'example.com/long', operator: 'Equal', value: escapedText(quarter), effect: 'NoSchedule' },
      ];
      spec.nodeSelector = { 'topology.kubernetes.io/zone': escapedText(quarter) };
      if (validate)
        spec.affinity = {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [groupRequirement, nowhere] }] },
          },
        };
    },
  },
];

/** The validating side gets a pod that tolerates its group's taint and requires its group, as DedicatedNodes has made it, and fits no node. */
function makeUnschedulable(spec: Json): void {
  if (spec.affinity !== undefined) return;
  spec.affinity = {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [groupRequirement, nowhere] }] },
    },
  };
}

function review(path: LoadRequest['path'], shape: Shape): WorstReview {
  return {
    shape: shape.name,
    ...(shape.why === undefined ? {} : { why: shape.why }),
    path,
    operation: 'CREATE',
    build() {
      const { review: body, object, spec } = base(path);
      const validate = path === '/validate';
      if (validate) {
        const tolerations = (spec.tolerations as Json[] | undefined) ?? [];
        if (!tolerations.some((t) => t.key === groupToleration.key)) spec.tolerations = [...tolerations, groupToleration];
        makeUnschedulable(spec);
      }
      shape.grow(object, spec, validate);
      if (validate) makeUnschedulable(spec);
      return shape.escaped === true ? goJson(body) : JSON.stringify(body);
    },
  };
}

/**
 * A pod UPDATE whose object and oldObject are each about 3 MiB and differ in every element:
 * 3 MiB of tolerations with distinct keys, none shared between the two, on both webhooks. The
 * body is about 6 MiB.
 */
function update(path: LoadRequest['path']): WorstReview {
  return {
    shape: 'UPDATE, object and oldObject of 3 MiB differing everywhere',
    path,
    operation: 'UPDATE',
    build() {
      const { review: body, object, spec } = base(path);
      const request = body.request as Json;
      request.operation = 'UPDATE';
      request.name = 'trainer-1';
      (object.metadata as Json).name = 'trainer-1';
      if (path === '/validate') makeUnschedulable(spec);
      const old = structuredClone(object);
      const oldSpec = old.spec as Json;
      const own = (spec.tolerations as Json[] | undefined) ?? [];
      fill(
        maxObjectBytes,
        (i) => ({ key: `example.com/new-${i}`, operator: 'Exists', effect: 'NoSchedule' }),
        (items) => (spec.tolerations = [...own, ...items]),
        objectBytes(object),
      );
      fill(
        maxObjectBytes,
        (i) => ({ key: `example.com/old-${i}`, operator: 'Exists', effect: 'NoSchedule' }),
        (items) => (oldSpec.tolerations = [...own, ...items]),
        objectBytes(old),
      );
      request.oldObject = old;
      return JSON.stringify(body);
    },
  };
}

/**
 * A DaemonSet UPDATE in the tenant namespace whose template changed: object and oldObject each
 * about 3 MiB as sent (escaped: up to six times that on the wire), their templates grown by `grow`
 * alike and then made to differ in the last item only, so that telling them apart reads both
 * whole. On the validating side the template is as DedicatedNodes leaves it (the group's
 * toleration and requirement) and fits no node.
 */
function daemonSetUpdate(
  path: LoadRequest['path'],
  shape: string,
  why: string,
  grow: (spec: Json, validate: boolean, measure: () => number) => void,
  differ: (spec: Json) => void,
  escapedStrings = false,
): WorstReview {
  return {
    shape,
    why,
    path,
    operation: 'UPDATE',
    build() {
      const body = fixtureReview('tenant-daemonset-template-create.json');
      const request = body.request as Json;
      request.operation = 'UPDATE';
      request.options = { kind: 'UpdateOptions', apiVersion: 'meta.k8s.io/v1' };
      const object = request.object as Json;
      (object.metadata as Json).generation = 2;
      const spec = ((object.spec as Json).template as Json).spec as Json;
      const validate = path === '/validate';
      if (validate) {
        spec.tolerations = [groupToleration];
        makeUnschedulable(spec);
      }
      grow(spec, validate, objectBytes(object));
      const old = structuredClone(object);
      (old.metadata as Json).generation = 1;
      differ(((old.spec as Json).template as Json).spec as Json);
      request.oldObject = old;
      return escapedStrings ? goJson(body) : JSON.stringify(body);
    },
  };
}

/** Room left in each object for the old one's difference, a few bytes larger than what it replaces. */
const differenceRoom = 64;

function daemonSetUpdates(path: LoadRequest['path']): WorstReview[] {
  return [
    daemonSetUpdate(
      path,
      'DaemonSet UPDATE, two templates of a million empty nodeSelectorTerms',
      'two million objects to parse and hold (112 MiB), and the two templates compared element by element to learn whether the template changed',
      (spec, validate, measure) => {
        const first = validate ? [{ matchExpressions: [groupRequirement, nowhere] }] : [];
        const required = { nodeSelectorTerms: [] as Json[] };
        spec.affinity = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: required } };
        fill(
          maxObjectBytes - differenceRoom,
          () => ({}),
          (items) => (required.nodeSelectorTerms = [...first, ...items]),
          measure,
        );
      },
      (spec) => {
        const affinity = (spec.affinity as Json).nodeAffinity as Json;
        const terms = (affinity.requiredDuringSchedulingIgnoredDuringExecution as Json).nodeSelectorTerms as Json[];
        terms[terms.length - 1] = { matchFields: [] };
      },
    ),
    daemonSetUpdate(
      path,
      'DaemonSet UPDATE, two templates of nodeSelectors with keys of <>&',
      `${escapedWhy}: two objects of 3 MiB as sent, about 30 MiB on the wire`,
      (spec, _validate, measure) => {
        fill(
          maxObjectBytes - differenceRoom,
          (i) => `${escapedText(24)}${i.toString(36)}`,
          (keys) => (spec.nodeSelector = Object.fromEntries(keys.map((key) => [key, escapedText(12)]))),
          measure,
        );
      },
      (spec) => {
        const selector = spec.nodeSelector as Record<string, string>;
        const last = Object.keys(selector).at(-1) ?? '';
        selector[last] = escapedText(11);
      },
      true,
    ),
  ];
}

/** Every shape on both webhooks, then the UPDATEs, then the largest review the API server can send (bench/escaped-reviews.ts). */
export function worstReviews(): WorstReview[] {
  return [
    ...shapes.flatMap((shape) => [review('/mutate', shape), review('/validate', shape)]),
    update('/mutate'),
    update('/validate'),
    escapedUpdateReview(),
    ...daemonSetUpdates('/mutate'),
    ...daemonSetUpdates('/validate'),
  ];
}
