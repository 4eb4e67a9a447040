/**
 * `tolerator review [FILE|-]`: an AdmissionReview in, the response out, through the same pipeline
 * and flags as the server. By default both webhooks run as the API server calls them: the
 * mutating plugins, then the validating ones on the mutated object.
 */
import type { Pipeline, WebhookSide } from '../admission/pipeline.js';
import { buildAdmissionResponse, type AdmissionReviewResponse } from '../admission/response.js';
import { parseAdmissionReview } from '../admission/review.js';
import type { CommandDefinition, CommandIo } from './command.js';
import { UsageError, type FlagSpec, type ParsedFlags } from './flags.js';
import { admissionFlags, readAdmissionSettings } from './options.js';
import { offlineClusterFacts, pipelineFor, startTenancy } from './runtime.js';

export const reviewFlags = {
  webhook: {
    kind: 'string',
    placeholder: 'mutate|validate',
    help: 'run one webhook only (default: both, mutate then validate)',
    choices: ['mutate', 'validate'],
  },
} as const;

/** The flags of `review`; `explain` takes the same, so a review's command line can be re-run as an explanation. */
export const offlineFlags = {
  ...admissionFlags,
  ...reviewFlags,
} as const satisfies Record<string, FlagSpec>;

export const reviewCommand: CommandDefinition = {
  name: 'review',
  summary: 'read an AdmissionReview (file or -) and print the response, as the server would answer',
  arguments: [['[file]', 'the AdmissionReview, JSON (default: - for standard input)']],
  flags: offlineFlags,
  outcomes: { ok: 'the review is allowed', found: 'the review is denied' },
  run: review,
};

async function review(flags: ParsedFlags, io: CommandIo): Promise<number> {
  const settings = readAdmissionSettings(flags);
  const sides = reviewSides(flags.values.get('webhook') as string | undefined);
  const logger = io.log();
  const clusterFacts = offlineClusterFacts(settings.clusterStateFile, io.readFile, (warning) => {
    logger.warn({ source: settings.clusterStateFile }, warning);
  });
  const tenancy = startTenancy(settings.policiesDir, logger, undefined, false);
  const input = readReviewInput(flags.positionals[0], io);
  const response = await runReview(pipelineFor(settings, clusterFacts, tenancy.current), input, sides);
  io.stdout(`${JSON.stringify(response, null, 2)}\n`);
  return response.response.allowed ? 0 : 1;
}

export function reviewSides(raw: string | undefined): readonly WebhookSide[] {
  if (raw === undefined) return ['mutate', 'validate'];
  if (raw === 'mutate' || raw === 'validate') return [raw];
  throw new UsageError(`--webhook must be mutate or validate, got ${JSON.stringify(raw)}`);
}

function readReviewInput(path: string | undefined, io: CommandIo): Uint8Array {
  return path === undefined || path === '-' ? io.readStdin() : io.readBytes(path);
}

/** Runs the review; an unreadable review throws the AdmissionError the server would answer with. */
export async function runReview(pipeline: Pipeline, input: Uint8Array, sides: readonly WebhookSide[]): Promise<AdmissionReviewResponse> {
  const parsed = parseAdmissionReview(input);
  const { decision } = await pipeline.review(parsed, sides);
  return buildAdmissionResponse(parsed.apiVersion, parsed.uid, decision);
}
