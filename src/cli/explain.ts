/**
 * `tolerator explain`: for a manifest and the cluster state, which policy and group apply, and
 * every toleration and affinity change with the rule behind it — for a person to read. It runs
 * the same pipeline as the server, recording what each plugin did.
 */
import { parseAllDocuments, stringify } from 'yaml';
import type { JsonPatchOperation } from '../admission/json-patch-diff.js';
import type { Pipeline, ReviewStep } from '../admission/pipeline.js';
import type { ParsedReview } from '../admission/review.js';
import { denialStatus } from '../admission/status.js';
import { describeRequirement } from '../api/node-selector-text.js';
import { podFromTemplate } from '../api/pod-template.js';
import { resourceKindOf, type ResourceKind } from '../api/resource-kinds.js';
import { notReviewedByShippedWebhooks } from '../api/shipped-webhook-scope.js';
import { isJsonObject, type JsonObject, type NodeSelectorRequirement, type Toleration } from '../api/types.js';
import { terminalSafe } from '../audit/audit-summary.js';
import { offlineAttributes } from '../plugins/admission-request.js';
import { apiServerValidationPlugins, pluginExplanation } from '../plugins/registry.js';
import type { PolicySet } from '../tenancy/policy-set.js';
import type { CommandDefinition, CommandIo } from './command.js';
import { UsageError, type FlagSpec, type ParsedFlags } from './flags.js';
import { admissionFlags, readAdmissionSettings } from './options.js';
import { offlinePipeline } from './runtime.js';

/** Why each plugin changes a pod, in one sentence a person can act on. */

export interface ExplainInput {
  readonly source: string;
  readonly text: string;
}

/** Turns each manifest in the input into the CREATE review the API server would send for its pod. */
export interface ExplainEntry {
  /** The manifest's kind; for a workload, the pod explained is the one it would create. */
  readonly kind: ResourceKind;
  readonly workload: string;
  readonly review: ParsedReview;
}

/**
 * The reviews of every Pod and workload in the input. A document of another kind (a Namespace,
 * ConfigMap or Service in `kubectl kustomize` output) is passed to `skip` with a note, or refused
 * when there is no `skip`.
 */
export function reviewsFromManifests(input: ExplainInput, skip?: (kind: string) => void): ExplainEntry[] {
  const documents = parseAllDocuments(input.text);
  return documents.flatMap((document, index) => {
    if (document.errors.length > 0) {
      throw new UsageError(`${input.source}: document ${index}: ${document.errors[0]?.message ?? 'invalid YAML'}`);
    }
    const object = document.toJS() as unknown;
    if (object === null || object === undefined) {
      return [];
    }
    if (typeof object !== 'object' || Array.isArray(object)) {
      throw new UsageError(`${input.source}: document ${index} is not an object`);
    }
    const manifest = object as JsonObject;
    const draKind = deviceKindOf(manifest.apiVersion, manifest.kind);
    if (draKind !== undefined) {
      // A DRA object is reviewed as itself, as the API server sends it: there is no pod to make of it.
      const manifestMetadata = isJsonObject(manifest.metadata) ? manifest.metadata : {};
      const namespace =
        draKind.kind === 'DeviceTaintRule' ? '' : typeof manifestMetadata.namespace === 'string' ? manifestMetadata.namespace : 'default';
      const review: ParsedReview = {
        apiVersion: 'admission.k8s.io/v1',
        uid: `explain-${index}`,
        attributes: offlineAttributes({ object: manifest, operation: 'CREATE', namespace, dryRun: true }),
      };
      return [{ kind: draKind, workload: typeof manifestMetadata.name === 'string' ? manifestMetadata.name : '', review }];
    }
    const kind = resourceKindOf(manifest.apiVersion, manifest.kind);
    if (kind === undefined && skip !== undefined) {
      skip(`${String(manifest.apiVersion)} ${String(manifest.kind)}`);
      return [];
    }
    if (kind === undefined) {
      throw new UsageError(
        `${input.source}: document ${index}: ${String(manifest.apiVersion)} ${String(manifest.kind)} is not a kind tolerator reads (a Pod or a workload with a pod template)`,
      );
    }
    // A workload is explained through the pod its controller would create from the template: that
    // pod is what the webhook sees at scheduling time, owned by the controller (which is how a
    // DaemonSet's pods get the DaemonSet toleration set). kubectl's namespace when none is written.
    const manifestMetadata = isJsonObject(manifest.metadata) ? manifest.metadata : {};
    const namespace = typeof manifestMetadata.namespace === 'string' ? manifestMetadata.namespace : 'default';
    const pod = podFromTemplate(manifest, kind, namespace);
    if (pod === undefined) {
      throw new UsageError(`${input.source}: document ${index}: ${kind.kind} has no pod template spec (the API server refuses it)`);
    }
    const review: ParsedReview = {
      apiVersion: 'admission.k8s.io/v1',
      uid: `explain-${index}`,
      attributes: offlineAttributes({ object: pod, operation: 'CREATE', namespace, dryRun: true }),
    };
    const workload = typeof manifestMetadata.name === 'string' ? manifestMetadata.name : '';
    return [{ kind, workload, review }];
  });
}

/** The DRA kinds `explain` reviews as themselves: claims, their templates, DeviceTaintRules (resource.k8s.io, any version). */
const deviceKinds: Readonly<Record<string, string>> = {
  ResourceClaim: 'resourceclaims',
  ResourceClaimTemplate: 'resourceclaimtemplates',
  DeviceTaintRule: 'devicetaintrules',
};

function deviceKindOf(apiVersion: unknown, kind: unknown): ResourceKind | undefined {
  if (typeof apiVersion !== 'string' || typeof kind !== 'string' || !apiVersion.startsWith('resource.k8s.io/')) return undefined;
  const resource = deviceKinds[kind];
  if (resource === undefined || !Object.hasOwn(deviceKinds, kind)) return undefined;
  return { group: 'resource.k8s.io', version: apiVersion.slice('resource.k8s.io/'.length), kind, resource, podSpecPath: [] };
}

/** Whether an explanation is of a DRA object (reviewed as itself) rather than of a pod. */
function isDeviceKind(kind: string): boolean {
  return Object.hasOwn(deviceKinds, kind);
}

function describeToleration(toleration: Toleration): string {
  const key = toleration.key === undefined || toleration.key === '' ? '<every key>' : toleration.key;
  const operator = toleration.operator === undefined || toleration.operator === '' ? 'Equal' : toleration.operator;
  const value = operator === 'Exists' ? '' : ` ${JSON.stringify(toleration.value ?? '')}`;
  const effect = toleration.effect === undefined || toleration.effect === '' ? 'every effect' : toleration.effect;
  const seconds =
    toleration.tolerationSeconds === undefined || toleration.tolerationSeconds === null ? '' : `, for ${toleration.tolerationSeconds} s`;
  return `${key} ${operator}${value} (${effect}${seconds})`;
}

/** A requirement of a patch the pipeline wrote: of the shapes src/admission/object-shape.ts checked, or the group's own. */
function requirementOf(value: unknown): string {
  const requirement = value as Partial<NodeSelectorRequirement>;
  return describeRequirement({ key: requirement.key ?? '', operator: requirement.operator ?? '', values: requirement.values ?? [] });
}

/** One line per patch operation, in words where the path is one tolerator writes. */
export function describeChange(operation: JsonPatchOperation): string[] {
  const path = operation.path;
  const tolerations = /\/tolerations(?:\/(\d+))?(\/tolerationSeconds)?$/.exec(path);
  if (tolerations !== null) {
    if (operation.op === 'remove' && tolerations[2] !== undefined) {
      return [`~ toleration [${tolerations[1] ?? ''}]: tolerationSeconds removed (tolerated for as long as the taint stays)`];
    }
    if (operation.op === 'add' && tolerations[1] === undefined) {
      return (operation.value as Toleration[]).map((toleration) => `+ toleration ${describeToleration(toleration)}`);
    }
    if (operation.op === 'add') {
      return [`+ toleration ${describeToleration(operation.value as Toleration)}`];
    }
  }
  const selector = nodeSelectorAddition(operation);
  if (selector !== undefined) {
    return selector;
  }
  const term = /\/nodeSelectorTerms\/(\d+)\/matchExpressions(?:\/\d+)?$/.exec(path);
  if (term !== null && operation.op === 'add') {
    const added = Array.isArray(operation.value) ? operation.value : [operation.value];
    return added.map(
      (requirement) =>
        `+ required node affinity, term ${term[1] ?? ''}: ${requirementOf(requirement)} (ANDed with the term's other requirements)`,
    );
  }
  const affinity = /\/affinity(\/nodeAffinity(\/requiredDuringSchedulingIgnoredDuringExecution)?)?$/.exec(path);
  if (affinity !== null && operation.op === 'add') {
    // Whatever level was added, walk down to the terms it holds.
    let selector = operation.value as Record<string, unknown> | undefined;
    if (affinity[1] === undefined) selector = selector?.nodeAffinity as Record<string, unknown> | undefined;
    if (affinity[2] === undefined)
      selector = selector?.requiredDuringSchedulingIgnoredDuringExecution as Record<string, unknown> | undefined;
    const terms = (selector?.nodeSelectorTerms ?? []) as { matchExpressions?: unknown[] }[];
    return terms.map((term, i) => `+ required node affinity, term ${i}: ${(term.matchExpressions ?? []).map(requirementOf).join(' AND ')}`);
  }
  return [`${operation.op} ${path}${operation.op === 'remove' ? '' : ` = ${JSON.stringify(operation.value)}`}`];
}

/**
 * `+ nodeSelector key=value` for each label an `add` puts into a nodeSelector (the whole map, or
 * one key, whose JSON Pointer escapes `~1` and `~0` are undone); undefined for any other change.
 */
function nodeSelectorAddition(operation: JsonPatchOperation): string[] | undefined {
  if (operation.op !== 'add') {
    return undefined;
  }
  const tokens = operation.path.split('/');
  const value = operation.value;
  if (tokens.at(-2) === 'nodeSelector' && typeof value === 'string') {
    const key = (tokens.at(-1) ?? '').replaceAll('~1', '/').replaceAll('~0', '~');
    return [`+ nodeSelector ${key}=${value}`];
  }
  if (tokens.at(-1) === 'nodeSelector' && isJsonObject(value)) {
    return Object.entries(value).map(([key, label]) => `+ nodeSelector ${key}=${String(label)}`);
  }
  return undefined;
}

/** What one plugin did to a pod, for `-o json|yaml` and for the text. */
export interface ExplainedStep {
  readonly plugin: string;
  /** Why the plugin changes pods, when it changed this one. */
  readonly reason?: string;
  /** The changes as JSON Patch operations, and each in words. */
  readonly changes: readonly JsonPatchOperation[];
  readonly described: readonly string[];
  readonly denial?: string;
  readonly warnings: readonly string[];
}

/** The explanation of one manifest: `-o json` prints a list of these. */
export interface Explanation {
  /** The manifest's kind; for a workload, the pod explained is the one it would create. */
  readonly kind: string;
  readonly namespace: string;
  /** The Pod's name ('' for a generated one), or the workload's. */
  readonly name: string;
  readonly policy?: string;
  readonly group?: string;
  readonly allowed: boolean;
  readonly deniedBy?: string;
  /** Why the shipped webhook configurations never send this pod to tolerator; then there are no steps. */
  readonly notReviewed?: string;
  readonly steps: readonly ExplainedStep[];
}

/**
 * The explanation of a pod the shipped webhooks never send (src/api/shipped-webhook-scope.ts):
 * what tolerator's plugins would do is beside the point, since they never run on it.
 */
export function notReviewedExplanation(entry: ExplainEntry, why: string): Explanation {
  const { attributes } = entry.review;
  return {
    kind: entry.kind.kind,
    namespace: attributes.namespace,
    name: entry.kind.kind === 'Pod' ? attributes.name : entry.workload,
    allowed: true,
    notReviewed: why,
    steps: [],
  };
}

export async function explainEntry(pipeline: Pipeline, entry: ExplainEntry): Promise<Explanation> {
  const { attributes } = entry.review;
  const { decision, trace } = await pipeline.review(entry.review, ['mutate', 'validate'], { record: true });
  const tenancy = decision.auditAnnotations ?? {};
  const policy = tenancy['dedicated-nodes-policy'];
  const group = tenancy['dedicated-nodes-group'];
  const steps = (trace.steps ?? [])
    .filter((step) => step.changes.length > 0 || step.denial !== undefined || step.warnings.length > 0)
    .map((step: ReviewStep): ExplainedStep => ({
      plugin: step.plugin,
      ...(step.changes.length > 0 ? { reason: pluginExplanation(step.plugin) } : {}),
      changes: step.changes,
      described: step.changes.flatMap(describeChange),
      ...(step.denial === undefined ? {} : { denial: denialStatus(step.denial).message }),
      warnings: step.warnings,
    }));
  return {
    kind: entry.kind.kind,
    namespace: attributes.namespace,
    name: entry.kind.kind === 'Pod' ? attributes.name : entry.workload,
    ...(policy !== undefined && group !== undefined ? { policy, group } : {}),
    allowed: decision.allowed,
    ...(decision.allowed ? {} : { deniedBy: trace.deniedBy ?? 'a plugin' }),
    steps,
  };
}

/** An explanation as lines of text, for a person. */
export function explanationLines(explanation: Explanation): string[] {
  const lines =
    explanation.kind === 'Pod'
      ? [`Pod ${explanation.namespace}/${explanation.name === '' ? '(generated name)' : explanation.name}`]
      : explanation.kind === 'DeviceTaintRule'
        ? [`DeviceTaintRule ${explanation.name}`]
        : isDeviceKind(explanation.kind)
          ? [`${explanation.kind} ${explanation.namespace}/${explanation.name}`]
          : [`${explanation.kind} ${explanation.namespace}/${explanation.name}: the pods it creates`];
  if (explanation.notReviewed !== undefined) {
    lines.push(`  not reviewed: ${explanation.notReviewed}; tolerator never sees this pod and changes nothing`);
    lines.push("  result: allowed, unchanged by tolerator (the API server's own admission plugins still apply)");
    return lines;
  }
  if (explanation.kind !== 'DeviceTaintRule') {
    lines.push(
      explanation.group !== undefined
        ? `  namespace ${explanation.namespace}: group "${explanation.group}" (policy ${explanation.policy ?? ''})`
        : isDeviceKind(explanation.kind) && (apiServerValidationPlugins as readonly (string | undefined)[]).includes(explanation.deniedBy)
          ? // DedicatedNodes judges a claim on the validating side only, after the API server's validation, which refused it first.
            `  namespace ${explanation.namespace}: not judged for a group: the API server's own validation refuses the object before any validating webhook`
          : `  namespace ${explanation.namespace}: no ${isDeviceKind(explanation.kind) ? 'device' : 'node'} group`,
    );
  }
  const described = explanation.steps.flatMap((step) => [
    ...(step.reason === undefined ? [] : [`  ${step.plugin}: ${step.reason}`, ...step.described.map((line) => `    ${line}`)]),
    ...(step.denial === undefined ? [] : [`  ${step.plugin} denies: ${step.denial}`]),
    ...step.warnings.map((warning) => `  ${step.plugin} warns: ${warning}`),
  ]);
  lines.push(...(described.length > 0 ? described : ['  no plugin changes anything']));
  if (explanation.allowed) {
    const changed = explanation.steps.some((step) => step.changes.length > 0);
    lines.push(`  result: allowed${changed ? ', with the changes above' : ', unchanged'}`);
  } else {
    lines.push(`  result: denied by ${explanation.deniedBy ?? 'a plugin'}`);
  }
  return lines;
}

/** The explanation of one manifest, as lines of text. */
export async function explainManifest(pipeline: Pipeline, entry: ExplainEntry): Promise<string[]> {
  return explanationLines(await explainEntry(pipeline, entry));
}

/** One line per caution of the loaded policies (a rule that reads what tenants write), shown before the explanations. */
export function policyCautionLines(set: PolicySet): string[] {
  return set.policies.flatMap((policy) => policy.cautions.map((caution) => `caution: ${caution}`));
}

const explainFlags = {
  ...admissionFlags,
  output: {
    kind: 'string',
    placeholder: 'FORMAT',
    short: 'o',
    help: 'text (default) for a person; json or yaml: each explanation with its changes as JSON Patch operations',
    choices: ['text', 'json', 'yaml'],
  },
} as const satisfies Record<string, FlagSpec>;

export const explainCommand: CommandDefinition = {
  name: 'explain',
  summary: 'for pod, workload or DRA manifests and the cluster state, which group applies and every change, with its reason',
  arguments: [
    [
      '<manifest...>',
      'files of Pods, workloads, ResourceClaims, ResourceClaimTemplates or DeviceTaintRules, multi-document YAML or JSON; - for standard input',
    ],
  ],
  flags: explainFlags,
  outcomes: { ok: 'every pod is allowed', found: 'a pod is denied' },
  details:
    'A ResourceClaim, ResourceClaimTemplate or DeviceTaintRule (resource.k8s.io) is explained as itself: its device tolerations, defaults and group. A document of another kind (a Namespace, a ConfigMap, a Service) is skipped with a note on stderr, so `kubectl kustomize DIR | tolerator explain -` reads a whole install. A pod the shipped webhook configurations never send (kube-system, kube-node-lease, tolerator-system, or a namespace labelled tolerator.dev/ignore=true in --cluster-state) is explained as not reviewed.',
  run: explain,
};

async function explain(flags: ParsedFlags, io: CommandIo): Promise<number> {
  const settings = readAdmissionSettings(flags);
  const output = (flags.values.get('output') as 'text' | 'json' | 'yaml' | undefined) ?? 'text';
  const { pipeline, policies, clusterFacts } = offlinePipeline(settings, io, { printsCautions: true });
  const cautions = policyCautionLines(policies());
  if (output === 'text') {
    for (const line of cautions) io.stdout(`${terminalSafe(line)}\n\n`);
  } else {
    for (const line of cautions) io.stderr(`tolerator explain: ${terminalSafe(line)}\n`);
  }
  const skipped = new Map<string, number>();
  const entries = flags.positionals.flatMap((file) => {
    const text = file === '-' ? Buffer.from(io.readStdin()).toString('utf8') : io.readFile(file);
    return reviewsFromManifests({ source: file === '-' ? 'standard input' : file, text }, (kind) => {
      skipped.set(kind, (skipped.get(kind) ?? 0) + 1);
    });
  });
  if (skipped.size > 0) {
    const kinds = [...skipped].map(([kind, count]) => (count === 1 ? kind : `${kind} ×${count}`)).join(', ');
    const total = [...skipped.values()].reduce((sum, count) => sum + count, 0);
    io.stderr(
      `tolerator explain: note: skipped ${total} document${total === 1 ? '' : 's'} that are neither Pods nor workloads: ${terminalSafe(kinds)}\n`,
    );
  }
  if (entries.length === 0) throw new UsageError('no Pod or workload with a pod template in the input');
  const explanations: Explanation[] = [];
  for (const entry of entries) {
    const namespace = entry.review.attributes.namespace;
    const why = notReviewedByShippedWebhooks(namespace, (await clusterFacts.getNamespace(namespace))?.metadata.labels);
    const explanation = why === undefined ? await explainEntry(pipeline, entry) : notReviewedExplanation(entry, why);
    explanations.push(explanation);
    // The lines quote the manifest: its control characters are written escaped (terminalSafe).
    if (output === 'text') io.stdout(`${explanationLines(explanation).map(terminalSafe).join('\n')}\n\n`);
  }
  if (output === 'json') io.stdout(`${JSON.stringify(explanations, null, 2)}\n`);
  if (output === 'yaml') io.stdout(stringify(explanations));
  return explanations.every((explanation) => explanation.allowed) ? 0 : 1;
}
