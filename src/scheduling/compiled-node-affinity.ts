/**
 * The compiled node-affinity matcher, the twin of the reference matcher (./reference-node-affinity.ts,
 * which states the rules): the scheduler's NodeAffinity filter for one pod
 * against many nodes: the pod's `nodeSelector` and required terms are read and checked once, into
 * indexes, so that each node then costs O(its labels + the index entries its labels reach) rather
 * than O(the pod's terms × expressions × values). matchRequiredNodeAffinity stays the plain
 * transcription of upstream; this file must agree with it, which
 * test/scheduling/compiled-placement.test.ts checks on generated pods and nodes.
 *
 * How a node is matched against all terms at once. A term is a conjunction; sort its requirements
 * into positive ones (In, Exists, Gt, Lt, a field In: each needs the node to have something) and
 * negative ones (NotIn, DoesNotExist, a field NotIn: each is broken only by what the node has).
 * Index both by label key (and value). For a node, every label looks up the negative entries it
 * breaks (marking those terms broken), then the positive entries it satisfies (counting them per
 * term). A term matches when it is not broken and its count reaches its number of positive
 * requirements — a term with none matches unless broken. Nothing is visited for a requirement the
 * node's labels do not reach, which is what makes a term list of any length cheap per node.
 *
 * The values of In and NotIn requirements are indexed only when some node the pod will be asked
 * about carries them (`universe`): a list of 300,000 values against nodes that carry a few
 * thousand distinct values then costs 300,000 look-ups in a small set instead of 300,000
 * insertions into a large map, which measured five to ten times as slow. A value no node of the
 * universe carries can decide nothing for them. So only nodes of the universe may be asked about.
 *
 * Every step is paid for from the WorkBudget, reading the pod as well as visiting nodes: a pod of
 * 3 MiB can hold a million terms or 330,000 nodeSelector entries, whose compilation alone took
 * seconds while it was not counted (bench/RESULTS.md). A compilation the budget cannot pay for
 * covers no node (`covered` 0: nothing is worked out); a method answers `undefined` when the
 * budget ran out.
 */
import { describeRequirement } from '../api/node-selector-text.js';
import type { Node, NodeSelectorRequirement, NodeSelectorTerm, PodSpec } from '../api/types.js';
import { parseInt64 } from '../api/go-strconv.js';
import { fieldRequirementErrors, visitLabelRequirementErrors } from './reference-node-affinity.js';
import { clip, maxReasonChars, warningBounds } from './warning-text.js';
import type { WorkBudget } from './work-budget.js';

type LabelOperator = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt';

interface LabelRequirement {
  readonly source: NodeSelectorRequirement;
  readonly operator: LabelOperator;
  readonly key: string;
  /** Gt, Lt: the bound (a term only parses when it is an int64). */
  readonly bound: bigint;
  /** Its number in the index, set when the term is indexed (In and NotIn look their values up there). */
  id: number;
}

interface FieldRequirement {
  readonly source: NodeSelectorRequirement;
  readonly operator: 'In' | 'NotIn';
  readonly key: string;
  readonly value: string;
}

interface CompiledTerm {
  /** Set for a term that matches no node whatever the node (empty, or does not parse): why, after `nodeSelectorTerms[i]`. */
  readonly failure?: string;
  readonly expressions: readonly LabelRequirement[];
  readonly fields: readonly FieldRequirement[];
}

/**
 * The ids of the requirements a value reaches, in ascending order: one number for the usual single
 * requirement (a hundred thousand values then cost no array each), a list for more.
 */
type Ids = number | number[];

/** Index entries of one label key: requirement ids. */
interface KeyEntries {
  readonly inByValue: Map<string, Ids>;
  readonly notInByValue: Map<string, Ids>;
  readonly exists: number[];
  readonly doesNotExist: number[];
  /** Gt requirements by ascending bound (a label passes a prefix), Lt by descending. */
  readonly gt: { bound: bigint; id: number }[];
  readonly lt: { bound: bigint; id: number }[];
}

/** What a failed check reads as when the budget ran out before it could be explained. */
export const unexplained = 'not explained: the webhook stopped early (work limit)';

export interface CompiledNodeAffinity {
  /**
   * How many nodes of the universe, from its start, the index covers: all of them, unless the
   * budget ran out while their labels were read. Only those may be asked about.
   */
  readonly covered: number;
  /** matchRequiredNodeAffinity(spec, node).matches, or undefined when the budget ran out. */
  matches(node: Node, budget: WorkBudget): boolean | undefined;
  /**
   * matchRequiredNodeAffinity(spec, node).reasons[0], with long strings clipped and at most
   * maxReasonChars of term failures; undefined when the node matches; `unexplained` when the
   * budget ran out.
   */
  firstReason(node: Node, budget: WorkBudget): string | undefined;
}

const nodeNameField = 'metadata.name';

/**
 * Compiles `spec` for the nodes of `universe` (those it will be asked about). Reading their labels
 * for the values they carry is paid from `budget`, node by node; `covered` says how far it got.
 */
export function compileNodeAffinity(spec: PodSpec, universe: readonly Node[], budget: WorkBudget): CompiledNodeAffinity {
  const selector = compileNodeSelector(spec.nodeSelector ?? {}, budget);
  if (selector === undefined) return coversNothing;
  const required = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (required === undefined) {
    return {
      covered: universe.length,
      matches: (node, nodeBudget) => selector.matches(labelsOf(node), nodeBudget),
      firstReason: (node, nodeBudget) => selector.firstFailure(labelsOf(node), nodeBudget),
    };
  }
  // A hand-written manifest may omit the list the API would require; it then matches no node, as an empty list.
  const listed: unknown = required.nodeSelectorTerms;
  const terms = compileTerms(Array.isArray(listed) ? (listed as NodeSelectorTerm[]) : [], budget);
  if (terms === undefined) return coversNothing;
  const { known, covered } = knownValues(terms, universe, budget);
  const index = indexTerms(terms, known);
  return {
    covered,
    matches(node, budget) {
      const labels = labelsOf(node);
      const selected = selector.matches(labels, budget);
      if (selected !== true) return selected;
      return index.matches(node, labels, budget);
    },
    firstReason(node, budget) {
      const labels = labelsOf(node);
      const selected = selector.firstFailure(labels, budget);
      if (selected !== undefined) return selected;
      if (terms.length === 0) return 'required node affinity has no nodeSelectorTerms, so it matches no node';
      const matched = index.matches(node, labels, budget);
      if (matched === undefined) return unexplained;
      if (matched) return undefined;
      const which = terms.length === 1 ? '' : ` matches none of its ${terms.length} terms (ORed)`;
      let reason = `required node affinity${which}: `;
      for (const [i, term] of terms.entries()) {
        const failure = index.failure(term, node, labels, budget);
        if (failure === null) return unexplained;
        // The index said no term matches; a term that does match here would be a disagreement, and
        // the plain evaluation, which is upstream's, decides.
        if (failure === undefined) return undefined;
        const part = `${i === 0 ? '' : '; '}nodeSelectorTerms[${i}]${failure}`;
        if (i > 0 && reason.length + part.length > maxReasonChars) {
          return `${reason}; …(${terms.length - i} more terms)`;
        }
        reason += part;
      }
      return reason;
    },
  };
}

function labelsOf(node: Node): Readonly<Record<string, string>> {
  return node.metadata.labels ?? {};
}

/** A pod the budget could not compile: no node may be asked about. */
const coversNothing: CompiledNodeAffinity = { covered: 0, matches: () => undefined, firstReason: () => unexplained };

// ---- nodeSelector ------------------------------------------------------------------------------

interface CompiledSelector {
  matches(labels: Readonly<Record<string, string>>, budget: WorkBudget): boolean | undefined;
  firstFailure(labels: Readonly<Record<string, string>>, budget: WorkBudget): string | undefined;
}

/**
 * labels.SelectorFromSet: every key present with exactly that value. A node's labels are looked up
 * in the nodeSelector itself (a hash table already: the parsed object), so a node costs O(its
 * labels) and nothing is built per entry: the entries are counted once, a unit each. All are
 * satisfied exactly when the node's labels satisfy as many entries as there are; the first one
 * not satisfied (in the nodeSelector's order) comes after at most as many satisfied ones as the
 * node has labels. Undefined when the budget cannot pay for the count.
 */
function compileNodeSelector(nodeSelector: Readonly<Record<string, string>>, budget: WorkBudget): CompiledSelector | undefined {
  // Object.keys is the cheapest way through a large object (V8 collects the keys of one in
  // dictionary mode before any enumeration, for…in included), and nothing else here needs all of them.
  const keys = Object.keys(nodeSelector);
  if (!budget.take(keys.length)) return undefined;
  const satisfiedBy = (labels: Readonly<Record<string, string>>, key: string): boolean =>
    Object.hasOwn(labels, key) && labels[key] === nodeSelector[key];
  const satisfied = (labels: Readonly<Record<string, string>>, budget: WorkBudget): number | undefined => {
    if (keys.length === 0) return 0;
    const names = Object.keys(labels);
    if (!budget.take(names.length)) return undefined;
    let count = 0;
    for (const name of names) if (Object.hasOwn(nodeSelector, name) && nodeSelector[name] === labels[name]) count++;
    return count;
  };
  return {
    matches(labels, budget) {
      const count = satisfied(labels, budget);
      return count === undefined ? undefined : count === keys.length;
    },
    firstFailure(labels, budget) {
      const count = satisfied(labels, budget);
      if (count === undefined) return unexplained;
      if (count === keys.length) return undefined;
      // At most `count` satisfied entries come before the first that is not.
      if (!budget.take(count + 1)) return unexplained;
      const key = keys.find((candidate) => !satisfiedBy(labels, candidate)) ?? '';
      const value = nodeSelector[key] ?? '';
      const has = Object.hasOwn(labels, key)
        ? `the node has ${clip(key)}=${clip(labels[key] ?? '')}`
        : `the node does not have ${clip(key)}`;
      return `spec.nodeSelector requires the label ${clip(key)}=${clip(value)}; ${has}`;
    },
  };
}

// ---- required terms ----------------------------------------------------------------------------

/** Every empty term compiles to this one (a million of them fit in a pod). */
const emptyTerm: CompiledTerm = { failure: ': an empty term matches no node', expressions: [], fields: [] };

/**
 * compileTerm for each term, paid from the budget: a unit per term, and per requirement a unit and
 * one per value (each value is checked, and In/NotIn values are looked up later). Undefined when
 * the budget runs out.
 */
function compileTerms(terms: readonly NodeSelectorTerm[], budget: WorkBudget): CompiledTerm[] | undefined {
  if (!budget.take(terms.length)) return undefined;
  const compiled = new Array<CompiledTerm>(terms.length);
  // Indexed loops and a shared empty list: per term, an iterator or a `?? []` made for each of a
  // million terms was most of what compiling them allocated.
  for (let t = 0; t < terms.length; t++) {
    const term = terms[t] ?? {};
    const expressions = term.matchExpressions ?? none;
    const fields = term.matchFields ?? none;
    let units = expressions.length + fields.length;
    for (let r = 0; r < expressions.length; r++) units += expressions[r]?.values?.length ?? 0;
    for (let r = 0; r < fields.length; r++) units += fields[r]?.values?.length ?? 0;
    if (!budget.take(units)) return undefined;
    compiled[t] = units === 0 ? emptyTerm : compileTerm(term);
  }
  return compiled;
}

const none: readonly never[] = [];

function compileTerm(term: NodeSelectorTerm): CompiledTerm {
  const expressions = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (expressions.length === 0 && fields.length === 0) {
    return emptyTerm;
  }
  // Parse errors are checked for the whole term first: upstream skips a term that does not parse.
  // Only the first message is built; the others are counted.
  let first: (() => string) | undefined;
  let firstPath = '';
  let problems = 0;
  for (const [i, requirement] of expressions.entries()) {
    visitLabelRequirementErrors(requirement, (error) => {
      if (first === undefined) {
        first = error;
        firstPath = `.matchExpressions[${i}]`;
      }
      problems++;
    });
  }
  for (const [i, requirement] of fields.entries()) {
    for (const error of fieldRequirementErrors(requirement)) {
      if (first === undefined) {
        first = () => error;
        firstPath = `.matchFields[${i}]`;
      }
      problems++;
    }
  }
  if (first !== undefined) {
    const more = problems > 1 ? ` (and ${problems - 1} more problems)` : '';
    // Half a reason for the message (which may quote a long value), the rest for the path and count.
    return {
      failure: `${firstPath} is invalid: ${clip(first(), maxReasonChars / 2)}${more}; a term that does not parse matches no node`,
      expressions: [],
      fields: [],
    };
  }
  return {
    expressions: expressions.map((source) => ({
      source,
      operator: source.operator as LabelOperator,
      key: source.key,
      bound: source.operator === 'Gt' || source.operator === 'Lt' ? (parseInt64(source.values?.[0] ?? '').value ?? 0n) : 0n,
      id: -1,
    })),
    fields: fields.map((source) => ({
      source,
      operator: source.operator as 'In' | 'NotIn',
      key: source.key,
      value: source.values?.[0] ?? '',
    })),
  };
}

/** extractNodeFields: a node has one selectable field, metadata.name; any other reads as "". */
function fieldValue(node: Node, key: string): string {
  return key === nodeNameField ? node.metadata.name : '';
}

function fieldHolds(requirement: FieldRequirement, node: Node): boolean {
  const actual = fieldValue(node, requirement.key);
  return requirement.operator === 'In' ? actual === requirement.value : actual !== requirement.value;
}

/** The requirement in a reason, within a warning's bounds (src/scheduling/warning-text.ts). */
function describe(requirement: NodeSelectorRequirement): string {
  return `(${describeRequirement(requirement, warningBounds)})`;
}

function includes(ids: Ids | undefined, id: number): boolean {
  if (ids === undefined) return false;
  if (typeof ids === 'number') return ids === id;
  // Ascending: ids are handed out in order and each requirement adds its own at once.
  let low = 0;
  let high = ids.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    const at = ids[middle] ?? Infinity;
    if (at === id) return true;
    if (at < id) low = middle + 1;
    else high = middle;
  }
  return false;
}

function forEachId(ids: Ids | undefined, visit: (id: number) => void): void {
  if (ids === undefined) return;
  if (typeof ids === 'number') visit(ids);
  else for (const id of ids) visit(id);
}

function countOf(ids: Ids | undefined): number {
  return ids === undefined ? 0 : typeof ids === 'number' ? 1 : ids.length;
}

interface TermIndex {
  matches(node: Node, labels: Readonly<Record<string, string>>, budget: WorkBudget): boolean | undefined;
  /**
   * termFailure of ./reference-node-affinity.ts on a compiled term: why it does not match (after
   * `nodeSelectorTerms[i]`), undefined when it matches, null when the budget ran out. Pays one
   * unit per requirement looked at.
   */
  failure(term: CompiledTerm, node: Node, labels: Readonly<Record<string, string>>, budget: WorkBudget): string | undefined | null;
}

/**
 * The values the nodes of the universe carry, for the keys that In and NotIn requirements name:
 * from the first node on, as far as the budget goes (one unit per label or key looked at).
 */
function knownValues(
  terms: readonly CompiledTerm[],
  universe: readonly Node[],
  budget: WorkBudget,
): { known: Map<string, Set<string>>; covered: number } {
  const keys = new Set<string>();
  for (let t = 0; t < terms.length; t++) {
    const expressions = (terms[t] as CompiledTerm).expressions;
    for (let r = 0; r < expressions.length; r++) {
      const requirement = expressions[r] as LabelRequirement;
      if (requirement.operator === 'In' || requirement.operator === 'NotIn') keys.add(requirement.key);
    }
  }
  const known = new Map<string, Set<string>>();
  if (keys.size === 0) return { known, covered: universe.length };
  const note = (key: string, value: string): void => {
    let values = known.get(key);
    if (values === undefined) {
      values = new Set();
      known.set(key, values);
    }
    values.add(value);
  };
  let covered = 0;
  for (const node of universe) {
    const labels = labelsOf(node);
    const names = Object.keys(labels);
    // Whichever is shorter: the node's labels, or the keys the requirements name.
    if (!budget.take(1 + Math.min(names.length, keys.size))) break;
    if (names.length <= keys.size) {
      for (const key of names) if (keys.has(key)) note(key, labels[key] ?? '');
    } else {
      for (const key of keys) if (Object.hasOwn(labels, key)) note(key, labels[key] ?? '');
    }
    covered++;
  }
  return { known, covered };
}

function indexTerms(terms: readonly CompiledTerm[], known: ReadonlyMap<string, ReadonlySet<string>>): TermIndex {
  const byKey = new Map<string, KeyEntries>();
  const entriesFor = (key: string): KeyEntries => {
    let entries = byKey.get(key);
    if (entries === undefined) {
      entries = { inByValue: new Map(), notInByValue: new Map(), exists: [], doesNotExist: [], gt: [], lt: [] };
      byKey.set(key, entries);
    }
    return entries;
  };
  const add = (map: Map<string, Ids>, value: string, id: number): void => {
    const ids = map.get(value);
    if (ids === undefined) map.set(value, id);
    else if (typeof ids === 'number') {
      // The same value twice in one requirement reaches it once.
      if (ids !== id) map.set(value, [ids, id]);
    } else if (ids.at(-1) !== id) ids.push(id);
  };
  const nameIn = new Map<string, Ids>();
  const nameNotIn = new Map<string, Ids>();
  /** Per requirement id: its term. */
  const termOf: number[] = [];
  /** Per term: how many positive requirements it has; -1 for a term that can match no node. */
  const positives: number[] = [];

  for (let termId = 0; termId < terms.length; termId++) {
    const term = terms[termId] as CompiledTerm;
    // An empty term (most of a pod of a million) matches no node and files nothing.
    if (term === emptyTerm) {
      positives.push(-1);
      continue;
    }
    // A field other than metadata.name reads "" on every node: its requirement is settled here.
    // One that never holds makes the term match no node.
    const live =
      term.failure === undefined &&
      !term.fields.some((field) => field.key !== nodeNameField && (field.operator === 'In' ? field.value !== '' : field.value === ''));
    let count = 0;
    for (const requirement of term.expressions) {
      const id = termOf.length;
      termOf.push(termId);
      requirement.id = id;
      const entries = entriesFor(requirement.key);
      /** The values nodes carry under this key: no other value can reach the requirement. */
      const carried = known.get(requirement.key);
      // In and NotIn values are indexed even for a term that cannot match: its reason looks them up.
      switch (requirement.operator) {
        case 'In':
          if (carried !== undefined)
            for (const value of requirement.source.values ?? []) if (carried.has(value)) add(entries.inByValue, value, id);
          count++;
          break;
        case 'NotIn':
          if (carried !== undefined)
            for (const value of requirement.source.values ?? []) if (carried.has(value)) add(entries.notInByValue, value, id);
          break;
        case 'Exists':
          if (live) entries.exists.push(id);
          count++;
          break;
        case 'DoesNotExist':
          if (live) entries.doesNotExist.push(id);
          break;
        case 'Gt':
          if (live) entries.gt.push({ bound: requirement.bound, id });
          count++;
          break;
        case 'Lt':
          if (live) entries.lt.push({ bound: requirement.bound, id });
          count++;
          break;
      }
    }
    for (const field of term.fields) {
      if (field.key !== nodeNameField || !live) continue;
      const id = termOf.length;
      termOf.push(termId);
      if (field.operator === 'In') {
        add(nameIn, field.value, id);
        count++;
      } else {
        add(nameNotIn, field.value, id);
      }
    }
    positives.push(live ? count : -1);
  }
  for (const entries of byKey.values()) {
    entries.gt.sort((a, b) => (a.bound < b.bound ? -1 : a.bound > b.bound ? 1 : 0));
    entries.lt.sort((a, b) => (a.bound > b.bound ? -1 : a.bound < b.bound ? 1 : 0));
  }
  const anyLive = positives.some((count) => count >= 0);
  const withoutPositives = positives.filter((count) => count === 0).length;

  // Per-node scratch, reused: an entry is current only when its stamp is this node's.
  const counted = new Int32Array(terms.length);
  const counts = new Int32Array(terms.length);
  const broken = new Int32Array(terms.length);
  let stamp = 0;

  /** labels.Requirement.Matches, on a requirement that parsed. */
  const holds = (requirement: LabelRequirement, labels: Readonly<Record<string, string>>): boolean => {
    const present = Object.hasOwn(labels, requirement.key);
    const value = labels[requirement.key] ?? '';
    switch (requirement.operator) {
      case 'In':
        return present && includes(byKey.get(requirement.key)?.inByValue.get(value), requirement.id);
      case 'NotIn':
        // A node without the label satisfies NotIn.
        return !present || !includes(byKey.get(requirement.key)?.notInByValue.get(value), requirement.id);
      case 'Exists':
        return present;
      case 'DoesNotExist':
        return !present;
      case 'Gt':
      case 'Lt': {
        // Both sides go through strconv.ParseInt(s, 10, 64): a label that does not parse never matches.
        const label = present ? parseInt64(value).value : undefined;
        if (label === undefined) return false;
        return requirement.operator === 'Gt' ? label > requirement.bound : label < requirement.bound;
      }
    }
  };

  return {
    failure(term, node, labels, budget) {
      if (term.failure !== undefined) return term.failure;
      for (const [i, requirement] of term.expressions.entries()) {
        if (!budget.take(1)) return null;
        if (!holds(requirement, labels)) {
          const key = requirement.key;
          const actual = Object.hasOwn(labels, key)
            ? `the node has ${clip(key)}=${clip(labels[key] ?? '')}`
            : `the node does not have ${clip(key)}`;
          return `.matchExpressions[${i}] ${describe(requirement.source)}: ${actual}`;
        }
      }
      for (const [i, requirement] of term.fields.entries()) {
        if (!budget.take(1)) return null;
        if (!fieldHolds(requirement, node)) {
          return `.matchFields[${i}] ${describe(requirement.source)}: the node's ${clip(requirement.key)} is "${clip(fieldValue(node, requirement.key))}"`;
        }
      }
      return undefined;
    },

    matches(node, labels, budget) {
      if (!anyLive) return false;
      stamp++;
      const current = stamp;
      let brokenWithoutPositives = 0;
      const breakTerm = (id: number): void => {
        const term = termOf[id] ?? 0;
        if (broken[term] === current) return;
        broken[term] = current;
        if (positives[term] === 0) brokenWithoutPositives++;
      };
      const breakAll = (ids: Ids | undefined): boolean => {
        if (!budget.take(countOf(ids))) return false;
        forEachId(ids, breakTerm);
        return true;
      };
      /** Counts one satisfied positive requirement; true when that completes an unbroken term. */
      const satisfy = (id: number): boolean => {
        const term = termOf[id] ?? 0;
        if (broken[term] === current) return false;
        if (counted[term] !== current) {
          counted[term] = current;
          counts[term] = 0;
        }
        const count = (counts[term] ?? 0) + 1;
        counts[term] = count;
        return count === positives[term];
      };
      /** 'found' when some term is complete, 'out' when the budget ran out. */
      const satisfyAll = (ids: Ids | undefined): 'found' | 'more' | 'out' => {
        if (!budget.take(countOf(ids))) return 'out';
        if (ids === undefined) return 'more';
        let found = false;
        for (const id of typeof ids === 'number' ? [ids] : ids) found = satisfy(id) || found;
        return found ? 'found' : 'more';
      };

      const keys = Object.keys(labels);
      // Two passes over the labels: everything that breaks a term first, so that a term counted
      // complete in the second pass is known to match.
      if (!budget.take(2 * keys.length + 2)) return undefined;
      if (!breakAll(nameNotIn.get(node.metadata.name))) return undefined;
      for (const key of keys) {
        const entries = byKey.get(key);
        if (entries === undefined) continue;
        if (!breakAll(entries.doesNotExist) || !breakAll(entries.notInByValue.get(labels[key] ?? ''))) return undefined;
      }
      if (withoutPositives - brokenWithoutPositives > 0) return true;
      const byName = satisfyAll(nameIn.get(node.metadata.name));
      if (byName !== 'more') return byName === 'found' ? true : undefined;
      for (const key of keys) {
        const entries = byKey.get(key);
        if (entries === undefined) continue;
        const value = labels[key] ?? '';
        for (const ids of [entries.exists, entries.inByValue.get(value)]) {
          const outcome = satisfyAll(ids);
          if (outcome !== 'more') return outcome === 'found' ? true : undefined;
        }
        if (entries.gt.length > 0 || entries.lt.length > 0) {
          const label = parseInt64(value).value;
          if (label === undefined) continue;
          // Gt holds for a label strictly above the bound, Lt strictly below: a prefix of each sorted list.
          for (const { bound, id } of entries.gt) {
            if (!(label > bound)) break;
            if (!budget.take(1)) return undefined;
            if (satisfy(id)) return true;
          }
          for (const { bound, id } of entries.lt) {
            if (!(label < bound)) break;
            if (!budget.take(1)) return undefined;
            if (satisfy(id)) return true;
          }
        }
      }
      return false;
    },
  };
}
