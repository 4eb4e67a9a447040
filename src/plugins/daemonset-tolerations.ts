/**
 * DaemonSetTolerations: the tolerations the DaemonSet controller gives every daemon pod, applied to
 * pods a DaemonSet owns. Upstream this is not an admission plugin: the controller calls
 * AddOrUpdateDaemonPodTolerations on the pod template (pkg/controller/daemon/util/daemonset_util.go,
 * read at 05c351a9037bd79bf88c56171a951c3097b658da), each toleration through
 * AddOrUpdateTolerationInPodSpec (pkg/apis/core/v1/helper/helpers.go). Applying it in admission
 * covers daemon pods created by other means too (a controller that builds pods itself, a replayed
 * manifest), so they are never evicted or kept off a node by the node-condition taints.
 *
 * Which pods count as daemon pods is this project's convention
 * (docs/kubernetes-rules.md#daemonset-tolerations): a controller ownerReference to an `apps/v1`
 * DaemonSet.
 */
import type { JsonObject, Pod, Toleration } from '../api/types.js';
import { TaintKey } from '../api/types.js';
import { matchToleration } from '../tolerations/matching.js';
import { tolerationsOf, withTolerations } from '../tolerations/pod-tolerations.js';
import type { AdmissionAttributes, MutatingPlugin, MutationOutcome, PluginContext } from './plugin.js';
import { isPodCreateOrUpdate } from './plugin.js';

/** True when the pod's controller is an apps/v1 DaemonSet. */
export function isDaemonSetPod(pod: Pod): boolean {
  return (pod.metadata?.ownerReferences ?? []).some(
    (owner) => owner.apiVersion === 'apps/v1' && owner.kind === 'DaemonSet' && owner.controller === true,
  );
}

/**
 * The DaemonSet toleration set, in upstream's order. All `Exists` with no tolerationSeconds: a
 * daemon pod tolerates these taints forever.
 */
export function daemonSetPodTolerations(hostNetwork: boolean): Toleration[] {
  const tolerations: Toleration[] = [
    // Daemon pods must not be evicted by the node lifecycle controller when their node turns not
    // ready: they are often what makes it ready again (CNI, storage, monitoring agents).
    { key: TaintKey.NodeNotReady, operator: 'Exists', effect: 'NoExecute' },
    // Likewise when the node is unreachable: a daemon pod belongs to its node and cannot be
    // rescheduled elsewhere, so evicting it gains nothing.
    { key: TaintKey.NodeUnreachable, operator: 'Exists', effect: 'NoExecute' },
    // TaintNodesByCondition: the node-condition taints keep new ordinary pods away from a node
    // under pressure, but a node's daemons must still be placed on it.
    { key: TaintKey.NodeDiskPressure, operator: 'Exists', effect: 'NoSchedule' },
    { key: TaintKey.NodeMemoryPressure, operator: 'Exists', effect: 'NoSchedule' },
    { key: TaintKey.NodePIDPressure, operator: 'Exists', effect: 'NoSchedule' },
    // A cordoned node (tainted unschedulable:NoSchedule) still runs its daemons: `kubectl drain`
    // leaves DaemonSet pods in place, and a replacement must be able to land there too.
    { key: TaintKey.NodeUnschedulable, operator: 'Exists', effect: 'NoSchedule' },
  ];
  if (hostNetwork) {
    // A host-network pod needs no pod network, and it is frequently the network plugin itself,
    // which must run before the node's network-unavailable taint can be lifted.
    tolerations.push({ key: TaintKey.NodeNetworkUnavailable, operator: 'Exists', effect: 'NoSchedule' });
  }
  return tolerations;
}

/**
 * AddOrUpdateTolerationInPodSpec: every existing toleration that MatchTolerations the new one
 * (same key, operator, value and effect) is replaced in place by it, which drops its
 * tolerationSeconds; with no match the new one is appended. An existing entry already equal to the
 * new one (no tolerationSeconds) is kept as the same object, so a second run changes nothing.
 * (Upstream's "DeepEqual → return false" shortcut compares a *Toleration with a Toleration and
 * never fires; the resulting list is the same.)
 */
function addOrUpdateToleration(tolerations: readonly Toleration[], daemon: Toleration): Toleration[] {
  const result: Toleration[] = [];
  let matched = false;
  for (const existing of tolerations) {
    if (!matchToleration(daemon, existing)) {
      result.push(existing);
      continue;
    }
    matched = true;
    result.push(existing.tolerationSeconds === undefined || existing.tolerationSeconds === null ? existing : { ...daemon });
  }
  if (!matched) {
    result.push({ ...daemon });
  }
  return result;
}

/** UPDATE: append the ones nothing matches, never touch an existing entry. */
function appendMissingToleration(tolerations: readonly Toleration[], daemon: Toleration): Toleration[] {
  return tolerations.some((existing) => matchToleration(daemon, existing)) ? tolerations.slice() : tolerations.concat([{ ...daemon }]);
}

export function createDaemonSetTolerations() {
  const handles = isPodCreateOrUpdate;

  return {
    name: 'DaemonSetTolerations',
    handles,
    admit(object: JsonObject, attributes: AdmissionAttributes, _context: PluginContext): MutationOutcome {
      if (!handles(attributes)) {
        return { object };
      }
      const pod = object as Pod;
      if (!isDaemonSetPod(pod)) {
        return { object };
      }
      const original = tolerationsOf(pod);
      // On UPDATE the existing tolerations are never rewritten, only missing ones appended
      // (docs/architecture.md#update-only-appends-tolerations). The controller applies its set
      // when it creates a pod, never to a running one; replacing an entry would silently change
      // how long a running pod survives a NoExecute taint, and a webhook that rewrites tolerations
      // on UPDATE fights every client that sends the pod back as it read it.
      const apply = attributes.operation === 'CREATE' ? addOrUpdateToleration : appendMissingToleration;
      let tolerations: readonly Toleration[] = original;
      for (const daemon of daemonSetPodTolerations(pod.spec?.hostNetwork === true)) {
        tolerations = apply(tolerations, daemon);
      }
      return { object: withTolerations(pod, tolerations) };
    },
  } satisfies MutatingPlugin;
}
