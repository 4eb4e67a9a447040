/**
 * The toleration rules of tolerator's mutating plugins written as Kubernetes CEL text, for the
 * MutatingAdmissionPolicy `tolerator export` writes. Each function returns the text of an
 * expression over typed pod tolerations (`Object.spec.tolerations`), built from the same
 * definitions the webhook runs (src/tolerations/merge.ts, src/plugins/*), so that the two can be
 * compared case by case on a real API server (test/differential/export.differential.ts).
 *
 * Hand-written: no library turns TypeScript into CEL, and the text must reproduce upstream's Go
 * exactly (absent string fields read as "", `*int64` tolerationSeconds absent as nil).
 *
 * Only what Kubernetes 1.35's CEL environment offers is used, each tried on kube-apiserver v1.35.8:
 * optional field selection (`?.`, `orValue`), two-variable comprehensions
 * (`exists(i, v, …)`, `transformList`), `quantity()` with `isGreaterThan`, and typed object
 * map literals with optional entries (`?'k': v`). `cel.bind` is not there ("undeclared reference" on
 * its variable, v1.35.8), so intermediate lists are the policy's `variables`. Variable names are distinct at every nesting level:
 * CEL comprehension variables shadow, and a reused name would silently compare an element with
 * itself.
 */
import type { Toleration } from '../api/types.js';
import type { PodLevelResourcesGate } from '../tolerations/qos.js';

type Field = 'key' | 'operator' | 'value' | 'effect';

/** A string field of a typed toleration of the pod; absent is Go's "". */
function podField(t: string, name: Field): string {
  return `${t}.?${name}.orValue('')`;
}

/**
 * A string field of a normalized toleration (normalizedTolerationsCel), which holds all four:
 * read directly, at a third of the cost of an optional selection. The merge reads four of them a
 * pair of tolerations, and its pairs are what bounds the largest pod the policy can take (the
 * CEL cost budget; docs/without-a-webhook.md).
 */
function field(t: string, name: Field): string {
  return `${t}.${name}`;
}

function quote(text: string): string {
  // CEL single-quoted strings take the same escapes as JSON's for the characters that need one.
  return `'${text.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
}

/**
 * The tolerations every step works on: plain maps of the four strings ("" when absent, as Go
 * reads them) and tolerationSeconds only when set. Typed objects (`Object.spec.tolerations{…}`)
 * can be built only in a mutation, not in a policy's variables, where the steps are (v1.35.8:
 * "undeclared reference to 'Object.spec.tolerations'"), and a list cannot mix the two. Written
 * back, "" is what the API server decodes an absent string field to, so the stored pod is the
 * same. Every value is `dyn`: the API server's CEL wants map literals of one value type.
 */
export function normalizedTolerationsCel(list: string): string {
  const strings = (['key', 'operator', 'value', 'effect'] as const).map((name) => `'${name}': dyn(${podField('t', name)})`).join(', ');
  return `${list}.map(t, {${strings}, ?'tolerationSeconds': has(t.tolerationSeconds) ? optional.of(dyn(t.tolerationSeconds)) : optional.none()})`;
}

/** A constant toleration in that form. */
export function tolerationLiteral(toleration: Toleration): string {
  const parts = (['key', 'operator', 'value', 'effect'] as const).map((name) => `'${name}': dyn(${quote(toleration[name] ?? '')})`);
  if (typeof toleration.tolerationSeconds === 'number') parts.push(`'tolerationSeconds': dyn(${toleration.tolerationSeconds})`);
  return `{${parts.join(', ')}}`;
}

/** apiequality.Semantic.DeepEqual on two Tolerations (src/tolerations/merge.ts deepEqualTolerations). */
export function deepEqualCel(a: string, b: string): string {
  const strings = (['key', 'operator', 'value', 'effect'] as const).map((name) => `${field(a, name)} == ${field(b, name)}`);
  const seconds = `(has(${a}.tolerationSeconds) ? has(${b}.tolerationSeconds) && ${a}.tolerationSeconds == ${b}.tolerationSeconds : !has(${b}.tolerationSeconds))`;
  return `(${[...strings, seconds].join(' && ')})`;
}

/** isSuperset(ss, t) of src/tolerations/merge.ts, step by step. */
export function isSupersetCel(ss: string, t: string): string {
  const keys = `(${field(t, 'key')} == ${field(ss, 'key')} || (${field(ss, 'key')} == '' && ${field(ss, 'operator')} == 'Exists'))`;
  const effects = `(${field(t, 'effect')} == ${field(ss, 'effect')} || ${field(ss, 'effect')} == '')`;
  const bound = `(!(${field(ss, 'effect')} == 'NoExecute' && has(${ss}.tolerationSeconds)) || (has(${t}.tolerationSeconds) && ${t}.tolerationSeconds <= ${ss}.tolerationSeconds))`;
  // `""`/Equal need t's operator to be literally Equal with the same value; Exists covers all;
  // any other operator (Gt, Lt, garbage) covers only its identical copy, the first clause.
  const operator = `(${field(ss, 'operator')} == '' || ${field(ss, 'operator')} == 'Equal' ? ${field(t, 'operator')} == 'Equal' && ${field(t, 'value')} == ${field(ss, 'value')} : ${field(ss, 'operator')} == 'Exists')`;
  return `(${deepEqualCel(ss, t)} || (${keys} && ${effects} && ${bound} && ${operator}))`;
}

/** matchToleration (src/tolerations/matching.ts) of a list element and a constant: key, effect, operator and value equal. */
export function matchTolerationCel(a: string, constant: Toleration): string {
  return `(${(['key', 'effect', 'operator', 'value'] as const).map((name) => `${field(a, name)} == ${quote(constant[name] ?? '')}`).join(' && ')})`;
}

/**
 * Which elements of `all` MergeTolerations keeps, in two lists of bools (src/tolerations/merge.ts
 * mergePairwise). Upstream keeps t_i unless a kept earlier element is a superset of it or a later
 * element that is not identical to it is. "Kept" is recursive; it is not needed here, because
 * isSuperset is transitive (each of its five steps is: the wildcard key and empty effect pass on,
 * a NoExecute bound passes on to an effect that must then be NoExecute too, Equal passes on its
 * value). So t_i is kept exactly when no later non-identical element covers it (L_i) and no
 * earlier element with L_j covers it: an earlier j with L_j that was itself dropped was dropped
 * for a kept k < j covering it, which then covers t_i too. The differential test holds this
 * against the webhook's merge on the real API server.
 *
 * Cost: n² isSuperset calls for L and n² for the result, on n = the pod's tolerations + 1.
 */
export function laterFreeCel(all: string): string {
  return `${all}.transformList(i, t, !${all}.exists(j, u, j > i && !${deepEqualCel('t', 'u')} && ${isSupersetCel('u', 't')}))`;
}

/** With `laterFree` the list laterFreeCel computed for `all`: the bools of the elements kept. */
export function mergeKeptCel(all: string, laterFree: string): string {
  return `${all}.transformList(k, v, ${laterFree}[k] && !${all}.exists(m, w, m < k && ${laterFree}[m] && ${isSupersetCel('w', 'v')}))`;
}

/**
 * DefaultTolerationSeconds: `<key>:NoExecute` is covered by any toleration whose key is the key or
 * empty and whose effect is NoExecute or empty (coversNodeCondition).
 */
export function coversNodeConditionCel(list: string, key: string): string {
  return `${list}.exists(c, (${field('c', 'key')} == ${quote(key)} || ${field('c', 'key')} == '') && (${field('c', 'effect')} == 'NoExecute' || ${field('c', 'effect')} == ''))`;
}

/**
 * AddOrUpdateTolerationInPodSpec for one daemon toleration, on CREATE: every entry that matches it
 * and has tolerationSeconds is replaced by it; with no match it is appended.
 */
export function addOrUpdateCel(list: string, daemon: Toleration): string {
  const d = tolerationLiteral(daemon);
  const match = matchTolerationCel('e', daemon);
  return `(${list}.exists(e, ${match}) ? ${list}.map(e, ${match} && has(e.tolerationSeconds) ? ${d} : e) : ${list} + [${d}])`;
}

/** On UPDATE: appended when nothing matches, no entry touched (appendMissingToleration). */
export function appendMissingCel(list: string, daemon: Toleration): string {
  return `(${list}.exists(e, ${matchTolerationCel('e', daemon)}) ? ${list} : ${list} + [${tolerationLiteral(daemon)}])`;
}

/** A resource list holds a positive cpu or memory quantity (src/tolerations/qos.ts hasPositiveQOSResource). */
export function hasPositiveQosResourceCel(list: string): string {
  return `${list}.exists(n, (n == 'cpu' || n == 'memory') && quantity(${list}[n]).isGreaterThan(quantity('0')))`;
}

/**
 * isBestEffortPod (src/tolerations/qos.ts) on `object`: a non-empty status.qosClass decides; else,
 * with the PodLevelResources gate on and spec.resources present, the pod's own resources; else no
 * positive cpu or memory request or limit in any container or init container. With
 * PodLevelResourcesFixKubeletQOSClass on (1.37), spec.resources decides only when it names cpu,
 * memory or a hugepages-* resource (helper.IsPodLevelResourcesSet); `resources: {}` leaves the
 * class to the containers, as computePodQOS does.
 */
export function isBestEffortCel(gates: PodLevelResourcesGate): string {
  const requests = (of: string): string => hasPositiveQosResourceCel(`${of}.?resources.?requests.orValue({})`);
  const limits = (of: string): string => hasPositiveQosResourceCel(`${of}.?resources.?limits.orValue({})`);
  const containers = `!(object.spec.?containers.orValue([]) + object.spec.?initContainers.orValue([])).exists(c, ${requests('c')} || ${limits('c')})`;
  const podLevel = `!${hasPositiveQosResourceCel('object.spec.resources.?requests.orValue({})')} && !${hasPositiveQosResourceCel('object.spec.resources.?limits.orValue({})')}`;
  const names = (list: string): string => `${list}.exists(n, n == 'cpu' || n == 'memory' || n.startsWith('hugepages-'))`;
  const podLevelSet =
    gates.PodLevelResourcesFixKubeletQOSClass === true
      ? ` && (${names('object.spec.resources.?requests.orValue({})')} || ${names('object.spec.resources.?limits.orValue({})')})`
      : '';
  const computed = gates.PodLevelResources ? `(has(object.spec.resources)${podLevelSet} ? ${podLevel} : ${containers})` : `(${containers})`;
  return `(object.?status.?qosClass.orValue('') != '' ? object.status.qosClass == 'BestEffort' : ${computed})`;
}
