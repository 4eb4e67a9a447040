/**
 * Admission warnings about where a pod can go, from the nodes the webhook knows. Warnings, never
 * denials: the node list is a snapshot (nodes come and go, autoscalers add them on demand), so a
 * pod that fits nowhere now may well fit in a minute.
 *
 * (a) A `Gt`/`Lt` toleration on a key that nodes use with values that are not canonical integers
 *     tolerates none of those taints (matching requires a canonical int64 on both sides), which
 *     is almost always a mistake in the taint or the toleration.
 * (b) A pod that can be scheduled on no known node; for a tenant pod the message names its group,
 *     the usual cause being a group without (free) nodes.
 */
import type { Node, Pod } from '../api/types.js';
import type { ComparisonOperatorGate } from '../tolerations/matching.js';
import { parseCanonicalInt64 } from '../tolerations/numeric.js';
import { evaluatePlacement } from './placement.js';

export interface TenantGroup {
  readonly group: string;
  readonly nodeLabel: string;
}

/** How many nodes a warning lists by name before it only counts the rest. */
const nodesNamedInWarning = 5;

export function schedulingWarnings(pod: Pod, nodes: readonly Node[], gates: ComparisonOperatorGate, tenant?: TenantGroup): string[] {
  return [...nonIntegerTaintWarnings(pod, nodes), ...unschedulableWarnings(pod, nodes, gates, tenant)];
}

function nonIntegerTaintWarnings(pod: Pod, nodes: readonly Node[]): string[] {
  const warnings: string[] = [];
  for (const [index, toleration] of (pod.spec?.tolerations ?? []).entries()) {
    const operator = toleration.operator ?? '';
    const key = toleration.key ?? '';
    if ((operator !== 'Gt' && operator !== 'Lt') || key === '') {
      continue;
    }
    const offending: string[] = [];
    for (const node of nodes) {
      for (const taint of node.spec?.taints ?? []) {
        if (taint.key === key && parseCanonicalInt64(taint.value ?? '') === undefined) {
          offending.push(`${node.metadata.name} (${JSON.stringify(taint.value ?? '')})`);
        }
      }
    }
    if (offending.length > 0) {
      warnings.push(
        `spec.tolerations[${index}] (${key} ${operator} ${toleration.value ?? ''}): the taint ${key} has a value that is not a canonical integer on ${listNodes(offending)}; ${operator} never tolerates such a taint`,
      );
    }
  }
  return warnings;
}

function unschedulableWarnings(pod: Pod, nodes: readonly Node[], gates: ComparisonOperatorGate, tenant: TenantGroup | undefined): string[] {
  if (nodes.length === 0) {
    return [];
  }
  const pinnedTo = pod.spec?.nodeName ?? '';
  if (pinnedTo !== '' && !nodes.some((node) => node.metadata.name === pinnedTo)) {
    return [`spec.nodeName names node "${pinnedTo}", which is not among the ${nodes.length} known nodes`];
  }
  // The common answer, "fits somewhere", stops at the first node that fits; only a pod that fits
  // nowhere pays for evaluating every node to say why.
  if (nodes.some((node) => evaluatePlacement(pod, node, gates).schedulable)) {
    return [];
  }
  const placements = nodes.map((node) => evaluatePlacement(pod, node, gates));
  const why = placements.map((placement) => `${placement.node}: ${placement.reasons[0] ?? 'not schedulable'}`);
  const subject = tenant === undefined ? 'the pod' : `the pod (group "${tenant.group}", which runs only on nodes labelled ${tenant.nodeLabel}=${tenant.group})`;
  return [`${subject} cannot be scheduled on any of the ${nodes.length} known nodes: ${listNodes(why)}`];
}

function listNodes(entries: readonly string[]): string {
  const named = entries.slice(0, nodesNamedInWarning).join('; ');
  const rest = entries.length - nodesNamedInWarning;
  return rest > 0 ? `${named}; and ${rest} more` : named;
}
