/**
 * DeviceTolerationValidation: the API server's validation of device tolerations (KEP-5055) in
 * ResourceClaims and ResourceClaimTemplates, with its paths and words
 * (src/tolerations/device-tolerations.ts), and a warning for the toleration the scheduler and the
 * device taint eviction controller read differently.
 *
 * What the API server validates, and when (pkg/registry/resource/resourceclaim and
 * resourceclaimtemplate strategy.go at v1.35.8 through v1.37.2):
 *   ResourceClaim          CREATE  `spec.devices.requests[…]`; UPDATE checks only that the spec
 *                                  is unchanged (ValidateResourceClaimUpdate), so nothing here
 *   ResourceClaimTemplate  CREATE and UPDATE  `spec.spec.devices.requests[…]` (an UPDATE validates
 *                                  the whole template again, then its immutability)
 * With DRADeviceTaints off the API server drops every device toleration in PrepareForCreate (and
 * PrepareForUpdate, unless the stored object already has some), before it validates and before a
 * validating webhook sees the object: so off, nothing is judged, as there is nothing left to judge.
 */
import type { FeatureGates } from '../api/feature-gates.js';
import { valueAt } from '../api/pod-template.js';
import { isJsonObject, type JsonObject } from '../api/types.js';
import { FieldErrorList, type FieldError } from '../validation/field-errors.js';
import { compareVersions, type KubernetesVersion } from '../api/feature-gate-history.js';
import { clipText } from '../api/text-bounds.js';
import {
  deviceTolerationLists,
  hasDeviceTolerations,
  validateDeviceTolerations,
  type DeviceTolerationList,
} from '../tolerations/device-tolerations.js';
import type { AdmissionAttributes, ValidatingPlugin, ValidationOutcome } from './plugin.js';

export const resourceGroup = 'resource.k8s.io';

/** A ResourceClaim or ResourceClaimTemplate request: its kind and where its claim spec sits. */
export interface ClaimTarget {
  readonly kind: 'ResourceClaim' | 'ResourceClaimTemplate';
  /** The claim spec's path segments: `spec`, or `spec.spec` in a template. */
  readonly specPath: readonly string[];
}

const claimTarget: ClaimTarget = { kind: 'ResourceClaim', specPath: ['spec'] };
const templateTarget: ClaimTarget = { kind: 'ResourceClaimTemplate', specPath: ['spec', 'spec'] };

/** The claim or template a request is about (the resource itself, not a subresource such as `status`). */
export function claimTargetOf(attributes: AdmissionAttributes): ClaimTarget | undefined {
  if (attributes.resource.group !== resourceGroup || attributes.subResource !== '') return undefined;
  switch (attributes.resource.resource) {
    case 'resourceclaims':
      return claimTarget;
    case 'resourceclaimtemplates':
      return templateTarget;
    default:
      return undefined;
  }
}

/**
 * The most empty-effect warnings one review writes; the rest are counted in the last one. A claim
 * has at most 32 requests of at most 8 subrequests, each with any number of tolerations (no limit
 * is enforced), so a hostile claim could otherwise ask for a million warnings.
 */
export const maxEmptyEffectWarnings = 10;

/**
 * From 1.37 declarative validation answers for the checks the handwritten code marks
 * `MarkCoveredByDeclarative` (a device toleration's key, operator and effect; not its value), and
 * kube-apiserver lists its errors after the handwritten ones that remain
 * (ValidateDeclarativelyWithMigrationChecks in k8s.io/apiserver pkg/registry/rest/validate.go):
 * the same errors with the same texts, but every value error of the claim first. Seen on v1.37.2
 * (test/e2e/devices.e2e.ts); v1.36.3 still answers in the handwritten order, as does an unknown
 * version (offline: 1.35's behaviour).
 */
export const firstVersionWithDeclarativeDeviceTolerations: KubernetesVersion = { major: 1, minor: 37 };

/** The errors in the order the API server of `serverVersion` lists them. */
export function inServerOrder(errors: readonly FieldError[], serverVersion: KubernetesVersion | undefined): readonly FieldError[] {
  if (serverVersion === undefined || compareVersions(serverVersion, firstVersionWithDeclarativeDeviceTolerations) < 0) return errors;
  const handwritten = errors.filter((error) => error.field.endsWith('.value'));
  if (handwritten.length === 0 || handwritten.length === errors.length) return errors;
  return handwritten.concat(errors.filter((error) => !error.field.endsWith('.value')));
}

export function createDeviceTolerationValidation() {
  return {
    name: 'DeviceTolerationValidation',

    handles(attributes: AdmissionAttributes): boolean {
      const target = claimTargetOf(attributes);
      if (target === undefined) return false;
      return attributes.operation === 'CREATE' || (attributes.operation === 'UPDATE' && target.kind === 'ResourceClaimTemplate');
    },

    validate(object, attributes, context): ValidationOutcome {
      const target = claimTargetOf(attributes);
      if (target === undefined) return {};
      if (!context.gates.DRADeviceTaints && !(attributes.operation === 'UPDATE' && storedTolerations(attributes, target))) {
        return {};
      }
      const specPath = target.specPath.join('.');
      const lists = deviceTolerationLists(valueAt(object, target.specPath), specPath);
      const errors = new FieldErrorList();
      for (const entry of lists) validateDeviceTolerations(entry.tolerations, entry.path, errors);
      if (!errors.empty) {
        return {
          denial: {
            reason: 'Invalid',
            group: resourceGroup,
            kind: target.kind,
            name: nameOf(object, attributes),
            errors: inServerOrder(errors.errors, context.serverVersion),
            ...(errors.omitted > 0 ? { omittedErrors: errors.omitted } : {}),
          },
        };
      }
      const warnings = emptyEffectWarnings(lists);
      return warnings.length === 0 ? {} : { warnings };
    },
  } satisfies ValidatingPlugin;
}

/**
 * The object as the API server hands it to its validation and to validating webhooks when
 * DRADeviceTaints is off: every device toleration dropped (dropDisabledDRADeviceTaintsFields in
 * PrepareForCreate, and in PrepareForUpdate unless the stored object already has some), after the
 * mutating webhooks. Only an offline review, which runs both sides on one object, needs this: a
 * validating webhook is sent the object already dropped. The object itself when nothing is dropped.
 */
export function asValidatedWithGateOff(object: JsonObject, attributes: AdmissionAttributes, gates: FeatureGates): JsonObject {
  const target = claimTargetOf(attributes);
  if (target === undefined || gates.DRADeviceTaints || (attributes.operation === 'UPDATE' && storedTolerations(attributes, target))) {
    return object;
  }
  if (!hasDeviceTolerations(valueAt(object, target.specPath))) return object;
  const copy = structuredClone(object);
  const requests = (valueAt(copy, target.specPath) as { devices?: { requests?: unknown } } | undefined)?.devices?.requests;
  for (const request of Array.isArray(requests) ? (requests as unknown[]) : []) {
    if (!isJsonObject(request)) continue;
    if (isJsonObject(request.exactly)) delete request.exactly.tolerations;
    for (const sub of Array.isArray(request.firstAvailable) ? (request.firstAvailable as unknown[]) : []) {
      if (isJsonObject(sub)) delete sub.tolerations;
    }
  }
  return copy;
}

/** Whether the stored template already uses device tolerations: then the API server keeps them with the gate off. */
function storedTolerations(attributes: AdmissionAttributes, target: ClaimTarget): boolean {
  return hasDeviceTolerations(valueAt(attributes.oldObject, target.specPath));
}

/**
 * One warning per toleration with an empty effect (at most maxEmptyEffectWarnings, then a count).
 * The scheduler lets such a toleration match a NoExecute device taint (an empty effect matches
 * every effect) and allocates the tainted device; the device taint eviction controller counts
 * only tolerations whose effect is NoExecute, so the pod is then deleted at the taint's
 * `timeAdded`, at once for a taint already there (shown on the real controller:
 * test/e2e/devices.e2e.ts).
 */
export function emptyEffectWarnings(lists: readonly DeviceTolerationList[]): string[] {
  const warnings: string[] = [];
  let more = 0;
  for (const entry of lists) {
    for (let j = 0; j < entry.tolerations.length; j++) {
      const toleration = entry.tolerations[j];
      if ((toleration?.effect ?? '') !== '') continue;
      if (warnings.length >= maxEmptyEffectWarnings) {
        more++;
        continue;
      }
      const key = toleration?.key ?? '';
      const what = key === '' ? 'every device taint' : `device taints with key ${JSON.stringify(clipText(key, 100))}`;
      warnings.push(
        `${entry.path()}[${j}]: this toleration has no effect, so it matches ${what} for allocation, NoExecute ones included, ` +
          'but the device taint eviction controller honours only effect NoExecute: a pod using this claim is deleted as soon as ' +
          'a matching NoExecute taint applies to its device (set effect: NoExecute to stay, NoSchedule to only be scheduled)',
      );
    }
  }
  if (more > 0) warnings.push(`and ${more} more device tolerations without an effect`);
  return warnings;
}

/** The object's own name: a generated name is already in place when validation runs. */
function nameOf(object: unknown, attributes: AdmissionAttributes): string {
  const name = valueAt(object, ['metadata', 'name']);
  return typeof name === 'string' && name !== '' ? name : attributes.name;
}
