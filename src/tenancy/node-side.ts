/**
 * The node half of the dedicated-node pattern (docs/tenancy.md#the-node-half): a node of group G
 * carries the label `<nodeLabel>=G` AND the taint `<taint.key>=G:<effect>`. The label alone
 * attracts only the pods that require it and repels nobody, so a node labelled for G but not
 * tainted runs any pod of the cluster; a node tainted for G but not labelled repels G's own pods
 * (they require the label) and serves nobody. This module judges the two places such a node comes
 * from: a Node as it is, and a Karpenter `karpenter.sh/v1` NodePool, whose template makes the
 * nodes of tomorrow. Used by the validating webhook (DedicatedNodes, on NodePool writes), the
 * audit and `tolerator check`.
 *
 * How a NodePool labels its nodes, read from Karpenter v1.15.0 (sigs.k8s.io/karpenter):
 * - `spec.template.metadata.labels` are copied onto every NodeClaim and its Node
 *   (pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go, NewNodeClaimTemplate), and
 *   enter the template's requirements as `In [value]`;
 * - `spec.template.spec.requirements` on a custom key (one that is not well known or restricted,
 *   pkg/apis/v1/labels.go) become a node label too: ToNodeClaim assigns, for each key, the value
 *   `Requirement.Any()` gives (resolveCustomLabelsFromRequirements), after the template's
 *   requirements have been intersected with those of the pods the NodeClaim is made for
 *   (pkg/scheduling/requirement.go, Intersection). So a single-value `In` labels every node with
 *   that value; a multi-value `In` labels each node with whichever of its values the pods ask for
 *   (else any one of them); `Exists`, `NotIn`, `Gt`/`Lt`/`Gte`/`Lte` are complements, and
 *   `Any()` gives whatever value a pending pod requires, else a random integer within the bounds:
 *   such a NodePool makes nodes for every group. `DoesNotExist` labels nothing.
 * - two labels are Karpenter's own, assigned over whatever the template says of their keys
 *   (NewNodeClaimTemplate): `karpenter.sh/nodepool=<the NodePool's name>` and the NodeClass's,
 *   `<nodeClassRef.group>/<strings.ToLower(nodeClassRef.kind)>=<nodeClassRef.name>`;
 * - `spec.template.spec.taints` are put on every node; `startupTaints` only until a daemon removes
 *   them after start (pkg/apis/v1/nodepool.go, NodeClaimTemplateSpec), so they protect nothing.
 *
 * Pure, and linear: each requirement, value and taint is looked at once (the set intersections
 * walk the smaller side), whatever the NodePool holds; every message is bounded (values clipped,
 * lists spelled out to a fixed count). The API server has checked a NodePool against Karpenter's
 * CRD schema before it reaches a webhook (at most 100 requirements); a NodePool posted to the
 * port directly may hold anything, so a field of the wrong type is skipped, never trusted.
 */
import { goToLower } from '../api/go-strings.js';
import { clipText, spellOut } from '../api/text-bounds.js';
import { isJsonObject, type Node } from '../api/types.js';
import type { TenancyPolicy } from './policy.js';
import { groupOfLabelValue } from './group-node-labels.js';

/** One way a Node or NodePool breaks the pattern under one policy. */
export interface NodeSideFinding {
  readonly policy: TenancyPolicy;
  /** The field at fault, e.g. `spec.template.spec.requirements[2]`; '' for the object as a whole. */
  readonly field: string;
  /** The whole sentence, naming the object, the field and the policy. */
  readonly message: string;
}

/** Karpenter's label that keeps a NodeClaim's taints off its Node (pkg/apis/v1/labels.go, NodeDoNotSyncTaintsLabelKey). */
const doNotSyncTaintsLabelKey = 'karpenter.sh/do-not-sync-taints';

/** Karpenter's label of the NodePool a node came from (pkg/apis/v1/labels.go, NodePoolLabelKey): set on every node, from the NodePool's name. */
export const nodePoolLabelKey = 'karpenter.sh/nodepool';

/**
 * The label Karpenter puts on every node of a NodePool from its NodeClass (pkg/apis/v1/labels.go,
 * NodeClassLabelKey: `<group>/<strings.ToLower(kind)>`, e.g. `karpenter.k8s.aws/ec2nodeclass`),
 * whose value is `nodeClassRef.name`; '' when the reference is incomplete.
 */
export function nodeClassLabelKey(nodeClassRef: unknown): string {
  if (!isJsonObject(nodeClassRef) || typeof nodeClassRef.group !== 'string' || typeof nodeClassRef.kind !== 'string') return '';
  return nodeClassRef.group === '' || nodeClassRef.kind === '' ? '' : `${nodeClassRef.group}/${goToLower(nodeClassRef.kind)}`;
}

/** 63: the longest label value; a longer value from a hostile object is clipped to it in messages. */
const shownValueChars = 63;

function show(value: string): string {
  return JSON.stringify(clipText(value, shownValueChars));
}

// ---------------------------------------------------------------------------------------------
// NodePools

const templatePath = 'spec.template';
const labelsPath = `${templatePath}.metadata.labels`;
const requirementsPath = `${templatePath}.spec.requirements`;
const taintsPath = `${templatePath}.spec.taints`;
const startupTaintsPath = `${templatePath}.spec.startupTaints`;

/** What a NodePool's template makes of the group label on its nodes. */
type GroupLabel =
  | { readonly kind: 'none' }
  | { readonly kind: 'group'; readonly group: string; readonly field: string; readonly value?: string }
  | { readonly kind: 'several'; readonly values: readonly string[]; readonly field: string }
  | { readonly kind: 'any'; readonly field: string; readonly operator: string };

/** A taint of the template on the policy's key. */
interface KeyedTaint {
  readonly value: string;
  readonly effect: string;
  readonly field: string;
}

/** The findings of one NodePool (any JSON value; a NodePool of `karpenter.sh/v1`) under every policy. */
export function nodePoolFindings(nodePool: unknown, policies: readonly TenancyPolicy[]): NodeSideFinding[] {
  const metadata = isJsonObject(nodePool) && isJsonObject(nodePool.metadata) ? nodePool.metadata : {};
  const name = typeof metadata.name === 'string' ? metadata.name : '';
  const template =
    isJsonObject(nodePool) && isJsonObject(nodePool.spec) && isJsonObject(nodePool.spec.template) ? nodePool.spec.template : {};
  const templateMetadata = isJsonObject(template.metadata) ? template.metadata : {};
  const templateSpec = isJsonObject(template.spec) ? template.spec : {};
  const labels = isJsonObject(templateMetadata.labels) ? templateMetadata.labels : {};
  const requirements = Array.isArray(templateSpec.requirements) ? (templateSpec.requirements as unknown[]) : [];
  const taints = Array.isArray(templateSpec.taints) ? (templateSpec.taints as unknown[]) : [];
  const startupTaints = Array.isArray(templateSpec.startupTaints) ? (templateSpec.startupTaints as unknown[]) : [];
  const subject = `NodePool ${show(name)}`;
  const nodeClassRef = isJsonObject(templateSpec.nodeClassRef) ? templateSpec.nodeClassRef : {};
  const nodeClassName = typeof nodeClassRef.name === 'string' ? nodeClassRef.name : '';
  // NewNodeClaimTemplate (pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go) assigns
  // these two labels over the template's: whatever the labels and requirements say of their keys,
  // every node carries the NodePool's name and its NodeClass's name.
  const derived = (group: string, field: string): GroupLabel => (group === '' ? { kind: 'none' } : { kind: 'group', group, field });
  const groupLabel = (key: string): GroupLabel =>
    key === nodePoolLabelKey
      ? derived(name, 'metadata.name')
      : key === nodeClassLabelKey(nodeClassRef)
        ? derived(nodeClassName, `${templatePath}.spec.nodeClassRef.name`)
        : groupLabelOfTemplate(labels, requirements, key);
  const findings: NodeSideFinding[] = [];
  for (const policy of policies) {
    const label = asGroups(policy, groupLabel(policy.nodeLabel));
    const keyed = keyedTaints(taints, policy.taint.key, taintsPath);
    const startup = keyedTaints(startupTaints, policy.taint.key, startupTaintsPath);
    const report = reporterFor(findings, subject, policy);
    judgePair(policy, label, keyed, startup, report, 'NodePool');
    judgeNaming(policy, name, label, report);
  }
  return findings;
}

/**
 * Karpenter's requirement on one key (pkg/scheduling/requirement.go): the intersection of every
 * requirement on it and of the template label, as `Intersection` computes it, gathered so that
 * the cost stays linear: the `In` sets intersected (walking the smaller side each time), the
 * `NotIn` values united, the bounds narrowed, and the three combined once at the end, which gives
 * what Karpenter's step-by-step intersection gives (each step only narrows, and bounds filter a
 * concrete set whenever they meet it).
 */
function groupLabelOfTemplate(
  labels: Record<string, unknown>,
  requirements: readonly unknown[],
  key: string,
  paths: { readonly labels: string; readonly requirements: string } = { labels: labelsPath, requirements: requirementsPath },
): GroupLabel {
  let concrete: Set<string> | undefined;
  let concreteField = '';
  let excluded: Set<string> | undefined;
  let complementField = '';
  let complementOperator = '';
  let gte: bigint | undefined;
  let lte: bigint | undefined;
  let seen = false;
  const intersect = (values: Set<string>, field: string): void => {
    if (concrete === undefined) {
      concrete = values;
      concreteField = field;
      return;
    }
    const [small, large] = concrete.size <= values.size ? [concrete, values] : [values, concrete];
    const kept = new Set<string>();
    for (const value of small) if (large.has(value)) kept.add(value);
    concrete = kept;
  };
  for (let index = 0; index < requirements.length; index++) {
    const requirement = requirements[index];
    if (!isJsonObject(requirement) || requirement.key !== key) continue;
    seen = true;
    const field = `${paths.requirements}[${index}]`;
    const operator = typeof requirement.operator === 'string' ? requirement.operator : '';
    const values = Array.isArray(requirement.values) ? (requirement.values as unknown[]) : [];
    switch (operator) {
      case 'In':
        intersect(stringSet(values), field);
        break;
      case 'DoesNotExist':
        intersect(new Set(), field);
        break;
      case 'NotIn': {
        excluded ??= new Set();
        for (const value of values) if (typeof value === 'string') excluded.add(value);
        break;
      }
      case 'Gt':
      case 'Gte':
      case 'Lt':
      case 'Lte': {
        // Karpenter canonicalises Gt N to Gte N+1 and Lt N to Lte N-1 (NewRequirementWithFlexibility).
        const bound = goAtoi(values[0]);
        if (operator === 'Gt' || operator === 'Gte') {
          const low = operator === 'Gt' ? bound + 1n : bound;
          gte = gte === undefined || low > gte ? low : gte;
        } else {
          const high = operator === 'Lt' ? bound - 1n : bound;
          lte = lte === undefined || high < lte ? high : lte;
        }
        break;
      }
      default:
        // Exists, and any operator Karpenter's CRD would refuse: a complement with no values.
        break;
    }
    if (operator !== 'In' && operator !== 'DoesNotExist' && complementField === '') {
      complementField = field;
      complementOperator = operator;
    }
  }
  const label = labels[key];
  const metadataLabel = typeof label === 'string' ? label : undefined;
  const labelField = `${paths.labels}[${key}]`;
  if (metadataLabel !== undefined) {
    seen = true;
    intersect(new Set([metadataLabel]), labelField);
  }
  if (!seen) return { kind: 'none' };
  const emptyBounds = gte !== undefined && lte !== undefined && gte > lte;
  if (concrete === undefined) {
    // Only complements: the node takes whatever value a pending pod requires (Requirement.Any).
    return emptyBounds ? { kind: 'none' } : { kind: 'any', field: complementField, operator: complementOperator };
  }
  const left: string[] = [];
  for (const value of concrete) {
    // '' names no group (a policy's '' is "no group"), as on a Node (nodeGroups in group-reach.ts).
    if (value === '' || excluded?.has(value) === true || emptyBounds || !withinBounds(value, gte, lte)) continue;
    left.push(value);
  }
  if (left.length === 0) {
    // Nothing a requirement allows: Any() gives '' and the template label, if any, stays on the node.
    return metadataLabel === undefined || metadataLabel === ''
      ? { kind: 'none' }
      : { kind: 'group', group: metadataLabel, field: labelField };
  }
  if (left.length === 1) {
    return { kind: 'group', group: left[0] as string, field: metadataLabel === undefined ? concreteField : labelField };
  }
  return { kind: 'several', values: left, field: concreteField };
}

/**
 * The label values a template gives its nodes, as the groups they belong to (spec.nodeLabelValues):
 * several values of one group's pools are that one group, and a value keeps itself in messages.
 */
function asGroups(policy: TenancyPolicy, label: GroupLabel): GroupLabel {
  if (policy.nodeLabelValues.groupByValue.size === 0) return label;
  if (label.kind === 'group') {
    const group = groupOfLabelValue(policy, label.group);
    return group === label.group ? label : { kind: 'group', group, field: label.field, value: label.group };
  }
  if (label.kind === 'several') {
    const groups = new Set(label.values.map((value) => groupOfLabelValue(policy, value)));
    const [only] = groups;
    if (groups.size === 1 && only !== undefined) {
      return { kind: 'group', group: only, field: label.field, value: label.values.join(', ') };
    }
  }
  return label;
}

function stringSet(values: readonly unknown[]): Set<string> {
  const set = new Set<string>();
  for (const value of values) if (typeof value === 'string') set.add(value);
  return set;
}

/** Go's strconv.Atoi as Karpenter calls it (errors ignored): 0 for what does not parse, clamped to int64 when out of range. */
function goAtoi(value: unknown): bigint {
  if (typeof value !== 'string' || !/^[+-]?[0-9]+$/.test(value) || value.length > 40) return 0n;
  const parsed = BigInt(value);
  const max = (1n << 63n) - 1n;
  const min = -(1n << 63n);
  return parsed > max ? max : parsed < min ? min : parsed;
}

/** withinBounds (pkg/scheduling/requirement.go): with a bound, only an integer within it. */
function withinBounds(value: string, gte: bigint | undefined, lte: bigint | undefined): boolean {
  if (gte === undefined && lte === undefined) return true;
  if (!/^[+-]?[0-9]{1,19}$/.test(value)) return false;
  const parsed = BigInt(value);
  if (parsed > (1n << 63n) - 1n || parsed < -(1n << 63n)) return false;
  return (gte === undefined || parsed >= gte) && (lte === undefined || parsed <= lte);
}

function keyedTaints(taints: readonly unknown[], key: string, path: string): KeyedTaint[] {
  const found: KeyedTaint[] = [];
  for (let index = 0; index < taints.length; index++) {
    const taint = taints[index];
    if (!isJsonObject(taint) || taint.key !== key) continue;
    found.push({
      value: typeof taint.value === 'string' ? taint.value : '',
      effect: typeof taint.effect === 'string' ? taint.effect : '',
      field: `${path}[${index}]`,
    });
  }
  return found;
}

// ---------------------------------------------------------------------------------------------
// The rules, for a NodePool's template and for a Node alike

type Report = (field: string, text: string) => void;

/** The Report that adds a finding of `policy` about `subject` (`NodePool "pci"`) to `findings`. */
function reporterFor(findings: NodeSideFinding[], subject: string, policy: TenancyPolicy): Report {
  return (field, text) => {
    findings.push({ policy, field, message: `${subject} ${field}: ${text} (policy "${policy.name}")` });
  };
}

/**
 * Label ⇔ taint: labelled for G ⇒ tainted `K=G:E`; tainted `K=v:E` ⇒ labelled for v; the group
 * key with another effect is not the group's taint (a pod's `Equal` toleration names the effect,
 * and PreferNoSchedule repels nobody for sure: Karpenter's own scheduling simulation tolerates it
 * when relaxing, preferences.go toleratePreferNoScheduleTaints).
 */
function judgePair(
  policy: TenancyPolicy,
  label: GroupLabel,
  keyed: readonly KeyedTaint[],
  startup: readonly KeyedTaint[],
  report: Report,
  kind: 'NodePool' | 'NodeClaim' | 'Node',
  /** Why taints the object holds do not reach the node, added to the missing-taint finding. */
  taintsDropped?: string,
): void {
  const its = kind === 'NodePool' ? 'its nodes' : kind === 'NodeClaim' ? 'its node' : 'the node';
  const them = kind === 'NodePool' ? 'them' : 'it';
  const { key, effect } = policy.taint;
  if (kind === 'NodeClaim' && (label.kind === 'any' || label.kind === 'several')) {
    report(
      label.field,
      `the requirement on the group label ${policy.nodeLabel} is not a single value, so which group the node is labelled for (if any) is the provider's choice: a NodeClaim makes one node of one group; require ${policy.nodeLabel} In [<group>] with one value and taint ${key}=<group>:${effect}, or DoesNotExist for a node of no group`,
    );
  } else if (label.kind === 'any') {
    report(
      label.field,
      `the requirement ${policy.nodeLabel} ${label.operator === '' ? '(no operator)' : clipText(label.operator, shownValueChars)} on the group label lets Karpenter give each node whatever value of it a pending pod requires, else a random integer (Requirement.Any, pkg/scheduling/requirement.go): this NodePool would make nodes for every group. A NodePool serves one group: require ${policy.nodeLabel} In [<group>] with one value and taint ${key}=<group>:${effect}, or DoesNotExist for a NodePool of no group`,
    );
  } else if (label.kind === 'several') {
    report(
      label.field,
      `${policy.nodeLabel} In [${spellOut(label.values, show, ', ', 'values')}] lets Karpenter label each node with whichever of these groups the pods it is made for require (Requirement.Any), while one taint can name one group: a NodePool serves one group, so give each group its own NodePool`,
    );
  }
  const group = label.kind === 'group' ? label.group : undefined;
  const groupTaints = keyed.filter((taint) => taint.effect === effect && taint.value !== '');
  if (label.kind === 'group' && group !== undefined && !groupTaints.some((taint) => taint.value === group)) {
    const inStartup = startup.find((taint) => taint.value === group && taint.effect === effect);
    const fix =
      kind === 'Node'
        ? `taint it: kubectl taint node <name> ${key}=${clipText(group, shownValueChars)}:${effect}`
        : `add {key: ${key}, value: ${show(group)}, effect: ${effect}} to ${kind === 'NodePool' ? taintsPath : 'spec.taints'}`;
    report(
      label.field,
      `labels ${its} for group ${show(group)} (${policy.nodeLabel}=${clipText(label.value ?? group, shownValueChars)}) without the group's taint ${key}=${clipText(group, shownValueChars)}:${effect}: any pod of the cluster may run there, while the label only draws the group's own pods; ${fix}${
        inStartup === undefined
          ? ''
          : ` (${inStartup.field} does not count: Karpenter's startupTaints are removed once the node has started)`
      }${taintsDropped === undefined ? '' : ` (${taintsDropped})`}`,
    );
  }
  // With a label of several or any groups, the finding above says it all.
  const foreign = label.kind === 'group' || label.kind === 'none' ? groupTaints.filter((taint) => taint.value !== group) : [];
  if (foreign.length > 0) {
    const [first] = foreign as [KeyedTaint];
    report(
      first.field,
      `taints ${its} for ${spellOut(foreign, (taint) => `group ${show(taint.value)}`, ', ', 'groups')} but ${
        group === undefined ? `does not label ${them} for it` : `labels ${them} for group ${show(group)}`
      } (${policy.nodeLabel}): the group's pods require the label, so the node serves none of them. A node of group G carries both ${policy.nodeLabel}=G and ${key}=G:${effect}, and one group only`,
    );
  }
  const otherEffects = keyed.filter((taint) => taint.effect !== effect);
  if (otherEffects.length > 0) {
    const [first] = otherEffects as [KeyedTaint];
    report(
      first.field,
      `has the group taint key ${key} with effect ${spellOut(otherEffects, (taint) => JSON.stringify(clipText(taint.effect, shownValueChars)), ', ', 'taints')}, but the policy's group taint is ${key}=<group>:${effect}: group pods tolerate that effect only, and no other effect keeps other pods off`,
    );
  }
}

/**
 * `spec.nodePools`: a NodePool a group names must serve exactly that group, and a group that
 * names NodePools is served by those alone (a NodePool outside the list labelling for it is a
 * typo or a stray).
 */
function judgeNaming(policy: TenancyPolicy, name: string, label: GroupLabel, report: Report): void {
  if (policy.nodePools.size === 0) return;
  const named = policy.nodePools.get(name);
  const group = label.kind === 'group' ? label.group : undefined;
  if (named !== undefined) {
    if (group !== named) {
      report(
        label.kind === 'none' ? labelsPath : label.field,
        `is named for group ${show(named)} in TenancyPolicy spec.nodePools, but ${
          group === undefined
            ? label.kind === 'none'
              ? 'does not label its nodes for it'
              : 'does not label its nodes for one group'
            : `labels its nodes for group ${show(group)}`
        }: it must label them ${policy.nodeLabel}=${clipText(named, shownValueChars)} and taint them ${policy.taint.key}=${clipText(named, shownValueChars)}:${policy.taint.effect}`,
      );
    }
    return;
  }
  if (group === undefined) return;
  const ownNodePools: string[] = [];
  for (const [nodePool, of] of policy.nodePools) if (of === group) ownNodePools.push(nodePool);
  if (ownNodePools.length > 0 && label.kind === 'group') {
    report(
      label.field,
      `labels its nodes for group ${show(group)}, which names its NodePools in TenancyPolicy spec.nodePools (${spellOut(ownNodePools, show, ', ', 'NodePools')}), and this one is not among them: add it there, or let it serve no group`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// NodeClaims written directly

/**
 * The findings of one `karpenter.sh/v1` NodeClaim under every policy. Karpenter launches every
 * NodeClaim whose NodeClass its provider serves (pkg/utils/nodeclaim IsManaged), not only those it
 * made from a NodePool, and the Node carries the NodeClaim's `metadata.labels` (registration's
 * syncNode), its single-value `In` requirements (the KWOK provider's addInstanceLabels) and its
 * `spec.taints`; `startupTaints` are lifted after start as a NodePool's. So a NodeClaim written
 * by hand is a NodePool of one node, judged by the same rules (a requirement that is not a single
 * value is judged as in a NodePool: the provider may resolve it to any group). `spec.nodePools`
 * names NodePools, not NodeClaims, and is left to the Node's own check (nodeFindings).
 */
export function nodeClaimFindings(nodeClaim: unknown, policies: readonly TenancyPolicy[]): NodeSideFinding[] {
  const metadata = isJsonObject(nodeClaim) && isJsonObject(nodeClaim.metadata) ? nodeClaim.metadata : {};
  const name = typeof metadata.name === 'string' ? metadata.name : '';
  const spec = isJsonObject(nodeClaim) && isJsonObject(nodeClaim.spec) ? nodeClaim.spec : {};
  const labels = isJsonObject(metadata.labels) ? metadata.labels : {};
  const requirements = Array.isArray(spec.requirements) ? (spec.requirements as unknown[]) : [];
  const taints = Array.isArray(spec.taints) ? (spec.taints as unknown[]) : [];
  const startupTaints = Array.isArray(spec.startupTaints) ? (spec.startupTaints as unknown[]) : [];
  const subject = `NodeClaim ${show(name)}`;
  // Registration's syncNode puts spec.taints and startupTaints on the Node unless the Node carries
  // this label, which the provider copies from the NodeClaim's labels (the KWOK provider's
  // addInstanceLabels): then the taints are the provider's business, and on KWOK nobody's.
  const taintsDropped =
    labels[doNotSyncTaintsLabelKey] === 'true'
      ? `metadata.labels[${doNotSyncTaintsLabelKey}] is "true": Karpenter does not put spec.taints on a Node whose provider copied that label onto it (syncNode, pkg/controllers/nodeclaim/lifecycle/registration.go)`
      : undefined;
  const findings: NodeSideFinding[] = [];
  for (const policy of policies) {
    const label = asGroups(
      policy,
      groupLabelOfTemplate(labels, requirements, policy.nodeLabel, { labels: 'metadata.labels', requirements: 'spec.requirements' }),
    );
    const report = reporterFor(findings, subject, policy);
    judgePair(
      policy,
      label,
      taintsDropped === undefined ? keyedTaints(taints, policy.taint.key, 'spec.taints') : [],
      taintsDropped === undefined ? keyedTaints(startupTaints, policy.taint.key, 'spec.startupTaints') : [],
      report,
      'NodeClaim',
      taintsDropped,
    );
  }
  return findings;
}

// ---------------------------------------------------------------------------------------------
// Nodes

/** The findings of one Node under every policy. */
export function nodeFindings(node: Node, policies: readonly TenancyPolicy[]): NodeSideFinding[] {
  const name = typeof node.metadata.name === 'string' ? node.metadata.name : '';
  const labels = isJsonObject(node.metadata.labels) ? (node.metadata.labels as Record<string, unknown>) : {};
  const taints = Array.isArray(node.spec?.taints) ? (node.spec.taints as unknown[]) : [];
  const subject = `Node ${show(name)}`;
  const findings: NodeSideFinding[] = [];
  for (const policy of policies) {
    const value = labels[policy.nodeLabel];
    const labelField = `metadata.labels[${policy.nodeLabel}]`;
    const label: GroupLabel =
      typeof value === 'string' && value !== '' ? asGroups(policy, { kind: 'group', group: value, field: labelField }) : { kind: 'none' };
    const report = reporterFor(findings, subject, policy);
    judgePair(policy, label, keyedTaints(taints, policy.taint.key, 'spec.taints'), [], report, 'Node');
    // A node Karpenter made from a NodePool the policy names belongs to that NodePool's group.
    const nodePool = labels[nodePoolLabelKey];
    const named = typeof nodePool === 'string' ? policy.nodePools.get(nodePool) : undefined;
    if (named !== undefined && (label.kind !== 'group' || label.group !== named)) {
      report(
        labelField,
        `was made from NodePool ${show(nodePool as string)}, which TenancyPolicy spec.nodePools names for group ${show(named)}, but ${
          label.kind === 'group' ? `is labelled for group ${show(label.group)}` : 'is not labelled for it'
        }`,
      );
    }
  }
  return findings;
}
