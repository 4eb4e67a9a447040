/**
 * ExtendedResourceToleration, the kube-apiserver admission plugin (off by default upstream): a pod
 * whose containers or init containers request an extended resource (`nvidia.com/gpu`) gets the
 * toleration `{key: <resource>, operator: Exists, effect: NoSchedule}` for each, so that nodes
 * tainted with the resource's name (the usual way to keep other pods off expensive devices) take
 * the pods that ask for it and no others (kubernetes/kubernetes#55080).
 *
 * Upstream: plugin/pkg/admission/extendedresourcetoleration/admission.go with
 * pkg/apis/core/helper (IsExtendedResourceName, IsNativeResource, AddOrUpdateTolerationInPod),
 * identical at v1.35.8, v1.36.3 and v1.37.2. What it reads and what it does not:
 * - `resources.requests` of `containers` and `initContainers`, nothing else: not ephemeral
 *   containers, not the pod-level `spec.resources` (whose validation takes no extended resource
 *   anyway). The API server has defaulted requests from limits before any admission (v1
 *   SetDefaults_Pod: a limit without a request becomes the request), so the keys of `limits` are
 *   read too: the same set on every review from the API server, and the same answer offline
 *   (`tolerator explain`, `test`), where nothing defaulted the pod.
 * - Extended: a name with a `/`, not in a `kubernetes.io/` domain (anywhere in the name, as
 *   IsNativeResource's strings.Contains), not starting `requests.`, and a qualified name once
 *   prefixed `requests.` (as a quota would name it). So the DRA-backed extended resources of
 *   1.36+ (DRAExtendedResource) count when a DeviceClass names an ordinary extended resource
 *   (`example.com/gpu`), and the implicit `deviceclass.resource.kubernetes.io/<class>` names do
 *   not (native by their domain): upstream's plugin is unchanged across the three releases.
 * - The tolerations are added in the names' byte order (sets.String.List), each by
 *   AddOrUpdateTolerationInPod: an existing toleration with the same key, operator, value and
 *   effect is *replaced in place* by the new one, every such entry (its Semantic.DeepEqual
 *   compares a *Toleration with a Toleration, never equal, so the early "already there" return
 *   is never taken); only when none matched is the toleration appended. A replacement differs
 *   from the entry only by dropping its `tolerationSeconds` (which validation refuses with
 *   NoSchedule anyway, so upstream turns such a pod from refused to stored), and duplicates stay.
 * - CREATE and UPDATE of pods proper, no subresource.
 */
import type { JsonObject, Pod, Toleration } from '../api/types.js';
import { isJsonObject } from '../api/types.js';
import { tolerationsOf, withTolerations } from '../tolerations/pod-tolerations.js';
import { isValidQualifiedName } from '../validation/name-validation.js';
import type { AdmissionAttributes, MutatingPlugin, MutationOutcome, PluginContext } from './plugin.js';
import { isPodCreateOrUpdate } from './plugin.js';

/** core.ResourceDefaultNamespacePrefix. */
const nativeDomain = 'kubernetes.io/';
/** core.DefaultResourceRequestsPrefix: how a ResourceQuota names a resource's requests. */
const requestsPrefix = 'requests.';

/** helper.IsNativeResource: no `/` (implicitly kubernetes.io), or `kubernetes.io/` anywhere in it. */
export function isNativeResource(name: string): boolean {
  return !name.includes('/') || name.includes(nativeDomain);
}

/** helper.IsExtendedResourceName. */
export function isExtendedResourceName(name: string): boolean {
  if (isNativeResource(name) || name.startsWith(requestsPrefix)) {
    return false;
  }
  return isValidQualifiedName(`${requestsPrefix}${name}`);
}

/** The toleration upstream adds for an extended resource. */
export function extendedResourceToleration(resource: string): Toleration {
  return { key: resource, operator: 'Exists', effect: 'NoSchedule' };
}

/**
 * The extended resources the pod's containers and init containers request, in byte order
 * (sets.String.List; every extended name is ASCII, so JavaScript's UTF-16 order is the same).
 */
export function requestedExtendedResources(pod: Pod): string[] {
  const names = new Set<string>();
  const spec = pod.spec;
  for (const list of [spec?.containers, spec?.initContainers]) {
    if (!Array.isArray(list)) continue;
    for (const container of list as unknown[]) {
      if (!isJsonObject(container) || !isJsonObject(container.resources)) continue;
      for (const quantities of [container.resources.requests, container.resources.limits]) {
        if (!isJsonObject(quantities)) continue;
        for (const name of Object.keys(quantities)) {
          if (!names.has(name) && isExtendedResourceName(name)) names.add(name);
        }
      }
    }
  }
  return [...names].sort();
}

/** The fields a replacement writes (value being "" either way). */
const replacedFields = new Set(['key', 'operator', 'value', 'effect']);

/** core.Toleration.MatchToleration against `{key, Exists, "", NoSchedule}`: an absent string field is Go's "". */
function matchesExtendedResourceToleration(toleration: Toleration): string | undefined {
  const { key, operator, value, effect } = toleration as Record<string, unknown>;
  const matches = operator === 'Exists' && effect === 'NoSchedule' && (value === undefined || value === '') && typeof key === 'string';
  return matches ? key : undefined;
}

/**
 * AddOrUpdateTolerationInPod for each resource in order, in one pass: the entries that match a
 * resource's toleration (by key; operator, value and effect being the fixed ones) are replaced in
 * place, and each resource none matched gets its toleration appended, in order. The same as
 * upstream's loop (an appended toleration never matches a later resource: keys differ), but
 * linear in tolerations plus resources where upstream's is their product, which a hostile pod
 * with thousands of each would make seconds of work. An entry whose replacement would be equal
 * to it (no `tolerationSeconds`) keeps its identity, so no patch touches it.
 */
export function addExtendedResourceTolerations(tolerations: readonly Toleration[], resources: readonly string[]): readonly Toleration[] {
  if (resources.length === 0) {
    return tolerations;
  }
  const wanted = new Set(resources);
  const matched = new Set<string>();
  const result = tolerations.map((toleration) => {
    const key = isJsonObject(toleration) ? matchesExtendedResourceToleration(toleration) : undefined;
    if (key === undefined || !wanted.has(key)) return toleration;
    matched.add(key);
    // The replacement is the new toleration itself: the entry's tolerationSeconds (or anything
    // else it carried) is gone, as upstream replaces the whole struct. An explicit `value: ""` or
    // `tolerationSeconds: null` is what the API server stores as absent anyway.
    const unchanged = Object.keys(toleration).every((field) =>
      field === 'tolerationSeconds' ? toleration.tolerationSeconds === null : replacedFields.has(field),
    );
    return unchanged ? toleration : extendedResourceToleration(key);
  });
  for (const resource of resources) {
    if (!matched.has(resource)) result.push(extendedResourceToleration(resource));
  }
  return result;
}

/** The pod with a toleration for each extended resource it requests; the pod itself when it has them all. */
export function withExtendedResourceTolerations(pod: Pod): Pod {
  return withTolerations(pod, addExtendedResourceTolerations(tolerationsOf(pod), requestedExtendedResources(pod)));
}

export function createExtendedResourceToleration() {
  return {
    name: 'ExtendedResourceToleration',
    // Upstream: admission.NewHandler(admission.Create, admission.Update), pods proper only.
    handles: isPodCreateOrUpdate,
    admit: (object: JsonObject, attributes: AdmissionAttributes, _context: PluginContext): MutationOutcome => ({
      object: isPodCreateOrUpdate(attributes) ? withExtendedResourceTolerations(object) : object,
    }),
  } satisfies MutatingPlugin;
}
