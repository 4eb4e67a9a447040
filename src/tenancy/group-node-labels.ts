/**
 * A group whose nodes are several pools (docs/tenancy.md#a-group-of-several-node-pools):
 * `spec.nodeLabelValues: {pci: [pci-a, pci-b]}` says that the nodes of group pci carry
 * `<nodeLabel>=pci-a` or `<nodeLabel>=pci-b` (and the group's taint `<taint.key>=pci:<effect>`),
 * where without it a group's nodes carry `<nodeLabel>=<group>` itself.
 *
 * The group's requirement, ANDed into every required term, becomes `<nodeLabel> In [pci-a, pci-b]`:
 * one requirement of several values, still ANDed into every term, so every term still admits only
 * the group's nodes (adding one term per pool instead would OR them with the pod's own terms).
 * A requirement of the pod's own that names some of those values (`In [pci-a]`) keeps the pod
 * inside the group and counts as the group's requirement; one that names a value outside them
 * does not.
 *
 * A label value belongs to one group: the same value under two groups is a load error, and a
 * namespace whose group is a value another group names is undecided (the group's requirement
 * `In [that value]` would select the other group's nodes).
 */
import { clipText } from '../api/text-bounds.js';
import { isJsonObject } from '../api/types.js';
import { isValidLabelValue } from '../validation/name-validation.js';
import type { TenancyPolicy } from './policy.js';

export interface GroupNodeLabelValues {
  /** Group → the values of the node label its nodes carry (only the groups that name some). */
  readonly valuesByGroup: ReadonlyMap<string, readonly string[]>;
  /** Value → the group whose nodes carry it. */
  readonly groupByValue: ReadonlyMap<string, string>;
}

export const noGroupNodeLabelValues: GroupNodeLabelValues = { valuesByGroup: new Map(), groupByValue: new Map() };

/**
 * At most this many values per group: each is compared with each value of a pod's requirement on
 * the label, so the work per requirement value stays a small constant (a node pool is a few
 * values, not hundreds).
 */
export const maxLabelValuesPerGroup = 16;

/** Parses `spec.nodeLabelValues`: a mapping from a group to the node label values of its pools. */
export function parseGroupNodeLabelValues(
  value: unknown,
  report: (path: readonly string[], message: string) => void,
): GroupNodeLabelValues {
  if (value === undefined) {
    return noGroupNodeLabelValues;
  }
  if (!isJsonObject(value)) {
    report(['spec', 'nodeLabelValues'], 'must be a mapping of group to the node label values of its pools, e.g. {pci: [pci-a, pci-b]}');
    return noGroupNodeLabelValues;
  }
  const valuesByGroup = new Map<string, string[]>();
  const groupByValue = new Map<string, string>();
  for (const [group, values] of Object.entries(value)) {
    const at = ['spec', 'nodeLabelValues', group];
    for (const message of isValidLabelValue(group)) {
      report(at, `the group ${JSON.stringify(clipText(group, 63))} is not a valid group (a label value): ${message}`);
    }
    if (!Array.isArray(values) || values.length === 0 || values.length > maxLabelValuesPerGroup) {
      report(at, `must be a list of 1 to ${maxLabelValuesPerGroup} node label values`);
      continue;
    }
    const listed: string[] = [];
    for (const [index, labelValue] of values.entries()) {
      const path = [...at, String(index)];
      const problems = typeof labelValue === 'string' && labelValue !== '' ? isValidLabelValue(labelValue) : ['must be a non-empty string'];
      if (typeof labelValue !== 'string' || problems.length > 0) {
        report(path, `must be a node label value: ${problems.join('; ')}`);
        continue;
      }
      const owner = groupByValue.get(labelValue);
      if (owner !== undefined && owner !== group) {
        report(path, `the node label value "${labelValue}" is named by the groups "${owner}" and "${group}": a node belongs to one group`);
        continue;
      }
      groupByValue.set(labelValue, group);
      if (!listed.includes(labelValue)) listed.push(labelValue);
    }
    valuesByGroup.set(group, listed);
  }
  return { valuesByGroup, groupByValue };
}

/** The node label values of `group`'s nodes under `policy`: those `spec.nodeLabelValues` names, else the group itself. */
export function groupLabelValues(policy: TenancyPolicy, group: string): readonly string[] {
  return policy.nodeLabelValues.valuesByGroup.get(group) ?? [group];
}

/** The group a node labelled `<nodeLabel>=value` belongs to under `policy`. */
export function groupOfLabelValue(policy: TenancyPolicy, value: string): string {
  return policy.nodeLabelValues.groupByValue.get(value) ?? value;
}

/**
 * Why a namespace's group cannot be used under `policy`, or undefined: a group that is a node label
 * value another group names would require that group's nodes.
 */
export function groupLabelConflict(policy: TenancyPolicy, group: string): string | undefined {
  const owner = policy.nodeLabelValues.groupByValue.get(group);
  return owner !== undefined && owner !== group && !policy.nodeLabelValues.valuesByGroup.has(group)
    ? `the group "${clipText(group, 63)}" is a node label value of group "${owner}" (spec.nodeLabelValues): its requirement ${policy.nodeLabel} In [${clipText(group, 63)}] would select group "${owner}"'s nodes`
    : undefined;
}
