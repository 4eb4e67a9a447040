/**
 * One object through the admission pipeline, offline: the AdmissionReview the API server would
 * send for it (`offlineReview`, src/plugins/admission-request.ts), the pipeline's decision, and
 * the object as the API server would store it after the patch. `tolerator test` and
 * `tolerator simulate --mutate` admit their objects here, and the property tests compare the
 * audit with it.
 */
import type { JsonObject } from '../api/types.js';
import { offlineReview } from '../plugins/admission-request.js';
import { applyJsonPatch } from './json-patch-apply.js';
import type { Pipeline, WebhookSide } from './pipeline.js';
import { parseAdmissionReview } from './review.js';

export interface AdmissionRun {
  readonly allowed: boolean;
  /** The object after the patch (the object itself when nothing changed or when denied). */
  readonly object: JsonObject;
  readonly message: string | undefined;
  readonly warnings: readonly string[];
}

export interface AdmissionInput {
  readonly object: JsonObject;
  readonly oldObject?: JsonObject | undefined;
  readonly operation: 'CREATE' | 'UPDATE';
  readonly namespace: string;
  readonly sides: readonly WebhookSide[];
  /** request.userInfo as the API server would send it; by default an anonymous user with no groups. */
  readonly userInfo?: JsonObject | undefined;
}

/** Builds the AdmissionReview the API server would send for `object`, runs it, applies the patch. */
export async function admitObject(pipeline: Pipeline, input: AdmissionInput): Promise<AdmissionRun> {
  const { object } = input;
  const review = offlineReview(input, 'tolerator-offline', input.userInfo);
  const parsed = parseAdmissionReview(JSON.stringify(review));
  const { decision } = await pipeline.review(parsed, input.sides);
  const patched = decision.allowed && decision.patch !== undefined ? applyJsonPatch(object, decision.patch) : object;
  return { allowed: decision.allowed, object: patched as JsonObject, message: decision.status?.message, warnings: decision.warnings ?? [] };
}
