/**
 * `tolerator review [FILE|-]`: an AdmissionReview in, the response out, through the same pipeline
 * and flags as the server. By default both webhooks run as the API server calls them: the
 * mutating plugins, then the validating ones on the mutated object.
 */
import { readFileSync } from 'node:fs';
import type { Pipeline, WebhookSide } from '../admission/pipeline.js';
import { buildAdmissionResponse, type AdmissionReviewResponse } from '../admission/response.js';
import { parseAdmissionReview } from '../admission/review.js';
import { UsageError } from './flags.js';

export const reviewFlags = {
  webhook: { kind: 'string', placeholder: 'mutate|validate', help: 'run one webhook only (default: both, mutate then validate)' },
} as const;

export function reviewSides(raw: string | undefined): readonly WebhookSide[] {
  if (raw === undefined) return ['mutate', 'validate'];
  if (raw === 'mutate' || raw === 'validate') return [raw];
  throw new UsageError(`--webhook must be mutate or validate, got ${JSON.stringify(raw)}`);
}

export function readReviewInput(path: string | undefined, stdin: () => Buffer): Buffer {
  return path === undefined || path === '-' ? stdin() : readFileSync(path);
}

/** Runs the review; an unreadable review throws the AdmissionError the server would answer with. */
export async function runReview(pipeline: Pipeline, input: Buffer, sides: readonly WebhookSide[]): Promise<AdmissionReviewResponse> {
  const parsed = parseAdmissionReview(input);
  const { decision } = await pipeline.review(parsed, sides);
  return buildAdmissionResponse(parsed.apiVersion, parsed.uid, decision);
}

