/**
 * The pod spec of a Pod or of a workload's pod template, found by the kind's path
 * (src/api/resource-kinds.ts), and a template shown as the Pod its controller creates from it.
 * Every plugin and command that reads a workload's pods reads them here, so a template is judged
 * as one pod everywhere: the webhook's DedicatedNodes CEL `object`, `tolerator explain` and
 * `tolerator simulate`.
 *
 * The Pod a controller creates (kubernetes/kubernetes pkg/controller/controller_utils.go,
 * `GetPodFromTemplate`, called by the ReplicaSet, ReplicationController, DaemonSet, StatefulSet
 * and Job controllers): of the template's metadata only `labels`, `annotations` and `finalizers`
 * are copied (a name, namespace or owner written in the template is dropped); `generateName` is
 * `<controller name>-`; the one owner reference is the controller's (`metav1.NewControllerRef`:
 * apiVersion, kind, name, uid, `controller: true`, `blockOwnerDeletion: true`); the spec is the
 * template's. The namespace is the controller's own, since it creates the pod with
 * `Pods(namespace).Create` and the API server fills `metadata.namespace` from that path.
 *
 * What cannot be known from the workload alone is left at the nearest known value, and said here:
 * a Deployment's pods are owned by a ReplicaSet named `<name>-<pod-template-hash>` and a CronJob's
 * by a Job named `<name>-<scheduled minute>`, generated names tolerator cannot compute (the hash is
 * FNV-32a over Go's dump of the template), so the reference and the prefix carry the workload's
 * own name; a StatefulSet names its pods `<name>-<ordinal>` and the Job controller adds its
 * tracking finalizer and index labels, neither of which a toleration, affinity or tenancy rule reads.
 * The uid is the workload's when it has one (an object not yet stored has none).
 */
import type { ResourceKind } from './resource-kinds.js';
import { isJsonObject, type JsonObject } from './types.js';

/** The value at `path`, following own properties of JSON objects only; undefined when a step is absent or not an object. */
export function valueAt(root: unknown, path: readonly string[]): unknown {
  let value = root;
  for (const field of path) {
    // Own properties only: a tenant's `__proto__` or `constructor` key must not reach Object.prototype.
    value = isJsonObject(value) && Object.hasOwn(value, field) ? value[field] : undefined;
  }
  return value;
}

/** The JSON object at `path`, or undefined. */
export function objectAt(root: unknown, path: readonly string[]): JsonObject | undefined {
  const value = valueAt(root, path);
  return isJsonObject(value) ? value : undefined;
}

/** Path of the object that holds the pod's `metadata` and `spec`: `[]` for a Pod, `spec.template`, `template`, a CronJob's `spec.jobTemplate.spec.template`. */
export function templatePathOf(kind: ResourceKind): readonly string[] {
  return kind.podSpecPath.slice(0, -1);
}

/** A workload's pod template (a Pod is its own), when it has a pod spec object; what else is absent is the API server's to refuse. */
export interface PodTemplate {
  readonly template: JsonObject;
  readonly metadata: JsonObject | undefined;
  readonly spec: JsonObject;
}

export function podTemplateOf(object: unknown, kind: ResourceKind): PodTemplate | undefined {
  const template = objectAt(object, templatePathOf(kind));
  const spec = template === undefined ? undefined : objectAt(template, ['spec']);
  if (template === undefined || spec === undefined) {
    return undefined;
  }
  return { template, metadata: objectAt(template, ['metadata']), spec };
}

/** A copy of `object` with its pod spec replaced, copying only the objects on the path. */
export function withPodSpec(object: JsonObject, kind: ResourceKind, spec: JsonObject): JsonObject {
  return withValueAt(object, kind.podSpecPath, spec);
}

function withValueAt(object: JsonObject, path: readonly string[], value: JsonObject): JsonObject {
  const [field, ...rest] = path;
  if (field === undefined) {
    return value;
  }
  return { ...object, [field]: rest.length === 0 ? value : withValueAt(objectAt(object, [field]) ?? {}, rest, value) };
}

/**
 * The longest name a pod may have (a DNS-1123 subdomain, apimachinery's `DNS1123SubdomainMaxLength`).
 * `getPodsPrefix` keeps the dash only while `<name>-` still fits: a workload's name is already a
 * valid subdomain, so only the added character can break it.
 */
const podNameMaxLength = 253;

/**
 * The Pod `object`'s controller creates from its template, in `namespace` (the workload's: the
 * request's for a review; offline the manifest's, else `default`, as kubectl chooses). A Pod is
 * returned as it is, with `namespace` filled in when it has none. Undefined for a workload whose
 * template has no pod spec object.
 */
export function podFromTemplate(object: JsonObject, kind: ResourceKind, namespace: string): JsonObject | undefined {
  if (kind.kind === 'Pod') {
    const metadata = objectAt(object, ['metadata']);
    return typeof metadata?.namespace === 'string' ? object : { ...object, metadata: { ...metadata, namespace } };
  }
  const found = podTemplateOf(object, kind);
  if (found === undefined) {
    return undefined;
  }
  const workload = objectAt(object, ['metadata']);
  const name = typeof workload?.name === 'string' ? workload.name : '';
  const uid = typeof workload?.uid === 'string' ? workload.uid : '';
  const copied = found.metadata;
  const controller = kind.podController;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      ...(copied !== undefined && Object.hasOwn(copied, 'labels') ? { labels: copied.labels } : {}),
      ...(copied !== undefined && Object.hasOwn(copied, 'annotations') ? { annotations: copied.annotations } : {}),
      ...(copied !== undefined && Object.hasOwn(copied, 'finalizers') ? { finalizers: copied.finalizers } : {}),
      // A workload reviewed before the API server generates its name (it was sent with generateName) has none yet.
      ...(name === '' ? {} : { generateName: name.length + 1 > podNameMaxLength ? name : `${name}-` }),
      namespace,
      ...(controller === undefined ? {} : { ownerReferences: [{ ...controller, name, uid, controller: true, blockOwnerDeletion: true }] }),
    },
    spec: found.spec,
  };
}
