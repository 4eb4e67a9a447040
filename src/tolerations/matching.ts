/**
 * Whether a toleration tolerates a taint, exactly as core/v1 `Toleration.ToleratesTaint` decides it
 * (staging/src/k8s.io/api/core/v1/toleration.go, KEP-5471 form of v1.35), plus the two identity
 * checks `MatchToleration` and `Taint.MatchTaint` (taint.go).
 *
 * A Go struct has no "absent" string field, so a missing `key`, `operator`, `value` or `effect`
 * is compared as the empty string throughout.
 */
import type { FeatureGates } from '../api/feature-gates.js';
import type { Taint, Toleration } from '../api/types.js';
import { parseCanonicalInt64 } from './numeric.js';

export type ComparisonOperatorGate = Pick<FeatureGates, 'TaintTolerationComparisonOperators'>;

/**
 * Toleration.ToleratesTaint. The checks run in upstream's order:
 * 1. a non-empty effect must equal the taint's (an empty effect matches every effect);
 * 2. a non-empty key must equal the taint's. An empty key skips the check whatever the operator,
 *    so an (invalid) `{key: "", operator: Equal, value: v}` tolerates every taint whose value is v;
 * 3. the operator decides: `""`/`Equal` compare values as exact strings, `Exists` matches, `Lt`/`Gt`
 *    compare numerically only when the gate is on, and any other spelling (`exists`, `gt`) never matches.
 */
export function toleratesTaint(toleration: Toleration, taint: Taint, gates: ComparisonOperatorGate): boolean {
  const effect = toleration.effect ?? '';
  if (effect !== '' && effect !== taint.effect) {
    return false;
  }
  const key = toleration.key ?? '';
  if (key !== '' && key !== taint.key) {
    return false;
  }
  const operator = toleration.operator ?? '';
  switch (operator) {
    // The empty operator means Equal: nothing defaults it, so it stays "" on the object.
    case '':
    case 'Equal':
      return (toleration.value ?? '') === (taint.value ?? '');
    case 'Exists':
      return true;
    case 'Lt':
    case 'Gt':
      // With the gate off upstream returns false before looking at the values.
      if (!gates.TaintTolerationComparisonOperators) {
        return false;
      }
      return compareNumericValues(toleration.value ?? '', taint.value ?? '', operator);
    default:
      return false;
  }
}

/**
 * compareNumericValues: each side must be a canonical decimal integer (content.IsDecimalInteger)
 * that fits in int64 (strconv.ParseInt); upstream logs a failure and answers false. The comparison
 * is strict and reads "the taint's value is less/greater than the toleration's".
 */
function compareNumericValues(tolerationValue: string, taintValue: string, operator: 'Lt' | 'Gt'): boolean {
  const threshold = parseCanonicalInt64(tolerationValue);
  if (threshold === undefined) {
    return false;
  }
  const actual = parseCanonicalInt64(taintValue);
  if (actual === undefined) {
    return false;
  }
  return operator === 'Lt' ? actual < threshold : actual > threshold;
}

/** v1helper.TolerationsTolerateTaint: some toleration in the list tolerates the taint. */
export function tolerationsTolerateTaint(tolerations: readonly Toleration[], taint: Taint, gates: ComparisonOperatorGate): boolean {
  return tolerations.some((toleration) => toleratesTaint(toleration, taint, gates));
}

/**
 * Toleration.MatchToleration: tolerations are identified by <key, effect, operator, value>;
 * tolerationSeconds plays no part. The operator is compared literally, so `""` and `Equal` differ.
 */
export function matchToleration(a: Toleration, b: Toleration): boolean {
  return (
    (a.key ?? '') === (b.key ?? '') &&
    (a.effect ?? '') === (b.effect ?? '') &&
    (a.operator ?? '') === (b.operator ?? '') &&
    (a.value ?? '') === (b.value ?? '')
  );
}

/**
 * "Does the list hold a toleration that matchToleration matches?", answered in constant time
 * after one pass over the list. The UPDATE rules ask it for each toleration of the other list:
 * compared pair by pair, an UPDATE of a pod with n tolerations cost n² comparisons.
 */
export function matchingTolerationIn(list: readonly Toleration[]): (toleration: Toleration) => boolean {
  const identities = new Set(list.map(matchIdentity));
  return (toleration) => identities.has(matchIdentity(toleration));
}

/**
 * Equal for two tolerations exactly when matchToleration holds. Each string but the last is
 * preceded by its length, which keeps them apart whatever they hold (cheaper than JSON, which
 * scans each for characters to escape).
 */
function matchIdentity(t: Toleration): string {
  const key = t.key ?? '';
  const effect = t.effect ?? '';
  const operator = t.operator ?? '';
  return `${key.length}:${key}${effect.length}:${effect}${operator.length}:${operator}${t.value ?? ''}`;
}

/** Taint.MatchTaint: taints are unique by key and effect; the value is not compared. */
export function matchTaint(a: Taint, b: Taint): boolean {
  return a.key === b.key && a.effect === b.effect;
}
