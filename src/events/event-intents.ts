/**
 * Which of tolerator's answers become a Kubernetes Event (`events.k8s.io/v1`), and what it says:
 * pure, so that the choice is tested table by table and the same for a review decided on the main
 * thread or in a review worker. Writing them is the edge's business (src/kube/event-recorder.ts),
 * and only with `serve --emit-events`.
 *
 * The conventions are the policy engines' a platform team already reads: Kyverno's reason
 * `PolicyViolation` (pkg/event/reason.go), for a blocked request and for a background scan's
 * finding alike, type Warning; the action tells the two apart (`Denied`, or the audit rule broken),
 * as Kyverno's actions do (`Resource Blocked`) and Gatekeeper's reasons do (`FailedAdmission`,
 * `AuditViolation`).
 * One reason means one field selector (`reason=PolicyViolation`) finds every engine's.
 *
 * The bounds are kube-apiserver's own validation of an Event (pkg/apis/core/validation/events.go,
 * v1.35.8): `note` at most 1,024 bytes, `reason` and `action` at most 128, `reportingController` a
 * qualified name, `reportingInstance` at most 128.
 */
import { resourceKindByResource } from '../api/resource-kinds.js';
import { clipToBytes } from '../api/text-bounds.js';
import type { JsonObject } from '../api/types.js';
import type { AuditViolation } from '../audit/audit-rules.js';
import { violationObject } from '../audit/policy-reports.js';
import type { AdmissionAttributes } from '../plugins/plugin.js';
import { isDNS1123Subdomain } from '../validation/name-validation.js';

/** events.k8s.io/v1's `note` limit (NoteLengthLimit), in bytes as Go counts a string. */
export const noteMaxBytes = 1024;
/** ReportingInstanceLengthLimit. */
export const reportingInstanceMaxChars = 128;

export const eventReason = 'PolicyViolation';
/** The reportingController of the webhooks' Events and of the audit's: two sources, as Kyverno's kyverno-admission and kyverno-scan. */
export const admissionController = 'tolerator.dev/admission';
export const auditController = 'tolerator.dev/audit';

/** core/v1 ObjectReference, the fields an Event's `regarding` takes. */
export interface ObjectReference {
  readonly apiVersion: string;
  readonly kind: string;
  /** Absent for a cluster-scoped object. */
  readonly namespace?: string;
  readonly name: string;
  readonly uid?: string;
}

/** An Event to be written: everything but its name, times, series and reportingInstance, which the writer adds. */
export interface EventIntent {
  readonly regarding: ObjectReference;
  readonly type: 'Warning';
  readonly reason: string;
  /** `Denied` for a denial; for an audit finding, the rule it breaks (see auditEventFor). */
  readonly action: string;
  readonly note: string;
  readonly reportingController: string;
}

/**
 * The Event a review's denial produces, or undefined. A denial produces one when the object denied
 * is a workload template or a pod, the request is no dry run, and the Event has someone to tell:
 *
 * - An object its controller creates (an `ownerReferences` entry with `controller: true`): a Pod
 *   of a ReplicaSet, Job, StatefulSet, DaemonSet or ReplicationController, a Job of a CronJob, a
 *   ReplicaSet of a Deployment. Nobody sees that denial but the controller, which reports a
 *   `FailedCreate` (or `ReplicaSetCreateError`) and retries; the Event regards the owner, which
 *   exists and which its author describes (`kubectl describe replicaset`, `kubectl events --for`).
 *   The note names the kind denied, not its generated name, so that the controller's retries fall
 *   into one series (events.k8s.io's series key leaves the note out).
 * - A workload template someone wrote (no controller owner): the Event regards it, as the review
 *   names it (apiVersion, kind, namespace, name, and uid when the API server gave one).
 *
 * A bare pod gets none: whoever created it holds the denial in its answer.
 *
 * A dry run never writes one: the request has no side effects (with `--emit-events` the webhooks
 * declare `sideEffects: NoneOnDryRun`, and the API server calls them for dry runs, relying on this).
 * Names the Event would carry that are not DNS-1123 subdomains (the API server validates names
 * after the mutating webhooks) are not written: the Event would be refused, and its key is
 * bounded by those names' 253 characters.
 */
export function admissionEventFor(
  attributes: AdmissionAttributes,
  decision: { readonly allowed: boolean; readonly message: string | undefined },
): EventIntent | undefined {
  if (decision.allowed || attributes.dryRun || attributes.subResource !== '') return undefined;
  const object = attributes.object;
  if (object === undefined) return undefined;
  const kind = resourceKindByResource(attributes.resource.group, attributes.resource.resource);
  if (kind === undefined) return undefined;
  const namespace = attributes.namespace;
  if (!isName(namespace)) return undefined;
  const message = clipToBytes(decision.message ?? 'denied', noteMaxBytes);
  const owner = controllerOf(object);
  if (owner !== undefined) {
    return {
      regarding: { ...owner, namespace },
      type: 'Warning',
      reason: eventReason,
      action: 'Denied',
      note: clipToBytes(`a ${kind.kind} created by this ${owner.kind} was denied: ${message}`, noteMaxBytes),
      reportingController: admissionController,
    };
  }
  // A pod without a controller: its creator has the answer. A PodTemplate has no controller.
  if (kind.kind === 'Pod') return undefined;
  const name = attributes.name;
  if (!isName(name)) return undefined;
  const uid = stringAt(object, 'uid');
  const { group, version } = attributes.kind;
  return {
    regarding: {
      apiVersion: group === '' ? version : `${group}/${version}`,
      kind: attributes.kind.kind,
      namespace,
      name,
      ...(uid === undefined ? {} : { uid }),
    },
    type: 'Warning',
    reason: eventReason,
    action: 'Denied',
    note: message,
    reportingController: admissionController,
  };
}

/**
 * The audit's Event for one finding: regarding the pod, Node, NodePool, RuntimeClass or
 * ResourceClaim it names (the object its policy report's result names). Its action is
 * the rule broken (`foreign-toleration`, …): events.k8s.io folds Events with the same type,
 * action, reason, controller and object into one series whatever their notes, and a pod that
 * breaks two rules has two findings, which must not read as one finding seen twice (found on the
 * API server: a pod admitted while its namespace opted out broke two rules, and showed as one
 * Event of count 2 with the first rule's note).
 */
export function auditEventFor(violation: AuditViolation): EventIntent | undefined {
  if (!isName(violation.name) || (violation.namespace !== '' && !isName(violation.namespace))) return undefined;
  return {
    regarding: violationObject(violation),
    type: 'Warning',
    reason: eventReason,
    action: violation.rule,
    note: clipToBytes(`${violation.rule}: ${violation.message}`, noteMaxBytes),
    reportingController: auditController,
  };
}

/**
 * What identifies one finding across audit runs: its rule, policy and object. Not its message,
 * which may quote what changed (a new taint) while the finding stays the same one.
 */
export function findingKey(violation: AuditViolation): string {
  return [violation.rule, violation.policy ?? '', violation.kind ?? 'Pod', violation.namespace, violation.name].join('\u0000');
}

/**
 * The controller owner reference of `object` (ownerReferences with `controller: true`; the API
 * server allows one), when it is complete and its name a valid object name.
 */
function controllerOf(object: JsonObject): Omit<ObjectReference, 'namespace'> | undefined {
  const metadata = object.metadata;
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) return undefined;
  const references = (metadata as JsonObject).ownerReferences;
  if (!Array.isArray(references)) return undefined;
  for (const reference of references) {
    if (typeof reference !== 'object' || reference === null || Array.isArray(reference)) continue;
    const { controller, apiVersion, kind, name, uid } = reference as JsonObject;
    if (controller !== true) continue;
    if (typeof apiVersion !== 'string' || typeof kind !== 'string' || typeof name !== 'string' || typeof uid !== 'string') return undefined;
    if (!isName(name) || apiVersion.length > 253 || kind.length > 63 || uid.length > 128) return undefined;
    return { apiVersion, kind, name, uid };
  }
  return undefined;
}

function stringAt(object: JsonObject, field: 'uid'): string | undefined {
  const metadata = object.metadata;
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) return undefined;
  const value = (metadata as JsonObject)[field];
  return typeof value === 'string' && value !== '' && value.length <= 128 ? value : undefined;
}

/** A DNS-1123 subdomain; a string over its 253 characters is refused before it is scanned. */
function isName(value: string): boolean {
  return value !== '' && value.length <= 253 && isDNS1123Subdomain(value).length === 0;
}
