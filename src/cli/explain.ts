/**
 * `tolerator explain`: for a manifest and the cluster state, which policy and group apply, and
 * every toleration and affinity change with the rule behind it — for a person to read. It runs
 * the same pipeline as the server, recording what each plugin did.
 */
import { parseAllDocuments } from 'yaml';
import type { JsonPatchOperation } from '../admission/json-patch-diff.js';
import type { Pipeline, ReviewStep } from '../admission/pipeline.js';
import type { ParsedReview } from '../admission/review.js';
import { denialStatus } from '../admission/status.js';
import { resourceKindOf, type ResourceKind } from '../api/resource-kinds.js';
import { isJsonObject, type JsonObject, type Toleration } from '../api/types.js';
import { pluginExplanation } from '../plugins/registry.js';
import type { PolicySet } from '../tenancy/policy-set.js';
import type { CommandDefinition, CommandIo } from './command.js';
import { UsageError, type ParsedFlags } from './flags.js';
import { readAdmissionSettings } from './options.js';
import { offlineFlags } from './review.js';
import { offlineClusterFacts, pipelineFor, startTenancy } from './runtime.js';

/** Why each plugin changes a pod, in one sentence a person can act on. */

export interface ExplainInput {
  readonly source: string;
  readonly text: string;
}

/** The controller that owns the pods a workload kind creates (Deployments create them through ReplicaSets). */
const podOwners: Readonly<Record<string, { apiVersion: string; kind: string }>> = {
  Deployment: { apiVersion: 'apps/v1', kind: 'ReplicaSet' },
  ReplicaSet: { apiVersion: 'apps/v1', kind: 'ReplicaSet' },
  StatefulSet: { apiVersion: 'apps/v1', kind: 'StatefulSet' },
  DaemonSet: { apiVersion: 'apps/v1', kind: 'DaemonSet' },
  Job: { apiVersion: 'batch/v1', kind: 'Job' },
  CronJob: { apiVersion: 'batch/v1', kind: 'Job' },
  ReplicationController: { apiVersion: 'v1', kind: 'ReplicationController' },
};

/**
 * A workload is explained through the pod its controller would create from the template: that
 * pod is what the webhook sees at scheduling time, owned by the controller (which is how a
 * DaemonSet's pods get the DaemonSet toleration set).
 */
function podFromManifest(manifest: JsonObject, kind: ResourceKind): JsonObject {
  if (kind.kind === 'Pod') {
    return manifest;
  }
  let template: unknown = manifest;
  for (const segment of kind.podSpecPath.slice(0, -1)) {
    template = (template as JsonObject | undefined)?.[segment];
  }
  const templateObject = (template ?? {}) as { metadata?: JsonObject; spec?: JsonObject };
  const metadata = (manifest.metadata ?? {}) as { name?: string; namespace?: string };
  const owner = podOwners[kind.kind];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      ...templateObject.metadata,
      generateName: `${metadata.name ?? kind.kind.toLowerCase()}-`,
      ...(metadata.namespace === undefined ? {} : { namespace: metadata.namespace }),
      ...(owner === undefined ? {} : { ownerReferences: [{ ...owner, name: metadata.name ?? '', uid: '', controller: true }] }),
    },
    spec: templateObject.spec ?? {},
  };
}

/** Turns each manifest in the input into the CREATE review the API server would send for its pod. */
export interface ExplainEntry {
  /** The manifest's kind; for a workload, the pod explained is the one it would create. */
  readonly kind: ResourceKind;
  readonly workload: string;
  readonly review: ParsedReview;
}

export function reviewsFromManifests(input: ExplainInput): ExplainEntry[] {
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
    const kind = resourceKindOf(manifest.apiVersion, manifest.kind);
    if (kind === undefined) {
      throw new UsageError(
        `${input.source}: document ${index}: ${String(manifest.apiVersion)} ${String(manifest.kind)} is not a kind tolerator reads (a Pod or a workload with a pod template)`,
      );
    }
    const pod = podFromManifest(manifest, kind);
    const metadata = (pod.metadata ?? {}) as { name?: string; namespace?: string };
    const namespace = metadata.namespace ?? 'default';
    const review: ParsedReview = {
      apiVersion: 'admission.k8s.io/v1',
      uid: `explain-${index}`,
      attributes: {
        operation: 'CREATE',
        kind: { group: '', version: 'v1', kind: 'Pod' },
        resource: { group: '', version: 'v1', resource: 'pods' },
        subResource: '',
        namespace,
        name: metadata.name ?? '',
        object: { ...pod, metadata: { ...(pod.metadata as JsonObject | undefined), namespace } },
        oldObject: undefined,
        dryRun: true,
      },
    };
    const workload = (manifest.metadata as { name?: string } | undefined)?.name ?? '';
    return [{ kind, workload, review }];
  });
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

function describeRequirement(value: unknown): string {
  const requirement = value as { key?: string; operator?: string; values?: string[] };
  return `${requirement.key ?? ''} ${requirement.operator ?? ''} [${(requirement.values ?? []).join(', ')}]`;
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
        `+ required node affinity, term ${term[1] ?? ''}: ${describeRequirement(requirement)} (ANDed with the term's other requirements)`,
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
    return terms.map(
      (term, i) => `+ required node affinity, term ${i}: ${(term.matchExpressions ?? []).map(describeRequirement).join(' AND ')}`,
    );
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

function describeStep(step: ReviewStep): string[] {
  const lines: string[] = [];
  if (step.changes.length > 0) {
    lines.push(`  ${step.plugin}: ${pluginExplanation(step.plugin)}`);
    for (const change of step.changes) {
      lines.push(...describeChange(change).map((line) => `    ${line}`));
    }
  }
  if (step.denial !== undefined) {
    lines.push(`  ${step.plugin} denies: ${denialStatus(step.denial).message}`);
  }
  for (const warning of step.warnings) {
    lines.push(`  ${step.plugin} warns: ${warning}`);
  }
  return lines;
}

/** The explanation of one manifest, as lines of text. */
export async function explainManifest(pipeline: Pipeline, entry: ExplainEntry): Promise<string[]> {
  const { attributes } = entry.review;
  const { decision, trace } = await pipeline.review(entry.review, ['mutate', 'validate'], { record: true });
  const lines =
    entry.kind.kind === 'Pod'
      ? [`Pod ${attributes.namespace}/${attributes.name === '' ? '(generated name)' : attributes.name}`]
      : [`${entry.kind.kind} ${attributes.namespace}/${entry.workload}: the pods it creates`];
  const tenancy = decision.auditAnnotations ?? {};
  const policy = tenancy['dedicated-nodes-policy'];
  const group = tenancy['dedicated-nodes-group'];
  if (policy !== undefined && group !== undefined) {
    lines.push(`  namespace ${attributes.namespace}: group "${group}" (policy ${policy})`);
  } else {
    lines.push(`  namespace ${attributes.namespace}: no node group`);
  }
  const steps = trace.steps ?? [];
  const described = steps.flatMap(describeStep);
  lines.push(...(described.length > 0 ? described : ['  no plugin changes anything']));
  if (decision.allowed) {
    const changed = (decision.patch?.length ?? 0) > 0;
    lines.push(`  result: allowed${changed ? ', with the changes above' : ', unchanged'}`);
  } else {
    lines.push(`  result: denied by ${trace.deniedBy ?? 'a plugin'}`);
  }
  return lines;
}

/** One line per caution of the loaded policies (a rule that reads what tenants write), shown before the explanations. */
export function policyCautionLines(set: PolicySet): string[] {
  return set.policies.flatMap((policy) => policy.cautions.map((caution) => `caution: ${caution}`));
}

export const explainCommand: CommandDefinition = {
  name: 'explain',
  summary: 'for pod or workload manifests and the cluster state, which group applies and every change, with its reason',
  arguments: [['<manifest...>', 'files of Pods or workloads, multi-document YAML or JSON; - for standard input']],
  flags: offlineFlags,
  outcomes: { ok: 'every pod is allowed', found: 'a pod is denied' },
  run: explain,
};

async function explain(flags: ParsedFlags, io: CommandIo): Promise<number> {
  const settings = readAdmissionSettings(flags);
  const logger = io.log();
  const clusterFacts = offlineClusterFacts(settings.clusterStateFile, io.readFile, (warning) => {
    logger.warn({ source: settings.clusterStateFile }, warning);
  });
  const tenancy = startTenancy(settings.policiesDir, logger, undefined, false);
  const pipeline = pipelineFor(settings, clusterFacts, tenancy.current);
  for (const line of policyCautionLines(tenancy.current())) {
    io.stdout(`${line}\n\n`);
  }
  let allAllowed = true;
  for (const file of flags.positionals) {
    const text = file === '-' ? Buffer.from(io.readStdin()).toString('utf8') : io.readFile(file);
    for (const entry of reviewsFromManifests({ source: file, text })) {
      const lines = await explainManifest(pipeline, entry);
      allAllowed &&= !lines.at(-1)?.includes('result: denied');
      io.stdout(`${lines.join('\n')}\n\n`);
    }
  }
  return allAllowed ? 0 : 1;
}
