/**
 * PodNodeSelector, the kube-apiserver admission plugin (off by default upstream and here), both
 * mutating and validating, for pods on CREATE only (upstream's admission.NewHandler(admission.Create);
 * pods proper, not subresources):
 * - Admit: the namespace's node selector (annotation `scheduler.alpha.kubernetes.io/node-selector`,
 *   else the configuration's `clusterDefaultNodeSelector`) must not conflict with the pod's
 *   `spec.nodeSelector`, and is merged into it; then Validate runs on the result.
 * - Validate: no conflict with the namespace's selector, and the pod's nodeSelector within the
 *   namespace's whitelist (the configuration entry under the namespace's name).
 * The rules themselves are src/scheduling/namespace-node-selector.ts.
 *
 * Answers, as upstream's (plugin/pkg/admission/podnodeselector/admission.go):
 * - a conflict and a whitelist violation are errors.NewForbidden on the pod: 403,
 *   `pods "web-0" is forbidden: pod node label selector conflicts with its namespace node label
 *   selector` (`pods is forbidden: …` while a generated name is still empty, as at mutating
 *   admission), with `details` {kind: pods, name};
 * - an annotation that does not parse is a plain Go error upstream, which kube-apiserver answers
 *   500 with reason Unknown (the empty string: no reason in the Status). A webhook answering 500 would trip its failurePolicy (Ignore on the
 *   mutating webhook: the pod would go through unconfined) instead of refusing, so it is a 403
 *   with upstream's text, prefixed with the namespace and annotation, as PodTolerationRestriction does;
 * - a namespace that does not exist is an internal error upstream; the pipeline has read it
 *   (cache, then the API server) and undefined means there is none, so it reads as a namespace
 *   without the annotation (the API server's NamespaceLifecycle refuses pods there anyway).
 *
 * tolerator's addition, for DaemonSets (apps/v1, CREATE and UPDATE): the DaemonSet controller
 * creates a pod for every node its template selects, and upstream then confines each of those pods
 * to the namespace's nodes, so the pods meant for other nodes can never run (and were recreated in a
 * loop while the controller bound pods itself: kubernetes/kubernetes#51788). So the template gets
 * the namespace's selector too, and the controller targets only those nodes. A template that
 * conflicts with the namespace's selector, or leaves its whitelist, is refused at the DaemonSet,
 * since every pod it would create would be refused. An UPDATE that leaves the template alone (a
 * label, a finalizer) changes nothing and is not refused: rolling running daemon pods out or
 * wedging the DaemonSet's updates over a namespace annotation added later would be a surprise; a
 * problem there is a warning. Pods themselves stay exactly upstream's.
 *
 * One difference on the validating side: upstream's Validate checks conflicts and the whitelist
 * only, since in kube-apiserver its Admit has always merged the selector just before. A webhook's
 * mutating call can be skipped (failurePolicy Ignore), so the validating side also refuses a pod
 * created without the namespace's labels, and a DaemonSet template written without them; after
 * the mutating side ran, nothing is missing and the answers are upstream's.
 *
 * Mirror pods are never mutated (the pipeline's rule) nor refused here: the kubelet runs the static
 * pod whatever the API says, and refusing its mirror would only hide it.
 */
import { podTemplateOf, withPodSpec, type PodTemplate } from '../api/pod-template.js';
import { daemonSetKind } from '../api/resource-kinds.js';
import type { JsonObject, Namespace, Pod } from '../api/types.js';
import { isJsonObject, jsonEqual } from '../api/types.js';
import {
  effectiveNamespaceNodeSelector,
  judgeNodeSelector,
  type EffectiveSelector,
  mergeNodeSelector,
  namespaceWhitelist,
  type LabelSet,
  type NodeSelectorJudgement,
  type PodNodeSelectorConfig,
} from '../scheduling/namespace-node-selector.js';
import { clip } from '../scheduling/warning-text.js';
import type {
  AdmissionAttributes,
  Denial,
  MutatingPlugin,
  MutationOutcome,
  PluginContext,
  ValidatingPlugin,
  ValidationOutcome,
} from './plugin.js';
import { isMirrorPodRequest, isPodRequest } from './plugin.js';

/** The pod requests upstream handles: pods proper, on CREATE. */
function isPodCreate(attributes: AdmissionAttributes): boolean {
  return isPodRequest(attributes) && attributes.operation === 'CREATE';
}

/** tolerator's addition: apps/v1 DaemonSets proper, on CREATE and UPDATE. */
function isDaemonSetWrite(attributes: AdmissionAttributes): boolean {
  const { group, version, resource } = attributes.resource;
  return (
    group === 'apps' &&
    version === 'v1' &&
    resource === 'daemonsets' &&
    attributes.subResource === '' &&
    (attributes.operation === 'CREATE' || attributes.operation === 'UPDATE')
  );
}

function nameOf(object: JsonObject | undefined): string {
  const metadata = object?.metadata;
  return isJsonObject(metadata) && typeof metadata.name === 'string' ? metadata.name : '';
}

/** The nodeSelector of a pod spec; the admission layer has checked it is a map of strings when present. */
function nodeSelectorOf(spec: unknown): Readonly<Record<string, string>> {
  const selector = isJsonObject(spec) ? spec.nodeSelector : undefined;
  return isJsonObject(selector) ? (selector as Record<string, string>) : {};
}

/** A pod's denial, as upstream words it (errors.NewForbidden on the pod; a plain error for an annotation). */
function podDenial(judgement: Exclude<NodeSelectorJudgement, { verdict: 'allowed' }>, podName: string): Denial {
  if (judgement.verdict === 'unreadable') {
    return { reason: 'Forbidden', message: judgement.message };
  }
  return { reason: 'Forbidden', message: judgement.message, object: { group: '', resource: 'pods', name: podName } };
}

/**
 * A DaemonSet template's problem, in words about the template: which key, and why every pod it
 * would create is refused. Keys and values are the tenant's and may be long (the mutating webhook
 * sees the object before the API server validates it), so they are clipped.
 */
function templateProblem(
  judgement: Exclude<NodeSelectorJudgement, { verdict: 'allowed' }>,
  template: Readonly<Record<string, string>>,
): string {
  const consequence = "every pod the DaemonSet creates would be refused by the namespace's PodNodeSelector";
  switch (judgement.verdict) {
    case 'unreadable':
      return `${judgement.message}; ${consequence}`;
    case 'conflict': {
      const { key, namespaceValue, podValue } = judgement.conflict;
      return (
        `spec.template.spec.nodeSelector conflicts with its namespace node label selector ` +
        `(${clip(key)}=${clip(podValue)}, the namespace requires ${clip(key)}=${clip(namespaceValue)}): ${consequence}`
      );
    }
    case 'not-whitelisted': {
      const value = template[judgement.key] ?? '';
      return (
        `spec.template.spec.nodeSelector, merged with the namespace node label selector, conflicts with its namespace whitelist ` +
        `(${clip(judgement.key)}=${clip(value)} is not in it): ${consequence}`
      );
    }
  }
}

/**
 * The labels of the namespace's selector a nodeSelector lacks, as `k=v, k=v` (at most
 * `missingShown` of them, then a count): the validating side's reason when the mutating side's
 * merge did not happen. Keys and values are the namespace's (written by whoever may annotate it),
 * clipped all the same.
 */
function missingLabels(nodeSelector: Readonly<Record<string, string>>, namespaceSelector: LabelSet): string | undefined {
  const missing: string[] = [];
  let count = 0;
  for (const [key, value] of namespaceSelector) {
    if (Object.hasOwn(nodeSelector, key)) continue;
    count++;
    if (missing.length < missingShown) missing.push(`${clip(key)}=${clip(value)}`);
  }
  if (count === 0) return undefined;
  return count > missing.length ? `${missing.join(', ')} and ${count - missing.length} more` : missing.join(', ');
}

/** As many labels as a denial spells out (the violations of DedicatedNodes stop at the same number). */
const missingShown = 10;

/** Why a pod or template that lacks the namespace's labels is refused on the validating side. */
const unmergedText =
  "lacks its namespace node label selector's labels, which tolerator's mutating webhook adds: the object did not pass that webhook (unavailable, timed out or skipped)";

/** The template of a DaemonSet, when it has a pod spec (an object without one is the API server's to refuse). */
function templateOf(object: JsonObject | undefined): PodTemplate | undefined {
  return podTemplateOf(object, daemonSetKind);
}

/**
 * Whether a DaemonSet request writes its pod template: a CREATE, or an UPDATE that changes
 * `spec.template` (which rolls the DaemonSet's pods out). Deep equality costs the template's size once.
 */
function writesTemplate(attributes: AdmissionAttributes, template: JsonObject): boolean {
  return attributes.operation === 'CREATE' || !jsonEqual(template, templateOf(attributes.oldObject)?.template);
}

export function createPodNodeSelector(config: PodNodeSelectorConfig): MutatingPlugin & ValidatingPlugin {
  // The namespace's selector, parsed once per Namespace object: the cache hands out the same
  // object until the namespace changes, and every pod created there (on both webhooks) would
  // otherwise parse its annotation again. Weak, so a replaced Namespace object drops its entry.
  const selectors = new WeakMap<Namespace, EffectiveSelector>();
  const namespaceSelector = (namespace: Namespace | undefined): EffectiveSelector => {
    if (namespace === undefined) return effectiveNamespaceNodeSelector(undefined, config);
    let effective = selectors.get(namespace);
    if (effective === undefined) {
      effective = effectiveNamespaceNodeSelector(namespace, config);
      selectors.set(namespace, effective);
    }
    return effective;
  };
  const handles = (attributes: AdmissionAttributes): boolean => isPodCreate(attributes) || isDaemonSetWrite(attributes);

  function admitPod(object: JsonObject, attributes: AdmissionAttributes, context: PluginContext): MutationOutcome {
    const pod = object as Pod;
    const effective = namespaceSelector(context.namespace);
    if (effective.error !== undefined) {
      return { denial: podDenial({ verdict: 'unreadable', message: effective.error }, nameOf(object)) };
    }
    // Conflicts first, on the pod's own selector; then the merge; then Validate on the result
    // (the merge keeps the pod's value of a conflicting key, so judging the merged selector finds
    // the same conflict first).
    const own = nodeSelectorOf(pod.spec);
    const merged = mergeNodeSelector(own, effective.selector);
    const judgement = judgeNodeSelector(merged, effective, namespaceWhitelist(config, attributes.namespace));
    if (judgement.verdict !== 'allowed') {
      return { denial: podDenial(judgement, nameOf(object)) };
    }
    if (merged === own) {
      return { object };
    }
    return { object: { ...object, spec: { ...pod.spec, nodeSelector: merged } } };
  }

  function admitDaemonSet(object: JsonObject, attributes: AdmissionAttributes, context: PluginContext): MutationOutcome {
    const found = templateOf(object);
    if (found === undefined || !writesTemplate(attributes, found.template)) {
      return { object };
    }
    const effective = namespaceSelector(context.namespace);
    const own = nodeSelectorOf(found.spec);
    const merged = effective.error === undefined ? mergeNodeSelector(own, effective.selector) : own;
    const judgement = judgeNodeSelector(merged, effective, namespaceWhitelist(config, attributes.namespace));
    if (judgement.verdict !== 'allowed') {
      return { denial: daemonSetDenial(judgement, merged, object) };
    }
    if (merged === own) {
      return { object };
    }
    return { object: withPodSpec(object, daemonSetKind, { ...found.spec, nodeSelector: merged }) };
  }

  function validateDaemonSet(object: JsonObject, attributes: AdmissionAttributes, context: PluginContext): ValidationOutcome {
    const found = templateOf(object);
    if (found === undefined) {
      return {};
    }
    const own = nodeSelectorOf(found.spec);
    const effective = namespaceSelector(context.namespace);
    const judgement = judgeNodeSelector(own, effective, namespaceWhitelist(config, attributes.namespace));
    if (judgement.verdict === 'allowed') {
      const missing = effective.error === undefined ? missingLabels(own, effective.selector) : undefined;
      if (missing === undefined || !writesTemplate(attributes, found.template)) {
        return {};
      }
      return {
        denial: {
          reason: 'Forbidden',
          message: `spec.template.spec.nodeSelector ${unmergedText}; missing: ${missing}`,
          object: { group: 'apps', resource: 'daemonsets', name: nameOf(object) },
        },
      };
    }
    if (writesTemplate(attributes, found.template)) {
      return { denial: daemonSetDenial(judgement, own, object) };
    }
    return { warnings: [`PodNodeSelector: DaemonSet ${JSON.stringify(clip(nameOf(object)))}: ${templateProblem(judgement, own)}`] };
  }

  return {
    name: 'PodNodeSelector',
    handles,

    admit(object: JsonObject, attributes: AdmissionAttributes, context: PluginContext): MutationOutcome {
      if (isPodCreate(attributes)) {
        return admitPod(object, attributes, context);
      }
      return isDaemonSetWrite(attributes) ? admitDaemonSet(object, attributes, context) : { object };
    },

    validate(object: JsonObject, attributes: AdmissionAttributes, context: PluginContext): ValidationOutcome {
      if (isDaemonSetWrite(attributes)) {
        return validateDaemonSet(object, attributes, context);
      }
      if (!isPodCreate(attributes) || isMirrorPodRequest(attributes)) {
        return {};
      }
      const own = nodeSelectorOf(object.spec);
      const effective = namespaceSelector(context.namespace);
      const judgement = judgeNodeSelector(own, effective, namespaceWhitelist(config, attributes.namespace));
      if (judgement.verdict !== 'allowed') {
        return { denial: podDenial(judgement, nameOf(object)) };
      }
      // Upstream's Validate checks conflicts only, because its Admit always ran just before. Here
      // the mutating webhook may have been skipped (failurePolicy Ignore), and a pod without the
      // namespace's labels would run anywhere: the guarantee is held on this side.
      const missing = effective.error === undefined ? missingLabels(own, effective.selector) : undefined;
      if (missing === undefined) {
        return {};
      }
      return {
        denial: {
          reason: 'Forbidden',
          message: `pod node label selector ${unmergedText}; missing: ${missing}`,
          object: { group: '', resource: 'pods', name: nameOf(object) },
        },
      };
    },
  } satisfies MutatingPlugin & ValidatingPlugin;
}

/** The DaemonSet refused as errors.NewForbidden would name it: `daemonsets.apps "agent" is forbidden: …`. */
function daemonSetDenial(
  judgement: Exclude<NodeSelectorJudgement, { verdict: 'allowed' }>,
  template: Readonly<Record<string, string>>,
  object: JsonObject,
): Denial {
  return {
    reason: 'Forbidden',
    message: templateProblem(judgement, template),
    object: { group: 'apps', resource: 'daemonsets', name: nameOf(object) },
  };
}
