/**
 * The pod QoS class, as `pkg/apis/core/helper/qos/qos.go` computes it (`ComputePodQOS`,
 * `GetPodQOS`). PodTolerationRestriction adds the memory-pressure toleration to every pod whose
 * class is not BestEffort.
 *
 * Form implemented: the aggregating form of v1.35.8 and v1.36.3 (the same file at both tags): sum
 * the positive cpu and memory quantities over requests and over limits; a container whose limits
 * lack a positive cpu or memory rules out Guaranteed. v1.37.2 rewrote the file into a
 * per-container "shape" form, which gives the same class on every pod the API server accepts,
 * and added the gate `PodLevelResourcesFixKubeletQOSClass` (beta, on by default in 1.37; absent
 * before): with it on, a pod-level `resources` that names no cpu, memory or hugepages-* resource
 * (`resources: {}`) no longer decides alone, and the containers do (`IsPodLevelResourcesSet`).
 * With it off — every 1.35 and 1.36 server — any present `spec.resources` decides alone, and
 * `resources: {}` yields BestEffort whatever the containers ask. The gate is read from the
 * server as every other one (docs/architecture.md#feature-gates), so tolerator follows the
 * version the API server runs.
 *
 * A quantity that does not parse is treated as not set: the API server rejects such a pod before
 * any webhook sees it, so only a hand-made review can carry one.
 */
import type { FeatureGates } from '../api/feature-gates.js';
import type { Container, Pod, PodSpec, QOSClass, ResourceList } from '../api/types.js';
import { addQuantities, compareQuantities, isPositive, isPositiveQuantity, parseQuantity, type Quantity } from '../api/quantity.js';

export type PodLevelResourcesGate = Pick<FeatureGates, 'PodLevelResources'> &
  Partial<Pick<FeatureGates, 'PodLevelResourcesFixKubeletQOSClass'>>;

/**
 * helper.IsPodLevelResourcesSet (pkg/apis/core/helper/helpers.go, v1.37.2): some request or limit
 * names cpu, memory or a hugepages-* resource, whatever its quantity (a `0` counts as set).
 */
function isPodLevelResourcesSet(resources: PodSpec['resources']): boolean {
  if (resources == null) return false;
  const supported = (list: ResourceList | null | undefined): boolean =>
    list != null && Object.keys(list).some((name) => name === 'cpu' || name === 'memory' || name.startsWith('hugepages-'));
  return supported(resources.requests) || supported(resources.limits);
}

/**
 * Whether the pod-level `resources` decides the class alone: the gate on and the field present,
 * and, with PodLevelResourcesFixKubeletQOSClass on (1.37), naming a supported resource.
 */
function podLevelDecides(spec: PodSpec, gates: PodLevelResourcesGate): boolean {
  if (!gates.PodLevelResources || spec.resources == null) return false;
  return gates.PodLevelResourcesFixKubeletQOSClass !== true || isPodLevelResourcesSet(spec.resources);
}

/** supportedQoSComputeResources: only cpu and memory count; hugepages, ephemeral-storage and extended resources do not. */
const qosComputeResources = ['cpu', 'memory'] as const;
type QOSComputeResource = (typeof qosComputeResources)[number];

type ResourceSums = Map<QOSComputeResource, Quantity>;

/**
 * The positive cpu and memory quantities of a resource list. A zero (`0`) counts as not set,
 * as upstream keeps only `quantity.Cmp(zero) == 1`.
 */
function positiveQOSResources(list: ResourceList | null | undefined): Map<QOSComputeResource, Quantity> {
  const found = new Map<QOSComputeResource, Quantity>();
  if (list === null || list === undefined) {
    return found;
  }
  for (const name of qosComputeResources) {
    if (!Object.hasOwn(list, name)) {
      continue;
    }
    const raw: unknown = list[name];
    const quantity = typeof raw === 'string' || typeof raw === 'number' ? parseQuantity(raw) : undefined;
    if (quantity !== undefined && isPositive(quantity)) {
      found.set(name, quantity);
    }
  }
  return found;
}

function addInto(sums: ResourceSums, found: ReadonlyMap<QOSComputeResource, Quantity>): void {
  for (const [name, quantity] of found) {
    const previous = sums.get(name);
    sums.set(name, previous === undefined ? quantity : addQuantities(previous, quantity));
  }
}

function hasCpuAndMemory(found: ReadonlyMap<QOSComputeResource, Quantity>): boolean {
  return found.has('cpu') && found.has('memory');
}

/**
 * ComputePodQOS:
 * - BestEffort when no positive cpu or memory request or limit is set;
 * - Guaranteed when every container (or, with pod-level resources, the pod) limits both cpu and
 *   memory and the summed requests equal the summed limits, resource by resource;
 * - Burstable otherwise.
 * Containers and init containers (restartable sidecars included) count; ephemeral containers
 * cannot set resources and are not looked at.
 */
export function computePodQOS(spec: PodSpec, gates: PodLevelResourcesGate): QOSClass {
  const requests: ResourceSums = new Map();
  const limits: ResourceSums = new Map();
  let isGuaranteed = true;

  const podResources = spec.resources;
  // `!= null`: a JSON null is Go's nil pointer, the same as absent.
  if (podLevelDecides(spec, gates) && podResources != null) {
    addInto(requests, positiveQOSResources(podResources.requests));
    const podLimits = positiveQOSResources(podResources.limits);
    addInto(limits, podLimits);
    // Upstream only disqualifies when the pod-level limits list is non-empty (any resource name);
    // requests without limits still end up Burstable through the comparison below.
    if (Object.keys(podResources.limits ?? {}).length > 0 && !hasCpuAndMemory(podLimits)) {
      isGuaranteed = false;
    }
  } else {
    const containers: readonly Container[] = [...(spec.containers ?? []), ...(spec.initContainers ?? [])];
    for (const container of containers) {
      addInto(requests, positiveQOSResources(container.resources?.requests));
      const containerLimits = positiveQOSResources(container.resources?.limits);
      addInto(limits, containerLimits);
      if (!hasCpuAndMemory(containerLimits)) {
        isGuaranteed = false;
      }
    }
  }

  if (requests.size === 0 && limits.size === 0) {
    return 'BestEffort';
  }
  if (isGuaranteed) {
    for (const [name, request] of requests) {
      const limit = limits.get(name);
      if (limit === undefined || compareQuantities(limit, request) !== 0) {
        isGuaranteed = false;
        break;
      }
    }
  }
  return isGuaranteed && requests.size === limits.size ? 'Guaranteed' : 'Burstable';
}

/**
 * GetPodQOS: a non-empty `status.qosClass` is returned as it is, whatever it says; otherwise the
 * class is computed. Mutating admission runs before the pod strategy's PrepareForCreate resets the
 * status, so a client-supplied `status.qosClass` is honoured at this point, as upstream does.
 */
export function getPodQOS(pod: Pod, gates: PodLevelResourcesGate): string {
  const recorded = pod.status?.qosClass;
  if (typeof recorded === 'string' && recorded !== '') {
    return recorded;
  }
  return computePodQOS(pod.spec ?? {}, gates);
}

/** Whether a resource list holds a positive cpu or memory quantity. */
function hasPositiveQOSResource(list: ResourceList | null | undefined): boolean {
  if (list === null || list === undefined) {
    return false;
  }
  return qosComputeResources.some((name) => {
    const raw: unknown = Object.hasOwn(list, name) ? list[name] : undefined;
    // The same answer as parseQuantity and isPositive, in one pass over a value a hostile pod may
    // make a megabyte long.
    return (typeof raw === 'string' || typeof raw === 'number') && isPositiveQuantity(raw);
  });
}

/**
 * `getPodQOS(pod) === 'BestEffort'`, which is all PodTolerationRestriction asks, without summing
 * every container's quantities: BestEffort means no positive cpu or memory request or limit
 * anywhere (the sums above are both empty), so the first one found answers. A pod with 100
 * containers spent a quarter of its review computing the full class before.
 */
export function isBestEffortPod(pod: Pod, gates: PodLevelResourcesGate): boolean {
  const recorded = pod.status?.qosClass;
  if (typeof recorded === 'string' && recorded !== '') {
    return recorded === 'BestEffort';
  }
  const spec = pod.spec ?? {};
  const podResources = spec.resources;
  if (podLevelDecides(spec, gates) && podResources != null) {
    return !hasPositiveQOSResource(podResources.requests) && !hasPositiveQOSResource(podResources.limits);
  }
  const containers: readonly Container[] = [...(spec.containers ?? []), ...(spec.initContainers ?? [])];
  return !containers.some(
    (container) => hasPositiveQOSResource(container.resources?.requests) || hasPositiveQOSResource(container.resources?.limits),
  );
}
