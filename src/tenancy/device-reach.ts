/**
 * Which groups' devices a device toleration or a DeviceTaintRule reaches, under a policy's
 * `spec.deviceTaint` (src/tenancy/device-policy.ts). The device twin of group-reach.ts, judged by
 * the device rules rather than the pod rules:
 *
 * - a device toleration matches a taint by `ToleratesTaint` of
 *   staging/src/k8s.io/dynamic-resource-allocation/resourceclaim/devicetoleration.go (v1.36.3,
 *   v1.37.2): an empty effect matches every effect, an empty key every key whatever the operator
 *   (so `{operator: Equal, value: b}` with no key tolerates `<key>=b`: the API server accepts an
 *   empty key with `Equal` for devices, unlike for pods), `Exists` every value, `Equal` its value.
 *   There is no `Gt`/`Lt` for devices (the API server refuses them, whatever
 *   TaintTolerationComparisonOperators says), and an unknown operator tolerates nothing;
 * - an empty effect counts as reaching the group even when the group's taint is NoExecute: the
 *   allocator hands such a claim the device (the eviction controller then deletes the pod, but it
 *   has run on the group's device meanwhile).
 */
import { ownField, stringField } from '../api/json-fields.js';
import { clipText } from '../api/text-bounds.js';
import type { DeviceToleration } from '../tolerations/device-tolerations.js';
import { alwaysPlatformGroup, type DeviceGroupTaint } from './device-policy.js';

/**
 * Whether `toleration` tolerates the device taint `<key>=H:<effect>` of some group H other than
 * `ownGroup` ('' for a namespace of no group): what it tolerates, for the message, or undefined.
 */
export function foreignDeviceGroupsTolerated(
  toleration: DeviceToleration,
  deviceTaint: DeviceGroupTaint,
  ownGroup: string,
): string | undefined {
  const effect = toleration.effect ?? '';
  if (effect !== '' && effect !== deviceTaint.effect) return undefined;
  const key = toleration.key ?? '';
  if (key !== '' && key !== deviceTaint.key) return undefined;
  switch (toleration.operator ?? '') {
    case 'Exists':
      return 'the device taint of every group';
    case '':
    case 'Equal': {
      const value = toleration.value ?? '';
      // No group is named '' (it means "no group"), and the own group's taint is the point.
      return value === '' || value === ownGroup ? undefined : `the device taint of group "${clipText(value)}"`;
    }
    default:
      return undefined;
  }
}

/** The device taint of every group, as a message shows it: `gpu.example.com/dedicated=<group>:NoSchedule`. */
export function deviceTaintPattern(deviceTaint: DeviceGroupTaint): string {
  return `${deviceTaint.key}=<group>:${deviceTaint.effect}`;
}

/** The toleration a tenant claim of group G writes: `{key: gpu.example.com/dedicated, operator: Equal, value: G, effect: NoSchedule}`. */
export function deviceGroupTolerationText(deviceTaint: DeviceGroupTaint, group: string): string {
  return `{key: ${deviceTaint.key}, operator: Equal, value: ${group}, effect: ${deviceTaint.effect}}`;
}

/** Whether the requester is a platform identity for DeviceTaintRules: in system:masters or one of the policy's platformGroups. */
export function isPlatformIdentity(groups: readonly string[] | undefined, deviceTaint: DeviceGroupTaint): boolean {
  for (const group of groups ?? []) {
    if (group === alwaysPlatformGroup || deviceTaint.platformGroups.includes(group)) return true;
  }
  return false;
}

const own = ownField;
const text = stringField;

/**
 * How a DeviceTaintRule (any served version: the same `spec`) reaches the groups' devices, as
 * messages; [] when it reaches none that tolerator can tell. What is checkable at admission,
 * without the ResourceSlices (which the webhook does not read):
 *
 * - `group-taint`: its taint key is the groups' device-taint key (effect NoSchedule or NoExecute).
 *   Such a rule decides whose devices the selected ones are, or shuts a group out of them;
 * - `every-pool`: effect NoSchedule or NoExecute with a selector that names no pool (an omitted or
 *   empty selector, or a driver alone): it reaches the devices of every pool of the driver, or of
 *   every driver, and so those of every group wherever a group has any. A pool is the unit a driver
 *   publishes per node (or per fabric), so "one pool" is what keeps a rule to one group's
 *   devices when groups have their own nodes.
 *
 * Not checkable here: whether the one pool (or device) a rule names is another group's. That is
 * written in the ResourceSlices' taints, which admission does not see; the rule's own status
 * (the controller's count of the pods it would evict, in which namespaces) shows it before a
 * NoExecute takes effect.
 */
export function deviceTaintRuleReach(rule: unknown, deviceTaint: DeviceGroupTaint): string[] {
  const spec = own(rule, 'spec');
  const taint = own(spec, 'taint');
  const effect = text(own(taint, 'effect'));
  if (effect !== 'NoSchedule' && effect !== 'NoExecute') return [];
  const reach: string[] = [];
  const key = text(own(taint, 'key'));
  if (key === deviceTaint.key) {
    reach.push(
      `spec.taint.key is ${JSON.stringify(clipText(key, 253))}, the device-taint key of the groups (${deviceTaintPattern(deviceTaint)}): the rule decides which group the selected devices belong to`,
    );
  }
  const selector = own(spec, 'deviceSelector');
  const pool = own(selector, 'pool');
  if (pool === undefined || pool === null) {
    const driver = own(selector, 'driver');
    const scope =
      selector === undefined || selector === null
        ? 'spec.deviceSelector is omitted'
        : driver === undefined || driver === null
          ? 'spec.deviceSelector names no pool and no driver'
          : `spec.deviceSelector names driver ${JSON.stringify(clipText(text(driver), 253))} but no pool`;
    reach.push(`${scope}: with effect ${effect} the rule reaches the devices of every pool, and so every group's devices`);
  }
  return reach;
}
