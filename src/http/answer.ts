/**
 * One review from its body to the bytes of its answer: the part of a review that costs in
 * proportion to the body, shared by the main thread (src/http/app.ts, small bodies) and the review
 * workers (src/server/review-worker.ts, large ones), so that both answer exactly alike. Everything
 * that is not a function of the body (reading it, metrics, the log line, the HTTP status) stays in
 * app.ts, on the main thread.
 */
import { AdmissionError } from '../admission/errors.js';
import type { Pipeline, WebhookSide } from '../admission/pipeline.js';
import { buildAdmissionResponse } from '../admission/response.js';
import { parseAdmissionReview } from '../admission/review.js';
import type { PluginName } from '../plugins/plugin.js';
import { maxBodyBytes, maxStructureBytes, mebibytes, structureBytes } from './body-limits.js';

/** What the log line and the metrics say about a review: never the object itself. */
export interface ReviewSummary {
  readonly uid: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly operation: string;
  readonly dryRun: boolean;
  readonly decision: 'allowed' | 'patched' | 'denied';
  readonly plugins: readonly PluginName[];
  readonly deniedBy: PluginName | undefined;
  readonly patchOperations: number;
}

export interface ReviewAnswer {
  /** The AdmissionReview answer, as JSON text. */
  readonly payload: string;
  readonly summary: ReviewSummary;
}

/**
 * Refuses a body whose structure (the bytes outside JSON strings) exceeds what an API server's
 * review can hold (src/http/body-limits.ts). Only a body larger than that bound can break it, so
 * ordinary bodies pay one comparison.
 */
export function checkStructure(body: Uint8Array): void {
  if (body.length <= maxStructureBytes) return;
  const outside = structureBytes(body, maxStructureBytes);
  if (outside > maxStructureBytes) {
    throw new AdmissionError(
      'BodyTooLarge',
      `request body holds more than ${mebibytes(maxStructureBytes)} outside JSON strings, more than two objects of the API server's 3 MiB request limit and the envelope: a body over ${mebibytes(maxStructureBytes)} is accepted (up to ${mebibytes(maxBodyBytes)}) only as the API server's escaping of their strings makes it`,
    );
  }
}

export async function answerReview(side: WebhookSide, body: Uint8Array, pipeline: Pipeline): Promise<ReviewAnswer> {
  checkStructure(body);
  const parsed = parseAdmissionReview(body);
  const { decision, trace } = await pipeline.review(parsed, [side]);
  const review = buildAdmissionResponse(parsed.apiVersion, parsed.uid, decision);
  const attributes = parsed.attributes;
  return {
    payload: JSON.stringify(review),
    summary: {
      uid: parsed.uid,
      kind: attributes.kind.kind,
      namespace: attributes.namespace,
      name: attributes.name,
      operation: attributes.operation,
      dryRun: attributes.dryRun,
      decision: decision.allowed ? (review.response.patch === undefined ? 'allowed' : 'patched') : 'denied',
      plugins: trace.plugins,
      deniedBy: trace.deniedBy,
      patchOperations: decision.patch?.length ?? 0,
    },
  };
}
