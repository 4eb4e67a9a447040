/**
 * The reference node-affinity matcher, one of a pair: a plain transcription of upstream, the
 * oracle of the property tests and what `tolerator simulate` judges with. Its twin, the compiled
 * matcher (./compiled-node-affinity.ts), answers the same for one pod against many nodes in time
 * the SchedulingWarnings budget can pay.
 *
 * The scheduler's NodeAffinity filter: does a node satisfy a pod's `spec.nodeSelector` and its
 * required node affinity? Read from k8s.io/component-helpers/scheduling/corev1/nodeaffinity
 * (`GetRequiredNodeAffinity`, `LazyErrorNodeSelector`) and k8s.io/apimachinery/pkg/labels
 * (`NewRequirement`, `Requirement.Matches`):
 *
 * - `nodeSelector` is `labels.SelectorFromSet`: every key present on the node with exactly that value.
 * - The required `nodeSelectorTerms` are ORed; inside a term, `matchExpressions` (on labels) and
 *   `matchFields` (on fields) are ANDed. A term with neither matches nothing, so a list made only
 *   of such terms (or an empty list) matches no node at all.
 * - A term whose requirements do not parse (unknown operator, wrong number of values, a Gt/Lt
 *   value that is not an int64, a bad key or value) is skipped: it matches no node.
 * - The only node field is `metadata.name`; a field selector on any other key sees "".
 *
 * Every answer carries a reason naming the term and requirement that failed, for a person.
 */
import { describeRequirement, unbounded } from '../api/node-selector-text.js';
import type { Node, NodeSelectorRequirement, NodeSelectorTerm, PodSpec } from '../api/types.js';
import { parseInt64 } from '../api/go-strconv.js';
import { isQualifiedName, isValidLabelValue } from '../validation/name-validation.js';

export interface AffinityVerdict {
  readonly matches: boolean;
  /** Why not, one entry per failing constraint (empty when it matches). */
  readonly reasons: readonly string[];
}

/** RequiredNodeAffinity.Match: the nodeSelector first, then the required terms. */
export function matchRequiredNodeAffinity(spec: PodSpec, node: Node): AffinityVerdict {
  const reasons: string[] = [];
  const labels = node.metadata.labels ?? {};
  for (const [key, value] of Object.entries(spec.nodeSelector ?? {})) {
    if (!Object.hasOwn(labels, key)) {
      reasons.push(`spec.nodeSelector requires the label ${key}=${value}; the node does not have ${key}`);
    } else if (labels[key] !== value) {
      reasons.push(`spec.nodeSelector requires the label ${key}=${value}; the node has ${key}=${labels[key] ?? ''}`);
    }
  }
  const required = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (required !== undefined) {
    // A hand-written manifest may omit the list the API would require; it then matches no node, as an empty list.
    const terms: unknown = required.nodeSelectorTerms;
    const termReasons = matchTerms(Array.isArray(terms) ? (terms as NodeSelectorTerm[]) : [], node);
    if (termReasons !== undefined) {
      reasons.push(termReasons);
    }
  }
  return { matches: reasons.length === 0, reasons };
}

/** Undefined when some term matches, else one reason that names why each term failed. */
function matchTerms(terms: readonly NodeSelectorTerm[], node: Node): string | undefined {
  if (terms.length === 0) {
    return 'required node affinity has no nodeSelectorTerms, so it matches no node';
  }
  const failures: string[] = [];
  for (const [index, term] of terms.entries()) {
    const failure = termFailure(term, node);
    if (failure === undefined) {
      return undefined;
    }
    failures.push(`nodeSelectorTerms[${index}]${failure}`);
  }
  const which = terms.length === 1 ? '' : ` matches none of its ${terms.length} terms (ORed)`;
  return `required node affinity${which}: ${failures.join('; ')}`;
}

/** Why one term does not match the node (starting with the requirement's path inside the term), or undefined when it does. */
export function termFailure(term: NodeSelectorTerm, node: Node): string | undefined {
  const expressions = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (expressions.length === 0 && fields.length === 0) {
    return ': an empty term matches no node';
  }
  // Parse errors are checked for the whole term first: upstream skips a term that does not parse.
  const parseErrors = [
    ...expressions.flatMap((requirement, i) =>
      labelRequirementErrors(requirement).map((error) => `.matchExpressions[${i}] is invalid: ${error}`),
    ),
    ...fields.flatMap((requirement, i) => fieldRequirementErrors(requirement).map((error) => `.matchFields[${i}] is invalid: ${error}`)),
  ];
  if (parseErrors.length > 0) {
    const more = parseErrors.length > 1 ? ` (and ${parseErrors.length - 1} more problems)` : '';
    return `${parseErrors[0] ?? ''}${more}; a term that does not parse matches no node`;
  }
  const labels = node.metadata.labels ?? {};
  for (const [i, requirement] of expressions.entries()) {
    if (!labelRequirementMatches(requirement, labels)) {
      const key = requirement.key;
      const actual = Object.hasOwn(labels, key) ? `the node has ${key}=${labels[key] ?? ''}` : `the node does not have ${key}`;
      return `.matchExpressions[${i}] (${describeRequirement(requirement, unbounded)}): ${actual}`;
    }
  }
  for (const [i, requirement] of fields.entries()) {
    const actual = fieldValue(node, requirement.key);
    const wanted = requirement.values?.[0] ?? '';
    const holds = requirement.operator === 'In' ? actual === wanted : actual !== wanted;
    if (!holds) {
      return `.matchFields[${i}] (${describeRequirement(requirement, unbounded)}): the node's ${requirement.key} is "${actual}"`;
    }
  }
  return undefined;
}

/** labels.NewRequirement's checks, in its order: key, then operator and value count, then values. */
function labelRequirementErrors(requirement: NodeSelectorRequirement): string[] {
  const errors: string[] = [];
  visitLabelRequirementErrors(requirement, (error) => errors.push(error()));
  return errors;
}

/**
 * The same checks, each problem reported as a function that builds its message. A caller that
 * needs only the first message and a count (./compiled-node-affinity.ts) then never builds the
 * others, which would quote every bad value of a list that may hold a hundred thousand.
 */
export function visitLabelRequirementErrors(requirement: NodeSelectorRequirement, report: (error: () => string) => void): void {
  // The object shape check lets an absent key through; Go reads it as "", which is no valid key.
  const key = (requirement.key as string | undefined) ?? '';
  for (const message of isQualifiedName(key)) report(() => `key ${JSON.stringify(key)}: ${message}`);
  const values = requirement.values ?? [];
  switch (requirement.operator) {
    case 'In':
    case 'NotIn':
      if (values.length === 0) report(() => "for 'in', 'notin' operators, values set can't be empty");
      break;
    case 'Exists':
    case 'DoesNotExist':
      if (values.length !== 0) report(() => 'values set must be empty for exists and does not exist');
      break;
    case 'Gt':
    case 'Lt':
      if (values.length !== 1) report(() => "for 'Gt', 'Lt' operators, exactly one value is required");
      for (const value of values) {
        if (parseInt64(value).value === undefined)
          report(() => `${JSON.stringify(value)}: for 'Gt', 'Lt' operators, the value must be an integer`);
      }
      break;
    default:
      report(() => `operator ${JSON.stringify(requirement.operator)} is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt`);
  }
  for (const value of values) {
    for (const message of isValidLabelValue(value)) {
      report(() => `value ${JSON.stringify(value)}: ${message}`);
    }
  }
}

/** nodeSelectorRequirementsAsFieldSelector: In or NotIn with exactly one value, nothing else. */
export function fieldRequirementErrors(requirement: NodeSelectorRequirement): string[] {
  if (requirement.operator !== 'In' && requirement.operator !== 'NotIn') {
    return [`operator ${JSON.stringify(requirement.operator)} is not one of In, NotIn`];
  }
  return (requirement.values ?? []).length === 1 ? [] : ['values must have one element'];
}

/** labels.Requirement.Matches. */
function labelRequirementMatches(requirement: NodeSelectorRequirement, labels: Readonly<Record<string, string>>): boolean {
  const present = Object.hasOwn(labels, requirement.key);
  const value = labels[requirement.key] ?? '';
  const values = requirement.values ?? [];
  switch (requirement.operator) {
    case 'In':
      return present && values.includes(value);
    case 'NotIn':
      // A node without the label satisfies NotIn.
      return !present || !values.includes(value);
    case 'Exists':
      return present;
    case 'DoesNotExist':
      return !present;
    case 'Gt':
    case 'Lt':
      return present && integerBoundMatches(requirement.operator, value, values[0]);
    default:
      return false;
  }
}

/**
 * labels.Requirement.Matches for `Gt` and `Lt`: both the label's value and the one bound go
 * through strconv.ParseInt(s, 10, 64), and a side that does not parse never matches.
 */
export function integerBoundMatches(operator: 'Gt' | 'Lt', value: string, bound: string | undefined): boolean {
  const label = parseInt64(value).value;
  const limit = parseInt64(bound ?? '').value;
  if (label === undefined || limit === undefined) {
    return false;
  }
  return operator === 'Gt' ? label > limit : label < limit;
}

/** extractNodeFields: a node has one selectable field, metadata.name; any other reads as "". */
function fieldValue(node: Node, key: string): string {
  return key === 'metadata.name' ? node.metadata.name : '';
}
