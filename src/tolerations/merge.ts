/**
 * The toleration set algebra behind PodTolerationRestriction, as in upstream
 * `pkg/util/tolerations/tolerations.go`: `isSuperset`, `MergeTolerations`, `VerifyAgainstWhitelist`.
 *
 * Equality is Go's `DeepEqual` over the five Toleration fields. Go structs have no absent string
 * field, so a missing `key`/`operator`/`value`/`effect` equals `""`; `tolerationSeconds` is an
 * `*int64`, so absent and `null` are both nil, nil equals only nil, and numbers compare by value.
 *
 * Merging never rewrites a toleration: each output element is the very object given (same
 * identity, same absent fields), because the admission patch is a diff of the pod before and
 * after, and a normalised copy would show up as spurious patch operations.
 */
import type { Toleration } from '../api/types.js';

/** `*int64` semantics: absent and null are both nil. */
function secondsOf(toleration: Toleration): number | undefined {
  return toleration.tolerationSeconds ?? undefined;
}

/** apiequality.Semantic.DeepEqual on two Tolerations. */
function deepEqualTolerations(a: Toleration, b: Toleration): boolean {
  return (
    (a.key ?? '') === (b.key ?? '') &&
    (a.operator ?? '') === (b.operator ?? '') &&
    (a.value ?? '') === (b.value ?? '') &&
    (a.effect ?? '') === (b.effect ?? '') &&
    secondsOf(a) === secondsOf(b)
  );
}

/**
 * Whether `ss` tolerates everything `t` tolerates, in upstream's order:
 * 1. identical tolerations are supersets of each other;
 * 2. the keys must match, unless `ss` is the empty-key `Exists` (every key and value);
 * 3. the effects must match, unless `ss` has the empty effect (every effect);
 * 4. a NoExecute `ss` with tolerationSeconds bounds `t`: `t` must be bounded too and by no more
 *    seconds (raw values, so -5 is within 0). An empty-effect `ss` bounds nothing;
 * 5. by `ss`'s operator: `""`/`Equal` need `t.operator` to be literally `Equal` with the same
 *    value (so an `Equal` never covers an empty-operator toleration), `Exists` covers all, and any
 *    other operator, Gt and Lt included, covers nothing but its exact duplicate (step 1).
 */
export function isSuperset(ss: Toleration, t: Toleration): boolean {
  if (deepEqualTolerations(t, ss)) {
    return true;
  }
  const ssKey = ss.key ?? '';
  const ssOperator = ss.operator ?? '';
  if ((t.key ?? '') !== ssKey && (ssKey !== '' || ssOperator !== 'Exists')) {
    return false;
  }
  const ssEffect = ss.effect ?? '';
  if ((t.effect ?? '') !== ssEffect && ssEffect !== '') {
    return false;
  }
  const ssSeconds = secondsOf(ss);
  if (ssEffect === 'NoExecute' && ssSeconds !== undefined) {
    const tSeconds = secondsOf(t);
    if (tSeconds === undefined || tSeconds > ssSeconds) {
      return false;
    }
  }
  switch (ssOperator) {
    case '':
    case 'Equal':
      return t.operator === 'Equal' && (t.value ?? '') === (ss.value ?? '');
    case 'Exists':
      return true;
    default:
      // Upstream logs "Unknown toleration operator" and answers false.
      return false;
  }
}

/**
 * MergeTolerations(first, second): walk `first ++ second` in order and keep `t` unless an
 * already-kept toleration is a superset of it, or a later one that is not identical to it is.
 * Consequences: exact duplicates keep the first occurrence; a subset is dropped even when both
 * came from the same list; the survivor sits where the later superset sits; with NoExecute the
 * longer tolerationSeconds wins and nil (forever) beats any number. Returns a new array of the
 * given objects; neither input is modified.
 */
export function mergeTolerations(first: readonly Toleration[], second: readonly Toleration[]): Toleration[] {
  const all = [...first, ...second];
  // Only a toleration with the same key, or the empty-key Exists (every key), can be a superset
  // (isSuperset step 2). Comparing within those buckets instead of against every entry keeps the
  // merge linear for pods whose tolerations have distinct keys — upstream compares all pairs,
  // which for the tens of thousands of tolerations a 7 MiB body can hold would stall the event
  // loop for seconds. The result is the same: no pair skipped here could have matched.
  const indicesByKey = new Map<string, number[]>();
  const wildcardIndices: number[] = [];
  all.forEach((t, i) => {
    const key = t.key ?? '';
    let bucket = indicesByKey.get(key);
    if (bucket === undefined) {
      bucket = [];
      indicesByKey.set(key, bucket);
    }
    bucket.push(i);
    if (isWildcard(t)) {
      wildcardIndices.push(i);
    }
  });
  const keptByKey = new Map<string, Toleration[]>();
  const keptWildcards: Toleration[] = [];
  const merged: Toleration[] = [];
  all.forEach((t, i) => {
    const key = t.key ?? '';
    // The empty key's own bucket already holds the wildcards.
    const keptCandidates = key === '' ? (keptByKey.get(key) ?? []) : [...(keptByKey.get(key) ?? []), ...keptWildcards];
    if (keptCandidates.some((kept) => isSuperset(kept, t))) {
      return;
    }
    // If the tolerations are equal, upstream prefers the first, so identical later ones do not count.
    const laterCandidates = key === '' ? indicesAfter(indicesByKey.get(key) ?? [], i) : [...indicesAfter(indicesByKey.get(key) ?? [], i), ...indicesAfter(wildcardIndices, i)];
    if (laterCandidates.some((j) => !deepEqualTolerations(t, all[j] ?? {}) && isSuperset(all[j] ?? {}, t))) {
      return;
    }
    merged.push(t);
    let kept = keptByKey.get(key);
    if (kept === undefined) {
      kept = [];
      keptByKey.set(key, kept);
    }
    kept.push(t);
    if (isWildcard(t)) {
      keptWildcards.push(t);
    }
  });
  return merged;
}

/** The empty-key `Exists`: tolerates every key, so it is a candidate superset of any toleration. */
function isWildcard(t: Toleration): boolean {
  return (t.key ?? '') === '' && t.operator === 'Exists';
}

/** The entries of an ascending index list that come after `index` (binary search). */
function indicesAfter(sorted: readonly number[], index: number): readonly number[] {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((sorted[middle] ?? 0) <= index) low = middle + 1;
    else high = middle;
  }
  return sorted.slice(low);
}

/**
 * VerifyAgainstWhitelist: true when either list is empty; otherwise every toleration needs a
 * whitelist entry that is a superset of it.
 */
export function verifyAgainstWhitelist(tolerations: readonly Toleration[], whitelist: readonly Toleration[]): boolean {
  if (whitelist.length === 0 || tolerations.length === 0) {
    return true;
  }
  return tolerations.every((t) => whitelist.some((w) => isSuperset(w, t)));
}
