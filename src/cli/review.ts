/**
 * `tolerator review [FILE|-]`: an AdmissionReview in, the response out, through the same pipeline
 * and flags as the server. By default both webhooks run as the API server calls them: the
 * mutating plugins, then the validating ones on the mutated object.
 */
import type { WebhookSide } from '../admission/pipeline.js';
import { runReview } from '../admission/run-review.js';
import type { CommandIo } from './command.js';
import { parseFlags, usage, UsageError, type FlagSpec } from './flags.js';
import { admissionFlags, readAdmissionSettings } from './options.js';
import { offlineClusterFacts, pipelineFor, startTenancy } from './runtime.js';

export const reviewFlags = {
  webhook: { kind: 'string', placeholder: 'mutate|validate', help: 'run one webhook only (default: both, mutate then validate)' },
} as const;

/** The flags of `review`; `explain` takes the same, so a review's command line can be re-run as an explanation. */
export const offlineFlags = {
  ...admissionFlags,
  ...reviewFlags,
  help: { kind: 'boolean', help: 'show this help' },
} as const satisfies Record<string, FlagSpec>;

export async function reviewCommand(argv: readonly string[], io: CommandIo): Promise<number> {
  const flags = parseFlags(argv, offlineFlags);
  if (flags.values.get('help') === true) {
    io.stdout(`Usage: tolerator review [FILE|-] [flags]\n\n${usage(offlineFlags)}\n`);
    return 0;
  }
  if (flags.positionals.length > 1) {
    throw new UsageError('review takes one file (or - for standard input)');
  }
  const settings = readAdmissionSettings(flags);
  const sides = reviewSides(flags.values.get('webhook') as string | undefined);
  const logger = io.log();
  const clusterFacts = offlineClusterFacts(settings.clusterStateFile, io.readFile, (warning) => {
    logger.warn({ source: settings.clusterStateFile }, warning);
  });
  const tenancy = startTenancy(settings.policiesDir, logger, undefined, false);
  const input = readReviewInput(flags.positionals[0], io);
  const { response } = await runReview(pipelineFor(settings, clusterFacts, tenancy.current), input, sides);
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
