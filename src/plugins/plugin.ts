/**
 * The contract every admission plugin implements. Plugins are pure: an admission request's
 * attributes and a context of cluster facts in, a decision out. No I/O, no clock, no globals;
 * feature gates and namespace or node facts arrive through `PluginContext`.
 */
import type { KubernetesVersion } from '../api/feature-gate-history.js';
import type { FeatureGates } from '../api/feature-gates.js';
import { MirrorPodAnnotation, type JsonObject, type Namespace, type Node } from '../api/types.js';
import type { PluginName } from './registry.js';
import type { RuntimeClass } from '../tenancy/runtime-classes.js';
import type { FieldError } from '../validation/field-errors.js';

export type Operation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

export interface GroupVersionKind {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
}

export interface GroupVersionResource {
  readonly group: string;
  readonly version: string;
  readonly resource: string;
}

/**
 * Who sent the request, as authentication.k8s.io/v1 UserInfo: written by the API server from the
 * caller's credentials, so unlike anything in the object a tenant cannot choose it.
 */
export interface UserInfo {
  readonly username: string;
  readonly uid: string;
  readonly groups: readonly string[];
  readonly extra: Readonly<Record<string, readonly string[]>>;
}

/** What admission.Attributes carries upstream: the request, independent of the wire format. */
export interface AdmissionAttributes {
  readonly operation: Operation;
  readonly kind: GroupVersionKind;
  readonly resource: GroupVersionResource;
  /** '' for the main resource, e.g. 'status' or 'binding' for subresources. */
  readonly subResource: string;
  readonly namespace: string;
  readonly name: string;
  /** The object being admitted (absent on DELETE). Plugins never modify it in place. */
  readonly object: JsonObject | undefined;
  /** The object before an UPDATE. */
  readonly oldObject: JsonObject | undefined;
  readonly dryRun: boolean;
  /** The requesting user; absent only for requests made up offline (`tolerator explain`, `test`). */
  readonly userInfo?: UserInfo;
  /**
   * The rest of the AdmissionRequest envelope as the API server sent it (uid, requestKind,
   * requestResource, requestSubResource, options), for the `request` variable of admission CEL.
   */
  readonly envelope?: Readonly<Record<string, unknown>>;
}

/** Facts about the cluster, read by the edge before the pure pipeline runs. */
export interface PluginContext {
  readonly gates: FeatureGates;
  /**
   * The Kubernetes version the API server reports (`/version`), for what changed between versions
   * without a gate; undefined offline or before it is read (then the oldest behaviour tolerator
   * follows: 1.35's).
   */
  readonly serverVersion?: KubernetesVersion | undefined;
  /** The request's Namespace object, when the cluster state knows it. */
  readonly namespace: Namespace | undefined;
  /**
   * Looks a Node up by name in the cluster state. The node that the object's `nodeName` names has
   * been read before the plugins run (from the API server when the cache lacked it), so for that
   * name undefined means "no such node" whenever `nodesKnown` is true.
   */
  readonly node: (name: string) => Node | undefined;
  /**
   * Whether the cluster state holds the cluster's nodes at all. False only without any cluster
   * state (offline, no `--cluster-state`): then an unknown node name proves nothing.
   */
  readonly nodesKnown: boolean;
  /** Every Node the cluster state holds. */
  readonly nodes: () => readonly Node[];
  /**
   * The RuntimeClass a Pod CREATE names in `spec.runtimeClassName`, read before the plugins run
   * when a validating plugin asks for it (`readsRuntimeClass`); undefined when there is none, the
   * cluster state does not hold it, or nobody asked.
   */
  readonly runtimeClass?: RuntimeClass | undefined;
}

/**
 * A denial is a value, never a thrown error (a thrown error means "could not decide").
 * src/admission/status.ts maps each to the AdmissionReview status the API server would write.
 */
export type Denial =
  /** Field validation failed: 422 Invalid with `details.causes`, as errors.NewInvalid builds it. */
  | {
      readonly reason: 'Invalid';
      readonly group: string;
      readonly kind: string;
      readonly name: string;
      /** The first maxFieldErrors field errors, in upstream's order (src/validation/field-errors.ts). */
      readonly errors: readonly FieldError[];
      /** How many more there were, not kept; absent when none. */
      readonly omittedErrors?: number;
    }
  /**
   * A policy forbids the request: 403 Forbidden. With `object`, the status is the one
   * errors.NewForbidden(resource, name, err) builds (`pods "web-0" is forbidden: <message>`, with
   * `details`); without it, `message` is the whole text (an upstream plain error, or tolerator's own).
   */
  | { readonly reason: 'Forbidden'; readonly message: string; readonly object?: ForbiddenObject };

/** The object errors.NewForbidden names: its group and resource (`pods`, `daemonsets` in `apps`) and its name ('' when not yet generated). */
export interface ForbiddenObject {
  readonly group: string;
  readonly resource: string;
  readonly name: string;
}

/** What every plugin may add beside its decision. */
export interface Findings {
  /** AdmissionReview `warnings`, shown to the client by kubectl. */
  readonly warnings?: readonly string[];
  /** AdmissionReview `auditAnnotations`; keys are prefixed with the webhook name by the API server. */
  readonly auditAnnotations?: Readonly<Record<string, string>>;
}

export type MutationOutcome =
  /** `object` is the (possibly) changed copy; the same reference as the input when nothing changed. */
  | (Findings & { readonly object: JsonObject; readonly denial?: undefined })
  | (Findings & { readonly denial: Denial; readonly object?: undefined });

export type ValidationOutcome = Findings & { readonly denial?: Denial };

/** A plugin's name: the names of the registry (src/plugins/registry.ts), the one list of plugins. */
export type { PluginName };

export interface MutatingPlugin {
  readonly name: PluginName;
  /** Whether the plugin acts on this request at all (kind, subresource, operation). */
  handles(attributes: AdmissionAttributes): boolean;
  /** Returns the mutated copy of `object` (the input object itself, unchanged, when nothing applies). */
  admit(object: JsonObject, attributes: AdmissionAttributes, context: PluginContext): MutationOutcome;
}

export interface ValidatingPlugin {
  readonly name: PluginName;
  handles(attributes: AdmissionAttributes): boolean;
  /**
   * Whether this plugin judges the node an object's `nodeName` names: the pipeline then reads that
   * Node (live, on a cache miss) before the plugins run, and a read that fails makes the review
   * undecidable rather than letting it through unjudged.
   */
  readsNamedNode?(attributes: AdmissionAttributes): boolean;
  /**
   * Whether this plugin explains a Pod CREATE by the RuntimeClass it names: the pipeline then reads
   * that RuntimeClass (PluginContext.runtimeClass) before the plugins run.
   */
  readsRuntimeClass?(attributes: AdmissionAttributes): boolean;
  validate(object: JsonObject, attributes: AdmissionAttributes, context: PluginContext): ValidationOutcome;
}

/** True for the core/v1 `pods` resource itself, not a subresource (upstream plugins' shouldIgnore). */
export function isPodRequest(attributes: AdmissionAttributes): boolean {
  return attributes.resource.group === '' && attributes.resource.resource === 'pods' && attributes.subResource === '';
}

/** The username prefix of a kubelet's credentials (the Node authorizer's `system:node:<name>`). */
const nodeUserPrefix = 'system:node:';
/** The group every kubelet's credentials carry (user.NodesGroup). */
const nodesGroup = 'system:nodes';

/**
 * A request from a node, as kube-apiserver decides it (NodeRestriction's and the Node
 * authorizer's NodeIdentity, pkg/auth/nodeidentifier): the username `system:node:<name>` *and* the
 * group `system:nodes`. The name alone is not enough: an identity named like a kubelet but outside
 * that group (a client certificate with no organisation, an impersonated or webhook-authenticated
 * user) is an ordinary user to the API server — NodeRestriction does not bind its pods to one
 * node, and RBAC, not the Node authorizer, decides what it may do.
 */
export function isNodeRequest(attributes: AdmissionAttributes): boolean {
  const userInfo = attributes.userInfo;
  return userInfo !== undefined && userInfo.username.startsWith(nodeUserPrefix) && userInfo.groups.includes(nodesGroup);
}

/**
 * A mirror pod: the API server's copy of a static pod, which a kubelet creates with the
 * `kubernetes.io/config.mirror` annotation. Only a request from a node counts (isNodeRequest): the
 * API server lets any user set that annotation (NodeRestriction checks it only for node users), so
 * a tenant's pod carrying it is judged like any other pod. (The kubelet never runs such a pod,
 * since it has no static pod behind it, but the pod would still occupy its node in the API and the
 * scheduler.) A node's own request is safe to leave alone because NodeRestriction allows a node
 * only mirror pods bound to itself.
 */
export function isMirrorPodRequest(attributes: AdmissionAttributes): boolean {
  if (!isPodRequest(attributes) || !isNodeRequest(attributes)) {
    return false;
  }
  const metadata = attributes.object?.metadata;
  const annotations = typeof metadata === 'object' && metadata !== null ? (metadata as { annotations?: unknown }).annotations : undefined;
  return typeof annotations === 'object' && annotations !== null && Object.hasOwn(annotations, MirrorPodAnnotation);
}

/**
 * The guard the toleration plugins share (upstream: admission.NewHandler(admission.Create,
 * admission.Update) plus shouldIgnore): pods proper, on CREATE and UPDATE.
 */
export function isPodCreateOrUpdate(attributes: AdmissionAttributes): boolean {
  return isPodRequest(attributes) && (attributes.operation === 'CREATE' || attributes.operation === 'UPDATE');
}
