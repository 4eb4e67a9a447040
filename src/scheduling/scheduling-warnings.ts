/**
 * Admission warnings about where a pod can go, from the nodes the webhook knows. Warnings, never
 * denials: the node list is a snapshot (nodes come and go, autoscalers add them on demand), so a
 * pod that fits nowhere now may well fit in a minute.
 *
 * (a) A `Gt`/`Lt` toleration on a key that nodes use with values that are not canonical integers
 *     tolerates none of those taints (matching requires a canonical int64 on both sides), which
 *     is almost always a mistake in the taint or the toleration.
 * (b) A pod that can be scheduled on no known node (for a tenant pod the usual cause is a group
 *     without free nodes).
 *
 * Cost. The pod is read once (./compiled-placement.ts), then each node costs O(its labels +
 * taints); all of that work, reading the pod included, is counted against a fixed budget of units
 * passed in (./work-budget.ts), so a pod of any size against any number of nodes costs at most
 * O(budget) beyond what parsing the request already cost. (Reading the pod was not counted once:
 * a 3 MiB pod of 330,000 nodeSelector entries or a million terms cost seconds before any node was
 * looked at.) When the budget runs out before the answer is known:
 * - (a) lists what the nodes checked so far showed, saying how many of how many were checked and
 *   that it stopped early; when they showed nothing, there is no warning;
 * - (b) says the pod fits none of the N nodes checked, out of M, and that it stopped early (the
 *   pod may fit one of the others); a node whose reason could not be worked out within the
 *   budget reads `unexplained`. A node that fits among those checked means no warning, as always.
 * Never a denial, never an exception.
 */
import type { Node, Pod } from '../api/types.js';
import type { ComparisonOperatorGate } from '../tolerations/matching.js';
import { compilePlacement } from './compiled-placement.js';
import { canonicalInt64 } from './toleration-index.js';
import { clip } from './warning-text.js';
import { WorkBudget } from './work-budget.js';

/**
 * The work budget of one pod's warnings, in units of ./work-budget.ts (a node label or taint
 * looked at, one index entry visited). Sized so that a full pass over the largest cluster
 * Kubernetes supports fits with room to spare: 5,000 nodes (its scalability limit) × 50 labels
 * and taints per node (cloud nodes carry 20–40 labels and a few taints) = 250,000 units per pass
 * over every node; twice that, for the non-integer taint pass plus the placement pass with its
 * two looks at each label, is 500,000. A run that spends all of it took 17–18 ms of CPU on the
 * 2-core machine of bench/RESULTS.md (the "past the budget" case of
 * test/scheduling/scheduling-warnings-cost.test.ts): about 0.035 µs a unit, a Map look-up.
 * Reading the pod is paid from it too, a unit an item (each toleration twice, once per warning;
 * each term, requirement, value and nodeSelector entry once): an ordinary pod's few dozen leave
 * the nodes nearly all of it, and a pod of more than about 250,000 tolerations or 500,000 other
 * items is not worked out at all, instead of costing seconds before the first node.
 */
export const schedulingWarningsBudget = 500_000;

/** How many nodes a warning lists by name before it only counts the rest. */
const nodesNamedInWarning = 5;

/**
 * How many Gt/Lt tolerations get a warning of their own before the rest are only counted. Each
 * lists up to five nodes (about 900 characters at most with clipped names); kube-apiserver passes
 * on 4,096 characters of warnings whole (./warning-text.ts), so three, and the placement warning
 * beside them, are about what a person is shown in full.
 */
const comparisonWarningsNamed = 3;

export function schedulingWarnings(
  pod: Pod,
  nodes: readonly Node[],
  gates: ComparisonOperatorGate,
  budgetUnits: number = schedulingWarningsBudget,
): string[] {
  const budget = new WorkBudget(budgetUnits);
  return [...nonIntegerTaintWarnings(pod, nodes, budget), ...unschedulableWarnings(pod, nodes, gates, budget)];
}

/** Up to nodesNamedInWarning entries and a count of all, built without keeping the rest. */
class NamedList {
  readonly named: string[] = [];
  count = 0;

  add(entry: () => string): void {
    this.count++;
    if (this.named.length < nodesNamedInWarning) this.named.push(entry());
  }

  toString(): string {
    const rest = this.count - this.named.length;
    const named = this.named.join('; ');
    return rest > 0 ? `${named}; and ${rest} more` : named;
  }
}

function stoppedEarly(checked: number, total: number): string {
  return `checked ${checked} of ${total} known nodes; stopped early`;
}

function nonIntegerTaintWarnings(pod: Pod, nodes: readonly Node[], budget: WorkBudget): string[] {
  const tolerations = pod.spec?.tolerations ?? [];
  // A unit a toleration, as indexing them costs: a pod too large to read within the budget shows nothing.
  if (!budget.take(tolerations.length)) return [];
  /** Indexes of the Gt/Lt tolerations with a key, and their keys. */
  const comparisons: number[] = [];
  const keys = new Set<string>();
  for (const [index, toleration] of tolerations.entries()) {
    const operator = toleration.operator ?? '';
    const key = toleration.key ?? '';
    if ((operator === 'Gt' || operator === 'Lt') && key !== '') {
      comparisons.push(index);
      keys.add(key);
    }
  }
  if (comparisons.length === 0) {
    return [];
  }
  // One pass over the nodes' taints, indexed by the keys the pod compares, instead of one per toleration.
  const offending = new Map<string, NamedList>();
  let checked = 0;
  for (const node of nodes) {
    const taints = node.spec?.taints ?? [];
    if (!budget.take(1 + taints.length)) break;
    checked++;
    for (const taint of taints) {
      if (!keys.has(taint.key)) continue;
      const value = taint.value ?? '';
      if (canonicalInt64(value) !== undefined) continue;
      let list = offending.get(taint.key);
      if (list === undefined) {
        list = new NamedList();
        offending.set(taint.key, list);
      }
      list.add(() => `${clip(node.metadata.name)} (${JSON.stringify(clip(value))})`);
    }
  }
  const partial = checked < nodes.length ? ` (${stoppedEarly(checked, nodes.length)})` : '';
  const warnings: string[] = [];
  let unnamed = 0;
  for (const index of comparisons) {
    const toleration = tolerations[index] ?? {};
    const key = toleration.key ?? '';
    const operator = toleration.operator ?? '';
    const list = offending.get(key);
    if (list === undefined) continue;
    if (warnings.length === comparisonWarningsNamed) {
      unnamed++;
      continue;
    }
    warnings.push(
      `spec.tolerations[${index}] (${clip(key)} ${operator} ${clip(toleration.value ?? '')}): the taint ${clip(key)} has a value that is not a canonical integer on ${list.toString()}; ${operator} never tolerates such a taint${partial}`,
    );
  }
  if (unnamed > 0) {
    warnings.push(
      `spec.tolerations: ${unnamed} more Gt/Lt tolerations are on keys whose taints have values that are not canonical integers on some known node; they never tolerate those taints${partial}`,
    );
  }
  return warnings;
}

function unschedulableWarnings(pod: Pod, nodes: readonly Node[], gates: ComparisonOperatorGate, budget: WorkBudget): string[] {
  if (nodes.length === 0) {
    return [];
  }
  const pinnedTo = pod.spec?.nodeName ?? '';
  if (pinnedTo !== '' && !nodes.some((node) => node.metadata.name === pinnedTo)) {
    return [`spec.nodeName names node "${clip(pinnedTo)}", which is not among the ${nodes.length} known nodes`];
  }
  const placement = compilePlacement(pod, gates, nodes, budget);
  const why = new NamedList();
  // One pass: the common answer, "fits somewhere", stops at the first node that fits; the reasons
  // of the first few that do not are worked out on the way (a few short strings, wasted when a
  // later node fits), so a pass cut short by the budget still explains the nodes it checked.
  for (const node of nodes.slice(0, placement.covered)) {
    const fits = placement.fits(node, budget);
    if (fits === undefined) break;
    if (fits) return [];
    why.add(() => `${clip(node.metadata.name)}: ${placement.firstReason(node, budget)}`);
  }
  const checked = why.count;
  const subject = 'the pod';
  if (checked === nodes.length) {
    return [`${subject} cannot be scheduled on any of the ${nodes.length} known nodes: ${why.toString()}`];
  }
  if (checked === 0) {
    return [
      `${subject}: where it can be scheduled was not worked out (${stoppedEarly(0, nodes.length)}: the pod is too large to check within the webhook's work limit)`,
    ];
  }
  return [
    `${subject} cannot be scheduled on any of the ${checked} known nodes checked (${stoppedEarly(checked, nodes.length)}; it may fit one of the others): ${why.toString()}`,
  ];
}
