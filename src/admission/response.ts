/**
 * Building the AdmissionReview response. The request's uid is copied into the response here and
 * nowhere else (controller-runtime's Response.Complete does the same).
 */
import type { JsonPatchOperation } from './json-patch-diff.js';
import type { DenialStatus } from './status.js';

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
export function buildAdmissionResponse(apiVersion: string, uid: string, decision: AdmissionDecision): AdmissionReviewResponse {
  // Built field by field rather than by spreading optional parts: it runs for every review, and
  // the spreads were most of its cost. The field order is the wire order.
  const response: { -readonly [K in keyof AdmissionResponse]: AdmissionResponse[K] } = { uid, allowed: decision.allowed };
  if (!decision.allowed && decision.status !== undefined) {
    response.status = decision.status;
  }
  if (decision.allowed && decision.patch !== undefined && decision.patch.length > 0) {
    response.patchType = 'JSONPatch';
    response.patch = Buffer.from(JSON.stringify(decision.patch)).toString('base64');
  }
  if (decision.warnings !== undefined && decision.warnings.length > 0) {
    response.warnings = decision.warnings;
  }
  if (decision.auditAnnotations !== undefined && hasKeys(decision.auditAnnotations)) {
    response.auditAnnotations = decision.auditAnnotations;
  }
  return { apiVersion, kind: 'AdmissionReview', response };
}

function hasKeys(record: Readonly<Record<string, string>>): boolean {
  for (const key in record) {
    if (Object.hasOwn(record, key)) return true;
  }
  return false;
}
