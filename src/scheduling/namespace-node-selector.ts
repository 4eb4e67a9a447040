/**
 * The node selector a namespace imposes on its pods, as kube-apiserver's PodNodeSelector admission
 * plugin decides it (plugin/pkg/admission/podnodeselector/admission.go), with the label-set helpers
 * it uses (staging/src/k8s.io/apimachinery/pkg/labels/labels.go: ConvertSelectorToLabelsMap,
 * Conflicts, Merge, and the whitelist check isSubset, formerly AreLabelsInWhiteList).
 *
 * - The namespace's selector is its annotation `scheduler.alpha.kubernetes.io/node-selector`; a
 *   namespace without the annotation gets the cluster default (`clusterDefaultNodeSelector` of the
 *   plugin's configuration). An annotation that is present but empty means "no selector": the
 *   cluster default does not apply.
 * - A pod's `spec.nodeSelector` conflicts with it when one key has two different values.
 * - The configuration may also give a namespace a whitelist (the entry under the namespace's
 *   name): every key of the pod's nodeSelector must then be in it with the same value; an empty
 *   or absent whitelist allows everything.
 *
 * Pure: the namespace and the configuration come in as values. Every function here costs time
 * linear in the selectors it is given (one pass, Map look-ups, no regular expressions).
 */
import { goTrimSpace } from '../api/go-strings.js';
import type { Namespace } from '../api/types.js';
import { errorMessage, invalid } from '../validation/field-errors.js';
import { isQualifiedName, isValidLabelValue } from '../validation/name-validation.js';

/** The namespace annotation (upstream's NamespaceNodeSelectors, a list of this one key). */
export const namespaceNodeSelectorAnnotation = 'scheduler.alpha.kubernetes.io/node-selector';

/** The key of the plugin configuration that holds the cluster default; every other key is a namespace's whitelist. */
export const clusterDefaultNodeSelectorKey = 'clusterDefaultNodeSelector';

/** A label set (labels.Set): key → value, in the order the selector text names them. */
export type LabelSet = ReadonlyMap<string, string>;

/** What the plugin's configuration says, its selectors already parsed (src/plugins/admission-config.ts reads it). */
export interface PodNodeSelectorConfig {
  /** `clusterDefaultNodeSelector`: the selector of every namespace without the annotation. */
  readonly clusterDefault: LabelSet;
  /** Whitelists by namespace name; a namespace with none (or an empty one) may select any labels. */
  readonly whitelists: ReadonlyMap<string, LabelSet>;
}

export const emptyPodNodeSelectorConfig: PodNodeSelectorConfig = { clusterDefault: new Map(), whitelists: new Map() };

export type ParsedSelector =
  { readonly labels: LabelSet; readonly error?: undefined } | { readonly labels?: undefined; readonly error: string };

/**
 * labels.ConvertSelectorToLabelsMap: `""` is the empty set; otherwise the text is split at every
 * `,`, and each part at every `=`, which must give exactly two pieces (so `k==v` and `k!=v` are
 * refused, and so is an empty part: `a=b,`); key and value are trimmed of Go's white space
 * (strings.TrimSpace) and must be a label key and a label value. A key named twice keeps its last
 * value. Only the first error is returned, with upstream's text:
 * - `invalid selector: [a b c]` (the pieces, as Go's `%s` prints a []string);
 * - `<nil>: Invalid value: "k!": …` for a key (a field.Error on a nil path);
 * - `[k]: Invalid value: "v!": …` for a value (the nil path's `.Key(k)`).
 */
export function parseSelectorLabels(selector: string): ParsedSelector {
  const labels = new Map<string, string>();
  if (selector.length === 0) {
    return { labels };
  }
  for (const label of selector.split(',')) {
    const pieces = label.split('=');
    if (pieces.length !== 2) {
      return { error: `invalid selector: [${pieces.join(' ')}]` };
    }
    const key = goTrimSpace(pieces[0] ?? '');
    const keyErrors = isQualifiedName(key);
    if (keyErrors.length > 0) {
      return { error: errorMessage(invalid('<nil>', key, keyErrors.join('; '))) };
    }
    const value = goTrimSpace(pieces[1] ?? '');
    const valueErrors = isValidLabelValue(value);
    if (valueErrors.length > 0) {
      return { error: errorMessage(invalid(`[${key}]`, value, valueErrors.join('; '))) };
    }
    labels.set(key, value);
  }
  return { labels };
}

/** The value of `key` in a JSON object (a pod's nodeSelector), only if it is the object's own. */
function ownValue(record: Readonly<Record<string, string>>, key: string): string | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

export interface LabelConflict {
  readonly key: string;
  readonly namespaceValue: string;
  readonly podValue: string;
}

/**
 * labels.Conflicts(namespace selector, pod nodeSelector): a key both name with different values.
 * Walks the namespace's selector and looks each key up in the pod's, so it costs the size of the
 * namespace's selector, whatever the pod holds; the first conflict in the selector's order is returned.
 */
export function nodeSelectorConflict(
  namespaceSelector: LabelSet,
  nodeSelector: Readonly<Record<string, string>>,
): LabelConflict | undefined {
  for (const [key, namespaceValue] of namespaceSelector) {
    const podValue = ownValue(nodeSelector, key);
    if (podValue !== undefined && podValue !== namespaceValue) {
      return { key, namespaceValue, podValue };
    }
  }
  return undefined;
}

/**
 * isSubset(pod nodeSelector, whitelist): an empty whitelist allows everything; otherwise every key
 * of the pod's nodeSelector must be in the whitelist with the same value. Returns the first key
 * that is not, in the pod's order.
 */
export function firstNotWhitelisted(nodeSelector: Readonly<Record<string, string>>, whitelist: LabelSet): string | undefined {
  if (whitelist.size === 0) {
    return undefined;
  }
  for (const [key, value] of Object.entries(nodeSelector)) {
    if (whitelist.get(key) !== value) {
      return key;
    }
  }
  return undefined;
}

/**
 * labels.Merge(namespace selector, pod nodeSelector), for a pod that does not conflict: the pod's
 * entries as they are, then each key of the namespace's selector the pod lacks. Returns the given
 * object itself when it lacks none, so an unchanged pod yields no patch. Built with
 * Object.fromEntries, which defines each key as the object's own (a key `__proto__` stays a label).
 */
export function mergeNodeSelector(
  nodeSelector: Readonly<Record<string, string>>,
  namespaceSelector: LabelSet,
): Readonly<Record<string, string>> {
  const missing: [string, string][] = [];
  for (const [key, value] of namespaceSelector) {
    if (!Object.hasOwn(nodeSelector, key)) {
      missing.push([key, value]);
    }
  }
  if (missing.length === 0) {
    return nodeSelector;
  }
  return Object.fromEntries([...Object.entries(nodeSelector), ...missing]);
}

export type EffectiveSelector =
  | {
      readonly selector: LabelSet;
      /** Where it came from: the namespace's annotation, or the cluster default of the configuration. */
      readonly source: 'namespace' | 'cluster';
      readonly error?: undefined;
    }
  | { readonly selector?: undefined; readonly source?: undefined; readonly error: string };

/**
 * getNodeSelectorMap: the namespace's annotation when it has one (even an empty one), else the
 * cluster default. An annotation that does not parse is an error; upstream returns its text
 * bare, here it is prefixed with the namespace and the annotation so the reader knows where to
 * look. An unknown namespace (undefined: the cluster state has no such namespace, and the API
 * server's NamespaceLifecycle refuses pods there anyway) reads as one without the annotation.
 */
export function effectiveNamespaceNodeSelector(namespace: Namespace | undefined, config: PodNodeSelectorConfig): EffectiveSelector {
  const annotations = namespace?.metadata.annotations;
  if (annotations === undefined || !Object.hasOwn(annotations, namespaceNodeSelectorAnnotation)) {
    return { selector: config.clusterDefault, source: 'cluster' };
  }
  const parsed = parseSelectorLabels(annotations[namespaceNodeSelectorAnnotation] ?? '');
  if (parsed.error !== undefined) {
    const where = `namespace ${JSON.stringify(namespace?.metadata.name ?? '')} annotation ${JSON.stringify(namespaceNodeSelectorAnnotation)}`;
    return { error: `${where}: ${parsed.error}` };
  }
  return { selector: parsed.labels, source: 'namespace' };
}

/** Upstream's refusal texts (the plugin's fmt.Errorf messages inside errors.NewForbidden). */
export const conflictText = 'pod node label selector conflicts with its namespace node label selector';
export const whitelistText = 'pod node label selector labels conflict with its namespace whitelist';

export type NodeSelectorJudgement =
  | { readonly verdict: 'allowed' }
  /** The pod's nodeSelector gives a key of the namespace's selector another value. */
  | { readonly verdict: 'conflict'; readonly conflict: LabelConflict; readonly message: string }
  /** A key of the pod's nodeSelector is not in the namespace's whitelist with that value. */
  | { readonly verdict: 'not-whitelisted'; readonly key: string; readonly message: string }
  /** The namespace's annotation does not parse: no pod can be judged there. */
  | { readonly verdict: 'unreadable'; readonly message: string };

/** The whitelist of a namespace: its configuration entry, else none (empty: everything allowed). */
export function namespaceWhitelist(config: PodNodeSelectorConfig, namespaceName: string): LabelSet {
  return config.whitelists.get(namespaceName) ?? emptyLabelSet;
}

const emptyLabelSet: LabelSet = new Map();

/**
 * The plugin's Validate for one nodeSelector: does it conflict with the namespace's effective
 * selector (the annotation, else the cluster default), and is it within the namespace's whitelist?
 * `namespaceName` names the whitelist (the request's namespace, known even when the Namespace
 * object is not). `message` is upstream's text, without the `pods "name" is forbidden: ` prefix.
 *
 * This is also the question `tolerator audit` asks of a running pod.
 */
export function judgeNamespaceNodeSelector(
  nodeSelector: Readonly<Record<string, string>> | undefined,
  namespaceName: string,
  namespace: Namespace | undefined,
  config: PodNodeSelectorConfig,
): NodeSelectorJudgement {
  return judgeNodeSelector(nodeSelector, effectiveNamespaceNodeSelector(namespace, config), namespaceWhitelist(config, namespaceName));
}

/** judgeNamespaceNodeSelector with the namespace's selector already read (the plugin reads it once per request). */
export function judgeNodeSelector(
  nodeSelector: Readonly<Record<string, string>> | undefined,
  effective: EffectiveSelector,
  whitelist: LabelSet,
): NodeSelectorJudgement {
  if (effective.error !== undefined) {
    return { verdict: 'unreadable', message: effective.error };
  }
  const own = nodeSelector ?? {};
  const conflict = nodeSelectorConflict(effective.selector, own);
  if (conflict !== undefined) {
    return { verdict: 'conflict', conflict, message: conflictText };
  }
  const key = firstNotWhitelisted(own, whitelist);
  if (key !== undefined) {
    return { verdict: 'not-whitelisted', key, message: whitelistText };
  }
  return { verdict: 'allowed' };
}
