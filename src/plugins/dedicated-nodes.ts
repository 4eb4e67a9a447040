/**
 * DedicatedNodes: dedicated-node tenancy per namespace, driven by TenancyPolicies (DESIGN.md §2, §3).
 *
 * Mutating: a pod created in a namespace of group G (and a DaemonSet's pod template, on CREATE and
 * UPDATE) gets the toleration `<taint.key>=G:<effect>` and the required node affinity
 * `<nodeLabel> In [G]` ANDed into every term, so it may and must run on G's nodes.
 *
 * Validating: the guarantee that holds even when the mutating call was skipped (failurePolicy
 * Ignore): tenant pods carry that pair; no pod tolerates another group's dedicated taint; no pod is
 * pinned by `spec.nodeName` to another group's node (the kubelet checks only NoExecute taints for
 * a bound pod, so nodeName would bypass NoSchedule).
 *
 * Group membership of a node: its `<nodeLabel>` label is G. For "is this another group's node" a
 * node carrying the dedicated taint `<taint.key>=H:<effect>` counts as H's as well, because the
 * taint is what keeps outsiders away and nodeName skips it; for "is this the tenant's own node"
 * only the label counts, because that is what the tenant's required affinity (which the kubelet
 * re-checks at admission) demands.
 *
 * Pod UPDATE: a pod's affinity and nodeName cannot change after creation (only tolerations may be
 * added), and a pod created before a policy existed could never be brought into line; its
 * finalizer removals and label updates must keep working. So an UPDATE is checked only for what it
 * adds: tolerations not present in the old pod, and a nodeName different from the old one.
 * A DaemonSet UPDATE is checked in full when its template changed (the template is mutable, so it
 * can always be fixed), and otherwise only for added tolerations.
 *
 * Mirror pods (static pods reported by the kubelet) are neither mutated nor validated: the pod
 * already runs on its node, and refusing the mirror would only hide it from the API.
 *
 * An infrastructure namespace (the policy's `infrastructure` CEL) may reach every group's nodes:
 * by toleration, and also by nodeName (node agents and `kubectl debug node/…` pods are pinned that
 * way). Every such allowance is written to the `dedicated-nodes-infrastructure` audit annotation.
 */
import { isDeepStrictEqual } from 'node:util';
import { MirrorPodAnnotation } from '../api/types.js';
import type { JsonObject, Node, ObjectMeta, PodSpec, Toleration } from '../api/types.js';
import { groupContradictions, missingGroupRequirement, requireGroupInEveryTerm } from '../tenancy/node-affinity.js';
import { conflictMessage, createPolicyEvaluator, resolveNamespaceGroups } from '../tenancy/policy-set.js';
import { matchingTolerationIn } from '../tolerations/matching.js';
import type { Membership, PolicyEvaluator, PolicySet } from '../tenancy/policy-set.js';
import type { TenancyPolicy } from '../tenancy/policy.js';
import { isPodRequest } from './plugin.js';
import type { AdmissionAttributes, Findings, MutatingPlugin, MutationOutcome, PluginContext, ValidatingPlugin, ValidationOutcome } from './plugin.js';

/** Audit annotation keys; the API server prefixes each with `<webhook name>/`, so each stays a valid label name part. */
export const auditKeys = {
  policy: 'dedicated-nodes-policy',
  group: 'dedicated-nodes-group',
  decision: 'dedicated-nodes-decision',
  infrastructure: 'dedicated-nodes-infrastructure',
} as const;

export type DedicatedNodesDecision =
  | 'mutated'
  | 'unchanged'
  | 'exempt'
  | 'allowed'
  | 'warned'
  | 'denied'
  | 'conflict';

export type DedicatedNodesPlugin = MutatingPlugin & ValidatingPlugin;

export function createDedicatedNodes(policies: () => PolicySet): DedicatedNodesPlugin {
  return {
    name: 'DedicatedNodes',
    handles: (attributes) => (attributes.operation === 'CREATE' || attributes.operation === 'UPDATE') && (isPodRequest(attributes) || isDaemonSetRequest(attributes)),
    admit: (object, attributes, context) => admit(policies(), object, attributes, context),
    validate: (object, attributes, context) => validate(policies(), object, attributes, context),
  } satisfies DedicatedNodesPlugin;
}

function isDaemonSetRequest(attributes: AdmissionAttributes): boolean {
  const { resource } = attributes;
  return resource.group === 'apps' && resource.version === 'v1' && resource.resource === 'daemonsets' && attributes.subResource === '';
}

/** The pod spec under decision: a pod's own, or a DaemonSet's template presented as a pod. */
interface Workload {
  readonly kind: 'Pod' | 'DaemonSet';
  /** What CEL sees as `object` (and `oldObject`): a Pod, or the template as a Pod. */
  readonly podView: JsonObject;
  readonly oldPodView: JsonObject | undefined;
  readonly metadata: ObjectMeta;
  readonly spec: PodSpec;
  readonly oldSpec: PodSpec | undefined;
  /** Path of the pod spec in the object, for messages. */
  readonly specPath: 'spec' | 'spec.template.spec';
  /** The object with its pod spec replaced. */
  readonly withSpec: (spec: PodSpec) => JsonObject;
}

function toWorkload(object: JsonObject, oldObject: JsonObject | undefined, attributes: AdmissionAttributes): Workload | undefined {
  if (isPodRequest(attributes)) {
    const spec: PodSpec | undefined = asObject(object.spec);
    if (spec === undefined) {
      return undefined;
    }
    return {
      kind: 'Pod',
      podView: object,
      oldPodView: oldObject,
      metadata: metadataOf(object.metadata),
      spec,
      oldSpec: podSpecOf(oldObject?.spec),
      specPath: 'spec',
      withSpec: (newSpec) => ({ ...object, spec: newSpec }),
    };
  }
  const dsSpec = asObject(object.spec);
  const template = asObject(dsSpec?.template);
  const spec: PodSpec | undefined = asObject(template?.spec);
  if (dsSpec === undefined || template === undefined || spec === undefined) {
    return undefined;
  }
  const metadata = metadataOf(template.metadata);
  const oldTemplate = asObject(asObject(oldObject?.spec)?.template);
  const asPod = (tpl: Record<string, unknown>): JsonObject => ({ apiVersion: 'v1', kind: 'Pod', metadata: { ...asObject(tpl.metadata), namespace: attributes.namespace }, spec: tpl.spec });
  return {
    kind: 'DaemonSet',
    podView: asPod(template),
    oldPodView: oldTemplate === undefined ? undefined : asPod(oldTemplate),
    metadata,
    spec,
    oldSpec: podSpecOf(oldTemplate?.spec),
    specPath: 'spec.template.spec',
    withSpec: (newSpec) => ({ ...object, spec: { ...dsSpec, template: { ...template, spec: newSpec } } }),
  };
}

/** The admission layer has checked the shapes of the fields read here (src/admission/object-shape.ts); this only guards against absence. */
function asObject(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function podSpecOf(value: unknown): PodSpec | undefined {
  return asObject(value);
}

function metadataOf(value: unknown): ObjectMeta {
  return asObject(value) ?? {};
}

function isMirrorPod(workload: Workload): boolean {
  return workload.kind === 'Pod' && workload.metadata.annotations?.[MirrorPodAnnotation] !== undefined;
}

/** The `request` variable of Kubernetes admission CEL, from what the attributes carry (no userInfo). */
function celRequest(attributes: AdmissionAttributes): JsonObject {
  return {
    kind: { ...attributes.kind },
    resource: { ...attributes.resource },
    subResource: attributes.subResource,
    name: attributes.name,
    namespace: attributes.namespace,
    operation: attributes.operation,
    dryRun: attributes.dryRun,
  };
}

/** One broken rule, owned by the policy whose enforcement decides between denial and warning. */
interface Violation {
  readonly policy: TenancyPolicy;
  readonly message: string;
}

interface Prepared {
  readonly workload: Workload;
  readonly evaluator: PolicyEvaluator;
  readonly namespace: string;
}

type Preparation =
  | { readonly prepared: Prepared; readonly memberships: readonly Membership[]; readonly early?: undefined }
  | { readonly early: Findings & { readonly denial?: { readonly reason: 'Forbidden'; readonly message: string } } };

/** Common first steps: nothing to do without policies or for mirror pods; a group conflict ends the request. */
function prepare(set: PolicySet, object: JsonObject, attributes: AdmissionAttributes, context: PluginContext): Preparation | undefined {
  if (set.policies.length === 0) {
    return undefined;
  }
  const workload = toWorkload(object, attributes.oldObject, attributes);
  if (workload === undefined || isMirrorPod(workload)) {
    return undefined;
  }
  const evaluator = createPolicyEvaluator(
    {
      object: workload.podView,
      oldObject: workload.oldPodView,
      namespace: context.namespace,
      request: celRequest(attributes),
    },
    set.groupsByNamespace,
  );
  const namespace = attributes.namespace;
  const groups = resolveNamespaceGroups(set, evaluator);
  if (groups.conflict !== undefined) {
    // One message, however many policies took part: deny if any of them denies. A pod UPDATE only
    // gets the warning: the pod exists already, and refusing its updates (finalizer removal,
    // labels) would wedge running workloads until the policies are fixed, without protecting a node.
    const podUpdate = isPodRequest(attributes) && attributes.operation === 'UPDATE';
    const deny = !podUpdate && groups.conflict.some(({ policy }) => policy.enforcement === 'Deny');
    const annotations = {
      [auditKeys.policy]: groups.conflict.map(({ policy }) => policy.name).join(','),
      [auditKeys.group]: groups.conflict.map(({ group }) => group).join(','),
      [auditKeys.decision]: 'conflict' satisfies DedicatedNodesDecision,
    };
    const message = conflictMessage(namespace, groups.conflict);
    return {
      early: deny
        ? { denial: { reason: 'Forbidden', message }, auditAnnotations: annotations }
        : { warnings: [`DedicatedNodes: ${message}`], auditAnnotations: annotations },
    };
  }
  return { prepared: { workload, evaluator, namespace }, memberships: groups.memberships };
}

// ---------------------------------------------------------------------------------------------
// Mutation

function admit(set: PolicySet, object: JsonObject, attributes: AdmissionAttributes, context: PluginContext): MutationOutcome {
  // A pod's affinity is immutable after creation, so only CREATE can give it the pair.
  if (isPodRequest(attributes) && attributes.operation !== 'CREATE') {
    return { object };
  }
  const preparation = prepare(set, object, attributes, context);
  if (preparation === undefined) {
    return { object };
  }
  if (preparation.early !== undefined) {
    const { denial, ...findings } = preparation.early;
    return denial === undefined ? { ...findings, object } : { ...findings, denial };
  }
  const { prepared, memberships } = preparation;
  const { workload, evaluator } = prepared;
  const tenancies = memberships.filter((membership) => membership.group !== '');
  if (tenancies.length === 0) {
    return { object };
  }
  const group = tenancies[0]?.group ?? '';
  const applying = tenancies.filter(({ policy }) => !evaluator.exempt(policy));
  if (applying.length === 0) {
    return { object, auditAnnotations: annotations(tenancies, group, 'exempt') };
  }

  const violations: Violation[] = [];
  let spec = workload.spec;
  for (const { policy } of applying) {
    const contradictions = groupContradictions(workload.spec, policy.nodeLabel, group, workload.specPath);
    if (contradictions.length > 0) {
      violations.push({ policy, message: contradictionMessage(prepared, policy, group, contradictions) });
      // Under Warn the pod keeps its own choice: adding the group requirement would only make it unschedulable.
      continue;
    }
    spec = withGroupToleration(spec, policy, group);
    spec = requireGroupInEveryTerm(spec, policy.nodeLabel, group);
  }

  const outcome = decide(violations);
  if (outcome.denial !== undefined) {
    return { denial: outcome.denial, auditAnnotations: annotations(applying, group, 'denied'), ...warningsOf(outcome) };
  }
  const changed = spec !== workload.spec;
  const decision: DedicatedNodesDecision = outcome.warnings.length > 0 ? 'warned' : changed ? 'mutated' : 'unchanged';
  return {
    object: changed ? workload.withSpec(spec) : object,
    auditAnnotations: annotations(applying, group, decision),
    ...warningsOf(outcome),
  };
}

/** The group toleration: `{key, operator: Equal, value: G, effect}`. */
export function groupToleration(policy: TenancyPolicy, group: string): Toleration {
  return { key: policy.taint.key, operator: 'Equal', value: group, effect: policy.taint.effect };
}

/** Appends the group toleration unless the very same one (MatchToleration: key, operator, value, effect) is there. */
function withGroupToleration(spec: PodSpec, policy: TenancyPolicy, group: string): PodSpec {
  const wanted = groupToleration(policy, group);
  const tolerations = spec.tolerations ?? [];
  const present = tolerations.some((t) => t.key === wanted.key && t.operator === wanted.operator && t.value === wanted.value && t.effect === wanted.effect);
  return present ? spec : { ...spec, tolerations: [...tolerations, wanted] };
}

// ---------------------------------------------------------------------------------------------
// Validation

function validate(set: PolicySet, object: JsonObject, attributes: AdmissionAttributes, context: PluginContext): ValidationOutcome {
  const preparation = prepare(set, object, attributes, context);
  if (preparation === undefined) {
    return {};
  }
  if (preparation.early !== undefined) {
    return preparation.early;
  }
  const { prepared, memberships } = preparation;
  const { workload, evaluator } = prepared;
  const isCreate = attributes.operation === 'CREATE';
  const group = memberships.find((membership) => membership.group !== '')?.group ?? '';

  // What an UPDATE is judged on (see the file comment): added tolerations; a changed nodeName;
  // the tenant pair only for a DaemonSet whose template changed.
  const tolerations = (workload.spec.tolerations ?? []).map((toleration, index) => ({ toleration, index }));
  const oldTolerations = workload.oldSpec?.tolerations ?? [];
  const inOldPod = matchingTolerationIn(oldTolerations);
  const judgedTolerations = isCreate ? tolerations : tolerations.filter(({ toleration }) => !inOldPod(toleration));
  const nodeName = workload.spec.nodeName;
  const judgeNodeName = nodeName !== undefined && nodeName !== '' && (isCreate || workload.oldSpec?.nodeName !== nodeName);
  const judgeTenantPair = isCreate || (workload.kind === 'DaemonSet' && !isDeepStrictEqual(workload.spec, workload.oldSpec));

  const violations: Violation[] = [];
  const warnings: string[] = [];
  const infrastructureUses: string[] = [];
  const involved = new Set<TenancyPolicy>();
  let exempt = false;

  const node: Node | undefined = judgeNodeName ? context.node(nodeName) : undefined;
  if (judgeNodeName && node === undefined) {
    warnings.push(`DedicatedNodes: node "${nodeName}" named by ${workload.specPath}.nodeName is not in the cluster state; its dedicated-node group could not be checked`);
  }

  for (const { policy, group: ownGroup } of memberships) {
    const isTenant = ownGroup !== '' && !evaluator.exempt(policy);
    if (ownGroup !== '') {
      involved.add(policy);
      exempt ||= !isTenant;
    }
    if (isTenant && judgeTenantPair) {
      for (const message of missingPair(prepared, policy, ownGroup)) {
        violations.push({ policy, message });
      }
    }

    const foreign: string[] = [];
    for (const { toleration, index } of judgedTolerations) {
      const tolerated = foreignGroupsTolerated(toleration, policy, ownGroup, context.gates.TaintTolerationComparisonOperators);
      if (tolerated !== undefined) {
        foreign.push(`${workload.specPath}.tolerations[${index}] tolerates ${tolerated} (${policy.taint.key}=<group>:${policy.taint.effect}, policy "${policy.name}")`);
      }
    }
    const nodeProblem = node === undefined ? undefined : nodeNameProblem(node, policy, ownGroup, isTenant, workload.specPath);
    const foreignReach = nodeProblem?.foreign === true ? [...foreign, nodeProblem.message] : foreign;
    if (foreignReach.length > 0) {
      involved.add(policy);
      if (evaluator.infrastructure(policy)) {
        infrastructureUses.push(`${policy.name}: ${foreignReach.join('; ')}`);
      } else {
        for (const message of foreignReach) {
          violations.push({ policy, message: `${message}; ${whoMay(prepared, ownGroup)}` });
        }
      }
    }
    if (nodeProblem !== undefined && !nodeProblem.foreign) {
      involved.add(policy);
      violations.push({ policy, message: nodeProblem.message });
    }
  }

  const outcome = decide(violations);
  const decision: DedicatedNodesDecision = outcome.denial !== undefined ? 'denied' : outcome.warnings.length > 0 ? 'warned' : exempt ? 'exempt' : 'allowed';
  const auditAnnotations: Record<string, string> = annotations([...involved].map((policy) => ({ policy, group })), group, decision);
  if (infrastructureUses.length > 0) {
    auditAnnotations[auditKeys.infrastructure] = `allowed for an infrastructure namespace: ${infrastructureUses.join(' | ')}`;
  }
  const allWarnings = [...warnings, ...outcome.warnings];
  return {
    ...(outcome.denial === undefined ? {} : { denial: outcome.denial }),
    ...(allWarnings.length > 0 ? { warnings: allWarnings } : {}),
    auditAnnotations,
  };
}

/** What a tenant lacks: the group toleration, the requirement in every required term, or a consistent nodeSelector/affinity. */
function missingPair(prepared: Prepared, policy: TenancyPolicy, group: string): string[] {
  const { workload } = prepared;
  const messages: string[] = [];
  const subject = tenantSubject(prepared, policy, group);
  const taint = { key: policy.taint.key, value: group, effect: policy.taint.effect };
  if (!(workload.spec.tolerations ?? []).some((toleration) => toleratesOwnGroup(toleration, taint))) {
    messages.push(`${subject} must tolerate the taint ${policy.taint.key}=${group}:${policy.taint.effect}: ${workload.specPath}.tolerations lacks {key: ${policy.taint.key}, operator: Equal, value: ${group}, effect: ${policy.taint.effect}}`);
  }
  const contradictions = groupContradictions(workload.spec, policy.nodeLabel, group, workload.specPath);
  if (contradictions.length > 0) {
    messages.push(contradictionMessage(prepared, policy, group, contradictions));
  }
  const missing = missingGroupRequirement(workload.spec, policy.nodeLabel, group, workload.specPath);
  if (missing.length > 0) {
    messages.push(`${subject} must require ${policy.nodeLabel} In [${group}] in every required node affinity term: missing in ${missing.join(', ')}`);
  }
  return messages;
}

function tenantSubject(prepared: Prepared, policy: TenancyPolicy, group: string): string {
  const what = prepared.workload.kind === 'Pod' ? 'pods' : 'DaemonSet pod templates';
  return `${what} in namespace "${prepared.namespace}" (group "${group}", policy "${policy.name}")`;
}

function contradictionMessage(prepared: Prepared, policy: TenancyPolicy, group: string, contradictions: readonly { field: string; detail: string }[]): string {
  const each = contradictions.map(({ field, detail }) => `${field} ${detail}`).join('; ');
  return `${tenantSubject(prepared, policy, group)} may only run on nodes labelled ${policy.nodeLabel}=${group}, but the pod asks for other nodes: ${each}`;
}

function whoMay(prepared: Prepared, ownGroup: string): string {
  const from = ownGroup === '' ? `namespace "${prepared.namespace}" belongs to no group` : `namespace "${prepared.namespace}" belongs to group "${ownGroup}"`;
  return `${from}, and only an infrastructure namespace may reach other groups' nodes`;
}

/** ToleratesTaint (k8s-semantics §3) for the group's own taint, from the toleration's side. */
function toleratesOwnGroup(toleration: Toleration, taint: { key: string; value: string; effect: string }): boolean {
  if (toleration.effect !== undefined && toleration.effect !== '' && toleration.effect !== taint.effect) {
    return false;
  }
  if (toleration.key !== undefined && toleration.key !== '' && toleration.key !== taint.key) {
    return false;
  }
  const operator = toleration.operator ?? '';
  return operator === 'Exists' || ((operator === '' || operator === 'Equal') && (toleration.value ?? '') === taint.value);
}

/**
 * Whether `toleration` tolerates the dedicated taint `<key>=H:<effect>` of some group H other than
 * `ownGroup` ('' for a namespace of no group), following ToleratesTaint: an empty effect covers
 * every effect, an empty key every key (whatever the operator), `Exists` every value, `Equal` (or
 * no operator) its value. Returns what it tolerates, for the message, or undefined.
 */
export function foreignGroupsTolerated(toleration: Toleration, policy: TenancyPolicy, ownGroup: string, comparisonOperators: boolean): string | undefined {
  const { key, effect } = policy.taint;
  if (toleration.effect !== undefined && toleration.effect !== '' && toleration.effect !== effect) {
    return undefined;
  }
  if (toleration.key !== undefined && toleration.key !== '' && toleration.key !== key) {
    return undefined;
  }
  const operator = toleration.operator ?? '';
  switch (operator) {
    case 'Exists':
      return 'the dedicated taint of every group';
    case '':
    case 'Equal': {
      const value = toleration.value ?? '';
      // No group is named '' (it means "no group"), and the own group's taint is the point.
      return value === '' || value === ownGroup ? undefined : `the dedicated taint of group "${value}"`;
    }
    case 'Gt':
    case 'Lt':
      // With the gate on, a comparison tolerates every group whose name is an integer in its range:
      // groups not yet created included, so it cannot be shown harmless. Gate off: it tolerates nothing.
      return comparisonOperators ? 'the dedicated taints of a numeric range of groups' : undefined;
    default:
      // An unknown operator tolerates nothing (ToleratesTaint's default case).
      return undefined;
  }
}

/** The groups a node belongs to under `policy`: its label, and any dedicated taint it carries. */
export function nodeGroups(node: Node, policy: TenancyPolicy): { label: string | undefined; all: ReadonlySet<string> } {
  const label = node.metadata.labels?.[policy.nodeLabel];
  const all = new Set<string>();
  if (label !== undefined && label !== '') {
    all.add(label);
  }
  for (const taint of node.spec?.taints ?? []) {
    if (taint.key === policy.taint.key && taint.effect === policy.taint.effect && taint.value !== undefined && taint.value !== '') {
      all.add(taint.value);
    }
  }
  return { label, all };
}

/** A nodeName pointing at another group's node (`foreign`), or, for a tenant, outside its own group. */
function nodeNameProblem(node: Node, policy: TenancyPolicy, ownGroup: string, isTenant: boolean, specPath: string): { foreign: boolean; message: string } | undefined {
  const groups = nodeGroups(node, policy);
  const others = [...groups.all].filter((group) => group !== ownGroup);
  if (others.length > 0) {
    return {
      foreign: true,
      message: `${specPath}.nodeName "${node.metadata.name}" is a node of group ${others.map((g) => `"${g}"`).join(', ')} (policy "${policy.name}")`,
    };
  }
  if (isTenant && groups.label !== ownGroup) {
    return {
      foreign: false,
      message: `${specPath}.nodeName "${node.metadata.name}" is not a node of group "${ownGroup}" (it lacks the label ${policy.nodeLabel}=${ownGroup}, policy "${policy.name}"); tenants of the group may only run on its nodes`,
    };
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Enforcement and findings

interface Outcome {
  readonly denial?: { readonly reason: 'Forbidden'; readonly message: string };
  readonly warnings: readonly string[];
}

/** Deny-policy violations deny together (one message); Warn-policy violations become warnings. */
function decide(violations: readonly Violation[]): Outcome {
  const denying = violations.filter(({ policy }) => policy.enforcement === 'Deny');
  const warnings = violations.filter(({ policy }) => policy.enforcement === 'Warn').map(({ policy, message }) => warningText(policy, message));
  if (denying.length === 0) {
    return { warnings };
  }
  return { denial: { reason: 'Forbidden', message: denying.map(({ message }) => message).join('; ') }, warnings };
}

function warningText(policy: TenancyPolicy, message: string): string {
  return `DedicatedNodes (enforcement Warn, policy "${policy.name}"): ${message}`;
}

function warningsOf(outcome: Outcome): { warnings?: readonly string[] } {
  return outcome.warnings.length > 0 ? { warnings: outcome.warnings } : {};
}

function annotations(memberships: readonly { policy: TenancyPolicy }[], group: string, decision: DedicatedNodesDecision): Record<string, string> {
  const names = [...new Set(memberships.map(({ policy }) => policy.name))];
  return {
    ...(names.length > 0 ? { [auditKeys.policy]: names.join(',') } : {}),
    ...(group === '' ? {} : { [auditKeys.group]: group }),
    [auditKeys.decision]: decision,
  };
}
