/**
 * SchedulingWarnings: admission warnings (never denials) from the nodes the cluster state holds —
 * a Gt/Lt toleration on a taint whose node values are not integers (it can never match), and a
 * pod that fits no current node (it would stay Pending with no error). Validating side, pod
 * CREATE only, and only when nodes are known: offline, with no node list, it says nothing.
 * The work is bounded by a fixed budget (schedulingWarningsBudget, derived where it is defined):
 * past it the warning says how many nodes were checked and that it stopped early.
 */
import { schedulingWarnings, schedulingWarningsBudget } from '../scheduling/scheduling-warnings.js';
import { isPodRequest, type ValidatingPlugin } from './plugin.js';

export function createSchedulingWarnings(): ValidatingPlugin {
  return {
    name: 'SchedulingWarnings',
    handles: (attributes) => isPodRequest(attributes) && attributes.operation === 'CREATE',
    validate(object, _attributes, context) {
      const nodes = context.nodes();
      if (nodes.length === 0) {
        return {};
      }
      const warnings = schedulingWarnings(object, nodes, context.gates, schedulingWarningsBudget);
      return warnings.length === 0 ? {} : { warnings };
    },
  } satisfies ValidatingPlugin;
}
