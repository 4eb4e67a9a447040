/**
 * Where a pod may run: one pod against one node, with the filters of kube-scheduler that concern
 * taints and node choice, and the NoExecute eviction that follows. Each rule comes from upstream:
 *
 * - NodeName (scheduler) — `spec.nodeName` pins the pod to that node. Such a pod never goes
 *   through the scheduler: the kubelet admits it itself, checking node affinity and nodeSelector
 *   but, of the taints, only NoExecute ones (pkg/kubelet/lifecycle/predicate.go), and not
 *   `spec.unschedulable`. A pinned pod is judged that way.
 * - NodeUnschedulable — a cordoned node (`spec.unschedulable`) takes only pods that tolerate
 *   `node.kubernetes.io/unschedulable:NoSchedule`.
 * - TaintToleration (filter) — every NoSchedule and NoExecute taint must be tolerated.
 * - TaintToleration (score) — an untolerated PreferNoSchedule taint leaves the node feasible but
 *   scored lower: `preferred` is false.
 * - NodeAffinity — `spec.nodeSelector` and the required node affinity (./reference-node-affinity.ts).
 * - Taint eviction — ./noexecute-eviction.ts.
 *
 * With `running`, the pod is taken as already running on the node. Everything "during scheduling"
 * (NoSchedule, PreferNoSchedule, cordon, node affinity, all IgnoredDuringExecution) no longer
 * matters; only NoExecute taints do, and `schedulable` then reads "may keep running", false
 * exactly when the pod is evicted at once.
 *
 * Pure: gates come in as a value, and matching goes through `toleratesTaint`, so Gt/Lt follow the
 * TaintTolerationComparisonOperators gate exactly as the scheduler's call does.
 */
import type { Node, Pod, Taint } from '../api/types.js';
import { TaintKey } from '../api/types.js';
import { tolerationsTolerateTaint, type ComparisonOperatorGate } from '../tolerations/matching.js';
import { describeTaint, noExecuteOutcome } from './noexecute-eviction.js';
import { matchRequiredNodeAffinity } from './reference-node-affinity.js';

export interface Placement {
  readonly node: string;
  /** The scheduler would bind the pod here (with `running`: the pod may keep running here). */
  readonly schedulable: boolean;
  /** Schedulable, and no PreferNoSchedule taint stands against it. */
  readonly preferred: boolean;
  /** Why not schedulable, why not preferred, and what decides eviction; empty for a clean fit. */
  readonly reasons: readonly string[];
  /** NoExecute outcome once running here: 0 at once, N seconds, null never. */
  readonly evictAfterSeconds: number | null;
}

export interface PlacementOptions {
  /** Judge the pod as already running on the node (only NoExecute taints act). */
  readonly running?: boolean;
}

const unschedulableTaint: Taint = { key: TaintKey.NodeUnschedulable, effect: 'NoSchedule' };

export function evaluatePlacement(pod: Pod, node: Node, gates: ComparisonOperatorGate, options: PlacementOptions = {}): Placement {
  const spec = pod.spec ?? {};
  const tolerations = spec.tolerations ?? [];
  const taints = node.spec?.taints ?? [];
  const name = node.metadata.name;
  const blocking: string[] = [];

  const pinnedTo = spec.nodeName ?? '';
  if (pinnedTo !== '' && pinnedTo !== name) {
    blocking.push(`spec.nodeName pins the pod to node "${pinnedTo}"`);
  }
  const bypassesScheduler = pinnedTo !== '';
  const eviction = noExecuteOutcome(tolerations, taints, gates);

  if (options.running === true) {
    const schedulable = blocking.length === 0 && eviction.evictAfterSeconds !== 0;
    return {
      node: name,
      schedulable,
      preferred: schedulable,
      reasons: [...blocking, ...eviction.reasons],
      evictAfterSeconds: eviction.evictAfterSeconds,
    };
  }

  if (!bypassesScheduler && node.spec?.unschedulable === true && !tolerationsTolerateTaint(tolerations, unschedulableTaint, gates)) {
    blocking.push(`node is cordoned (spec.unschedulable) and the pod does not tolerate ${describeTaint(unschedulableTaint)}`);
  }
  for (const taint of taints) {
    // The kubelet, admitting a pinned pod, looks at NoExecute taints only; those are reported by the eviction outcome.
    if (taint.effect === 'NoSchedule' && !bypassesScheduler && !tolerationsTolerateTaint(tolerations, taint, gates)) {
      blocking.push(`taint ${describeTaint(taint)} is not tolerated`);
    }
  }
  const affinity = matchRequiredNodeAffinity(spec, node);
  for (const reason of affinity.reasons) blocking.push(reason);
  // An untolerated NoExecute taint blocks scheduling too (and the kubelet's admission of a pinned
  // pod); its reason comes with the eviction outcome. A tolerated one does not, whatever its
  // tolerationSeconds: the TaintToleration filter ignores them, so a pod tolerating a NoExecute
  // taint for 0 s is placed there and then evicted at once (evictAfterSeconds 0).
  const untoleratedNoExecute = taints.some((taint) => taint.effect === 'NoExecute' && !tolerationsTolerateTaint(tolerations, taint, gates));
  const schedulable = blocking.length === 0 && !untoleratedNoExecute;

  const avoided = bypassesScheduler
    ? []
    : taints.filter((taint) => taint.effect === 'PreferNoSchedule' && !tolerationsTolerateTaint(tolerations, taint, gates));
  const preferenceReasons = avoided.map((taint) => `taint ${describeTaint(taint)} is not tolerated: the scheduler prefers other nodes`);
  return {
    node: name,
    schedulable,
    preferred: schedulable && avoided.length === 0,
    reasons: [...blocking, ...eviction.reasons, ...preferenceReasons],
    evictAfterSeconds: eviction.evictAfterSeconds,
  };
}

/** Every node, in the order given. */
export function evaluatePlacements(
  pod: Pod,
  nodes: readonly Node[],
  gates: ComparisonOperatorGate,
  options: PlacementOptions = {},
): Placement[] {
  return nodes.map((node) => evaluatePlacement(pod, node, gates, options));
}
