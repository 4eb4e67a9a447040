/**
 * Which dedicated-node groups a pod reaches under a TenancyPolicy: by toleration (the own group's
 * taint, or other groups' taints) and by `spec.nodeName` (the groups of the named node). The
 * DedicatedNodes plugin (src/plugins/dedicated-nodes.ts) decides with these; they are kept apart
 * from it so the reach rules read, and are tested, without the admission plumbing around them.
 *
 * Group membership of a node: its `<nodeLabel>` label is G. For "is this another group's node" a
 * node carrying the dedicated taint `<taint.key>=H:<effect>` counts as H's as well, because the
 * taint is what keeps outsiders away and nodeName skips it; for "is this the tenant's own node"
 * only the label counts, because that is what the tenant's required affinity (which the kubelet
 * re-checks at admission) demands.
 */
import { clipText, spellOut } from '../api/text-bounds.js';
import type { Node, Taint, Toleration } from '../api/types.js';
import { toleratesTaint, type ComparisonOperatorGate } from '../tolerations/matching.js';
import type { TenancyPolicy } from './policy.js';
import { groupLabelValues, groupOfLabelValue } from './group-node-labels.js';

/** See toleratesOwnGroup. */
const comparisonOperatorsNotHonoured: ComparisonOperatorGate = { TaintTolerationComparisonOperators: false };

/**
 * ToleratesTaint (docs/kubernetes-rules.md#toleration-matching) for the group's own taint: does
 * the tenant carry a toleration that lets it onto its group's nodes?
 *
 * The comparison-operator gate is held off here whatever the cluster's gate says, so a `Gt`/`Lt`
 * toleration never counts as the group's toleration, as it never has: it is not the `Equal`
 * toleration the mutating side adds, and a scheduler with the gate off would not honour it. Under
 * any gate such a toleration reaches a numeric range of groups, which foreignGroupsTolerated
 * reports (refused outside an infrastructure namespace).
 */
export function toleratesOwnGroup(toleration: Toleration, taint: Taint): boolean {
  return toleratesTaint(toleration, taint, comparisonOperatorsNotHonoured);
}

/**
 * Whether `toleration` tolerates the dedicated taint `<key>=H:<effect>` of some group H other than
 * `ownGroup` ('' for a namespace of no group), following ToleratesTaint: an empty effect covers
 * every effect, an empty key every key (whatever the operator), `Exists` every value, `Equal` (or
 * no operator) its value. Returns what it tolerates, for the message, or undefined.
 *
 * `Gt`/`Lt` are judged as kube-scheduler judges them with TaintTolerationComparisonOperators on,
 * whatever the gate of the API server (and of this webhook) says. The gate is read by each
 * component from its own flags: during an upgrade, a rollback or a mere difference in flags the
 * API server may have it off while kube-scheduler has it on. With the API server's gate off, an
 * UPDATE of a pod that already uses `Gt`/`Lt` may still add one (the ratchet of
 * validate-tolerations.ts), and a scheduler with the gate on then matches it against every group
 * whose name is an integer in range: with groups named `2024`, `{key: dedicated, operator: Gt,
 * value: "0"}` lands on group 2024's nodes. Such a toleration is never needed for the own group
 * (the mutating side adds the `Equal` one, and toleratesOwnGroup never counts a comparison), so
 * refusing it costs a tenant nothing and closes the skew.
 */
export function foreignGroupsTolerated(toleration: Toleration, policy: TenancyPolicy, ownGroup: string): string | undefined {
  const { key, effect } = policy.taint;
  if (toleration.effect !== undefined && toleration.effect !== '' && toleration.effect !== effect) {
    return undefined;
  }
  if (toleration.key !== undefined && toleration.key !== '' && toleration.key !== key) {
    return undefined;
  }
  const operator = toleration.operator ?? '';
  switch (operator) {
    case 'Exists':
      return 'the dedicated taint of every group';
    case '':
    case 'Equal': {
      const value = toleration.value ?? '';
      // No group is named '' (it means "no group"), and the own group's taint is the point.
      return value === '' || value === ownGroup ? undefined : `the dedicated taint of group "${clipText(value)}"`;
    }
    case 'Gt':
    case 'Lt':
      // Every group whose name is an integer in its range, groups not yet created included, so it
      // cannot be shown harmless; and under any gate (see above).
      // The value is not echoed: it is the tenant's, of any length.
      return `the dedicated taints of a numeric range of groups (${operator}: every group named by an integer ${operator === 'Gt' ? 'greater' : 'less'} than its value, wherever kube-scheduler runs with TaintTolerationComparisonOperators on, whatever the API server's gate)`;
    default:
      // An unknown operator tolerates nothing (ToleratesTaint's default case).
      return undefined;
  }
}

/** The groups a node belongs to under `policy`: its label, and any dedicated taint it carries. */
export function nodeGroups(node: Node, policy: TenancyPolicy): { label: string | undefined; all: ReadonlySet<string> } {
  const value = node.metadata.labels?.[policy.nodeLabel];
  // A value of a group of several pools (spec.nodeLabelValues) is that group's.
  const label = value === undefined || value === '' ? value : groupOfLabelValue(policy, value);
  const all = new Set<string>();
  if (label !== undefined && label !== '') {
    all.add(label);
  }
  for (const taint of node.spec?.taints ?? []) {
    if (taint.key === policy.taint.key && taint.effect === policy.taint.effect && taint.value !== undefined && taint.value !== '') {
      all.add(taint.value);
    }
  }
  return { label, all };
}

/** A nodeName pointing at another group's node (`foreign`), or, for a tenant, outside its own group. */
export function nodeNameProblem(
  node: Node,
  policy: TenancyPolicy,
  ownGroup: string,
  isTenant: boolean,
  specPath: string,
): { foreign: boolean; message: string } | undefined {
  const groups = nodeGroups(node, policy);
  const others = [...groups.all].filter((group) => group !== ownGroup);
  if (others.length > 0) {
    return {
      foreign: true,
      message: `${specPath}.nodeName "${node.metadata.name}" is a node of group ${spellOut(others, (g) => `"${clipText(g)}"`, ', ', 'groups')} (policy "${policy.name}")`,
    };
  }
  if (isTenant && groups.label !== ownGroup) {
    return {
      foreign: false,
      message: `${specPath}.nodeName "${node.metadata.name}" is not a node of group "${ownGroup}" (it lacks the label ${groupLabelValues(
        policy,
        ownGroup,
      )
        .map((value) => `${policy.nodeLabel}=${value}`)
        .join(' or ')}, policy "${policy.name}"); tenants of the group may only run on its nodes`,
    };
  }
  return undefined;
}

/**
 * A nodeName naming no Node reaches every group: `nodeName` skips the scheduler, the kubelet's
 * admission checks only NoExecute taints, and a kubelet that registers under that name later
 * (names are predictable with cloud providers and autoscalers) runs the pod on its node whatever
 * its NoSchedule dedicated taint says.
 */
export function missingNodeProblem(nodeName: string, policy: TenancyPolicy, specPath: string): { foreign: true; message: string } {
  return {
    foreign: true,
    message: `${specPath}.nodeName "${clipText(nodeName)}" names no existing node; its dedicated-node group cannot be determined, and a node registering under that name would run the pod without its ${policy.taint.key}=<group>:${policy.taint.effect} taint applying (policy "${policy.name}")`,
  };
}
