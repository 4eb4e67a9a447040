/**
 * The group's node requirement `<nodeLabel> In [G]` and a pod spec's own scheduling constraints.
 *
 * Required node affinity is an OR of `nodeSelectorTerms`, each an AND of its `matchExpressions`
 * and `matchFields` (k8s.io/component-helpers/scheduling/corev1/nodeaffinity). Restricting a pod to
 * group G therefore means ANDing the requirement into every term: adding it as a new term would
 * only OR in one more way to schedule. A term with neither expressions nor fields matches no node
 * upstream (`NewNodeSelector` skips it), so ANDing into it changes nothing and it is left alone;
 * by the same reasoning it never lets the pod escape the group.
 *
 * All functions are pure; the mutating one returns a copy that shares every untouched part with
 * its input (same object identity), so the JSON Patch diff touches only what changed.
 */
import { describeRequirement } from '../api/node-selector-text.js';
import { clipText } from '../api/text-bounds.js';
import type { NodeSelectorRequirement, NodeSelectorTerm, PodSpec } from '../api/types.js';
import { integerBoundMatches } from '../scheduling/reference-node-affinity.js';

const termsPath = 'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms';
const preferredPath = 'affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution';

/**
 * The list an absent one reads as. Shared rather than `?? []` per term: a pod may hold a million
 * terms, and an empty list made for each was most of what judging them allocated.
 */
const none: readonly never[] = [];

/** The requirement a tenant of group G must carry in every required term: `<nodeLabel> In [<G's label values>]`. */
export function groupRequirement(nodeLabel: string, groupValues: readonly string[]): NodeSelectorRequirement {
  return { key: nodeLabel, operator: 'In', values: [...groupValues] };
}

/**
 * True when `requirement` admits only nodes of the group: an `In` on the label whose values are
 * all among the group's label values (`[G]`, G repeated, or some of a group's pools).
 */
function isGroupRequirement(requirement: NodeSelectorRequirement, nodeLabel: string, groupValues: readonly string[]): boolean {
  const values = requirement.values ?? none;
  if (requirement.key !== nodeLabel || requirement.operator !== 'In' || values.length === 0) return false;
  for (let i = 0; i < values.length; i++) {
    if (!groupValues.includes(values[i] as string)) return false;
  }
  return true;
}

/** A term that matches no node at all (no expressions, no fields). */
function matchesNothing(term: NodeSelectorTerm): boolean {
  return (term.matchExpressions ?? none).length === 0 && (term.matchFields ?? none).length === 0;
}

function termHoldsGroup(term: NodeSelectorTerm, nodeLabel: string, group: readonly string[]): boolean {
  if (matchesNothing(term)) return true;
  // A loop, not some() with a closure: a closure over the arguments makes V8 allocate a context
  // on every call, whether or not the closure is reached, and this runs once per term.
  const expressions = term.matchExpressions ?? none;
  for (let i = 0; i < expressions.length; i++) {
    if (isGroupRequirement(expressions[i] as NodeSelectorRequirement, nodeLabel, group)) return true;
  }
  return false;
}

/**
 * ANDs `<nodeLabel> In [G]` into every required term. No required affinity, or an empty list of
 * terms, gets one term holding just the requirement. Preferred terms, `matchFields` and every other
 * key stay as they are. Returns `spec` itself when nothing had to change.
 */
export function requireGroupInEveryTerm(
  spec: PodSpec,
  nodeLabel: string,
  group: string,
  groupValues: readonly string[] = [group],
): PodSpec {
  const requirement = groupRequirement(nodeLabel, groupValues);
  const affinity = spec.affinity;
  const nodeAffinity = affinity?.nodeAffinity;
  const required = nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  const terms = required?.nodeSelectorTerms ?? none;

  let newTerms: NodeSelectorTerm[];
  if (terms.length === 0) {
    newTerms = [{ matchExpressions: [requirement] }];
  } else {
    newTerms = terms.map((term) =>
      termHoldsGroup(term, nodeLabel, groupValues)
        ? term
        : { ...term, matchExpressions: [...(term.matchExpressions ?? none), requirement] },
    );
    if (newTerms.every((term, index) => term === terms[index])) {
      return spec;
    }
  }
  return {
    ...spec,
    affinity: {
      ...affinity,
      nodeAffinity: {
        ...nodeAffinity,
        requiredDuringSchedulingIgnoredDuringExecution: { ...required, nodeSelectorTerms: newTerms },
      },
    },
  };
}

/**
 * Where the required affinity lacks the requirement: the paths of terms without it, or the affinity
 * path itself when there is no required term at all. `prefix` is the path of the pod spec
 * (`spec` for a pod, `spec.template.spec` for a DaemonSet).
 */
export function missingGroupRequirement(
  spec: PodSpec,
  nodeLabel: string,
  group: string,
  prefix: string,
  groupValues: readonly string[] = [group],
): string[] {
  const terms = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? none;
  if (terms.length === 0) {
    return [`${prefix}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`];
  }
  const missing: string[] = [];
  for (let index = 0; index < terms.length; index++) {
    if (!termHoldsGroup(terms[index] ?? {}, nodeLabel, groupValues)) {
      missing.push(`${prefix}.${termsPath}[${index}]`);
    }
  }
  return missing;
}

export interface Contradiction {
  readonly field: string;
  readonly detail: string;
}

/**
 * The pod's own constraints that no node of group G can meet: a nodeSelector naming another value
 * for the label, or a required term whose expressions on the label exclude G. One such term is
 * enough (even when others are fine): the pod explicitly asked for another group's nodes, and
 * quietly dropping that alternative would change what the author wrote.
 *
 * A preferred term whose expressions on the label exclude G too. kube-scheduler only scores
 * preferences, so with the group's requirement such a preference is never met, but Karpenter
 * (pkg/scheduling/requirements.go, NewPodRequirements, at v1.14.1 and v1.15.0) first takes the
 * heaviest preferred term as required and intersects it with the required term: `In [other]`
 * with the group's `In [G]` leaves an `In` of no value, which its Requirement reads as
 * DoesNotExist, so every NodePool that does not define the label (a general pool) is compatible,
 * and it launched a node there for the tenant's pod, which then could not run on it. A preference
 * is relaxed only when the pod fits nowhere; here it fit.
 *
 * And a required term with neither expressions nor fields. kube-scheduler matches no node with it
 * (so requireGroupInEveryTerm leaves it alone), but Karpenter builds a pod's requirements from the
 * matchExpressions of its first term only, and tries the next only after removing that one
 * (Preferences.removeRequiredNodeAffinityTerm): an empty term is no constraint at all there, and
 * it launched a node of whatever NodePool comes first whose taints the pod tolerates, a general
 * one included, where kube-scheduler then would not put the pod.
 */
export function groupContradictions(
  spec: PodSpec,
  nodeLabel: string,
  group: string,
  prefix: string,
  groupValues: readonly string[] = [group],
): Contradiction[] {
  const contradictions: Contradiction[] = [];
  const selected = spec.nodeSelector?.[nodeLabel];
  if (selected !== undefined && !groupValues.includes(selected)) {
    contradictions.push({
      field: `${prefix}.nodeSelector`,
      detail: `selects ${nodeLabel}=${clipText(selected)}, not the namespace's group ${group}`,
    });
  }
  const terms = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? none;
  // The first empty term, and how many more: one entry however many (a pod may hold a million).
  let firstEmpty = -1;
  let moreEmpty = 0;
  for (let termIndex = 0; termIndex < terms.length; termIndex++) {
    if (matchesNothing(terms[termIndex] ?? {})) {
      if (firstEmpty === -1) firstEmpty = termIndex;
      else moreEmpty++;
      continue;
    }
    pushExcluding(
      contradictions,
      terms[termIndex]?.matchExpressions ?? none,
      nodeLabel,
      group,
      groupValues,
      prefix,
      termsPath,
      termIndex,
      '',
      '',
    );
  }
  if (firstEmpty !== -1) {
    contradictions.push({
      field: `${prefix}.${termsPath}[${firstEmpty}]`,
      detail: `is empty${moreEmpty > 0 ? ` (and ${moreEmpty} more terms)` : ''}: kube-scheduler matches no node with it, but Karpenter reads it as no constraint and would provision for the pod outside the group`,
    });
  }
  const preferred = spec.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? none;
  for (let termIndex = 0; termIndex < preferred.length; termIndex++) {
    // A hand-written manifest (audit, offline) may lack the preference the API server requires.
    const term = preferred[termIndex] as { preference?: NodeSelectorTerm } | undefined;
    pushExcluding(
      contradictions,
      term?.preference?.matchExpressions ?? none,
      nodeLabel,
      group,
      groupValues,
      prefix,
      preferredPath,
      termIndex,
      '.preference',
      ' (a preference Karpenter would provision for outside the group)',
    );
  }
  return contradictions;
}

/**
 * Adds each of a term's expressions on the label that excludes G, as
 * `<prefix>.<path>[<termIndex>]<rest>.matchExpressions[i]`. The field's parts come apart and are
 * joined only for a finding: a string built per term showed in the allocation of ordinary reviews.
 */
function pushExcluding(
  contradictions: Contradiction[],
  expressions: readonly NodeSelectorRequirement[],
  nodeLabel: string,
  group: string,
  groupValues: readonly string[],
  prefix: string,
  path: string,
  termIndex: number,
  rest: string,
  why: string,
): void {
  for (let index = 0; index < expressions.length; index++) {
    const requirement = expressions[index] as NodeSelectorRequirement;
    if (requirement.key === nodeLabel && !admitsAnyValue(requirement, groupValues)) {
      contradictions.push({
        field: `${prefix}.${path}[${termIndex}]${rest}.matchExpressions[${index}]`,
        detail: `${describeRequirement(requirement)} excludes the namespace's group ${group}${why}`,
      });
    }
  }
}

/** Whether some node of the group (labelled with one of its values) satisfies `requirement`. */
function admitsAnyValue(requirement: NodeSelectorRequirement, groupValues: readonly string[]): boolean {
  for (let i = 0; i < groupValues.length; i++) {
    if (admitsValue(requirement, groupValues[i] as string)) return true;
  }
  return false;
}

/**
 * Whether a node labelled with `value` satisfies `requirement` (labels.Requirement.Matches for node
 * selectors). Operators the API server would reject anyway are given the benefit of the doubt.
 */
function admitsValue(requirement: NodeSelectorRequirement, value: string): boolean {
  const values = requirement.values ?? [];
  switch (requirement.operator) {
    case 'In':
      return values.includes(value);
    case 'NotIn':
      return !values.includes(value);
    case 'Exists':
      return true;
    case 'DoesNotExist':
      return false;
    case 'Gt':
    case 'Lt':
      return integerBoundMatches(requirement.operator, value, values[0]);
    default:
      return true;
  }
}
