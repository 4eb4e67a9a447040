/**
 * Device tolerations (KEP-5055, Dynamic Resource Allocation): the tolerations a ResourceClaim
 * gives each device request, where they live, how the API server validates them and how they
 * match a device taint.
 *
 * Upstream, read at v1.35.8, v1.36.3 and v1.37.2:
 * - where: `ExactDeviceRequest.Tolerations` and `DeviceSubRequest.Tolerations` in
 *   k8s.io/api resource/v1 types.go, so `spec.devices.requests[i].exactly.tolerations` and
 *   `spec.devices.requests[i].firstAvailable[k].tolerations` in a ResourceClaim, `spec.spec.…` in a
 *   ResourceClaimTemplate (v1 and v1beta2 alike; a v1beta1 request reaches a webhook registered
 *   for v1 converted, `matchPolicy: Equivalent`);
 * - validation: pkg/apis/resource/validation/validation.go `validateDeviceRequest`,
 *   `validateExactDeviceRequest`, `validateDeviceSubRequest`, `validateDeviceToleration`,
 *   `validateLabelValue`;
 * - matching: staging/src/k8s.io/dynamic-resource-allocation/resourceclaim/devicetoleration.go
 *   `ToleratesTaint`.
 *
 * Device validation is not Pod validation (docs/kubernetes-rules.md#device-tolerations): an empty
 * key with `Equal` passes, `tolerationSeconds` needs no `NoExecute`, the value of an `Exists`
 * toleration is reported at `.value` with its own text, and no count limit is checked, although
 * the type's comment says 16.
 */
import { FieldErrorList, invalid, notSupported, required } from '../validation/field-errors.js';
import { isQualifiedName, isValidLabelValue } from '../validation/name-validation.js';

/** resource.k8s.io/v1 DeviceToleration, as the JSON the API server sends. */
export interface DeviceToleration {
  readonly key?: string;
  readonly operator?: string;
  readonly value?: string;
  readonly effect?: string;
  readonly tolerationSeconds?: number | null;
}

/** resource.k8s.io/v1 DeviceTaint. */
export interface DeviceTaint {
  readonly key?: string;
  readonly value?: string;
  readonly effect?: string;
  readonly timeAdded?: string;
}

/** validDeviceTolerationOperators: a fixed slice upstream, in this order. */
export const deviceTolerationOperators = ['Equal', 'Exists'] as const;

/** validDeviceTaintEffects as `sets.List` prints it (sorted): `None` is valid from 1.35 on. */
export const deviceTaintEffects = ['NoExecute', 'NoSchedule', 'None'] as const;

/** One list of device tolerations in a claim spec, with the path of the list. */
export interface DeviceTolerationList {
  readonly tolerations: readonly DeviceToleration[];
  /** `spec.devices.requests[0].exactly.tolerations`: built only when asked (an error or a warning). */
  readonly path: () => string;
  /** Where the list sits: in `exactly`, or in `firstAvailable[subRequest]`. */
  readonly request: number;
  readonly subRequest?: number;
}

const noTolerations: readonly DeviceToleration[] = [];

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function list(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : noTolerations;
}

/**
 * Every list of device tolerations in `claimSpec` (a ResourceClaimSpec: a claim's `spec`, a
 * template's `spec.spec`), in the order validateDeviceClaim visits them. `specPath` is the spec's
 * path (`spec` or `spec.spec`). As upstream, a request that sets both `exactly` and
 * `firstAvailable`, or neither, has its tolerations left unvalidated (it fails on its own), so it
 * yields nothing here.
 */
export function deviceTolerationLists(claimSpec: unknown, specPath: string): DeviceTolerationList[] {
  const lists: DeviceTolerationList[] = [];
  const requests = list(record(record(claimSpec)?.devices)?.requests);
  for (let i = 0; i < requests.length; i++) {
    const request = record(requests[i]);
    const firstAvailable = list(request?.firstAvailable);
    const exactly = request?.exactly;
    const hasExactly = exactly !== undefined && exactly !== null;
    if (firstAvailable.length > 0 && !hasExactly) {
      for (let k = 0; k < firstAvailable.length; k++) {
        const tolerations = list(record(firstAvailable[k])?.tolerations) as readonly DeviceToleration[];
        if (tolerations.length === 0) continue;
        lists.push({
          tolerations,
          request: i,
          subRequest: k,
          path: () => `${specPath}.devices.requests[${i}].firstAvailable[${k}].tolerations`,
        });
      }
    } else if (hasExactly && firstAvailable.length === 0) {
      const tolerations = list(record(exactly)?.tolerations) as readonly DeviceToleration[];
      if (tolerations.length === 0) continue;
      lists.push({ tolerations, request: i, path: () => `${specPath}.devices.requests[${i}].exactly.tolerations` });
    }
  }
  return lists;
}

/** Whether any request of `claimSpec` carries a device toleration (the API server's "feature in use"). */
export function hasDeviceTolerations(claimSpec: unknown): boolean {
  return deviceTolerationLists(claimSpec, '').length > 0;
}

/**
 * validateDeviceToleration for each toleration of `tolerations`, at `<path>[j]`, in upstream's
 * order: key, then operator and value, then effect. Absent strings are `""`, as after Go's
 * decoding; the API server defaults an absent operator to `Equal` before validation, so the
 * `Required` below is only ever seen offline.
 */
export function validateDeviceTolerations(tolerations: readonly DeviceToleration[], path: () => string, errors: FieldErrorList): void {
  for (let j = 0; j < tolerations.length; j++) {
    const toleration = tolerations[j] ?? {};
    const key = toleration.key ?? '';
    const operator = toleration.operator ?? '';
    const value = toleration.value ?? '';
    const effect = toleration.effect ?? '';
    const at = (field: string): string => `${path()}[${j}].${field}`;

    // metav1validation.ValidateLabelName: one Invalid per message of IsQualifiedName.
    if (key !== '') {
      for (const message of isQualifiedName(key)) {
        if (errors.keeps()) errors.add(invalid(at('key'), key, message));
      }
    }
    switch (operator) {
      case 'Exists':
        if (value !== '' && errors.keeps()) errors.add(invalid(at('value'), value, 'must be empty for operator `Exists`'));
        break;
      case 'Equal':
        // validateLabelValue: one Invalid per message (not joined, unlike a pod's).
        if (value !== '') {
          for (const message of isValidLabelValue(value)) {
            if (errors.keeps()) errors.add(invalid(at('value'), value, message));
          }
        }
        break;
      case '':
        if (errors.keeps()) errors.add(required(at('operator'), ''));
        break;
      default:
        if (errors.keeps()) errors.add(notSupported(at('operator'), operator, deviceTolerationOperators));
    }
    if (effect !== '' && !(deviceTaintEffects as readonly string[]).includes(effect)) {
      if (errors.keeps()) errors.add(notSupported(at('effect'), effect, deviceTaintEffects));
    }
  }
}

/**
 * ToleratesTaint: an empty effect matches every effect, an empty key every key, `Exists` every
 * value, `Equal` (or an empty operator) the equal value only — with an empty key too, which then
 * matches every taint whose value is empty, whatever its key. `tolerationSeconds` plays no part:
 * the scheduler allocates with this, and the eviction controller applies its own effect rule
 * (`honouredByEvictionController`).
 */
export function deviceToleratesTaint(toleration: DeviceToleration, taint: DeviceTaint): boolean {
  const effect = toleration.effect ?? '';
  if (effect !== '' && effect !== (taint.effect ?? '')) return false;
  const key = toleration.key ?? '';
  if (key !== '' && key !== (taint.key ?? '')) return false;
  switch (toleration.operator ?? '') {
    case '':
    case 'Equal':
      return (toleration.value ?? '') === (taint.value ?? '');
    case 'Exists':
      return true;
    default:
      return false;
  }
}

/**
 * Whether the device taint eviction controller counts this toleration against a NoExecute taint
 * (pkg/controller/devicetainteviction/device_taint_eviction.go: `toleration.Effect ==
 * NoExecute && ToleratesTaint(toleration, taint)`). An empty effect is not counted, although it
 * lets the scheduler allocate the tainted device: the pod is evicted at the taint's `timeAdded`.
 */
export function honouredByEvictionController(toleration: DeviceToleration, taint: DeviceTaint): boolean {
  return toleration.effect === 'NoExecute' && deviceToleratesTaint(toleration, taint);
}
