/**
 * A pod's tolerations, indexed once so that asking about one taint costs O(log tolerations)
 * instead of a walk over all of them: a pod may carry tens of thousands of tolerations, and
 * SchedulingWarnings asks about every taint of every known node.
 *
 * The question answered is the one noExecuteOutcome and the TaintToleration filter ask: which is
 * the FIRST toleration in the pod's list (the lowest index) that tolerates this taint, as
 * `toleratesTaint` (../tolerations/matching.ts) decides it — or none. The index reproduces that
 * function's rules, grouped so that each group answers with a look-up:
 *
 * - effect: a toleration's empty effect matches every effect, any other must equal the taint's;
 * - key: an empty key matches every key, any other must equal the taint's;
 * - operator `""`/`Equal`: the values must be equal → a map from value to lowest index;
 * - `Exists`: always → the lowest index;
 * - `Gt`/`Lt` (gate on; canonical int64 on both sides): the taint's value above/below the
 *   toleration's → the thresholds sorted, with the lowest index among every prefix, so a binary
 *   search finds the lowest index among all thresholds the value passes;
 * - any other operator, a Gt/Lt threshold that is not a canonical int64, or Gt/Lt with the gate
 *   off tolerates nothing and is left out.
 *
 * A taint is then looked up under its own key and the empty key, each with its own effect and the
 * empty effect: four groups, the lowest index of the four wins.
 */
import type { Taint, Toleration } from '../api/types.js';
import type { ComparisonOperatorGate } from '../tolerations/matching.js';
import { int64Max, int64Min } from '../api/go-strconv.js';
import { isDecimalInteger } from '../tolerations/numeric.js';
import type { WorkBudget } from './work-budget.js';

/** Thresholds sorted so that the ones a value passes form a prefix; `lowest[i]` is the lowest index in the first i + 1. */
interface Thresholds {
  readonly bounds: bigint[];
  readonly lowest: number[];
}

export interface TolerationIndex {
  /** The index in the pod's list of the first toleration that tolerates `taint`, or -1. */
  firstTolerating(taint: Taint): number;
}

/**
 * Flat maps keyed by strings that hold the key, effect (and value) with their lengths first, so a
 * pair or triple is unambiguous whatever characters each holds. Flat, because a map per distinct
 * key costs allocations that, for twenty thousand distinct keys, were most of the work.
 */
function pairKey(key: string, effect: string): string {
  return `${effect.length}:${effect}${key}`;
}

function tripleKey(key: string, effect: string, value: string): string {
  return `${effect.length}:${key.length}:${effect}${key}${value}`;
}

/**
 * Indexes `tolerations`; with a budget, first pays a unit per toleration from it and answers
 * undefined when it cannot (a 3 MiB pod holds a million tolerations: building the index is the
 * costliest part of reading the pod).
 */
export function indexTolerations(tolerations: readonly Toleration[], gates: ComparisonOperatorGate): TolerationIndex;
export function indexTolerations(
  tolerations: readonly Toleration[],
  gates: ComparisonOperatorGate,
  budget: WorkBudget,
): TolerationIndex | undefined;
export function indexTolerations(
  tolerations: readonly Toleration[],
  gates: ComparisonOperatorGate,
  budget?: WorkBudget,
): TolerationIndex | undefined {
  if (budget !== undefined && !budget.take(tolerations.length)) {
    return undefined;
  }
  /** The keys some toleration names ("" among them when one matches every key): no other key needs a look-up. */
  const keys = new Set<string>();
  const exists = new Map<string, number>();
  const equal = new Map<string, number>();
  const comparisons = new Map<string, { gt: { bound: bigint; index: number }[]; lt: { bound: bigint; index: number }[] }>();
  for (const [index, toleration] of tolerations.entries()) {
    const key = toleration.key ?? '';
    const effect = toleration.effect ?? '';
    // Indexes only grow along the loop, so the first one stored for a value or a kind is the lowest.
    switch (toleration.operator ?? '') {
      case '':
      case 'Equal': {
        const name = tripleKey(key, effect, toleration.value ?? '');
        if (!equal.has(name)) equal.set(name, index);
        keys.add(key);
        break;
      }
      case 'Exists': {
        const name = pairKey(key, effect);
        if (!exists.has(name)) exists.set(name, index);
        keys.add(key);
        break;
      }
      case 'Gt':
      case 'Lt': {
        if (!gates.TaintTolerationComparisonOperators) break;
        const bound = canonicalInt64(toleration.value ?? '');
        if (bound === undefined) break;
        const name = pairKey(key, effect);
        let lists = comparisons.get(name);
        if (lists === undefined) {
          lists = { gt: [], lt: [] };
          comparisons.set(name, lists);
        }
        (toleration.operator === 'Gt' ? lists.gt : lists.lt).push({ bound, index });
        keys.add(key);
        break;
      }
      default:
        break;
    }
  }
  const thresholds = new Map<string, { gt: Thresholds; lt: Thresholds }>();
  for (const [name, { gt, lt }] of comparisons) {
    thresholds.set(name, {
      gt: sortThresholds(gt, (a, b) => (a < b ? -1 : a > b ? 1 : 0)),
      lt: sortThresholds(lt, (a, b) => (a > b ? -1 : a < b ? 1 : 0)),
    });
  }

  const lowestFor = (key: string, effect: string, value: string, numeric: bigint | undefined): number => {
    const pair = pairKey(key, effect);
    let lowest = Math.min(exists.get(pair) ?? Infinity, equal.get(tripleKey(key, effect, value)) ?? Infinity);
    const bounds = numeric === undefined ? undefined : thresholds.get(pair);
    if (bounds !== undefined && numeric !== undefined) {
      // Gt tolerates a taint value strictly above its threshold, Lt one strictly below.
      lowest = Math.min(
        lowest,
        lowestPassed(bounds.gt, (bound) => bound < numeric),
        lowestPassed(bounds.lt, (bound) => bound > numeric),
      );
    }
    return lowest;
  };

  return {
    firstTolerating(taint) {
      const value = taint.value ?? '';
      const numeric = gates.TaintTolerationComparisonOperators && thresholds.size > 0 ? canonicalInt64(value) : undefined;
      // The taint's own key and effect, and the empty ones, which match every key and every effect.
      let lowest = Infinity;
      for (const key of taint.key === '' ? [''] : ['', taint.key]) {
        if (!keys.has(key)) continue;
        lowest = Math.min(lowest, lowestFor(key, '', value, numeric));
        if (taint.effect !== '') lowest = Math.min(lowest, lowestFor(key, taint.effect, value, numeric));
      }
      return lowest === Infinity ? -1 : lowest;
    },
  };
}

function sortThresholds(entries: readonly { bound: bigint; index: number }[], order: (a: bigint, b: bigint) => number): Thresholds {
  const sorted = [...entries].sort((a, b) => order(a.bound, b.bound));
  const lowest: number[] = [];
  let min = Infinity;
  for (const entry of sorted) {
    min = Math.min(min, entry.index);
    lowest.push(min);
  }
  return { bounds: sorted.map((entry) => entry.bound), lowest };
}

/** The lowest index among the thresholds that `passes` (a prefix of the sorted list): binary search for its length. */
function lowestPassed(thresholds: Thresholds, passes: (bound: bigint) => boolean): number {
  if (thresholds.bounds.length === 0) return Infinity;
  let low = 0;
  let high = thresholds.bounds.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (passes(thresholds.bounds[middle] ?? 0n)) low = middle + 1;
    else high = middle;
  }
  return low === 0 ? Infinity : (thresholds.lowest[low - 1] ?? Infinity);
}

/** The longest canonical int64: "-9223372036854775808", 20 characters. */
const maxInt64Chars = 20;

/**
 * parseCanonicalInt64 (../tolerations/numeric.ts) without its cost per call: that function
 * builds Go's error messages for every value up front, which SchedulingWarnings would pay per
 * threshold and per taint of every node. A value that is canonical (isDecimalInteger) has the
 * same integer for BigInt() as for strconv.ParseInt, so only the int64 range remains to check;
 * anything longer than the longest int64 is out of range, and is refused before BigInt() reads it.
 */
export function canonicalInt64(value: string): bigint | undefined {
  if (value.length === 0 || value.length > maxInt64Chars || isDecimalInteger(value).length > 0) {
    return undefined;
  }
  const parsed = BigInt(value);
  return parsed < int64Min || parsed > int64Max ? undefined : parsed;
}
