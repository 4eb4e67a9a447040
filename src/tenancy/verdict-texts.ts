/**
 * What DedicatedNodes says when it refuses or warns, and the rule it judges a disputed namespace
 * by, shared with the audit (src/audit/audit-rules.ts), whose tenancy rules ask of a stored pod
 * the plugin's own questions and must answer them in the plugin's words: a finding names the
 * taint, toleration and requirement as the webhook's denial of the same pod would.
 *
 * The sentences around these parts differ on purpose: admission says what the request lacks, the
 * audit also what to do about a pod that already runs (recreate it, fix its workload).
 */
import { type Membership, type NamespaceGroups, type PolicySet } from './policy-set.js';
import type { TenancyPolicy } from './policy.js';
import { groupLabelValues } from './group-node-labels.js';

/**
 * The memberships a request or stored pod is judged under. A namespace the policies disagree on
 * (two groups) belongs to none of them: neither group can be trusted, so a toleration of any
 * group's taint is foreign, and no group's pair is required.
 */
export function judgedMemberships(set: PolicySet, groups: NamespaceGroups): readonly Membership[] {
  return groups.conflict === undefined ? groups.memberships : set.policies.map((policy) => ({ policy, group: '' }));
}

/** Where the namespace stands: its group, no group, or disputed (see judgedMemberships). */
export function namespaceStanding(namespace: string, group: string, conflict: boolean): string {
  if (conflict) return `namespace "${namespace}" is claimed by more than one group, so it is judged as belonging to none`;
  return group === '' ? `namespace "${namespace}" belongs to no group` : `namespace "${namespace}" belongs to group "${group}"`;
}

/** Why reaching another group's nodes is refused: the namespace's standing and the one exception. */
export function foreignReachRule(namespace: string, group: string, conflict: boolean): string {
  return `${namespaceStanding(namespace, group, conflict)}, and only an infrastructure namespace may reach other groups' nodes`;
}

/** The group's dedicated taint: `dedicated=gpu:NoSchedule`. */
export function groupTaintText(policy: TenancyPolicy, group: string): string {
  return `${policy.taint.key}=${group}:${policy.taint.effect}`;
}

/** Every group's dedicated taint, as a pattern: `dedicated=<group>:NoSchedule`. */
export function groupTaintPattern(policy: TenancyPolicy): string {
  return `${policy.taint.key}=<group>:${policy.taint.effect}`;
}

/** The toleration the mutating side adds, as a message shows it: `{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}`. */
export function groupTolerationText(policy: TenancyPolicy, group: string): string {
  return `{key: ${policy.taint.key}, operator: Equal, value: ${group}, effect: ${policy.taint.effect}}`;
}

/** The node requirement the mutating side ANDs into every required term: `dedicated In [gpu]`, or `pool In [pci-a, pci-b]`. */
export function groupRequirementText(policy: TenancyPolicy, group: string): string {
  return `${policy.nodeLabel} In [${groupLabelValues(policy, group).join(', ')}]`;
}

/** The group's nodes by their label: `dedicated=gpu`, or `pool=pci-a or pool=pci-b` for a group of several pools. */
export function groupNodesText(policy: TenancyPolicy, group: string): string {
  return groupLabelValues(policy, group)
    .map((value) => `${policy.nodeLabel}=${value}`)
    .join(' or ');
}

/** One toleration that reaches other groups' nodes: `spec.tolerations[3] tolerates the dedicated taint of group "b"`. */
export function foreignTolerationText(specPath: string, index: number, tolerated: string): string {
  return `${specPath}.tolerations[${index}] tolerates ${tolerated}`;
}

/** One place where a pod asks for nodes outside its group (tenancy/node-affinity.ts groupContradictions). */
export function contradictionText(contradiction: { readonly field: string; readonly detail: string }): string {
  return `${contradiction.field} ${contradiction.detail}`;
}
