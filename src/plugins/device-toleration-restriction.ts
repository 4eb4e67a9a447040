/**
 * DeviceTolerationRestriction: PodTolerationRestriction and DefaultTolerationSeconds for DRA
 * device tolerations, which Kubernetes leaves to admission (KEP-5055: "admission could be deployed
 * to limit which tolerations may be used … none of that is part of Kubernetes itself"; a
 * DefaultTolerationSeconds for devices was asked for and closed, kubernetes/enhancements#6290).
 *
 * Mutating, on CREATE of a ResourceClaim or ResourceClaimTemplate (a claim's spec is immutable;
 * a template's defaults arrive again, unchanged, in every claim made from it): every request
 * (`exactly`, each `firstAvailable[k]`) gets the namespace's default device tolerations
 * (annotation `tolerator.dev/default-device-tolerations`), else the cluster's
 * (`--default-device-tolerations`), each one unless the request already has a toleration that
 * covers it for the eviction controller. A default is a grace period before a NoExecute device
 * taint deletes the pod: it must have effect NoExecute and a tolerationSeconds from 0 to
 * maxDefaultDeviceTolerationSeconds, so that a default can never hide a taint for good.
 *
 * Validating, on the same requests: every device toleration must be within the namespace's
 * allow-list (annotation `tolerator.dev/device-tolerations-whitelist`), with
 * PodTolerationRestriction's superset rule (src/tolerations/merge.ts `verifyAgainstWhitelist`;
 * an empty or absent list allows everything).
 *
 * With DRADeviceTaints off the API server drops device tolerations, so nothing is added (it would
 * be dropped); the allow-list judges whatever tolerations reach it, whatever tolerator's view of
 * the gate (one that arrives was kept by an API server whose gate is on). Claims the scheduler makes for extended resources (annotation
 * `resource.kubernetes.io/extended-resource-claim: "true"`) get no defaults: the scheduler
 * allocates them from its own copy. They are still held to the allow-list: anyone who may create a
 * claim may write that annotation (the API server does not reserve it), and the scheduler's own
 * claims carry no device tolerations (createRequestsAndMappings in
 * pkg/scheduler/framework/plugins/dynamicresources), so the allow-list never refuses one.
 *
 * Anyone who may annotate a namespace may change its defaults and its allow-list (as with
 * PodTolerationRestriction's annotations): the allow-list is a guard against mistakes of a
 * namespace's users, not against its administrators.
 */
import type { JsonObject, Namespace } from '../api/types.js';
import { valueAt } from '../api/pod-template.js';
import { unmarshalTolerations } from '../tolerations/go-json-tolerations.js';
import { verifyAgainstWhitelist } from '../tolerations/merge.js';
import {
  deviceTolerationLists,
  validateDeviceTolerations,
  type DeviceToleration,
  type DeviceTolerationList,
} from '../tolerations/device-tolerations.js';
import { FieldErrorList, errorMessage } from '../validation/field-errors.js';
import { claimTargetOf } from './device-toleration-validation.js';
import type {
  AdmissionAttributes,
  Denial,
  MutatingPlugin,
  MutationOutcome,
  PluginContext,
  ValidatingPlugin,
  ValidationOutcome,
} from './plugin.js';

export const defaultDeviceTolerationsAnnotation = 'tolerator.dev/default-device-tolerations';
export const deviceTolerationsWhitelistAnnotation = 'tolerator.dev/device-tolerations-whitelist';
export const extendedResourceClaimAnnotation = 'resource.kubernetes.io/extended-resource-claim';

/**
 * The longest grace period a default may give: one day. A default is a grace period for running
 * pods when a device is drained, measured in minutes to hours; a claim that must survive a
 * NoExecute taint for longer says so in its own spec, where its author and reviewers see it.
 */
export const maxDefaultDeviceTolerationSeconds = 86_400;

/**
 * The most defaults a list may hold: 16, the number of tolerations the API documents per request
 * (`DeviceTolerationsMaxLength`, documented though not enforced). It also keeps the work linear: each
 * default is looked for among a request's tolerations, which a tenant may make tens of thousands.
 */
export const maxDefaultDeviceTolerations = 16;

export interface DeviceTolerationRestrictionConfig {
  /** The cluster's default device tolerations, used where a namespace sets no annotation. */
  readonly defaults?: readonly DeviceToleration[];
}

/** Why a list of default device tolerations cannot be used, or undefined when it can. */
export function defaultDeviceTolerationsProblem(defaults: readonly DeviceToleration[]): string | undefined {
  if (defaults.length > maxDefaultDeviceTolerations) {
    return `${defaults.length} default device tolerations: at most ${maxDefaultDeviceTolerations}, the number the API documents per request`;
  }
  const errors = new FieldErrorList();
  validateDeviceTolerations(defaults, () => '', errors);
  const first = errors.errors[0];
  if (first !== undefined) return errorMessage(first).replace(/^\[/, 'toleration [');
  for (const [i, toleration] of defaults.entries()) {
    const seconds = toleration.tolerationSeconds;
    if (toleration.effect !== 'NoExecute' || typeof seconds !== 'number' || seconds < 0 || seconds > maxDefaultDeviceTolerationSeconds) {
      return `toleration [${i}]: a default device toleration is a grace period: it needs effect NoExecute and a tolerationSeconds from 0 to ${maxDefaultDeviceTolerationSeconds}`;
    }
  }
  return undefined;
}

/** A namespace annotation as device tolerations: unset (undefined), the list, or why it cannot be read. */
function namespaceList(
  namespace: Namespace | undefined,
  annotation: string,
): { readonly tolerations?: readonly DeviceToleration[]; readonly error?: string } {
  const annotations = namespace?.metadata.annotations ?? {};
  if (!Object.hasOwn(annotations, annotation)) return {};
  const text = annotations[annotation] ?? '';
  const where = `namespace ${JSON.stringify(namespace?.metadata.name ?? '')} annotation ${JSON.stringify(annotation)}`;
  if (text === '') return { tolerations: [] };
  const decoded = unmarshalTolerations(text, 'v1');
  if (decoded.error !== undefined) return { error: `${where}: ${decoded.error}` };
  return { tolerations: decoded.tolerations };
}

/**
 * Whether `existing` already gives what `wanted` (a NoExecute default) gives, for the eviction
 * controller: effect NoExecute exactly (an empty effect is not honoured there), the same key or
 * the empty key with Exists, and a value that matches. Its tolerationSeconds, if any, is the
 * claim author's choice and stands.
 */
function covers(existing: DeviceToleration, wanted: DeviceToleration): boolean {
  if (existing.effect !== 'NoExecute') return false;
  const key = existing.key ?? '';
  const operator = existing.operator ?? 'Equal';
  if (key !== (wanted.key ?? '') && !(key === '' && operator === 'Exists')) return false;
  if (operator === 'Exists') return true;
  return (wanted.operator ?? 'Equal') === 'Equal' && (existing.value ?? '') === (wanted.value ?? '');
}

function isExtendedResourceClaim(object: JsonObject): boolean {
  return valueAt(object, ['metadata', 'annotations', extendedResourceClaimAnnotation]) === 'true';
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** A copy of `object` in which each request of the claim spec at `specPath` has the defaults it lacks; `object` itself when none lacks any. */
function withDefaults(object: JsonObject, specPath: readonly string[], defaults: readonly DeviceToleration[]): JsonObject {
  const spec = record(valueAt(object, specPath));
  const devices = record(spec?.devices);
  const requests = devices?.requests;
  if (!Array.isArray(requests)) return object;
  const state = { changed: false };
  const missing = (tolerations: unknown): DeviceToleration[] => {
    const list = Array.isArray(tolerations) ? (tolerations as DeviceToleration[]) : [];
    return defaults.filter((wanted) => !list.some((existing) => covers(existing, wanted)));
  };
  const added = (holder: Record<string, unknown>): Record<string, unknown> => {
    const lacking = missing(holder.tolerations);
    if (lacking.length === 0) return holder;
    state.changed = true;
    const current = Array.isArray(holder.tolerations) ? (holder.tolerations as unknown[]) : [];
    return { ...holder, tolerations: current.concat(lacking.map((toleration) => ({ ...toleration }))) };
  };
  const newRequests = requests.map((value: unknown) => {
    const request = record(value);
    if (request === undefined) return value;
    const exactly = record(request.exactly);
    const firstAvailable = Array.isArray(request.firstAvailable) ? (request.firstAvailable as unknown[]) : [];
    if (exactly !== undefined && firstAvailable.length === 0) {
      const next = added(exactly);
      return next === exactly ? request : { ...request, exactly: next };
    }
    if (exactly === undefined && firstAvailable.length > 0) {
      const subRequests = firstAvailable.map((sub) => {
        const subRequest = record(sub);
        return subRequest === undefined ? sub : added(subRequest);
      });
      return subRequests.some((sub, k) => sub !== firstAvailable[k]) ? { ...request, firstAvailable: subRequests } : request;
    }
    return request;
  });
  if (!state.changed) return object;
  const newSpec = { ...spec, devices: { ...devices, requests: newRequests } };
  return specPath.length === 1 ? { ...object, spec: newSpec } : { ...object, spec: { ...record(object.spec), spec: newSpec } };
}

function forbidden(message: string): Denial {
  return { reason: 'Forbidden', message };
}

export function createDeviceTolerationRestriction(config: DeviceTolerationRestrictionConfig = {}) {
  const clusterDefaults = config.defaults ?? [];
  const gateOn = (attributes: AdmissionAttributes, context: PluginContext): boolean =>
    context.gates.DRADeviceTaints && attributes.object !== undefined;

  return {
    name: 'DeviceTolerationRestriction',

    handles(attributes: AdmissionAttributes): boolean {
      return attributes.operation === 'CREATE' && claimTargetOf(attributes) !== undefined;
    },

    admit(object, attributes, context): MutationOutcome {
      const target = claimTargetOf(attributes);
      if (target === undefined || !gateOn(attributes, context) || isExtendedResourceClaim(object)) return { object };
      const fromNamespace = namespaceList(context.namespace, defaultDeviceTolerationsAnnotation);
      if (fromNamespace.error !== undefined) return { denial: forbidden(fromNamespace.error) };
      const defaults = fromNamespace.tolerations ?? clusterDefaults;
      if (defaults.length === 0) return { object };
      if (fromNamespace.tolerations !== undefined) {
        const problem = defaultDeviceTolerationsProblem(defaults);
        if (problem !== undefined) {
          return {
            denial: forbidden(
              `namespace ${JSON.stringify(context.namespace?.metadata.name ?? '')} annotation ${JSON.stringify(defaultDeviceTolerationsAnnotation)}: ${problem}`,
            ),
          };
        }
      }
      return { object: withDefaults(object, target.specPath, defaults) };
    },

    validate(object, attributes, context): ValidationOutcome {
      const target = claimTargetOf(attributes);
      // Not gated on tolerator's view of DRADeviceTaints: a device toleration that reaches a
      // validating webhook was kept by an API server whose gate is on (one whose gate is off drops
      // them first), so skipping on a stale or mis-pinned view would let it past the allow-list.
      if (target === undefined || attributes.object === undefined) return {};
      const whitelist = namespaceList(context.namespace, deviceTolerationsWhitelistAnnotation);
      if (whitelist.error !== undefined) return { denial: forbidden(whitelist.error) };
      if (whitelist.tolerations === undefined || whitelist.tolerations.length === 0) return {};
      const lists: DeviceTolerationList[] = deviceTolerationLists(valueAt(object, target.specPath), target.specPath.join('.'));
      for (const entry of lists) {
        if (!verifyAgainstWhitelist(entry.tolerations, whitelist.tolerations)) {
          return {
            denial: forbidden(
              `${entry.path()}: device tolerations conflict with the allow-list of namespace ${JSON.stringify(context.namespace?.metadata.name ?? '')} (annotation ${deviceTolerationsWhitelistAnnotation})`,
            ),
          };
        }
      }
      return {};
    },
  } satisfies MutatingPlugin & ValidatingPlugin;
}
