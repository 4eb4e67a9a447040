/**
 * When a pod running on a node is evicted by the node's NoExecute taints, as the taint eviction
 * controller decides it (pkg/controller/tainteviction/taint_eviction.go `processPodOnNode`,
 * `getMinTolerationTime`, and v1helper `GetMatchingTolerations`):
 *
 * 1. For each NoExecute taint, the FIRST toleration in the pod's list that tolerates it is the one
 *    used (later ones are never looked at, even with a longer or unlimited tolerationSeconds).
 * 2. If some NoExecute taint is tolerated by no toleration, the pod is evicted at once.
 * 3. Otherwise the pod stays for the smallest tolerationSeconds among the used tolerations (the
 *    minimum over all taints, not per taint); a used toleration without tolerationSeconds tolerates
 *    forever and does not count, and a value ≤ 0 means at once. None with a value: never evicted.
 * 4. The clock starts when the controller first schedules the pod's eviction, and a later change
 *    of the node's NoExecute taints keeps that schedule (`processPodOnNode` returns when a work
 *    item exists): only taints all lifted, tolerated for ever, or one not tolerated change it. A
 *    node NotReady, then unreachable, has its not-ready taint swapped for unreachable, and a pod
 *    tolerating not-ready for 60 s and unreachable for 20 s goes 60 s after the not-ready taint, not
 *    20 s after the swap (test/e2e/node-failure-eviction.e2e.ts measured it on kube-controller-manager
 *    v1.35.8). This function judges the taints it is given, so its reasons say so.
 */
import type { Taint, Toleration } from '../api/types.js';
import { toleratesTaint, type ComparisonOperatorGate } from '../tolerations/matching.js';

export interface NoExecuteOutcome {
  /** 0: evicted at once; N: after N seconds; null: never evicted by these taints. */
  readonly evictAfterSeconds: number | null;
  /** For a person: which taint and which toleration decided. */
  readonly reasons: readonly string[];
}

/** Taint.ToString: `key=value:effect`, or `key:effect` without a value. */
export function describeTaint(taint: Taint): string {
  const value = taint.value === undefined || taint.value === '' ? '' : `=${taint.value}`;
  return `${taint.key}${value}:${taint.effect}`;
}

/**
 * When the TaintTolerationComparisonOperators gate is off and a `Gt`/`Lt` toleration of the pod
 * would tolerate `taint` with it on, the words that say so: a person reading "not tolerated" next
 * to a toleration written for that very taint needs to know it is the gate, not the value. Empty
 * otherwise. (With the gate off, upstream's ToleratesTaint treats Gt/Lt as matching nothing.)
 * Not part of a placement's reasons, which are compared with the server's scheduling warnings
 * word for word: `simulate` adds it where it prints them.
 */
export function comparisonGateNote(tolerations: readonly Toleration[], taint: Taint, gates: ComparisonOperatorGate): string {
  if (gates.TaintTolerationComparisonOperators) return '';
  const on = { TaintTolerationComparisonOperators: true };
  const index = tolerations.findIndex(
    (toleration) => (toleration.operator === 'Gt' || toleration.operator === 'Lt') && toleratesTaint(toleration, taint, on),
  );
  if (index === -1) return '';
  const operator = tolerations[index]?.operator ?? '';
  return ` (the ${operator} toleration spec.tolerations[${index}] would tolerate it with feature gate TaintTolerationComparisonOperators on, and it is off: pass --feature-gates TaintTolerationComparisonOperators=true if your API server has it on)`;
}

export function noExecuteOutcome(
  tolerations: readonly Toleration[],
  taints: readonly Taint[],
  gates: ComparisonOperatorGate,
): NoExecuteOutcome {
  const noExecute = taints.filter((taint) => taint.effect === 'NoExecute');
  if (noExecute.length === 0) {
    return { evictAfterSeconds: null, reasons: [] };
  }
  const untolerated: string[] = [];
  const used: { taint: Taint; index: number; seconds: number | null }[] = [];
  for (const taint of noExecute) {
    const index = tolerations.findIndex((toleration) => toleratesTaint(toleration, taint, gates));
    const toleration = tolerations[index];
    if (toleration === undefined) {
      untolerated.push(describeTaint(taint));
    } else {
      used.push({ taint, index, seconds: toleration.tolerationSeconds ?? null });
    }
  }
  if (untolerated.length > 0) {
    return { evictAfterSeconds: 0, reasons: untolerated.map((taint) => `taint ${taint} is not tolerated: evicted at once`) };
  }
  const limited = used.filter((entry): entry is { taint: Taint; index: number; seconds: number } => entry.seconds !== null);
  if (limited.length === 0) {
    return { evictAfterSeconds: null, reasons: [] };
  }
  // Zero and negative values are "evict immediately" (the Toleration type's documentation).
  const seconds = Math.max(0, Math.min(...limited.map((entry) => entry.seconds)));
  const deciding = limited.filter((entry) => Math.max(0, entry.seconds) === seconds);
  const reasons = deciding.map(
    ({ taint, index, seconds: given }) =>
      `taint ${describeTaint(taint)} is tolerated by spec.tolerations[${index}] for tolerationSeconds ${given}: evicted ${seconds === 0 ? 'at once' : `after ${seconds}s`}`,
  );
  return { evictAfterSeconds: seconds, reasons: [...reasons, firstScheduleStands] };
}

/** Rule 4 above, for a person reading simulate's reasons. */
export const firstScheduleStands =
  "counted from the first NoExecute taint that scheduled the pod's eviction: if the node's taints changed since (not-ready swapped for unreachable), that first schedule stands";
