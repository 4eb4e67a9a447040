/**
 * DedicatedNodes: dedicated-node tenancy per namespace, driven by TenancyPolicies
 * (docs/architecture.md#tenancy-policies).
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
 * Which groups a toleration or a nodeName reaches, and which groups a node belongs to, are the
 * rules of src/tenancy/group-reach.ts.
 *
 * Pod UPDATE: a pod's affinity and nodeName cannot change after creation (only tolerations may be
 * added), and a pod created before a policy existed could never be brought into line; its
 * finalizer removals and label updates must keep working. So an UPDATE is checked only for what it
 * adds: tolerations not present in the old pod, and a nodeName different from the old one.
 * A DaemonSet UPDATE is checked in full when its template changed (the template is mutable, so it
 * can always be fixed), and otherwise only for added tolerations.
 *
 * Mirror pods (static pods reported by the kubelet) are neither mutated nor validated: the pod
 * already runs on its node, and refusing the mirror would only hide it from the API. Only a node's
 * request is a mirror pod (isMirrorPodRequest): anyone may write the annotation.
 *
 * An infrastructure namespace (the policy's `infrastructure` CEL) may reach every group's nodes:
 * by toleration, and also by nodeName (node agents and `kubectl debug node/…` pods are pinned that
 * way). Every such allowance is written to the `dedicated-nodes-infrastructure` audit annotation.
 */
import { clipText, spellOut } from '../api/text-bounds.js';
import { podFromTemplate, podTemplateOf, withPodSpec } from '../api/pod-template.js';
import { resourceKindByResource, type ResourceKind } from '../api/resource-kinds.js';
import type { JsonObject, Node, PodSpec, Toleration } from '../api/types.js';
import { isJsonObject, jsonEqual } from '../api/types.js';
import { nodeClaimFindings, nodePoolFindings, type NodeSideFinding } from '../tenancy/node-side.js';
import { foreignGroupsTolerated, missingNodeProblem, nodeNameProblem, toleratesOwnGroup } from '../tenancy/group-reach.js';
import { groupContradictions, missingGroupRequirement, requireGroupInEveryTerm } from '../tenancy/node-affinity.js';
import { groupLabelValues } from '../tenancy/group-node-labels.js';
import { conflictMessage, createPolicyEvaluator, resolveNamespaceGroups } from '../tenancy/policy-set.js';
import {
  nodeSelectorFromRuntimeClass,
  runtimeClassProblem,
  tolerationFromRuntimeClass,
  type RuntimeClass,
} from '../tenancy/runtime-classes.js';
import { matchingTolerationIn } from '../tolerations/matching.js';
import type { Membership, PolicyEvaluator, PolicySet } from '../tenancy/policy-set.js';
import type { TenancyPolicy } from '../tenancy/policy.js';
import {
  contradictionText,
  foreignReachRule,
  foreignTolerationText,
  groupNodesText,
  groupRequirementText,
  groupTaintPattern,
  groupTaintText,
  groupTolerationText,
  judgedMemberships,
} from '../tenancy/verdict-texts.js';
import { celRequest } from './admission-request.js';
import { isDeviceTenancyRequest, validateDeviceTenancy } from './dedicated-devices.js';
import { isMirrorPodRequest } from './plugin.js';
import type {
  AdmissionAttributes,
  Findings,
  MutatingPlugin,
  MutationOutcome,
  PluginContext,
  ValidatingPlugin,
  ValidationOutcome,
} from './plugin.js';

/** Audit annotation keys; the API server prefixes each with `<webhook name>/`, so each stays a valid label name part. */
export const auditKeys = {
  policy: 'dedicated-nodes-policy',
  group: 'dedicated-nodes-group',
  decision: 'dedicated-nodes-decision',
  infrastructure: 'dedicated-nodes-infrastructure',
} as const;

export type DedicatedNodesDecision = 'mutated' | 'unchanged' | 'exempt' | 'allowed' | 'warned' | 'denied' | 'conflict';

export type DedicatedNodesPlugin = MutatingPlugin & ValidatingPlugin;

export function createDedicatedNodes(policies: () => PolicySet): DedicatedNodesPlugin {
  return {
    name: 'DedicatedNodes',
    handles: (attributes) =>
      (attributes.operation === 'CREATE' || attributes.operation === 'UPDATE') &&
      (workloadKindOf(attributes) !== undefined || isNodePoolRequest(attributes) || isDeviceTenancyRequest(attributes)),
    admit: (object, attributes, context) => admit(policies(), object, attributes, context),
    validate: (object, attributes, context) =>
      isNodePoolRequest(attributes)
        ? validateNodePool(policies(), object, attributes)
        : isDeviceTenancyRequest(attributes)
          ? validateDeviceTenancy(policies(), { ...attributes, object }, context)
          : validate(policies(), object, attributes, context),
    readsNamedNode: (attributes) => policies().policies.length > 0 && workloadKindOf(attributes) !== undefined,
    // Only a Pod's CREATE has a RuntimeClass merged in (the in-tree plugin's handler is Create only).
    readsRuntimeClass: (attributes) => policies().policies.length > 0 && attributes.operation === 'CREATE' && isPodKind(attributes),
  } satisfies DedicatedNodesPlugin;
}

function isPodKind(attributes: AdmissionAttributes): boolean {
  return workloadKindOf(attributes)?.kind === 'Pod';
}

/**
 * A write of a Karpenter NodePool or NodeClaim itself (`karpenter.sh/v1` `nodepools`,
 * `nodeclaims`, not their status): a NodeClaim written by hand is launched as one from a NodePool.
 */
function isNodePoolRequest(attributes: AdmissionAttributes): boolean {
  const { group, version, resource } = attributes.resource;
  return (
    group === nodePoolGroup && version === 'v1' && (resource === 'nodepools' || resource === 'nodeclaims') && attributes.subResource === ''
  );
}

const nodePoolGroup = 'karpenter.sh';

/**
 * A NodePool must make nodes that carry their group's label and taint together (src/tenancy/node-side.ts).
 * An UPDATE that leaves `spec.template` alone is let through whatever the template says: Karpenter
 * itself updates its NodePools' annotations (the nodepool-hash controller), and refusing those
 * writes for a template written before the policy would stall Karpenter without protecting a
 * node; the template is judged whenever it changes, and the audit reports it meanwhile.
 */
function validateNodePool(set: PolicySet, object: JsonObject, attributes: AdmissionAttributes): ValidationOutcome {
  if (set.policies.length === 0) {
    return {};
  }
  const isNodeClaim = attributes.resource.resource === 'nodeclaims';
  if (attributes.operation === 'UPDATE') {
    // What makes the node: a NodePool's template; a NodeClaim's labels and spec (Karpenter itself
    // writes its finalizers, annotations and, at launch, the provider's labels).
    const makes = (value: JsonObject | undefined): unknown =>
      isNodeClaim
        ? [isJsonObject(value?.metadata) ? value.metadata.labels : undefined, value?.spec]
        : isJsonObject(value?.spec)
          ? value.spec.template
          : undefined;
    if (jsonEqual(makes(object), makes(attributes.oldObject))) {
      return {};
    }
  }
  const all = isNodeClaim ? nodeClaimFindings(object, set.policies) : nodePoolFindings(object, set.policies);
  const { findings, notRefused } = isNodeClaim
    ? refusableNodeClaimFindings(all, attributes, set.policies)
    : { findings: all, notRefused: [] };
  const decided = decide(findings);
  const outcome: Outcome = { ...decided, warnings: [...decided.warnings, ...notRefused] };
  const names = [...new Set(all.map(({ policy }) => policy.name))];
  const decision: DedicatedNodesDecision = outcome.denial !== undefined ? 'denied' : outcome.warnings.length > 0 ? 'warned' : 'allowed';
  const auditAnnotations = {
    ...(names.length > 0 ? { [auditKeys.policy]: names.join(',') } : {}),
    [auditKeys.decision]: decision,
  };
  const metadata = isJsonObject(object.metadata) ? object.metadata : {};
  return {
    ...(outcome.denial === undefined
      ? {}
      : {
          denial: {
            ...outcome.denial,
            object: {
              group: nodePoolGroup,
              resource: isNodeClaim ? 'nodeclaims' : 'nodepools',
              name: typeof metadata.name === 'string' ? metadata.name : '',
            },
          },
        }),
    ...warningsOf(outcome),
    auditAnnotations,
  };
}

/**
 * Which of a NodeClaim's findings may refuse the write; the others become warnings. Karpenter
 * creates a NodeClaim from a NodePool (ownerReference to it, NodeClaimTemplate.ToNodeClaim) and at
 * launch updates its labels with the provider's (PopulateNodeClaimDetails): a NodePool written
 * before its policy, during an outage of this webhook (failurePolicy Ignore) or under `Warn` would
 * have every NodeClaim refused, stop scaling and, refused at launch, leave an instance Karpenter
 * no longer tracks. The NodePool is where that is decided (its writes, the audit, `check`). A
 * NodeClaim written by hand is refused at CREATE, and on UPDATE only for what the update makes
 * wrong: what was already true of it was admitted once (before the policy, or unjudged).
 */
function refusableNodeClaimFindings(
  findings: readonly NodeSideFinding[],
  attributes: AdmissionAttributes,
  policies: readonly TenancyPolicy[],
): { readonly findings: readonly NodeSideFinding[]; readonly notRefused: readonly string[] } {
  if (findings.length === 0) return { findings, notRefused: [] };
  const warned = (kept: readonly NodeSideFinding[], why: string): string[] => {
    const shown = kept
      .slice(0, violationsSpelledOut)
      .map(({ policy, message }) => `DedicatedNodes (not refused: ${why}, policy "${policy.name}"): ${message}`);
    if (kept.length > violationsSpelledOut)
      shown.push(`DedicatedNodes (not refused: ${why}): and ${kept.length - violationsSpelledOut} more findings`);
    return shown;
  };
  if (ownedByNodePool(attributes.object)) {
    return { findings: [], notRefused: warned(findings, 'a NodePool made this NodeClaim; the NodePool is judged, fix it there') };
  }
  if (attributes.operation !== 'UPDATE' || attributes.oldObject === undefined) return { findings, notRefused: [] };
  const before = new Set(nodeClaimFindings(attributes.oldObject, policies).map(({ message }) => message));
  return {
    findings: findings.filter(({ message }) => !before.has(message)),
    notRefused: warned(
      findings.filter(({ message }) => before.has(message)),
      'already true of this NodeClaim before the update',
    ),
  };
}

/** Whether a NodeClaim names a Karpenter NodePool as its owner, as every NodeClaim Karpenter makes does. */
function ownedByNodePool(nodeClaim: JsonObject | undefined): boolean {
  const owners = isJsonObject(nodeClaim?.metadata) ? nodeClaim.metadata.ownerReferences : undefined;
  return (
    Array.isArray(owners) &&
    owners.some((owner) => isJsonObject(owner) && owner.apiVersion === `${nodePoolGroup}/v1` && owner.kind === 'NodePool')
  );
}

/**
 * The kind whose pod spec is under decision: a Pod, or a workload with a pod template (the kinds
 * of src/api/resource-kinds.ts). Only Pods and DaemonSet templates are mutated; every template is
 * validated, so that `kubectl apply` of a workload whose pods would be refused fails at once
 * instead of its controller retrying refused pods forever.
 */
function workloadKindOf(attributes: AdmissionAttributes): ResourceKind | undefined {
  if (attributes.subResource !== '' || attributes.resource.version !== 'v1') {
    return undefined;
  }
  return resourceKindByResource(attributes.resource.group, attributes.resource.resource);
}

/** The pod spec under decision: a pod's own, or a workload's template presented as a pod. */
interface Workload {
  /** `Pod`, `DaemonSet`, `Deployment`, … */
  readonly kind: string;
  /** What CEL sees as `object` (and `oldObject`): a Pod, or the Pod the template's controller creates (src/api/pod-template.ts). */
  readonly podView: JsonObject;
  readonly oldPodView: JsonObject | undefined;
  readonly spec: PodSpec;
  readonly oldSpec: PodSpec | undefined;
  /** Path of the pod spec in the object, for messages: `spec`, `spec.template.spec`, … */
  readonly specPath: string;
  /** The object with its pod spec replaced. */
  readonly withSpec: (spec: PodSpec) => JsonObject;
}

function toWorkload(object: JsonObject, oldObject: JsonObject | undefined, attributes: AdmissionAttributes): Workload | undefined {
  const kind = workloadKindOf(attributes);
  const spec: PodSpec | undefined = kind === undefined ? undefined : podTemplateOf(object, kind)?.spec;
  if (kind === undefined || spec === undefined) {
    return undefined;
  }
  // The admission layer has checked the shapes of the fields read here (src/admission/object-shape.ts).
  const asPod = (workload: JsonObject | undefined): JsonObject | undefined =>
    workload === undefined ? undefined : kind.kind === 'Pod' ? workload : podFromTemplate(workload, kind, attributes.namespace);
  return {
    kind: kind.kind,
    podView: asPod(object) ?? object,
    oldPodView: asPod(oldObject),
    spec,
    oldSpec: oldObject === undefined ? undefined : podTemplateOf(oldObject, kind)?.spec,
    specPath: kind.podSpecPath.join('.'),
    withSpec: (newSpec) => withPodSpec(object, kind, newSpec),
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
  /** The RuntimeClass a Pod CREATE names, whose scheduling the webhook sees merged into the pod. */
  readonly runtimeClass: RuntimeClass | undefined;
}

type Preparation =
  | {
      readonly prepared: Prepared;
      readonly memberships: readonly Membership[];
      /** A pod UPDATE in a namespace the policies disagree on: judged as a namespace of no group, with this warning. */
      readonly conflict?: Findings;
      readonly early?: undefined;
    }
  | { readonly early: Findings & { readonly denial?: { readonly reason: 'Forbidden'; readonly message: string } } };

/** Common first steps: nothing to do without policies or for mirror pods; a group conflict ends most requests. */
function prepare(set: PolicySet, object: JsonObject, attributes: AdmissionAttributes, context: PluginContext): Preparation | undefined {
  if (set.policies.length === 0) {
    return undefined;
  }
  const workload = toWorkload(object, attributes.oldObject, attributes);
  if (workload === undefined || isMirrorPodRequest(attributes)) {
    return undefined;
  }
  const evaluator = createPolicyEvaluator(
    {
      object: workload.podView,
      oldObject: workload.oldPodView,
      namespace: context.namespace,
      request: () => celRequest(attributes, workload.kind),
    },
    set.namespaceVerdicts,
  );
  const namespace = attributes.namespace;
  const runtimeClass = workload.kind === 'Pod' && attributes.operation === 'CREATE' ? context.runtimeClass : undefined;
  const prepared = { workload, evaluator, namespace, runtimeClass };
  const groups = resolveNamespaceGroups(set, evaluator);
  if (groups.conflict !== undefined) {
    const annotations = {
      [auditKeys.policy]: groups.conflict.map(({ policy }) => policy.name).join(','),
      [auditKeys.group]: groups.conflict.map(({ group }) => group).join(','),
      [auditKeys.decision]: 'conflict' satisfies DedicatedNodesDecision,
    };
    const message = conflictMessage(namespace, groups.conflict);
    // A pod's update, or a workload's that leaves its pod template alone (a scale, a label, the
    // garbage collector removing a finalizer), touches an object that exists already: refusing it
    // would wedge running workloads until the policies are fixed, without protecting a node, so
    // the conflict alone only warns. What the update adds is still judged, as for a namespace of
    // no group: a new toleration of any group's taint is foreign, since neither group can be
    // trusted. A workload update that changes its template is refused like a CREATE.
    const existingLeftAlone = attributes.operation === 'UPDATE' && (workload.kind === 'Pod' || jsonEqual(workload.spec, workload.oldSpec));
    if (existingLeftAlone) {
      return {
        prepared,
        memberships: judgedMemberships(set, groups),
        conflict: { warnings: [`DedicatedNodes: ${message}`], auditAnnotations: annotations },
      };
    }
    // One message, however many policies took part: deny if any of them denies.
    const deny = groups.conflict.some(({ policy }) => policy.enforcement === 'Deny');
    return {
      early: deny
        ? { denial: { reason: 'Forbidden', message }, auditAnnotations: annotations }
        : { warnings: [`DedicatedNodes: ${message}`], auditAnnotations: annotations },
    };
  }
  return { prepared, memberships: groups.memberships };
}

// ---------------------------------------------------------------------------------------------
// Mutation

function admit(set: PolicySet, object: JsonObject, attributes: AdmissionAttributes, context: PluginContext): MutationOutcome {
  // A pod's affinity is immutable after creation, so only CREATE can give it the pair. Of the
  // templates, only a DaemonSet's is mutated: its controller places a pod on every node it
  // selects, so the template itself must select the group's nodes; the pods of every other
  // workload get the pair when they are created.
  const kind = workloadKindOf(attributes)?.kind;
  if ((kind === 'Pod' && attributes.operation !== 'CREATE') || (kind !== 'Pod' && kind !== 'DaemonSet')) {
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
    const groupValues = groupLabelValues(policy, group);
    const contradictions = groupContradictions(workload.spec, policy.nodeLabel, group, workload.specPath, groupValues);
    if (contradictions.length > 0) {
      violations.push({ policy, message: contradictionMessage(prepared, policy, group, contradictions) });
      // Under Warn the pod keeps its own choice: adding the group requirement would only make it unschedulable.
      continue;
    }
    spec = withGroupToleration(spec, policy, group);
    spec = requireGroupInEveryTerm(spec, policy.nodeLabel, group, groupValues);
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
  const present = tolerations.some(
    (t) => t.key === wanted.key && t.operator === wanted.operator && t.value === wanted.value && t.effect === wanted.effect,
  );
  return present ? spec : { ...spec, tolerations: tolerations.concat([wanted]) };
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
  const { prepared, memberships, conflict } = preparation;
  const scope = judgedScope(prepared.workload, attributes.operation === 'CREATE');
  const tally: Tally = {
    violations: [],
    warnings: [...(conflict?.warnings ?? [])],
    infrastructureUses: [],
    involved: new Set<TenancyPolicy>(),
    exempt: false,
  };
  const named = namedNode(scope.nodeName, prepared.workload.specPath, context, tally.warnings);
  for (const membership of memberships) {
    judgeMembership(prepared, scope, named, membership, conflict !== undefined, tally);
  }
  const group = memberships.find((membership) => membership.group !== '')?.group ?? '';
  return validationOutcome(tally, group, conflict);
}

/** What a request is judged on (see the file comment), worked out once for every policy. */
interface JudgedScope {
  readonly tolerations: readonly Toleration[];
  /**
   * On UPDATE, 1 at the index of each toleration the old spec holds already (the same key,
   * operator, value and effect; tolerationSeconds may change), which is not judged again; a flag
   * per index, since a pod may hold a million. Undefined on CREATE.
   */
  readonly kept: Uint8Array | undefined;
  /** The nodeName to judge: set, and new (on CREATE, or changed by the UPDATE). */
  readonly nodeName: string | undefined;
  /**
   * The full pair (toleration and requirement) for what the mutating side gives it: pods on
   * CREATE and DaemonSet templates. Other templates' pods get the pair when they are created, so
   * for those only a node choice that contradicts the group is refused now.
   */
  readonly judgePair: boolean;
  /** The tenant's node choice: with the pair, or for a template that changed. */
  readonly judgeContradictions: boolean;
  /** The RuntimeClass named, judged with the node choice (a pod's is immutable); undefined when none is. */
  readonly runtimeClassName: string | undefined;
}

/** An UPDATE is judged on its added tolerations, a changed nodeName, and a template only when it changed. */
function judgedScope(workload: Workload, isCreate: boolean): JudgedScope {
  const tolerations = workload.spec.tolerations ?? [];
  const inOldSpec = isCreate ? undefined : matchingTolerationIn(workload.oldSpec?.tolerations ?? []);
  const kept = inOldSpec === undefined ? undefined : Uint8Array.from(tolerations, (toleration) => (inOldSpec(toleration) ? 1 : 0));
  const nodeName = workload.spec.nodeName;
  const judgeNodeName = nodeName !== undefined && nodeName !== '' && (isCreate || workload.oldSpec?.nodeName !== nodeName);
  const templateJudged = workload.kind !== 'Pod' && (isCreate || !jsonEqual(workload.spec, workload.oldSpec));
  const judgePair = (workload.kind === 'Pod' && isCreate) || (workload.kind === 'DaemonSet' && templateJudged);
  const judgeContradictions = judgePair || templateJudged;
  const runtimeClassName = workload.spec.runtimeClassName;
  return {
    tolerations,
    kept,
    nodeName: judgeNodeName ? nodeName : undefined,
    judgePair,
    judgeContradictions,
    runtimeClassName: judgeContradictions && typeof runtimeClassName === 'string' && runtimeClassName !== '' ? runtimeClassName : undefined,
  };
}

/** The node a judged nodeName names, read once for every policy: `node` undefined when the cluster has no such node. */
interface NamedNode {
  readonly name: string;
  readonly node: Node | undefined;
}

/**
 * Reads the node a judged nodeName names. Without any cluster state (offline, no
 * --cluster-state) an unknown name proves nothing: it is not judged, and `warnings` says so.
 */
function namedNode(nodeName: string | undefined, specPath: string, context: PluginContext, warnings: string[]): NamedNode | undefined {
  if (nodeName === undefined) {
    return undefined;
  }
  const node = context.node(nodeName);
  if (node === undefined && !context.nodesKnown) {
    warnings.push(
      `DedicatedNodes: node "${clipText(nodeName)}" named by ${specPath}.nodeName could not be checked: no cluster state holds the cluster's nodes`,
    );
    return undefined;
  }
  return { name: nodeName, node };
}

/** What the policies found, gathered over every membership. */
interface Tally {
  readonly violations: Violation[];
  readonly warnings: string[];
  /** What an infrastructure namespace reached, for the audit annotation. */
  readonly infrastructureUses: string[];
  /** The policies the request is judged by: those that give its namespace a group, or that it broke. */
  readonly involved: Set<TenancyPolicy>;
  /** The namespace belongs to a group whose policy exempts this pod. */
  exempt: boolean;
}

/** One policy's judgement of the request: the tenant's pair, then everything the pod reaches beyond its group. */
function judgeMembership(
  prepared: Prepared,
  scope: JudgedScope,
  named: NamedNode | undefined,
  { policy, group: ownGroup }: Membership,
  conflicted: boolean,
  tally: Tally,
): void {
  const { specPath } = prepared.workload;
  const isTenant = ownGroup !== '' && !prepared.evaluator.exempt(policy);
  if (ownGroup !== '') {
    tally.involved.add(policy);
    tally.exempt ||= !isTenant;
  }
  if (isTenant && scope.judgeContradictions) {
    for (const message of missingPair(prepared, policy, ownGroup, scope.judgePair)) {
      tally.violations.push({ policy, message });
    }
  }
  const foreign = foreignTolerations(scope, policy, ownGroup, specPath, prepared.runtimeClass);
  const runtimeClass =
    scope.runtimeClassName === undefined ? undefined : runtimeClassProblem(policy, ownGroup, isTenant, scope.runtimeClassName, specPath);
  if (runtimeClass?.foreign === true) {
    foreign.push(runtimeClass.message);
  } else if (runtimeClass !== undefined) {
    tally.involved.add(policy);
    tally.violations.push({ policy, message: runtimeClass.message });
  }
  const nodeProblem =
    named === undefined
      ? undefined
      : named.node === undefined
        ? missingNodeProblem(named.name, policy, specPath)
        : nodeNameProblem(named.node, policy, ownGroup, isTenant, specPath);
  const foreignReach = nodeProblem?.foreign === true ? [...foreign, nodeProblem.message] : foreign;
  if (foreignReach.length > 0) {
    tally.involved.add(policy);
    if (prepared.evaluator.infrastructure(policy)) {
      tally.infrastructureUses.push(`${policy.name}: ${spellOut(foreignReach, (use) => use, '; ')}`);
    } else {
      for (const message of foreignReach) {
        tally.violations.push({ policy, message: `${message}; ${foreignReachRule(prepared.namespace, ownGroup, conflicted)}` });
      }
    }
  }
  if (nodeProblem !== undefined && !nodeProblem.foreign) {
    tally.involved.add(policy);
    tally.violations.push({ policy, message: nodeProblem.message });
  }
}

/** The judged tolerations that reach another group's dedicated taint under `policy`, as messages. */
function foreignTolerations(
  scope: JudgedScope,
  policy: TenancyPolicy,
  ownGroup: string,
  specPath: string,
  runtimeClass: RuntimeClass | undefined,
): string[] {
  const { tolerations, kept } = scope;
  const foreign: string[] = [];
  for (let index = 0; index < tolerations.length; index++) {
    const toleration = tolerations[index] ?? {};
    if (kept?.[index] === 1) continue;
    const tolerated = foreignGroupsTolerated(toleration, policy, ownGroup);
    if (tolerated !== undefined) {
      const origin = tolerationFromRuntimeClass(runtimeClass, toleration);
      foreign.push(
        `${foreignTolerationText(specPath, index, tolerated)} (${groupTaintPattern(policy)}, policy "${policy.name}")${origin === undefined ? '' : `, ${origin}`}`,
      );
    }
  }
  return foreign;
}

/** The denial or warnings and the audit annotations: a namespace the policies disagree on keeps the conflict's annotations. */
function validationOutcome(tally: Tally, group: string, conflict: Findings | undefined): ValidationOutcome {
  const outcome = decide(tally.violations);
  const allWarnings = [...tally.warnings, ...outcome.warnings];
  if (conflict !== undefined) {
    // The conflict's annotations name every policy and group involved; the decision is this one's.
    const decision: DedicatedNodesDecision = outcome.denial !== undefined ? 'denied' : 'conflict';
    return {
      ...(outcome.denial === undefined ? {} : { denial: outcome.denial }),
      warnings: allWarnings,
      auditAnnotations: { ...conflict.auditAnnotations, [auditKeys.decision]: decision },
    };
  }
  const decision: DedicatedNodesDecision =
    outcome.denial !== undefined ? 'denied' : outcome.warnings.length > 0 ? 'warned' : tally.exempt ? 'exempt' : 'allowed';
  const auditAnnotations: Record<string, string> = annotations(
    [...tally.involved].map((policy) => ({ policy, group })),
    group,
    decision,
  );
  if (tally.infrastructureUses.length > 0) {
    auditAnnotations[auditKeys.infrastructure] = `allowed for an infrastructure namespace: ${tally.infrastructureUses.join(' | ')}`;
  }
  return {
    ...(outcome.denial === undefined ? {} : { denial: outcome.denial }),
    ...(allWarnings.length > 0 ? { warnings: allWarnings } : {}),
    auditAnnotations,
  };
}

/**
 * What a tenant lacks: a nodeSelector/affinity consistent with its group and, with `wholePair`,
 * the group toleration and the requirement in every required term.
 */
function missingPair(prepared: Prepared, policy: TenancyPolicy, group: string, wholePair: boolean): string[] {
  const { workload } = prepared;
  const messages: string[] = [];
  const subject = tenantSubject(prepared, policy, group);
  const taint = { key: policy.taint.key, value: group, effect: policy.taint.effect };
  if (wholePair && !(workload.spec.tolerations ?? []).some((toleration) => toleratesOwnGroup(toleration, taint))) {
    messages.push(
      `${subject} must tolerate the taint ${groupTaintText(policy, group)}: ${workload.specPath}.tolerations lacks ${groupTolerationText(policy, group)}`,
    );
  }
  const groupValues = groupLabelValues(policy, group);
  const contradictions = groupContradictions(workload.spec, policy.nodeLabel, group, workload.specPath, groupValues);
  if (contradictions.length > 0) {
    messages.push(contradictionMessage(prepared, policy, group, contradictions));
  }
  const missing = wholePair ? missingGroupRequirement(workload.spec, policy.nodeLabel, group, workload.specPath, groupValues) : [];
  if (missing.length > 0) {
    messages.push(
      `${subject} must require ${groupRequirementText(policy, group)} in every required node affinity term: missing in ${spellOut(missing, (path) => path, ', ')}`,
    );
  }
  return messages;
}

function tenantSubject(prepared: Prepared, policy: TenancyPolicy, group: string): string {
  const what = prepared.workload.kind === 'Pod' ? 'pods' : `${prepared.workload.kind} pod templates`;
  return `${what} in namespace "${prepared.namespace}" (group "${group}", policy "${policy.name}")`;
}

function contradictionMessage(
  prepared: Prepared,
  policy: TenancyPolicy,
  group: string,
  contradictions: readonly { field: string; detail: string }[],
): string {
  const selected = prepared.workload.spec.nodeSelector?.[policy.nodeLabel];
  const origin = selected === undefined ? undefined : nodeSelectorFromRuntimeClass(prepared.runtimeClass, policy.nodeLabel, selected);
  const nodeSelectorField = `${prepared.workload.specPath}.nodeSelector`;
  const each = spellOut(
    contradictions,
    (contradiction) =>
      origin !== undefined && contradiction.field === nodeSelectorField
        ? `${contradictionText(contradiction)} (${origin})`
        : contradictionText(contradiction),
    '; ',
  );
  return `${tenantSubject(prepared, policy, group)} may only run on nodes labelled ${groupNodesText(policy, group)}, but the pod asks for other nodes: ${each}`;
}

// ---------------------------------------------------------------------------------------------
// Enforcement and findings

interface Outcome {
  readonly denial?: { readonly reason: 'Forbidden'; readonly message: string };
  readonly warnings: readonly string[];
}

/**
 * How many violations a denial or the warnings spell out; the rest are counted. A tenant controls
 * how many there are (one per toleration), and each message is about 300 characters: 10 keep a
 * denial readable in a terminal (about 3 KB) and the response small whatever the pod's size. For
 * warnings it is also what reaches the client: the API server keeps 4,096 characters of warnings
 * per response (truncateAtTotalRunes in k8s.io/apiserver/pkg/endpoints/filters/warning.go), about
 * 13 of these.
 */
export const violationsSpelledOut = 10;

/** Deny-policy violations deny together (one message); Warn-policy violations become warnings. */
function decide(violations: readonly Violation[]): Outcome {
  const denying = violations.filter(({ policy }) => policy.enforcement === 'Deny');
  const warning = violations.filter(({ policy }) => policy.enforcement === 'Warn');
  const warnings = warning.slice(0, violationsSpelledOut).map(({ policy, message }) => warningText(policy, message));
  if (warning.length > violationsSpelledOut) {
    warnings.push(`DedicatedNodes (enforcement Warn): and ${warning.length - violationsSpelledOut} more violations of the same kinds`);
  }
  if (denying.length === 0) {
    return { warnings };
  }
  const listed = denying.slice(0, violationsSpelledOut).map(({ message }) => message);
  if (denying.length > violationsSpelledOut) {
    listed.push(`and ${denying.length - violationsSpelledOut} more violations of the same kinds`);
  }
  return { denial: { reason: 'Forbidden', message: listed.join('; ') }, warnings };
}

function warningText(policy: TenancyPolicy, message: string): string {
  return `DedicatedNodes (enforcement Warn, policy "${policy.name}"): ${message}`;
}

function warningsOf(outcome: Outcome): { warnings?: readonly string[] } {
  return outcome.warnings.length > 0 ? { warnings: outcome.warnings } : {};
}

function annotations(
  memberships: readonly { policy: TenancyPolicy }[],
  group: string,
  decision: DedicatedNodesDecision,
): Record<string, string> {
  const names = [...new Set(memberships.map(({ policy }) => policy.name))];
  return {
    ...(names.length > 0 ? { [auditKeys.policy]: names.join(',') } : {}),
    ...(group === '' ? {} : { [auditKeys.group]: group }),
    [auditKeys.decision]: decision,
  };
}
