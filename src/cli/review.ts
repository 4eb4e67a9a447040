/**
 * `tolerator review [FILE|-]`: an AdmissionReview in, the response out, through the same pipeline
 * and flags as the server. By default both webhooks run as the API server calls them: the
 * mutating plugins, then the validating ones on the mutated object.
 */
import { stringify } from 'yaml';
import type { WebhookSide } from '../admission/pipeline.js';
import { AdmissionError } from '../admission/errors.js';
import { runReview } from '../admission/run-review.js';
import type { CommandDefinition, CommandIo } from './command.js';
import { UsageError, type FlagSpec, type ParsedFlags } from './flags.js';
import { admissionFlags, readAdmissionSettings } from './options.js';
import { applyJsonPatch } from '../admission/json-patch-apply.js';
import { offlinePipeline } from './runtime.js';

export const reviewFlags = {
  webhook: {
    kind: 'string',
    placeholder: 'mutate|validate',
    help: 'run one webhook only (default: both, mutate then validate)',
    choices: ['mutate', 'validate'],
  },
} as const satisfies Record<string, FlagSpec>;

/** `review -o`: what of the answer to print. */
export const reviewOutputs = ['review', 'json', 'yaml', 'patch', 'object'] as const;
type ReviewOutput = (typeof reviewOutputs)[number];

/** The flags of `review`; `explain` takes the same, so a review's command line can be re-run as an explanation. */
export const offlineFlags = {
  ...admissionFlags,
  ...reviewFlags,
} as const satisfies Record<string, FlagSpec>;

const reviewCommandFlags = {
  ...offlineFlags,
  output: {
    kind: 'string',
    placeholder: 'FORMAT',
    short: 'o',
    help: 'review (default) or json: the AdmissionReview the server would answer, as JSON; yaml: the same as YAML; patch: the JSON Patch, decoded; object: the object after the patch, as YAML',
    choices: reviewOutputs,
  },
} as const satisfies Record<string, FlagSpec>;

export const reviewCommand: CommandDefinition = {
  name: 'review',
  summary: 'read an AdmissionReview (file or -) and print the response, as the server would answer',
  arguments: [['[file]', 'the AdmissionReview, JSON (default: - for standard input)']],
  flags: reviewCommandFlags,
  outcomes: { ok: 'the review is allowed', found: 'the review is denied' },
  details: 'With -o patch or -o object, a denial prints nothing on stdout and its message on stderr.',
  run: review,
};

async function review(flags: ParsedFlags, io: CommandIo): Promise<number> {
  const settings = readAdmissionSettings(flags);
  const sides = reviewSides(flags.values.get('webhook') as string | undefined);
  const { pipeline } = offlinePipeline(settings, io);
  const input = readReviewInput(flags.positionals[0], io);
  const output = (flags.values.get('output') as ReviewOutput | undefined) ?? 'review';
  const { response, decision, parsed } = await runReview(pipeline, input, sides).catch((error: unknown) => {
    throw withManifestHint(error, input);
  });
  const object = parsed.attributes.object;
  if ((output === 'patch' || output === 'object') && !decision.allowed) {
    io.stderr(`tolerator review: denied: ${response.response.status?.message ?? ''}\n`);
    return 1;
  }
  switch (output) {
    case 'review':
    case 'json':
      io.stdout(`${JSON.stringify(response, null, 2)}\n`);
      break;
    case 'yaml':
      io.stdout(stringify(response));
      break;
    case 'patch':
      io.stdout(`${JSON.stringify(decision.patch ?? [], null, 2)}\n`);
      break;
    case 'object':
      io.stdout(stringify(decision.patch === undefined ? object : applyJsonPatch(object, decision.patch)));
      break;
  }
  return decision.allowed ? 0 : 1;
}

export function reviewSides(raw: string | undefined): readonly WebhookSide[] {
  if (raw === undefined) return ['mutate', 'validate'];
  if (raw === 'mutate' || raw === 'validate') return [raw];
  throw new UsageError(`--webhook must be mutate or validate, got ${JSON.stringify(raw)}`);
}

/**
 * `review` reads an AdmissionReview, as the API server sends it. A person who hands it a manifest
 * (YAML, or a Pod as JSON) gets the parse error and the command that reads manifests: `explain`.
 */
function withManifestHint(error: unknown, input: Uint8Array): unknown {
  if (!(error instanceof AdmissionError) || (error.code !== 'MalformedJSON' && error.code !== 'NotAdmissionReview')) return error;
  const manifest = /^\s*(apiVersion|kind|metadata)\s*:/m.test(Buffer.from(input.subarray(0, 4096)).toString('utf8'));
  if (error.code === 'MalformedJSON' && !manifest) return error;
  return new UsageError(
    `${error.message}\n  review reads an AdmissionReview (JSON, as the API server sends it). For a Pod or workload manifest, YAML or JSON, run: tolerator explain FILE`,
  );
}

function readReviewInput(path: string | undefined, io: CommandIo): Uint8Array {
  return path === undefined || path === '-' ? io.readStdin() : io.readBytes(path);
}
