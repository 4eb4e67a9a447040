/**
 * evaluatePlacement (./placement.ts) for one pod against many nodes, in the two forms
 * SchedulingWarnings needs: `fits` (its `schedulable`) and `firstReason` (its `reasons[0]`, with
 * long strings clipped). The pod is read once — tolerations indexed (./toleration-index.ts),
 * nodeSelector and required terms compiled for the nodes to be asked about
 * (./compiled-node-affinity.ts) — so a node costs O(its labels + taints), whatever the size of the
 * pod. Reading the pod and every node is paid from a WorkBudget; when the budget cannot pay for
 * reading the pod, `covered` is 0 and no node may be asked about.
 *
 * Only the scheduling judgement is compiled (not `running`, which only `tolerator simulate`
 * asks for, one node listing at a time). evaluatePlacement remains the plain transcription of
 * upstream's rules; test/scheduling/compiled-placement.test.ts checks that the two agree.
 */
import type { Node, Pod, Taint } from '../api/types.js';
import { TaintKey } from '../api/types.js';
import type { ComparisonOperatorGate } from '../tolerations/matching.js';
import { compileNodeAffinity, unexplained } from './compiled-node-affinity.js';
import { describeTaint } from './noexecute-eviction.js';
import { indexTolerations } from './toleration-index.js';
import { clip, maxReasonChars } from './warning-text.js';
import type { WorkBudget } from './work-budget.js';

export { unexplained } from './compiled-node-affinity.js';

export interface CompiledPlacement {
  /** How many nodes of the universe, from its start, may be asked about (see compileNodeAffinity). */
  readonly covered: number;
  /** evaluatePlacement(pod, node, gates).schedulable; undefined when the budget ran out first. */
  fits(node: Node, budget: WorkBudget): boolean | undefined;
  /**
   * evaluatePlacement(pod, node, gates).reasons[0] for a node that does not fit (clipped to
   * maxReasonChars); `unexplained` when the budget ran out first.
   */
  firstReason(node: Node, budget: WorkBudget): string;
}

const unschedulableTaint: Taint = { key: TaintKey.NodeUnschedulable, effect: 'NoSchedule' };

/** A pod whose reading the budget could not pay for: no node may be asked about. */
const coversNothing: CompiledPlacement = { covered: 0, fits: () => undefined, firstReason: () => unexplained };

/** Compiles `pod` for the nodes of `universe`, the only ones it may then be asked about. */
export function compilePlacement(
  pod: Pod,
  gates: ComparisonOperatorGate,
  universe: readonly Node[],
  budget: WorkBudget,
): CompiledPlacement {
  const spec = pod.spec ?? {};
  const tolerations = spec.tolerations ?? [];
  const index = indexTolerations(tolerations, gates, budget);
  if (index === undefined) return coversNothing;
  const affinity = compileNodeAffinity(spec, universe, budget);
  const pinnedTo = spec.nodeName ?? '';
  // A pod with spec.nodeName never goes through the scheduler: the kubelet admits it, looking at
  // node affinity and NoExecute taints only (placement.ts says why).
  const bypassesScheduler = pinnedTo !== '';
  const tolerates = (taint: Taint): boolean => index.firstTolerating(taint) !== -1;
  /**
   * noExecuteOutcome for one NoExecute taint: undefined when it lets the pod stay (for a while or
   * for ever), or what evicts the pod at once — no toleration, or the first tolerating one with
   * tolerationSeconds ≤ 0 (the minimum over the node is then 0: "at once").
   */
  const evictsAtOnce = (taint: Taint): { untolerated: true } | { untolerated: false; index: number; seconds: number } | undefined => {
    const first = index.firstTolerating(taint);
    if (first === -1) return { untolerated: true };
    const seconds = tolerations[first]?.tolerationSeconds ?? null;
    return seconds !== null && seconds <= 0 ? { untolerated: false, index: first, seconds } : undefined;
  };

  return {
    covered: affinity.covered,
    fits(node, budget) {
      if (pinnedTo !== '' && pinnedTo !== node.metadata.name) return false;
      const taints = node.spec?.taints ?? [];
      if (!budget.take(1 + taints.length)) return undefined;
      if (!bypassesScheduler && node.spec?.unschedulable === true && !tolerates(unschedulableTaint)) return false;
      for (const taint of taints) {
        if (taint.effect === 'NoSchedule' && !bypassesScheduler && !tolerates(taint)) return false;
        // The scheduler (and the kubelet, for a pinned pod) ignores tolerationSeconds: only an untolerated NoExecute taint keeps the pod off.
        if (taint.effect === 'NoExecute' && !tolerates(taint)) return false;
      }
      return affinity.matches(node, budget);
    },

    firstReason(node, budget) {
      // In evaluatePlacement's order: the pin, the cordon, NoSchedule taints, node affinity, then
      // the NoExecute outcome.
      const name = node.metadata.name;
      if (pinnedTo !== '' && pinnedTo !== name) return clip(`spec.nodeName pins the pod to node "${clip(pinnedTo)}"`, maxReasonChars);
      const taints = node.spec?.taints ?? [];
      if (!budget.take(1 + 2 * taints.length)) return unexplained;
      if (!bypassesScheduler && node.spec?.unschedulable === true && !tolerates(unschedulableTaint)) {
        return `node is cordoned (spec.unschedulable) and the pod does not tolerate ${describeTaint(unschedulableTaint)}`;
      }
      if (!bypassesScheduler) {
        for (const taint of taints) {
          if (taint.effect === 'NoSchedule' && !tolerates(taint)) return `taint ${describe(taint)} is not tolerated`;
        }
      }
      const affinityReason = affinity.firstReason(node, budget);
      if (affinityReason !== undefined) return clip(affinityReason, maxReasonChars);
      let deciding: string | undefined;
      for (const taint of taints) {
        if (taint.effect !== 'NoExecute') continue;
        const outcome = evictsAtOnce(taint);
        // An untolerated taint is reported before any tolerated one: noExecuteOutcome lists those alone.
        if (outcome?.untolerated === true) return `taint ${describe(taint)} is not tolerated: evicted at once`;
        if (outcome !== undefined && deciding === undefined) {
          deciding = `taint ${describe(taint)} is tolerated by spec.tolerations[${outcome.index}] for tolerationSeconds ${outcome.seconds}: evicted at once`;
        }
      }
      return deciding ?? 'not schedulable';
    },
  };
}

/** describeTaint, with the key and value clipped (a Node's are bounded by the API, a file's need not be). */
function describe(taint: Taint): string {
  return describeTaint({
    key: clip(taint.key),
    effect: clip(taint.effect),
    ...(taint.value === undefined ? {} : { value: clip(taint.value) }),
  });
}
