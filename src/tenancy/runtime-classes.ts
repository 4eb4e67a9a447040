/**
 * RuntimeClasses and dedicated-node groups (docs/tenancy.md#runtimeclasses).
 *
 * The in-tree RuntimeClass admission plugin (on by default; plugin/pkg/admission/runtimeclass/
 * admission.go in kubernetes/kubernetes, `setScheduling`) runs before any webhook and, on a Pod's
 * CREATE only, merges the named RuntimeClass's `scheduling.nodeSelector` into the pod's
 * `nodeSelector` (a key the pod already sets to another value is refused there: "conflict:
 * runtimeClass.scheduling.nodeSelector[k] = …") and appends its `scheduling.tolerations` to the
 * pod's (tolerations.MergeTolerations: duplicates and tolerations covered by another left out).
 * A tenant cannot create a RuntimeClass (it is cluster-scoped) but may name any in
 * `spec.runtimeClassName`, so a RuntimeClass the platform team made for group A, whose scheduling
 * tolerates A's taint, carries a toleration of A's taint into a tenant of group B's pod. The
 * webhook then sees that toleration in the pod and refuses it as foreign; this module lets the
 * policy say which RuntimeClasses belong to which group (`spec.runtimeClasses`), so that the
 * refusal names the RuntimeClass, a group may be kept to its own, and the audit can report a
 * RuntimeClass whose scheduling reaches a group's nodes without being listed for it.
 *
 * Pure: the RuntimeClass objects come in as values (src/kube reads them: the informer, the
 * `--cluster-state` file, the audit's list).
 */
import { clipText, spellOut } from '../api/text-bounds.js';
import { isJsonObject, type RuntimeClass, type Toleration } from '../api/types.js';
import { isValidLabelValue } from '../validation/name-validation.js';
import { foreignGroupsTolerated } from './group-reach.js';
import { groupOfLabelValue } from './group-node-labels.js';
import type { TenancyPolicy } from './policy.js';

/** `spec.runtimeClasses`: which groups may use each RuntimeClass, and which groups are kept to a list. */
export interface RuntimeClassAllowList {
  /** RuntimeClass name → the groups that list it. */
  readonly groupsByName: ReadonlyMap<string, ReadonlySet<string>>;
  /** Group → the RuntimeClasses it lists (only the groups that list some). */
  readonly namesByGroup: ReadonlyMap<string, readonly string[]>;
}

export const emptyRuntimeClassAllowList: RuntimeClassAllowList = { groupsByName: new Map(), namesByGroup: new Map() };

export type { RuntimeClass };

/** RuntimeClass names are DNS-1123 subdomains of at most 253 characters (ValidateRuntimeClassName). */
const runtimeClassNameFormat = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const runtimeClassNameMaxLength = 253;

/**
 * Parses `spec.runtimeClasses`: a mapping from a group to the names of the RuntimeClasses its pods
 * may use, e.g. `{pci: [gvisor-pci], gpu: [nvidia]}`. A mapping, as `spec.nodePools`: RuntimeClasses
 * are cluster-scoped and written by the platform team, so the list is what it reviews and a pod's
 * RuntimeClass is then a look-up. A name may be listed under several groups (a sandbox runtime
 * whose scheduling reaches no group's nodes, shared by all of them).
 */
export function parseRuntimeClasses(value: unknown, report: (path: readonly string[], message: string) => void): RuntimeClassAllowList {
  if (value === undefined) {
    return emptyRuntimeClassAllowList;
  }
  const groupsByName = new Map<string, Set<string>>();
  const namesByGroup = new Map<string, string[]>();
  if (!isJsonObject(value)) {
    report(['spec', 'runtimeClasses'], 'must be a mapping of group to a list of RuntimeClass names, e.g. {pci: [gvisor-pci]}');
    return emptyRuntimeClassAllowList;
  }
  for (const [group, names] of Object.entries(value)) {
    const at = ['spec', 'runtimeClasses', group];
    for (const message of isValidLabelValue(group)) {
      report(at, `the group ${JSON.stringify(clipText(group, 63))} is not a valid group (a label value): ${message}`);
    }
    if (!Array.isArray(names) || names.length === 0) {
      report(at, 'must be a non-empty list of RuntimeClass names');
      continue;
    }
    const listed: string[] = [];
    for (const [index, name] of names.entries()) {
      if (typeof name !== 'string' || name.length > runtimeClassNameMaxLength || !runtimeClassNameFormat.test(name)) {
        report(
          [...at, String(index)],
          `must be a RuntimeClass name (a lowercase RFC 1123 subdomain of at most ${runtimeClassNameMaxLength} characters), got ${typeof name === 'string' ? JSON.stringify(clipText(name, 63)) : describeValue(name)}`,
        );
        continue;
      }
      if (!listed.includes(name)) listed.push(name);
      let groups = groupsByName.get(name);
      if (groups === undefined) {
        groups = new Set();
        groupsByName.set(name, groups);
      }
      groups.add(group);
    }
    namesByGroup.set(group, listed);
  }
  return { groupsByName, namesByGroup };
}

/** What a pod's `runtimeClassName` breaks under one policy. */
export type RuntimeClassProblem =
  /** The RuntimeClass is listed for other groups only: reaching their nodes, refused outside an infrastructure namespace. */
  | { readonly foreign: true; readonly message: string }
  /** A tenant of a group that lists its RuntimeClasses names another one. */
  | { readonly foreign: false; readonly message: string };

/**
 * The problem with a pod of `ownGroup` ('' for none) naming the RuntimeClass `name` under `policy`:
 * a RuntimeClass listed only for other groups is foreign (whoever the pod is: an exempt pod may
 * still not reach another group's nodes); for a tenant (`isTenant`) of a group that lists its
 * RuntimeClasses, any RuntimeClass not among them. Undefined when the name is allowed.
 */
export function runtimeClassProblem(
  policy: TenancyPolicy,
  ownGroup: string,
  isTenant: boolean,
  name: string,
  specPath: string,
): RuntimeClassProblem | undefined {
  const { groupsByName, namesByGroup } = policy.runtimeClasses;
  const groups = groupsByName.get(name);
  const shown = `${specPath}.runtimeClassName "${clipText(name)}"`;
  if (groups !== undefined && !groups.has(ownGroup)) {
    return {
      foreign: true,
      message: `${shown} names a RuntimeClass of ${groupsText(groups)} (spec.runtimeClasses of policy "${policy.name}")`,
    };
  }
  const own = isTenant ? namesByGroup.get(ownGroup) : undefined;
  if (own !== undefined && groups === undefined) {
    return {
      foreign: false,
      message: `${shown} is not one of the RuntimeClasses group "${ownGroup}" may use (${spellOut(own, (allowed) => `"${allowed}"`, ', ')}; spec.runtimeClasses of policy "${policy.name}")`,
    };
  }
  return undefined;
}

/**
 * Where a toleration or nodeSelector entry of the pod the webhook sees came from, when the pod
 * names a RuntimeClass whose scheduling holds the same: `merged from RuntimeClass "r"'s
 * scheduling.tolerations`. The webhook sees the pod after the RuntimeClass plugin merged it, so a
 * toleration the tenant never wrote would otherwise be refused as if it had.
 */
export function tolerationFromRuntimeClass(runtimeClass: RuntimeClass | undefined, toleration: Toleration): string | undefined {
  const tolerations = runtimeClass?.scheduling?.tolerations;
  if (tolerations === undefined) return undefined;
  for (const candidate of tolerations) {
    if (sameToleration(candidate, toleration)) {
      return `merged into the pod from RuntimeClass "${clipText(runtimeClass?.metadata.name ?? '')}"'s scheduling.tolerations by the RuntimeClass admission plugin`;
    }
  }
  return undefined;
}

/** See tolerationFromRuntimeClass: the nodeSelector entry `key=value`. */
export function nodeSelectorFromRuntimeClass(runtimeClass: RuntimeClass | undefined, key: string, value: string): string | undefined {
  const selector = runtimeClass?.scheduling?.nodeSelector;
  return selector !== undefined && Object.hasOwn(selector, key) && selector[key] === value
    ? `merged into the pod from RuntimeClass "${clipText(runtimeClass?.metadata.name ?? '')}"'s scheduling.nodeSelector by the RuntimeClass admission plugin`
    : undefined;
}

/** A toleration whose read fields are strings (a hand-written file may hold anything). */
function isToleration(value: unknown): value is Toleration {
  if (!isJsonObject(value)) return false;
  for (const field of ['key', 'operator', 'value', 'effect']) {
    if (value[field] !== undefined && typeof value[field] !== 'string') return false;
  }
  return true;
}

/** A value that is not a string, for a message: its JSON type. */
function describeValue(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'a list' : `a ${typeof value}`;
}

/** `group "a"` or `groups "a", "b"`, spelled out to the usual bound. */
function groupsText(groups: ReadonlySet<string>): string {
  return `${groups.size === 1 ? 'group' : 'groups'} ${spellOut([...groups], (group) => `"${group}"`, ', ', 'groups')}`;
}

/** Equal key, operator (empty read as Equal), value, effect and tolerationSeconds: what MergeTolerations would have kept as one. */
function sameToleration(a: Toleration, b: Toleration): boolean {
  const operator = (t: Toleration): string => (t.operator === undefined || t.operator === '' ? 'Equal' : t.operator);
  return (
    (a.key ?? '') === (b.key ?? '') &&
    operator(a) === operator(b) &&
    (a.value ?? '') === (b.value ?? '') &&
    (a.effect ?? '') === (b.effect ?? '') &&
    (a.tolerationSeconds ?? null) === (b.tolerationSeconds ?? null)
  );
}

/** One way a RuntimeClass's scheduling reaches a group's nodes under one policy (the audit's `runtimeclass-pattern`). */
export interface RuntimeClassFinding {
  readonly policy: TenancyPolicy;
  readonly field: string;
  readonly message: string;
}

/**
 * What a RuntimeClass's scheduling reaches that its listing does not allow: a `nodeSelector` on the
 * policy's node label, or a toleration of a group's dedicated taint, for a group the policy does
 * not list the RuntimeClass under. Every pod naming it gets that scheduling merged in, whoever
 * writes the pod: unlisted, a tenant of another group that names it is refused only for the
 * toleration it carries, and a namespace of no group may not use it at all; listed for the
 * group, a tenant of another group is refused by the RuntimeClass's name.
 */
export function runtimeClassFindings(runtimeClass: unknown, policies: readonly TenancyPolicy[]): RuntimeClassFinding[] {
  if (!isJsonObject(runtimeClass) || !isJsonObject(runtimeClass.metadata) || typeof runtimeClass.metadata.name !== 'string') {
    return [];
  }
  const name = runtimeClass.metadata.name;
  const scheduling = isJsonObject(runtimeClass.scheduling) ? runtimeClass.scheduling : {};
  const findings: RuntimeClassFinding[] = [];
  for (const policy of policies) {
    const listedFor = policy.runtimeClasses.groupsByName.get(name) ?? new Set<string>();
    const listing =
      listedFor.size === 0
        ? 'is listed for no group in spec.runtimeClasses'
        : `is listed only for ${groupsText(listedFor)} in spec.runtimeClasses`;
    const selector = isJsonObject(scheduling.nodeSelector) ? scheduling.nodeSelector : {};
    const selected = selector[policy.nodeLabel];
    // A pool's value is its group's (spec.nodeLabelValues).
    if (typeof selected === 'string' && selected !== '' && !listedFor.has(groupOfLabelValue(policy, selected))) {
      findings.push({
        policy,
        field: `scheduling.nodeSelector[${policy.nodeLabel}]`,
        message: `RuntimeClass "${clipText(name)}" scheduling.nodeSelector selects the nodes of group "${clipText(groupOfLabelValue(policy, selected), 63)}" (${policy.nodeLabel}=${clipText(selected, 63)}) but ${listing} (policy "${policy.name}"): list it under the group, or take the group's label out of its scheduling`,
      });
    }
    const tolerations = Array.isArray(scheduling.tolerations) ? scheduling.tolerations : [];
    for (const [index, toleration] of tolerations.entries()) {
      if (!isToleration(toleration)) continue;
      const value = toleration.value ?? '';
      const tolerated = foreignGroupsTolerated(toleration, policy, '');
      // A single group's taint listed for that group is what the list is for; anything wider
      // (Exists, a numeric range) reaches groups no listing can cover.
      const ownListing =
        (toleration.operator === undefined || toleration.operator === '' || toleration.operator === 'Equal') && listedFor.has(value);
      if (tolerated !== undefined && !ownListing) {
        findings.push({
          policy,
          field: `scheduling.tolerations[${index}]`,
          message: `RuntimeClass "${clipText(name)}" scheduling.tolerations[${index}] tolerates ${tolerated} but ${listing} (policy "${policy.name}"): every pod that names it gets this toleration merged in before the webhooks run`,
        });
      }
    }
  }
  return findings;
}
