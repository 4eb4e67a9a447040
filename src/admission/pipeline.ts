/**
 * The admission pipeline: the mutating plugins in order, each on the previous one's result, then
 * the validating plugins on the final object — as kube-apiserver runs its own admission chain and
 * then calls a mutating and a validating webhook. The only I/O is the namespace look-up through
 * the ClusterFacts passed in; the plugins themselves are pure.
 */
import type { KubernetesVersion } from '../api/feature-gate-history.js';
import type { FeatureGates } from '../api/feature-gates.js';
import { objectAt } from '../api/pod-template.js';
import { resourceKindByResource } from '../api/resource-kinds.js';
import type { JsonObject } from '../api/types.js';
import { tolerationsOf } from '../tolerations/pod-tolerations.js';
import { isDNS1123Subdomain } from '../validation/name-validation.js';
import type {
  AdmissionAttributes,
  Denial,
  Findings,
  MutatingPlugin,
  PluginContext,
  PluginName,
  ValidatingPlugin,
} from '../plugins/plugin.js';
import { asValidatedWithGateOff } from '../plugins/device-toleration-validation.js';
import { isMirrorPodRequest, isPodRequest } from '../plugins/plugin.js';
import type { ClusterFacts } from './cluster-facts.js';
import { diffJson, jsonEqual, type JsonPatchOperation } from './json-patch-diff.js';
import type { AdmissionDecision } from './response.js';
import type { ParsedReview } from './review.js';
import { denialStatus } from './status.js';

export type WebhookSide = 'mutate' | 'validate';

export interface PipelineOptions {
  readonly mutating: readonly MutatingPlugin[];
  readonly validating: readonly ValidatingPlugin[];
  /**
   * The feature gates: a fixed value (the offline commands), or a function read once per review,
   * when its plugin context is built (serve, whose gates follow the cluster:
   * src/kube/feature-gate-source.ts), so that every plugin of one review sees the same gates.
   */
  readonly gates: FeatureGates | (() => FeatureGates);
  /** The version the API server reports, read with the gates (PluginContext.serverVersion); absent offline. */
  readonly serverVersion?: () => KubernetesVersion | undefined;
  readonly clusterFacts: ClusterFacts;
}

/** One plugin's part in a review, recorded for `tolerator explain`. */
export interface ReviewStep {
  readonly plugin: PluginName;
  readonly side: WebhookSide;
  /** What this plugin changed, as a patch against the object it was given. */
  readonly changes: readonly JsonPatchOperation[];
  readonly denial?: Denial;
  readonly warnings: readonly string[];
  readonly auditAnnotations: Readonly<Record<string, string>>;
}

/** What happened in one review, for logs and metrics; never holds the object itself. */
export interface ReviewTrace {
  /** The plugins that acted (changed the object or decided), in order. */
  readonly plugins: readonly PluginName[];
  /** The plugin that denied, if any. */
  readonly deniedBy?: PluginName;
  /** Every plugin that ran, with what it did: only when the review was asked to record them. */
  readonly steps?: readonly ReviewStep[];
}

export interface PipelineResult {
  readonly decision: AdmissionDecision;
  readonly trace: ReviewTrace;
}

export interface Pipeline {
  /**
   * Runs one side, or both in order (`tolerator review`), on a parsed request. `record` keeps
   * each plugin's changes (a diff per plugin), which only `tolerator explain` pays for.
   */
  review(parsed: ParsedReview, sides: readonly WebhookSide[], options?: { readonly record?: boolean }): Promise<PipelineResult>;
}

export function createPipeline(options: PipelineOptions): Pipeline {
  return {
    async review(parsed, sides, reviewOptions) {
      const attributes = parsed.attributes;
      const mutating = sides.includes('mutate') ? options.mutating.filter((plugin) => plugin.handles(attributes)) : [];
      const validating = sides.includes('validate') ? options.validating.filter((plugin) => plugin.handles(attributes)) : [];
      const original = attributes.object;
      if (original === undefined || (mutating.length === 0 && validating.length === 0)) {
        return { decision: { allowed: true }, trace: { plugins: [] } };
      }
      const context = await readContext(attributes, options, validating);
      const findings = new FindingsCollector();
      let object = original;
      const acted: PluginName[] = [];
      const steps: ReviewStep[] | undefined = reviewOptions?.record === true ? [] : undefined;

      // Mirror pods are the API server's copies of static pods managed by a kubelet: the kubelet
      // owns their spec and would fight any change, so they are never mutated.
      if (!isMirrorPodRequest(attributes)) {
        for (const plugin of mutating) {
          const outcome = plugin.admit(object, attributes, context);
          findings.add(outcome);
          steps?.push(step(plugin.name, 'mutate', outcome, outcome.denial === undefined ? diffJson(object, outcome.object) : []));
          if (outcome.denial !== undefined) {
            return denied(outcome.denial, plugin.name, acted, findings, steps);
          }
          if (outcome.object !== object) {
            acted.push(plugin.name);
            object = outcome.object;
          }
        }
      }
      if (object !== original) {
        assertAppendOnlyUpdate(attributes, original, object);
      }

      // Offline, both sides on one object: the validating side sees what the API server would
      // hand it after its own field drops (device tolerations with DRADeviceTaints off).
      const bothSides = sides.includes('mutate') && sides.includes('validate');
      const judged = bothSides ? asValidatedWithGateOff(object, attributes, context.gates) : object;
      const validated: AdmissionAttributes = judged === original ? attributes : { ...attributes, object: judged };
      for (const plugin of validating) {
        const outcome = plugin.validate(judged, validated, context);
        findings.add(outcome);
        steps?.push(step(plugin.name, 'validate', outcome, []));
        if (outcome.denial !== undefined) {
          return denied(outcome.denial, plugin.name, acted, findings, steps);
        }
      }
      const patch = object === original ? [] : diffJson(original, object);
      return {
        decision: { allowed: true, patch, warnings: findings.warnings, auditAnnotations: findings.auditAnnotations },
        trace: { plugins: acted, ...(steps === undefined ? {} : { steps }) },
      };
    },
  };
}

function step(
  plugin: PluginName,
  side: WebhookSide,
  outcome: Findings & { readonly denial?: Denial },
  changes: readonly JsonPatchOperation[],
): ReviewStep {
  return {
    plugin,
    side,
    changes,
    ...(outcome.denial === undefined ? {} : { denial: outcome.denial }),
    warnings: outcome.warnings ?? [],
    auditAnnotations: outcome.auditAnnotations ?? {},
  };
}

/**
 * Reads what the plugins will need from the cluster: the request's Namespace and, when a
 * validating plugin judges it, the Node the object's `nodeName` names. Both reads fall back to the
 * API server on a cache miss; a read that cannot be answered rejects, and the review is then
 * undecided (500, the failurePolicy applies) instead of being judged on a guess.
 */
async function readContext(
  attributes: AdmissionAttributes,
  options: PipelineOptions,
  validating: readonly ValidatingPlugin[],
): Promise<PluginContext> {
  const facts = options.clusterFacts;
  const nodeName = validating.some((plugin) => plugin.readsNamedNode?.(attributes) === true) ? namedNodeToJudge(attributes) : undefined;
  const runtimeClassName = validating.some((plugin) => plugin.readsRuntimeClass?.(attributes) === true)
    ? runtimeClassNamed(attributes)
    : undefined;
  const [namespace, namedNode, runtimeClass] = await Promise.all([
    attributes.namespace === '' ? undefined : facts.getNamespace(attributes.namespace),
    nodeName === undefined ? undefined : facts.readNode(nodeName),
    // Only explains a refusal, never decides one: a read that fails leaves it unexplained.
    runtimeClassName === undefined ? undefined : facts.readRuntimeClass(runtimeClassName).catch(() => undefined),
  ]);
  return {
    gates: typeof options.gates === 'function' ? options.gates() : options.gates,
    serverVersion: options.serverVersion?.(),
    namespace,
    node: (name) => (name === nodeName ? namedNode : facts.getNode(name)),
    nodesKnown: facts.knowsNodes,
    nodes: () => facts.listNodes(),
    runtimeClass,
  };
}

/** The RuntimeClass a Pod names, when it is a name a RuntimeClass can have (a DNS-1123 subdomain). */
function runtimeClassNamed(attributes: AdmissionAttributes): string | undefined {
  const spec = objectAt(attributes.object, podSpecPath);
  const name = spec?.runtimeClassName;
  return typeof name === 'string' && name !== '' && isDNS1123Subdomain(name).length === 0 ? name : undefined;
}

const podSpecPath: readonly string[] = ['spec'];

/**
 * The node name an object binds its pods to, when a plugin must judge it: on CREATE, or on an
 * UPDATE that changes it (a Pod's nodeName is immutable once set, a template's is not). A name
 * that is not a DNS-1123 subdomain cannot be a Node's (the API server refuses it in a pod), so it
 * is never sent to the API server as a path: it is judged as a node that does not exist.
 */
function namedNodeToJudge(attributes: AdmissionAttributes): string | undefined {
  const kind = attributes.subResource === '' ? resourceKindByResource(attributes.resource.group, attributes.resource.resource) : undefined;
  if (kind === undefined) {
    return undefined;
  }
  const name = nodeNameAt(attributes.object, kind.podSpecPath);
  if (
    name === undefined ||
    name === '' ||
    (attributes.operation === 'UPDATE' && nodeNameAt(attributes.oldObject, kind.podSpecPath) === name)
  ) {
    return undefined;
  }
  return isDNS1123Subdomain(name).length === 0 ? name : undefined;
}

function nodeNameAt(object: JsonObject | undefined, podSpecPath: readonly string[]): string | undefined {
  // The path as it is, not extended by 'nodeName': no array built per review.
  const name = objectAt(object, podSpecPath)?.nodeName;
  return typeof name === 'string' ? name : undefined;
}

function denied(
  denial: Denial,
  by: PluginName,
  acted: readonly PluginName[],
  findings: FindingsCollector,
  steps: readonly ReviewStep[] | undefined,
): PipelineResult {
  return {
    decision: { allowed: false, status: denialStatus(denial), warnings: findings.warnings, auditAnnotations: findings.auditAnnotations },
    trace: { plugins: [...acted, by], deniedBy: by, ...(steps === undefined ? {} : { steps }) },
  };
}

/**
 * The last line of defence for the rule that an UPDATE only ever adds tolerations
 * (docs/architecture.md#update-only-appends-tolerations): the API
 * server refuses any UPDATE that removes or rewrites one, so a plugin that did would make every
 * later update of the pod fail. A plugin bug here is "could not decide", never a silent patch.
 * A changed `tolerationSeconds` is allowed, as the API server allows it
 * (validateOnlyAddedTolerations): ExtendedResourceToleration drops it where upstream does.
 */
function assertAppendOnlyUpdate(attributes: AdmissionAttributes, original: JsonObject, changed: JsonObject): void {
  if (attributes.operation !== 'UPDATE' || !isPodRequest(attributes)) {
    return;
  }
  const before = tolerationsOf(original);
  const after = tolerationsOf(changed);
  const kept = before.length <= after.length && before.every((toleration, i) => equalButForSeconds(toleration, after[i]));
  if (!kept) {
    throw new Error('internal error: a mutating plugin removed or rewrote an existing toleration on UPDATE');
  }
}

/** Two tolerations equal once their `tolerationSeconds` are set aside. */
function equalButForSeconds(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  const withoutSeconds = (value: unknown): unknown => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
    const { tolerationSeconds: _seconds, ...rest } = value as Record<string, unknown>;
    return rest;
  };
  return jsonEqual(withoutSeconds(a), withoutSeconds(b));
}

class FindingsCollector {
  readonly warnings: string[] = [];
  readonly auditAnnotations: Record<string, string> = {};

  add(findings: Findings): void {
    if (findings.warnings !== undefined) {
      // One at a time: spreading a list of a hundred thousand arguments overflows the call stack.
      for (const warning of findings.warnings) this.warnings.push(warning);
    }
    if (findings.auditAnnotations !== undefined) {
      for (const [key, value] of Object.entries(findings.auditAnnotations)) {
        Object.defineProperty(this.auditAnnotations, key, { value, enumerable: true, writable: true, configurable: true });
      }
    }
  }
}
