/**
 * An admission request made up offline, and the `request` variable of admission CEL: one builder
 * for everything that judges an object no API server sent (`tolerator test`, `explain`,
 * `simulate --mutate`, the audit's stored pods) and for the CEL `request` DedicatedNodes and the
 * audit give a policy, so that a request made up here reads, field for field, as the API
 * server's would (staging/src/k8s.io/api/admission/v1/types.go, `AdmissionRequest`).
 *
 * Pure: the edge turns the wire form back into attributes with `parseAdmissionReview`, as it does
 * for a request from the API server.
 */
import { resourceKindOf } from '../api/resource-kinds.js';
import { isJsonObject, type JsonObject } from '../api/types.js';
import type { AdmissionAttributes, UserInfo } from './plugin.js';

/**
 * The requester of a request made up offline: no name, no groups, so a rule that trusts a group
 * never matches it by accident.
 */
export const nobody: UserInfo = { username: '', uid: '', groups: [], extra: {} };

/** What a request made up offline is about; everything else is what the API server would send for it. */
export interface OfflineRequest {
  readonly object: JsonObject;
  readonly oldObject?: JsonObject | undefined;
  readonly operation: 'CREATE' | 'UPDATE';
  readonly namespace: string;
  /** `dryRun=All` (`tolerator explain` answers for a request that changes nothing); false by default. */
  readonly dryRun?: boolean;
}

/**
 * The attributes of the request the API server would send for `object`: its kind from its
 * `apiVersion` and `kind`, the resource from src/api/resource-kinds.ts (for another kind, the
 * lower-case plural the API server's REST mapper guesses: `NetworkPolicy` → `networkpolicies`),
 * its name, no subresource, and `userInfo` (nobody unless a test case names the requester).
 */
export function offlineAttributes(request: OfflineRequest, userInfo: UserInfo = nobody): AdmissionAttributes {
  const { object } = request;
  const apiVersion = typeof object.apiVersion === 'string' ? object.apiVersion : 'v1';
  const kind = typeof object.kind === 'string' ? object.kind : '';
  const slash = apiVersion.indexOf('/');
  const group = slash === -1 ? '' : apiVersion.slice(0, slash);
  const version = slash === -1 ? apiVersion : apiVersion.slice(slash + 1);
  const metadata = isJsonObject(object.metadata) ? object.metadata : {};
  return {
    operation: request.operation,
    kind: { group, version, kind },
    resource: { group, version, resource: resourceKindOf(apiVersion, kind)?.resource ?? guessedResource(kind) },
    subResource: '',
    namespace: request.namespace,
    name: typeof metadata.name === 'string' ? metadata.name : '',
    object,
    oldObject: request.oldObject,
    dryRun: request.dryRun ?? false,
    userInfo,
  };
}

/** The plural resource name `meta.UnsafeGuessKindToResource` gives a kind tolerator does not list. */
function guessedResource(kind: string): string {
  if (kind === '') return '';
  const lower = kind.toLowerCase();
  if (lower.endsWith('y')) return `${lower.slice(0, -1)}ies`;
  if (lower.endsWith('s')) return `${lower}es`;
  return `${lower}s`;
}

/**
 * The AdmissionReview (admission.k8s.io/v1) the API server would send for `request`, in its wire
 * form, for the edge to read back with `parseAdmissionReview` like any other: so an object made
 * up offline has its JSON types checked as the server's are. `userInfo` may be a test case's
 * mapping as written; the parse checks it.
 */
export function offlineReview(request: OfflineRequest, uid: string, userInfo: UserInfo | JsonObject = nobody): JsonObject {
  const attributes = offlineAttributes(request);
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: attributes.kind,
      resource: attributes.resource,
      subResource: attributes.subResource,
      namespace: attributes.namespace,
      name: attributes.name,
      operation: attributes.operation,
      object: attributes.object,
      oldObject: attributes.oldObject ?? null,
      dryRun: attributes.dryRun,
      userInfo,
    },
  };
}

/**
 * The `request` variable of Kubernetes admission CEL: the AdmissionRequest without its objects
 * (those are `object` and `oldObject`), userInfo included. Requests made up offline carry nobody
 * as their user, so a rule that trusts a group never matches them by accident.
 *
 * A workload's template is judged as its pods will be, and those are requested by a controller
 * (the ReplicaSet, DaemonSet, Job … controller's service account, or kube-controller-manager's
 * own identity), never by whoever wrote the workload. So for a template (`kind` other than `Pod`)
 * `request.userInfo` is nobody's too: an exemption by the writer's groups (the prefix policy
 * exempts platform-admins) would otherwise let a template through that its controller's objects
 * are then refused for, and leave a DaemonSet template without the pair, whose pods are stranded
 * on nodes outside the group (as kube-controller-manager showed).
 */
export function celRequest(attributes: AdmissionAttributes, kind: string): JsonObject {
  const userInfo = kind === 'Pod' ? (attributes.userInfo ?? nobody) : nobody;
  return {
    ...attributes.envelope,
    kind: { ...attributes.kind },
    resource: { ...attributes.resource },
    subResource: attributes.subResource,
    name: attributes.name,
    namespace: attributes.namespace,
    operation: attributes.operation,
    userInfo: { username: userInfo.username, uid: userInfo.uid, groups: [...userInfo.groups], extra: { ...userInfo.extra } },
    dryRun: attributes.dryRun,
  };
}
