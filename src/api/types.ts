/**
 * The subset of the Kubernetes core/v1 API that tolerator reads and writes, as JSON.
 *
 * Objects arrive from kube-apiserver already decoded and defaulted, so these types describe the
 * wire form. Every field is optional because a webhook must answer any body it is sent; the
 * admission layer checks the JSON types of the fields read here before the pure code sees them
 * (see src/admission/object-shape.ts), so the pure modules can trust them.
 */

/** A JSON object as it arrives on the wire. */
export type JsonObject = { [key: string]: unknown };

/** A JSON object: not null, not an array. The one test of it, for every reader of untyped JSON. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export type TaintEffect = 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
export type TolerationOperator = 'Exists' | 'Equal' | 'Lt' | 'Gt';

/**
 * core/v1 Toleration. `operator` and `effect` stay plain strings: an unknown value must be
 * carried, compared and reported exactly as it was sent, never narrowed away.
 * `tolerationSeconds` is an int64 pointer upstream: absent and null both mean "unset", and 0 is a value.
 */
export interface Toleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
  tolerationSeconds?: number | null;
}

/** core/v1 Taint. */
export interface Taint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}

export interface OwnerReference {
  apiVersion?: string;
  kind?: string;
  name?: string;
  uid?: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  [key: string]: unknown;
}

/** Resource quantities as the API serialises them: strings (`"500m"`, `"1Gi"`), or bare numbers. */
export type ResourceList = Record<string, string | number>;

export interface ResourceRequirements {
  requests?: ResourceList;
  limits?: ResourceList;
  [key: string]: unknown;
}

export interface Container {
  name?: string;
  resources?: ResourceRequirements;
  [key: string]: unknown;
}

export interface NodeSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

export interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}

export interface NodeSelector {
  nodeSelectorTerms: NodeSelectorTerm[];
}

export interface NodeAffinity {
  requiredDuringSchedulingIgnoredDuringExecution?: NodeSelector;
  preferredDuringSchedulingIgnoredDuringExecution?: { weight: number; preference: NodeSelectorTerm }[];
}

export interface Affinity {
  nodeAffinity?: NodeAffinity;
  [key: string]: unknown;
}

export interface PodSpec {
  containers?: Container[];
  initContainers?: Container[];
  ephemeralContainers?: Container[];
  tolerations?: Toleration[] | null;
  hostNetwork?: boolean;
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  affinity?: Affinity;
  /** The RuntimeClass (node.k8s.io/v1) whose scheduling the RuntimeClass admission plugin merged in on CREATE. */
  runtimeClassName?: string | null;
  /** Pod-level resources (PodLevelResources, beta and on by default since 1.34). */
  resources?: ResourceRequirements;
  [key: string]: unknown;
}

export interface PodStatus {
  qosClass?: string;
  [key: string]: unknown;
}

export interface Pod {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec?: PodSpec;
  status?: PodStatus;
  [key: string]: unknown;
}

/** A RuntimeClass (node.k8s.io/v1) as tolerator reads it (src/api/cluster-objects.ts): its name and `scheduling`. */
export interface RuntimeClass {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: { readonly name: string; readonly resourceVersion?: string };
  readonly scheduling?: {
    readonly nodeSelector?: Readonly<Record<string, string>>;
    readonly tolerations?: readonly Toleration[];
  };
}

export interface PodTemplateSpec {
  metadata?: ObjectMeta;
  spec?: PodSpec;
}

export interface Namespace {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta & { name: string };
  [key: string]: unknown;
}

export interface Node {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta & { name: string };
  spec?: { taints?: Taint[]; unschedulable?: boolean; [key: string]: unknown };
  [key: string]: unknown;
}

export type QOSClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

/** Well-known taint keys (core/v1 well_known_taints.go). */
export const TaintKey = {
  NodeNotReady: 'node.kubernetes.io/not-ready',
  NodeUnreachable: 'node.kubernetes.io/unreachable',
  NodeUnschedulable: 'node.kubernetes.io/unschedulable',
  NodeMemoryPressure: 'node.kubernetes.io/memory-pressure',
  NodeDiskPressure: 'node.kubernetes.io/disk-pressure',
  NodeNetworkUnavailable: 'node.kubernetes.io/network-unavailable',
  NodePIDPressure: 'node.kubernetes.io/pid-pressure',
  NodeOutOfService: 'node.kubernetes.io/out-of-service',
} as const;

/** The annotation the kubelet sets on mirror pods of static pods; such pods are never mutated. */
export const MirrorPodAnnotation = 'kubernetes.io/config.mirror';

/**
 * Structural equality of two JSON values: what Go's reflect.DeepEqual says of the two objects
 * they decode to, for the comparisons the plugins make (has a template changed?). Numbers compare
 * with `===`, so -0 equals 0 as both decode to the integer 0 (util.isDeepStrictEqual, which it
 * replaces, tells them apart). A pod template may hold a million elements: this walk allocates
 * nothing for objects in fast mode (for…in uses V8's enumeration cache) and stops at the first
 * difference; isDeepStrictEqual listed every object's keys, twice, and took seconds (bench/RESULTS.md).
 * The recursion is bounded by the request's nesting limit (src/admission/review.ts).
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) {
    return true;
  }
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) {
    return false;
  }
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) {
      if (!jsonEqual(a[i], b[i])) return false;
    }
    return true;
  }
  if (Array.isArray(b)) {
    return false;
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  for (const key in left) {
    if (!Object.hasOwn(right, key) || !jsonEqual(left[key], right[key])) return false;
  }
  // Every key of `left` is in `right`: they differ only if `right` has one more.
  for (const key in right) {
    if (!Object.hasOwn(left, key)) return false;
  }
  return true;
}
