/**
 * One review from its body to the bytes of its answer (src/admission/run-review.ts, plus the
 * body's structure bound and the summary): the part of a review that costs in
 * proportion to the body, shared by the main thread (src/http/app.ts, small bodies) and the review
 * workers (src/server/review-worker.ts, large ones), so that both answer exactly alike. Everything
 * that is not a function of the body (reading it, metrics, the log line, the HTTP status) stays in
 * app.ts, on the main thread.
 */
import { maxBodyBytes, maxStructureBytes, mebibytes, structureBytes } from './body-limits.js';
import { AdmissionError } from './errors.js';
import type { Pipeline, WebhookSide } from './pipeline.js';
import { runReview, summarizeReview, type ReviewAnswer } from './run-review.js';

/**
 * Refuses a body whose structure (the bytes outside JSON strings) exceeds what an API server's
 * review can hold (src/admission/body-limits.ts). Only a body larger than that bound can break it, so
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

/** The inline way to run a review (src/admission/run-review.ts), with the body's structure bound. */
export async function answerReview(side: WebhookSide, body: Uint8Array, pipeline: Pipeline): Promise<ReviewAnswer> {
  checkStructure(body);
  const run = await runReview(pipeline, body, [side]);
  return { payload: JSON.stringify(run.response), summary: summarizeReview(run) };
}
