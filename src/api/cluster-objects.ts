/**
 * The part of a Namespace and of a Node that tolerator reads, cut out of the object the API server
 * sends, so that a cache of every Namespace and Node holds that part and nothing else. A real
 * Node is about 19 KB of JSON (`status.images`, `managedFields`, conditions, addresses, the
 * annotations of its kubelet and CSI drivers); what any decision reads of it is a few hundred
 * bytes. The informers (src/kube/informers.ts) apply these to every object as it arrives, listed
 * or watched, and so do the cluster-state file and `tolerator audit`, so that every command decides
 * on the same fields the server does.
 *
 * Namespace: what Kubernetes admission CEL gives a policy as `namespaceObject`
 * (`CreateNamespaceObject` in staging/src/k8s.io/apiserver/pkg/admission/plugin/cel/filter.go):
 * ObjectMeta's name, generateName, namespace, uid, resourceVersion, generation,
 * creationTimestamp, deletionTimestamp, deletionGracePeriodSeconds, labels, annotations and
 * finalizers, with spec and status; without managedFields and ownerReferences, which CEL never
 * sees either. The plugins read less (labels, and the PodNodeSelector and PodTolerationRestriction
 * annotations), and a policy may read any of the rest. `apiVersion` and `kind` stay as tolerator
 * has always given them to CEL.
 *
 * Node: metadata name, uid (a mirror pod's owner reference is checked against it), labels (node
 * affinity, node selectors, the tenancy policies' node label) and resourceVersion (the informer's
 * place in the watch), and spec.taints and spec.unschedulable (kube-scheduler's filters). Nothing
 * tolerator decides reads a Node's annotations or status, and no CEL expression sees a Node.
 *
 * Fields are shared with the object they were cut from, not copied: once the whole object is
 * dropped, only the kept parts stay reachable.
 */
import { isJsonObject, type JsonObject, type Namespace, type Node, type RuntimeClass, type Toleration } from './types.js';

/** ObjectMeta fields of a Namespace that admission CEL's `namespaceObject` carries, in its order. */
const namespaceMetadataFields = [
  'name',
  'generateName',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'finalizers',
] as const;

const nodeMetadataFields = ['name', 'uid', 'resourceVersion', 'labels'] as const;

const nodeSpecFields = ['taints', 'unschedulable'] as const;

/** `source`'s fields named in `fields`, those present (absent stays absent, null stays null). */
function pick(source: JsonObject, fields: readonly string[]): JsonObject {
  const picked: JsonObject = {};
  for (const field of fields) {
    if (Object.hasOwn(source, field) && source[field] !== undefined) picked[field] = source[field];
  }
  return picked;
}

/** `apiVersion` and `kind`, when they are strings. */
function typeMeta(object: JsonObject): JsonObject {
  return pick(object, ['apiVersion', 'kind']);
}

/** The object's metadata when it names the object (a non-empty string name), else undefined. */
function namedMetadata(object: unknown): JsonObject | undefined {
  if (!isJsonObject(object) || !isJsonObject(object.metadata)) return undefined;
  const name = object.metadata.name;
  return typeof name === 'string' && name !== '' ? object.metadata : undefined;
}

/** The Namespace as tolerator keeps it (see the module comment); undefined for an object without a name. */
export function namespaceAsRead(object: unknown): Namespace | undefined {
  const metadata = namedMetadata(object);
  if (metadata === undefined || !isJsonObject(object)) return undefined;
  return {
    ...typeMeta(object),
    metadata: pick(metadata, namespaceMetadataFields) as Namespace['metadata'],
    ...pick(object, ['spec', 'status']),
  };
}

/** The Node as tolerator keeps it (see the module comment); undefined for an object without a name. */
export function nodeAsRead(object: unknown): Node | undefined {
  const metadata = namedMetadata(object);
  if (metadata === undefined || !isJsonObject(object)) return undefined;
  const spec = isJsonObject(object.spec) ? pick(object.spec, nodeSpecFields) : undefined;
  return {
    ...typeMeta(object),
    metadata: pick(metadata, nodeMetadataFields) as Node['metadata'],
    ...(spec === undefined ? {} : { spec }),
  };
}

/**
 * The RuntimeClass as tolerator keeps it: name, resourceVersion and `scheduling` (its nodeSelector
 * and tolerations, what the RuntimeClass admission plugin merges into a pod); `handler` and
 * `overhead` are not read. A part of the wrong JSON type is dropped rather than trusted (a
 * `--cluster-state` file is written by hand). Undefined for an object without a name.
 */
export function runtimeClassAsRead(object: unknown): RuntimeClass | undefined {
  const metadata = namedMetadata(object);
  if (metadata === undefined || !isJsonObject(object)) return undefined;
  const scheduling = isJsonObject(object.scheduling) ? object.scheduling : undefined;
  const nodeSelector =
    scheduling !== undefined &&
    isJsonObject(scheduling.nodeSelector) &&
    Object.values(scheduling.nodeSelector).every((v) => typeof v === 'string')
      ? (scheduling.nodeSelector as Record<string, string>)
      : undefined;
  const tolerations =
    scheduling !== undefined && Array.isArray(scheduling.tolerations) && scheduling.tolerations.every((t) => isJsonObject(t))
      ? (scheduling.tolerations as Toleration[])
      : undefined;
  return {
    ...typeMeta(object),
    metadata: pick(metadata, ['name', 'resourceVersion']) as RuntimeClass['metadata'],
    ...(nodeSelector === undefined && tolerations === undefined
      ? {}
      : { scheduling: { ...(nodeSelector === undefined ? {} : { nodeSelector }), ...(tolerations === undefined ? {} : { tolerations }) } }),
  };
}

/**
 * The large fields of each kind that the projections above drop, as paths of object keys: a list
 * can leave them out of each item's text as it is read (src/kube/list-items.ts), so that they are
 * never parsed. Only fields the projection drops in any case; the projection stays what decides.
 */
export const unreadFields: Readonly<Record<'namespaces' | 'nodes' | 'runtimeclasses', readonly (readonly string[])[]>> = {
  namespaces: [
    ['metadata', 'managedFields'],
    ['metadata', 'ownerReferences'],
  ],
  nodes: [['status'], ['metadata', 'managedFields'], ['metadata', 'annotations']],
  runtimeclasses: [['metadata', 'managedFields']],
};
