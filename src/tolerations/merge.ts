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
 *
 * Upstream compares every pair, and so did a first version here within each key: a pod of 20,000
 * tolerations of one key (well inside the API server's 3 MiB body limit) took 9 to 13 s of CPU,
 * on the one thread that answers every review. This one costs O(n log n): each toleration asks
 * its few candidate buckets (`FactsTable.candidates`) instead of every other toleration. The
 * answers are upstream's exactly; test/tolerations/merge.test.ts checks them against the
 * pairwise algorithm.
 */
export function mergeTolerations(first: readonly Toleration[], second: readonly Toleration[]): Toleration[] {
  // concat allocates the list at its size; a spread grows it as it goes (twice the bytes for a large pod).
  const all = first.concat(second);
  return all.length <= pairwiseUpTo ? mergePairwise(all) : mergeIndexed(all);
}

/**
 * Up to this many tolerations in all, the merge compares pairs, as upstream does: at most
 * 2 × 32² = 2,048 isSuperset calls (about 20 µs), and for the few tolerations of an ordinary pod
 * 4 to 10 times cheaper than building the index (0.2 µs against 1.9 µs for three, 5.6 against
 * 19.7 µs for 33, measured in bench/); the merge ran on most reviews and was a twentieth of their
 * CPU time. Above it the index keeps the cost O(n log n).
 */
const pairwiseUpTo = 32;

/** Upstream's MergeTolerations, pair by pair, on `first ++ second`. */
function mergePairwise(all: readonly Toleration[]): Toleration[] {
  const merged: Toleration[] = [];
  next: for (let i = 0; i < all.length; i++) {
    const t = all[i];
    if (t === undefined) continue;
    for (const kept of merged) {
      if (isSuperset(kept, t)) continue next;
    }
    for (let j = i + 1; j < all.length; j++) {
      const later = all[j];
      if (later !== undefined && !deepEqualTolerations(t, later) && isSuperset(later, t)) continue next;
    }
    merged.push(t);
  }
  return merged;
}

/** The indexed merge on `first ++ second`; exported so that tests compare it with upstream's on lists of any size. */
export function mergeIndexed(all: readonly Toleration[]): Toleration[] {
  const table = new FactsTable();
  const facts = factsOf(all, table);
  const laterSuperset = laterNonIdenticalSupersets(facts, table);
  const kept = new SupersetIndex(table.distinct);
  const merged: Toleration[] = [];
  for (let i = 0; i < all.length; i++) {
    const own = facts[i];
    const t = all[i];
    if (own === undefined || t === undefined || kept.coversSome(own, table) || laterSuperset[i] === 1) {
      continue;
    }
    merged.push(t);
    kept.add(own);
  }
  return merged;
}

/**
 * VerifyAgainstWhitelist: true when either list is empty; otherwise every toleration needs a
 * whitelist entry that is a superset of it. The whitelist is indexed once, so the check costs
 * O(n + m) rather than comparing every toleration with every entry.
 */
export function verifyAgainstWhitelist(tolerations: readonly Toleration[], whitelist: readonly Toleration[]): boolean {
  if (whitelist.length === 0 || tolerations.length === 0) {
    return true;
  }
  // As the merge: pair by pair while there are at most as many pairs as its pairwise merge compares.
  if (tolerations.length * whitelist.length <= pairwiseUpTo * pairwiseUpTo) {
    return tolerations.every((t) => whitelist.some((entry) => isSuperset(entry, t)));
  }
  return verifyIndexed(tolerations, whitelist);
}

/** The indexed check; exported so that tests compare it with upstream's on lists of any size. */
export function verifyIndexed(tolerations: readonly Toleration[], whitelist: readonly Toleration[]): boolean {
  if (whitelist.length === 0 || tolerations.length === 0) {
    return true;
  }
  const table = new FactsTable();
  const entries = factsOf(whitelist, table);
  const candidates = factsOf(tolerations, table);
  const index = new SupersetIndex(table.distinct);
  for (const entry of entries) {
    index.add(entry);
  }
  return candidates.every((t) => index.coversSome(t, table));
}

// ---------------------------------------------------------------------------------------------
// Buckets of candidate supersets
//
// Read isSuperset backwards: besides identical copies (step 1), a superset `ss` of `t` is one of
//   (a) an `Exists` with t's key, whatever its value;
//   (b) an `Exists` with the empty key (every key);
//   (c) an `""`/`Equal` with t's key and t's value, and only when t's operator is literally `Equal`;
// with an effect that is t's or empty (step 3), and, when that effect is NoExecute with
// tolerationSeconds set, a t whose tolerationSeconds is set and no greater (step 4). Any other
// operator covers nothing but its identical copies. So tolerations are filed in buckets of
// (class, key, value for `""`/`Equal`, effect), every member of a bucket answers "superset of t?"
// alike except for the NoExecute bound, and t has at most six buckets to ask.

/**
 * What the merge keeps of one toleration while it works: strings named by numbers (FactsTable).
 * One per distinct toleration: identical ones share it, so a pod of a million copies of one
 * toleration (3 MiB of `{}`) holds one, where a Facts each held 150 MB (bench/RESULTS.md).
 */
interface Facts {
  /** Its number among the distinct tolerations, from 0: an index into per-merge counters. */
  readonly n: number;
  readonly key: number;
  readonly value: number;
  readonly effect: number;
  readonly operator: string;
  readonly noExecute: boolean;
  readonly seconds: number | undefined;
  /** Equal for two tolerations exactly when they are identical (DeepEqual). */
  readonly identity: string;
  /** The bucket it is filed in as a potential superset; undefined when it covers only its identical copies. */
  readonly bucket: string | undefined;
  /**
   * Whether its identical copies sit in one of its candidate buckets: true for `Exists` and
   * `Equal` (their own bucket is a candidate, and a copy meets its own bound), false for `""`
   * (only an `Equal` asks the `""`/`Equal` bucket) and for every other operator (filed nowhere).
   */
  readonly copiesAreCandidates: boolean;
  /** Its candidate buckets (FactsTable.candidates), worked out the first time they are asked for. */
  candidates?: readonly Candidate[];
}

/** A bucket that may hold non-identical supersets, and whether its members' tolerationSeconds bound what they cover. */
interface Candidate {
  readonly bucket: string;
  readonly bounded: boolean;
}

/**
 * Works out Facts, naming each distinct string by a number so that bucket and identity keys are
 * short strings of numbers, whatever the keys and values hold. Kept small on purpose: the Facts
 * of every toleration stay alive for the whole merge, and a pod may carry tens of thousands.
 */
class FactsTable {
  private readonly ids = new Map<string, number>();
  /** The distinct tolerations seen, by identity. */
  private readonly byIdentity = new Map<string, Facts>();
  /** The empty string's id: the wildcard key's and the empty effect's. */
  private readonly empty = this.id('');
  /**
   * The keys of every `Exists` worked out so far: an `Exists` bucket of another key cannot exist,
   * so most tolerations skip asking for one (a pod rarely has an `Exists` of every key it uses).
   */
  private readonly existsKeys = new Set<number>();

  private id(text: string): number {
    let id = this.ids.get(text);
    if (id === undefined) {
      id = this.ids.size;
      this.ids.set(text, id);
    }
    return id;
  }

  /** How many distinct tolerations `of` has seen: every Facts' `n` is below it. */
  get distinct(): number {
    return this.byIdentity.size;
  }

  /** The Facts of `t`: the same object for identical tolerations. */
  of(t: Toleration): Facts {
    const operator = t.operator ?? '';
    const key = this.id(t.key ?? '');
    const value = this.id(t.value ?? '');
    const effect = this.id(t.effect ?? '');
    const seconds = secondsOf(t);
    const identity = `${key}:${this.id(operator)}:${value}:${effect}:${seconds ?? 'nil'}`;
    const known = this.byIdentity.get(identity);
    if (known !== undefined) {
      return known;
    }
    let bucket: string | undefined;
    if (operator === 'Exists') {
      bucket = `a${key}:${effect}`;
      this.existsKeys.add(key);
    } else if (operator === '' || operator === 'Equal') {
      bucket = `e${key}:${value}:${effect}`;
    }
    const facts: Facts = {
      n: this.byIdentity.size,
      key,
      value,
      effect,
      operator,
      noExecute: t.effect === 'NoExecute',
      seconds,
      identity,
      bucket,
      copiesAreCandidates: operator === 'Exists' || operator === 'Equal',
    };
    this.byIdentity.set(identity, facts);
    return facts;
  }

  /**
   * The buckets that may hold non-identical supersets of a toleration, each once, with whether it
   * is a NoExecute bucket (its members' tolerationSeconds bound what they cover, isSuperset step
   * 4). Asked only after every toleration's Facts is made (which Exists keys there are decides the
   * list), so the list is worked out once per distinct toleration, and its callers loop over it:
   * a callback made per toleration was most of what the merge of a large pod allocated.
   */
  candidates(facts: Facts): readonly Candidate[] {
    facts.candidates ??= this.candidatesOf(facts);
    return facts.candidates;
  }

  private candidatesOf(facts: Facts): Candidate[] {
    const candidates: Candidate[] = [];
    // The toleration's own effect, then the empty one (whose id, the empty string's, is also the
    // wildcard key's); an empty effect is asked once.
    this.candidatesOfEffect(facts, facts.effect, facts.noExecute, candidates);
    if (facts.effect !== this.empty) this.candidatesOfEffect(facts, this.empty, false, candidates);
    return candidates;
  }

  private candidatesOfEffect(facts: Facts, effect: number, bounded: boolean, out: Candidate[]): void {
    const { key } = facts;
    if (this.existsKeys.has(key)) out.push({ bucket: `a${key}:${effect}`, bounded });
    // For the empty key, (b) is the bucket just listed.
    if (key !== this.empty && this.existsKeys.has(this.empty)) out.push({ bucket: `a${this.empty}:${effect}`, bounded });
    if (facts.operator === 'Equal') out.push({ bucket: `e${key}:${facts.value}:${effect}`, bounded });
  }
}

/**
 * The Facts of each toleration. A run of identical ones (the cheapest way to fill a pod: `{}` is
 * three bytes) shares the first one's without the identity string a look-up builds.
 */
function factsOf(tolerations: readonly Toleration[], table: FactsTable): Facts[] {
  // Sized at once, not grown by push (which allocates about three times the final list on the way).
  const facts = new Array<Facts>(tolerations.length);
  let previous: Toleration | undefined;
  let previousFacts: Facts | undefined;
  for (let i = 0; i < tolerations.length; i++) {
    const t = tolerations[i] as Toleration;
    const own = previous !== undefined && previousFacts !== undefined && deepEqualTolerations(t, previous) ? previousFacts : table.of(t);
    facts[i] = own;
    previous = t;
    previousFacts = own;
  }
  return facts;
}

/** A set of tolerations that answers "is one of you a superset of t?" in O(1). */
class SupersetIndex {
  /** Per distinct toleration (Facts.n): 1 once one is in the set. */
  private readonly identities: Uint8Array;
  /** Per bucket: whether a member has no tolerationSeconds, and the largest one set. */
  private readonly buckets = new Map<string, { unbounded: boolean; maxSeconds: number }>();

  /** `distinct`: the FactsTable's count, above every Facts' number that will be added or asked about. */
  constructor(distinct: number) {
    this.identities = new Uint8Array(distinct);
  }

  add(facts: Facts): void {
    this.identities[facts.n] = 1;
    if (facts.bucket === undefined) {
      return;
    }
    let bucket = this.buckets.get(facts.bucket);
    if (bucket === undefined) {
      bucket = { unbounded: false, maxSeconds: -Infinity };
      this.buckets.set(facts.bucket, bucket);
    }
    if (facts.seconds === undefined) {
      bucket.unbounded = true;
    } else {
      bucket.maxSeconds = Math.max(bucket.maxSeconds, facts.seconds);
    }
  }

  coversSome(facts: Facts, table: FactsTable): boolean {
    if (this.identities[facts.n] === 1) {
      return true;
    }
    const seconds = facts.seconds;
    const candidates = table.candidates(facts);
    // Indexed loops here and in the backward walk: for…of makes an iterator per toleration until
    // the optimising compiler has seen the loop, and these run once per toleration.
    for (let c = 0; c < candidates.length; c++) {
      const candidate = candidates[c] as Candidate;
      const bucket = this.buckets.get(candidate.bucket);
      if (bucket !== undefined && (!candidate.bounded || bucket.unbounded || (seconds !== undefined && seconds <= bucket.maxSeconds))) {
        return true;
      }
    }
    return false;
  }
}

/** What the backward walk knows of a bucket's members after position i. */
interface LaterMembers {
  count: number;
  /** Members without tolerationSeconds. */
  unbounded: number;
  /**
   * The distinct tolerationSeconds of the members, ascending, and a Fenwick tree over them
   * counting the members so far with each; absent where no member sets tolerationSeconds (most
   * buckets: it bounds anything only under NoExecute).
   */
  seconds: { values: number[]; tree: number[] } | undefined;
}

/**
 * For each position i, whether some toleration after it is a superset of it without being
 * identical to it. Walks the list backwards, keeping per bucket how many members it holds and, in
 * NoExecute buckets, how many have no tolerationSeconds and a Fenwick tree over the values set,
 * so "how many later members cover t" is a few O(log n) look-ups; identical copies of t, which
 * always cover it, are counted separately and taken off.
 */
function laterNonIdenticalSupersets(all: readonly Facts[], table: FactsTable): Uint8Array {
  const buckets = new Map<string, LaterMembers>();
  // First pass: each toleration's bucket, and the tolerationSeconds each bucket will ever hold
  // (the domain of its Fenwick tree; only a NoExecute bucket's are ever asked about).
  const bucketAt = all.map(({ bucket: id, seconds }) => {
    if (id === undefined) {
      return undefined;
    }
    let members = buckets.get(id);
    if (members === undefined) {
      members = { count: 0, unbounded: 0, seconds: undefined };
      buckets.set(id, members);
    }
    if (seconds !== undefined) {
      members.seconds ??= { values: [], tree: [] };
      members.seconds.values.push(seconds);
    }
    return members;
  });
  for (const { seconds } of buckets.values()) {
    if (seconds !== undefined) {
      seconds.values = [...new Set(seconds.values)].sort((a, b) => a - b);
      seconds.tree = new Array<number>(seconds.values.length + 1).fill(0);
    }
  }
  /** Per distinct toleration (Facts.n): how many copies come after position i. */
  const laterIdentical = new Uint32Array(table.distinct);

  /** 1 where a later non-identical toleration is a superset. */
  const answers = new Uint8Array(all.length);
  for (let i = all.length - 1; i >= 0; i--) {
    const facts = all[i];
    if (facts === undefined) {
      continue;
    }
    const seconds = facts.seconds;
    let covering = 0;
    const candidates = table.candidates(facts);
    for (let c = 0; c < candidates.length; c++) {
      const candidate = candidates[c] as Candidate;
      const members = buckets.get(candidate.bucket);
      if (members === undefined) {
        continue;
      }
      if (!candidate.bounded) {
        covering += members.count;
      } else {
        // A member without tolerationSeconds covers t; one with a value covers a bounded t up to it.
        covering += members.unbounded;
        if (seconds !== undefined && members.seconds !== undefined) {
          covering += members.count - members.unbounded - fenwickPrefix(members.seconds.tree, lowerBound(members.seconds.values, seconds));
        }
      }
    }
    const identical = laterIdentical[facts.n] ?? 0;
    if (facts.copiesAreCandidates) {
      covering -= identical;
    }
    answers[i] = covering > 0 ? 1 : 0;

    laterIdentical[facts.n] = identical + 1;
    const members = bucketAt[i];
    if (members !== undefined) {
      members.count++;
      if (seconds === undefined) {
        members.unbounded++;
      } else if (members.seconds !== undefined) {
        fenwickAdd(members.seconds.tree, lowerBound(members.seconds.values, seconds));
      }
    }
  }
  return answers;
}

/** The index of the first element of an ascending list that is ≥ `value` (binary search). */
function lowerBound(sorted: readonly number[], value: number): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((sorted[middle] ?? 0) < value) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Counts one more member at `index` (0-based) of a Fenwick tree. */
function fenwickAdd(tree: number[], index: number): void {
  for (let i = index + 1; i < tree.length; i += i & -i) {
    tree[i] = (tree[i] ?? 0) + 1;
  }
}

/** How many members a Fenwick tree holds at indices below `end`. */
function fenwickPrefix(tree: readonly number[], end: number): number {
  let sum = 0;
  for (let i = end; i > 0; i -= i & -i) {
    sum += tree[i] ?? 0;
  }
  return sum;
}
