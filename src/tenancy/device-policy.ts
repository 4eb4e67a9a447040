/**
 * The device half of a TenancyPolicy (`spec.deviceTaint`, optional): how a group's DRA devices
 * (KEP-5055) are marked, and who may write DeviceTaintRules that reach them. Kept apart from the
 * node fields of src/tenancy/policy.ts so that each half is read and parsed on its own.
 *
 * ```yaml
 * spec:
 *   deviceTaint:
 *     key: gpu.example.com/dedicated   # the devices of group G carry <key>=G:<effect>
 *     effect: NoSchedule               # or NoExecute; None repels nothing, so it marks no group
 *     platformGroups: [platform-admins] # optional: who may write DeviceTaintRules that reach groups' devices
 * ```
 *
 * The value of the taint is the group, as for the node taint: a device published (or tainted by a
 * DeviceTaintRule) with `gpu.example.com/dedicated=pci:NoSchedule` is group pci's, and only claims
 * that tolerate that taint are allocated it (kube-scheduler's DRA allocator applies
 * `resourceclaim.ToleratesTaint` to every taint of a device).
 */
import { isJsonObject } from '../api/types.js';
import { isQualifiedName } from '../validation/name-validation.js';

/** The group's device taint: `<key>=<group>:<effect>`, and the identities trusted with DeviceTaintRules. */
export interface DeviceGroupTaint {
  readonly key: string;
  readonly effect: 'NoSchedule' | 'NoExecute';
  /**
   * The `request.userInfo.groups` whose members may write DeviceTaintRules that reach the groups'
   * devices (src/tenancy/device-reach.ts). `system:masters` always may: it bypasses RBAC anyway.
   */
  readonly platformGroups: readonly string[];
}

/** The identity Kubernetes itself trusts with everything (RBAC is not consulted for it). */
export const alwaysPlatformGroup = 'system:masters';

const deviceTaintFields = new Set(['key', 'effect', 'platformGroups']);
const deviceTaintEffects: readonly DeviceGroupTaint['effect'][] = ['NoSchedule', 'NoExecute'];

/**
 * `spec.deviceTaint`: undefined when absent (the policy says nothing about devices), else the
 * parsed value; every problem goes to `report`.
 */
export function parseDeviceTaint(value: unknown, report: (path: readonly string[], message: string) => void): DeviceGroupTaint | undefined {
  if (value === undefined) return undefined;
  const at = ['spec', 'deviceTaint'];
  if (!isJsonObject(value)) {
    report(
      at,
      'must be an object with key and effect (the value of the taint is the group), e.g. {key: gpu.example.com/dedicated, effect: NoSchedule}',
    );
    return undefined;
  }
  let valid = true;
  for (const field of Object.keys(value)) {
    if (!deviceTaintFields.has(field)) {
      report(
        [...at, field],
        field === 'value'
          ? 'must not be set: the value of the device taint is the group'
          : `unknown field; known fields are ${[...deviceTaintFields].join(', ')}`,
      );
      valid = false;
    }
  }
  const { key, effect, platformGroups } = value;
  if (typeof key !== 'string') {
    report([...at, 'key'], 'required: a device taint key');
    valid = false;
  } else {
    for (const message of isQualifiedName(key)) {
      report([...at, 'key'], `must be a qualified name: ${message}`);
      valid = false;
    }
  }
  if (!deviceTaintEffects.includes(effect as DeviceGroupTaint['effect'])) {
    report(
      [...at, 'effect'],
      `unsupported value ${JSON.stringify(effect ?? null)}: supported values are ${deviceTaintEffects.join(', ')} (a None taint repels no claim, so it cannot mark a group's devices)`,
    );
    valid = false;
  }
  const groups: string[] = [];
  if (platformGroups !== undefined) {
    if (!Array.isArray(platformGroups)) {
      report([...at, 'platformGroups'], 'must be a list of user groups (request.userInfo.groups), e.g. [platform-admins]');
      valid = false;
    } else {
      for (const [index, group] of platformGroups.entries()) {
        if (typeof group !== 'string' || group === '') {
          report([...at, 'platformGroups', String(index)], 'must be a non-empty string (a user group)');
          valid = false;
        } else {
          groups.push(group);
        }
      }
    }
  }
  return valid ? { key: key as string, effect: effect as DeviceGroupTaint['effect'], platformGroups: groups } : undefined;
}
