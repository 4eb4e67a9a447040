/**
 * Building the AdmissionReview response. The request's uid is copied into the response here and
 * nowhere else (controller-runtime's Response.Complete does the same).
 *
 * The text of a response is bounded: 64 KiB in all, counted as kube-apiserver encodes it (Go's
 * JSON, `<`, `>` and `&` six bytes each). The API server copies a denial into its answer and into
 * every audit event of the request, a warning to the client, an audit annotation into every
 * audit event, and bounds none of them; a typical audit event is one or two kilobytes, so a
 * review costs at most the audit log of a few dozen ordinary requests, whatever the object.
 * The Status takes 48 KiB of it (status.ts: its message and causes, bounded where it is built);
 * the warnings and the audit annotations 8 KiB each, here.
 */
import { clipMarkerBytes, clipToBytes, goJsonBytes, maxItemBytes } from '../api/text-bounds.js';
import type { JsonPatchOperation } from './json-patch-diff.js';
import type { DenialStatus } from './status.js';

/**
 * The warnings' and the audit annotations' share of a response's 64 KiB. Warnings: kube-apiserver
 * passes on 4,096 characters of them whole and then at most 256 of each until 4,096 are written
 * (truncateAtTotalRunes, truncateItemRunes: k8s.io/apiserver/pkg/endpoints/filters/warning.go),
 * so 8 KiB is more than reaches any client. Audit annotations: a policy, a group, a decision and
 * the infrastructure namespace's uses (dedicated-nodes.ts), a few hundred bytes unless a list of
 * them is long.
 */
export const responseTextBytes = { warnings: 8 * 1024, auditAnnotations: 8 * 1024 } as const;

/** JSON's quotes and comma around one warning. */
const warningOverheadBytes = '"",'.length;
/** JSON's quotes, colon and comma around one audit annotation's key and value. */
const annotationOverheadBytes = '"":"",'.length;
/** Room kept for the last warning that counts those left out. */
const warningNoteBytes = warningOverheadBytes + 'tolerator: and 9999999999 more warnings, left out'.length;

/** What the pipeline decided, before it is put on the wire. */
export interface AdmissionDecision {
  readonly allowed: boolean;
  readonly patch?: readonly JsonPatchOperation[];
  readonly status?: DenialStatus;
  readonly warnings?: readonly string[];
  readonly auditAnnotations?: Readonly<Record<string, string>>;
}

export interface AdmissionResponse {
  readonly uid: string;
  readonly allowed: boolean;
  readonly status?: DenialStatus;
  readonly patchType?: 'JSONPatch';
  /** base64 of the JSON Patch document. */
  readonly patch?: string;
  readonly warnings?: readonly string[];
  readonly auditAnnotations?: Readonly<Record<string, string>>;
}

export interface AdmissionReviewResponse {
  readonly apiVersion: string;
  readonly kind: 'AdmissionReview';
  readonly response: AdmissionResponse;
}

/**
 * The response envelope. No patch and no patchType when nothing changed: the API server then
 * keeps the object as it was, and a patch of `[]` would only cost a decode.
 */
export function buildAdmissionResponse(
  apiVersion: string,
  uid: string,
  decision: AdmissionDecision,
  /** `JSON.stringify(decision.patch)` when the caller has it already (src/admission/run-review.ts measures it). */
  patchJson?: string,
): AdmissionReviewResponse {
  const warnings = boundWarnings(decision.warnings ?? []);
  const auditAnnotations = boundAuditAnnotations(decision.auditAnnotations ?? {});
  // Built field by field rather than by spreading optional parts: it runs for every review, and
  // the spreads were most of its cost. The field order is the wire order.
  const response: { -readonly [K in keyof AdmissionResponse]: AdmissionResponse[K] } = { uid, allowed: decision.allowed };
  if (!decision.allowed && decision.status !== undefined) {
    response.status = decision.status;
  }
  if (decision.allowed && decision.patch !== undefined && decision.patch.length > 0) {
    response.patchType = 'JSONPatch';
    response.patch = Buffer.from(patchJson ?? JSON.stringify(decision.patch)).toString('base64');
  }
  if (warnings.length > 0) {
    response.warnings = warnings;
  }
  if (hasKeys(auditAnnotations)) {
    response.auditAnnotations = auditAnnotations;
  }
  return { apiVersion, kind: 'AdmissionReview', response };
}

function hasKeys(record: Readonly<Record<string, string>>): boolean {
  for (const key in record) {
    if (Object.hasOwn(record, key)) return true;
  }
  return false;
}

/**
 * The warnings within responseTextBytes.warnings, each clipped to maxItemBytes; past the bound, a
 * last warning counts those left out. The same array when nothing had to change.
 */
export function boundWarnings(warnings: readonly string[]): readonly string[] {
  let bytes = 0;
  let clipped = false;
  const kept: string[] = [];
  for (const [i, warning] of warnings.entries()) {
    const text = clipToBytes(warning, maxItemBytes);
    const size = warningOverheadBytes + goJsonBytes(text);
    const room = i === warnings.length - 1 ? responseTextBytes.warnings : responseTextBytes.warnings - warningNoteBytes;
    if (bytes + size > room) {
      kept.push(`tolerator: and ${warnings.length - i} more warnings, left out`);
      return kept;
    }
    clipped ||= text !== warning;
    kept.push(text);
    bytes += size;
  }
  return clipped ? kept : warnings;
}

/**
 * The audit annotations within responseTextBytes.auditAnnotations, each value clipped to
 * maxItemBytes, in the order the plugins wrote them; past the bound, a value is clipped to what
 * is left, or, with less than a marker's room left, the annotation is left out and counted in
 * `tolerator-annotations-left-out`. The same object when nothing had to change.
 */
export function boundAuditAnnotations(annotations: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
  const keys = Object.keys(annotations);
  const noteKey = 'tolerator-annotations-left-out';
  const noteBytes = annotationOverheadBytes + noteKey.length + String(keys.length).length;
  let bytes = 0;
  let changed = false;
  let leftOut = 0;
  const kept: Record<string, string> = {};
  for (const key of keys) {
    const value = annotations[key] ?? '';
    // The keys are the plugins' own (dedicated-nodes.ts auditKeys): short, and never the tenant's.
    const keyBytes = annotationOverheadBytes + goJsonBytes(key);
    const room = responseTextBytes.auditAnnotations - noteBytes - bytes - keyBytes;
    // With less room than the clip's marker takes, the value cannot even be clipped.
    if (room < clipMarkerBytes) {
      leftOut++;
      changed = true;
      continue;
    }
    const text = clipToBytes(value, Math.min(maxItemBytes, room));
    changed ||= text !== value;
    Object.defineProperty(kept, key, { value: text, enumerable: true, writable: true, configurable: true });
    bytes += keyBytes + goJsonBytes(text);
  }
  if (leftOut > 0) {
    kept[noteKey] = String(leftOut);
  }
  return changed ? kept : annotations;
}
