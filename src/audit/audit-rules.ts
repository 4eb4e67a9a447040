/**
 * The audit's rules: which of tolerator's admission rules a pod that already exists breaks
 * (`tolerator audit`, and the periodic audit of `tolerator serve --audit-interval`).
 *
 * Admission judges a pod once, when it is written. A pod created before tolerator was installed,
 * while its mutating webhook was down (failurePolicy Ignore), in a namespace that has since changed
 * group, or under a policy that has since changed, keeps running as it is. Each rule here asks of
 * a stored pod the question one admission plugin asks of a new one, with that plugin's own
 * decision code (the same functions, not copies), so that a pod the webhook produced today (the
 * mutating plugins, then the validating ones, on CREATE) breaks none of them:
 *
 * | rule | plugin | the question |
 * |---|---|---|
 * | `foreign-node` | DedicatedNodes | does the pod run on another group's node? (group-reach.ts nodeNameProblem) |
 * | `outside-group` | DedicatedNodes | does a tenant of group G run on a node without G's label? |
 * | `missing-pair` | DedicatedNodes | does a tenant lack G's toleration or G's node requirement in every required term? |
 * | `foreign-toleration` | DedicatedNodes | does the pod tolerate another group's dedicated taint? (foreignGroupsTolerated) |
 * | `unknown-node` | DedicatedNodes | is the pod bound to a node that does not exist? |
 * | `missing-default-tolerations` | DefaultTolerationSeconds / DaemonSetTolerations | the not-ready/unreachable NoExecute tolerations, or a daemon pod's set |
 * | `missing-memory-pressure` | PodTolerationRestriction | a pod that is not BestEffort without a toleration covering memory-pressure:NoSchedule |
 * | `node-selector-conflict` | PodNodeSelector | a nodeSelector that conflicts with the namespace's node selector, leaves its whitelist (namespace-node-selector.ts judgeNamespaceNodeSelector) or lacks its labels |
 * | `invalid-toleration` | TolerationValidation | a toleration the API server refuses on CREATE under the current gates |
 * | `node-pattern` | DedicatedNodes | does a Node carry a group's label without its taint, or the reverse? (auditNodeSide) |
 * | `nodepool-pattern` | DedicatedNodes | does a Karpenter NodePool make such nodes, or serve another group than spec.nodePools names? |
 * | `foreign-device-toleration` | DedicatedNodes | was a ResourceClaim allocated devices with a toleration of another group's device taint? (auditClaim) |
 * | `runtimeclass-pattern` | DedicatedNodes | does a RuntimeClass's scheduling reach a group's nodes without spec.runtimeClasses listing it for that group? |
 *
 * `unknown-node` belongs to DedicatedNodes because that is the plugin that refuses a nodeName
 * naming no node (and only while policies are loaded, and outside infrastructure namespaces);
 * where the webhook admits such a pod, the audit does not report it either. A rule is judged only while its plugin is enabled
 * (`--enable-plugins`/`--disable-plugins`, as for `serve`).
 *
 * What a stored pod no longer carries: the request that created it. So
 * - a mirror pod is recognised by what only its kubelet can write: the `kubernetes.io/config.mirror`
 *   annotation together with the controller ownerReference to its own Node (`v1`, kind `Node`, the
 *   name of `spec.nodeName` and, when the Node is known, its UID), which every kubelet since 1.19
 *   sets and the NodeRestriction admission plugin requires of mirror pods (KEP-1314,
 *   MirrorPodNodeRestriction). A tenant may write the annotation, but not the UID of a Node it
 *   cannot read; the annotation alone does not make a mirror pod, as in admission;
 * - the policies' CEL sees `request` as for a CREATE by an anonymous user with no groups (as every
 *   offline command does). An `exempt` rule that trusts the requester's groups therefore never
 *   exempts a stored pod; such a finding says so in its message.
 *
 * Pure: the pod, its Namespace and Node (read by the caller), the policies, the gates and the
 * enabled plugins in; findings out. Cost: linear in the pod times the number of policies (every
 * toleration is looked at once per policy), with messages clipped to a fixed number of items.
 */
import type { FeatureGates } from '../api/feature-gates.js';
import type { JsonObject, Namespace, Node, Pod, Toleration } from '../api/types.js';
import { MirrorPodAnnotation, TaintKey, isJsonObject } from '../api/types.js';
import { nodeFindings as nodeSideFindings, nodePoolFindings } from '../tenancy/node-side.js';
import { celRequest, offlineAttributes } from '../plugins/admission-request.js';
import { daemonSetPodTolerations, isDaemonSetPod } from '../plugins/daemonset-tolerations.js';
import { coversNodeCondition } from '../plugins/default-toleration-seconds.js';
import type { PluginName } from '../plugins/plugin.js';
import { memoryPressureToleration } from '../plugins/pod-toleration-restriction.js';
import { foreignGroupsTolerated, nodeNameProblem, toleratesOwnGroup } from '../tenancy/group-reach.js';
import { groupContradictions, missingGroupRequirement } from '../tenancy/node-affinity.js';
import { runtimeClassFindings } from '../tenancy/runtime-classes.js';
import { groupLabelValues } from '../tenancy/group-node-labels.js';
import {
  createPolicyEvaluator,
  resolveNamespaceGroups,
  type Membership,
  type PolicyEvaluator,
  type PolicySet,
} from '../tenancy/policy-set.js';
import type { TenancyPolicy } from '../tenancy/policy.js';
import {
  contradictionText,
  foreignReachRule,
  foreignTolerationText,
  groupRequirementText,
  groupTaintPattern,
  groupTaintText,
  groupTolerationText,
  judgedMemberships,
} from '../tenancy/verdict-texts.js';
import { isSuperset } from '../tolerations/merge.js';
import type { DeviceToleration, DeviceTolerationList } from '../tolerations/device-tolerations.js';
import { foreignDeviceReachRule, foreignDeviceTolerations } from '../plugins/dedicated-devices.js';
import { clipText } from '../api/text-bounds.js';
import { isBestEffortPod } from '../tolerations/qos.js';
import { validateTolerations } from '../tolerations/validate-tolerations.js';
import {
  effectiveNamespaceNodeSelector,
  emptyPodNodeSelectorConfig,
  judgeNamespaceNodeSelector,
  type PodNodeSelectorConfig,
} from '../scheduling/namespace-node-selector.js';
import { FieldErrorList, errorMessage } from '../validation/field-errors.js';

/** One pod breaking one rule (under one policy, for the tenancy rules), or one Node or NodePool breaking the node half of the pattern. */
export interface AuditViolation {
  /** '' for a Node or NodePool (cluster-scoped). */
  readonly namespace: string;
  readonly name: string;
  /**
   * What `name` names: absent for a Pod; `Node`, `NodePool` (karpenter.sh/v1) or `RuntimeClass`
   * (node.k8s.io/v1) for the node-side rules; `ResourceClaim` (resource.k8s.io/v1, namespaced) for
   * the claim rule.
   */
  readonly kind?: 'Node' | 'NodePool' | 'RuntimeClass' | 'ResourceClaim';
  /** `spec.nodeName`, '' for a pod not bound to a node. */
  readonly node: string;
  readonly rule: AuditRuleName;
  readonly message: string;
  /** The TenancyPolicy whose rule it is, for the tenancy rules. */
  readonly policy?: string;
}

/** The namespaces the webhooks never see (their `namespaceSelector`), whose pods are audited only with `--all`. */
export interface NamespaceExclusion {
  /** By name (`kubernetes.io/metadata.name NotIn [...]`). */
  readonly names: ReadonlySet<string>;
  /** By label (`<key> NotIn [<value>]`): a namespace carrying the label with this value is excluded. */
  readonly label: { readonly key: string; readonly value: string } | undefined;
}

export interface AuditSettings {
  readonly gates: FeatureGates;
  /** The enabled admission plugins: a rule is judged only while its plugin is enabled. */
  readonly enabled: ReadonlySet<PluginName>;
  readonly policies: PolicySet;
  readonly exclusion: NamespaceExclusion;
  /** `--all`: also audit mirror pods and pods in excluded namespaces. */
  readonly all: boolean;
  /** PodNodeSelector's cluster default and whitelists (`--admission-config`); absent: none. */
  readonly podNodeSelector?: PodNodeSelectorConfig;
}

/** What the caller has read about the pod's surroundings. */
export interface PodSurroundings {
  /** The pod's Namespace, undefined when the cluster state does not hold it (then it has no group). */
  readonly namespace: Namespace | undefined;
  /** The Node of `spec.nodeName`, undefined when there is none by that name (or the pod is not bound). */
  readonly node: Node | undefined;
  /** Whether the cluster state holds the cluster's nodes: without it an unknown node proves nothing. */
  readonly nodesKnown: boolean;
}

/** Why a pod was not audited. */
export type SkipReason = 'terminated' | 'mirror' | 'excluded-namespace';

export type PodAudit =
  | { readonly skipped: SkipReason; readonly violations?: undefined }
  | { readonly violations: readonly AuditViolation[]; readonly skipped?: undefined };

/** What every rule is given: the pod and its surroundings, with the tenancy facts worked out once. */
interface Subject {
  readonly pod: Pod;
  readonly namespace: string;
  readonly name: string;
  readonly nodeName: string;
  readonly tolerations: readonly Toleration[];
  readonly surroundings: PodSurroundings;
  readonly settings: AuditSettings;
  /** Each policy's group for the pod's namespace ('' for all of them when the policies conflict). */
  readonly tenancy: () => TenancyFacts;
}

interface TenancyFacts {
  readonly evaluator: PolicyEvaluator;
  readonly memberships: readonly Membership[];
  /** Set when two policies give the namespace different groups: it is judged as belonging to none. */
  readonly conflict: boolean;
}

/** What a rule finds: a message, and the policy for the tenancy rules. */
interface Finding {
  readonly message: string;
  readonly policy?: TenancyPolicy;
}

interface AuditRule {
  readonly name: string;
  /** The plugin whose decision the rule repeats; the rule is judged only while it is enabled. */
  readonly plugins: readonly PluginName[];
  readonly check: (subject: Subject) => readonly Finding[];
}

/**
 * How many items (tolerations, terms, field errors) one message spells out; the rest are counted.
 * A tenant chooses how many tolerations a pod has; 10 keep a row readable in a terminal and the
 * JSON, the metrics and the policy reports small whatever the pod (the plugin's violationsSpelledOut
 * reasons the same way).
 */
export const itemsSpelledOut = 10;

function spell(items: readonly string[]): string {
  const listed = items.slice(0, itemsSpelledOut).join('; ');
  return items.length > itemsSpelledOut ? `${listed}; and ${items.length - itemsSpelledOut} more` : listed;
}

/** What to do about a pod whose spec admission would have changed: its tolerations and affinity are fixed at creation. */
const recreate = 'recreate the pod so that admission';

// ---------------------------------------------------------------------------------------------
// The rules, in the order they are reported for one pod. Adding a rule is one entry here.

const rules = [
  {
    name: 'unknown-node',
    plugins: ['DedicatedNodes'],
    check: (subject) => {
      const { nodeName, surroundings } = subject;
      if (nodeName === '' || surroundings.node !== undefined || !surroundings.nodesKnown) return [];
      // A missing node reaches every group (group-reach.ts missingNodeProblem): as in admission,
      // only a namespace that every policy calls infrastructure may name one. One finding, under
      // the first policy that does not, since the fact is the same for all of them.
      const { evaluator, memberships } = subject.tenancy();
      const policy = memberships.find((membership) => !evaluator.infrastructure(membership.policy))?.policy;
      if (policy === undefined) return [];
      return [
        {
          policy,
          message: `spec.nodeName "${nodeName}" names no existing node (policy "${policy.name}"): a node registering under that name would run the pod whatever its ${groupTaintPattern(policy)} taint says; recreate the pod so that admission and the scheduler place it`,
        },
      ];
    },
  },
  {
    name: 'foreign-node',
    plugins: ['DedicatedNodes'],
    check: (subject) => nodeFindings(subject, true),
  },
  {
    name: 'outside-group',
    plugins: ['DedicatedNodes'],
    check: (subject) => nodeFindings(subject, false),
  },
  {
    name: 'missing-pair',
    plugins: ['DedicatedNodes'],
    check: (subject) => {
      const { evaluator, memberships } = subject.tenancy();
      const findings: Finding[] = [];
      for (const { policy, group } of memberships) {
        if (group === '' || evaluator.exempt(policy)) continue;
        const spec = subject.pod.spec ?? {};
        const lacks: string[] = [];
        const taint = { key: policy.taint.key, value: group, effect: policy.taint.effect };
        if (!subject.tolerations.some((toleration) => toleratesOwnGroup(toleration, taint))) {
          lacks.push(`spec.tolerations lacks ${groupTolerationText(policy, group)}`);
        }
        for (const contradiction of groupContradictions(spec, policy.nodeLabel, group, 'spec', groupLabelValues(policy, group)))
          lacks.push(contradictionText(contradiction));
        const missing = missingGroupRequirement(spec, policy.nodeLabel, group, 'spec', groupLabelValues(policy, group));
        if (missing.length > 0) lacks.push(`${groupRequirementText(policy, group)} is missing in ${spell(missing)}`);
        if (lacks.length === 0) continue;
        findings.push({
          policy,
          message: `a pod of group "${group}" (policy "${policy.name}") must tolerate ${groupTaintText(policy, group)} and require ${groupRequirementText(policy, group)} in every required node affinity term: ${spell(lacks)}; ${recreate} adds them${exemptByRequester(policy)}`,
        });
      }
      return findings;
    },
  },
  {
    name: 'foreign-toleration',
    plugins: ['DedicatedNodes'],
    check: (subject) => {
      const { evaluator, memberships, conflict } = subject.tenancy();
      const findings: Finding[] = [];
      for (const { policy, group } of memberships) {
        const foreign: string[] = [];
        subject.tolerations.forEach((toleration, index) => {
          const tolerated = foreignGroupsTolerated(toleration, policy, group);
          if (tolerated !== undefined) foreign.push(foreignTolerationText('spec', index, tolerated));
        });
        if (foreign.length === 0 || evaluator.infrastructure(policy)) continue;
        findings.push({
          policy,
          message: `${spell(foreign)} (${groupTaintPattern(policy)}, policy "${policy.name}"); ${foreignReachRule(subject.namespace, group, conflict)}: remove the toleration from the pod's workload`,
        });
      }
      return findings;
    },
  },
  {
    name: 'node-selector-conflict',
    plugins: ['PodNodeSelector'],
    check: (subject) => {
      const config = subject.settings.podNodeSelector ?? emptyPodNodeSelectorConfig;
      const nodeSelector = subject.pod.spec?.nodeSelector ?? {};
      const judgement = judgeNamespaceNodeSelector(nodeSelector, subject.namespace, subject.surroundings.namespace, config);
      switch (judgement.verdict) {
        case 'allowed': {
          // The validating side also refuses a pod without the namespace's labels (its mutating
          // merge was skipped): such a pod may run on any node.
          const effective = effectiveNamespaceNodeSelector(subject.surroundings.namespace, config);
          const missing = [...(effective.selector ?? [])].filter(([key]) => !Object.hasOwn(nodeSelector, key));
          if (missing.length === 0) return [];
          return [
            {
              message: `spec.nodeSelector lacks the namespace's node selector ${spell(missing.map(([key, value]) => `${key}=${value}`))}, so the pod may run outside the namespace's nodes; ${recreate} (PodNodeSelector) adds it`,
            },
          ];
        }
        case 'conflict': {
          const { key, namespaceValue, podValue } = judgement.conflict;
          return [
            {
              message: `spec.nodeSelector ${key}=${podValue} conflicts with the namespace's node selector ${key}=${namespaceValue} (${judgement.message}); fix the nodeSelector in its workload`,
            },
          ];
        }
        case 'not-whitelisted':
          return [
            {
              message: `spec.nodeSelector ${judgement.key} is not in the namespace's whitelist with that value (${judgement.message}); fix the nodeSelector in its workload`,
            },
          ];
        case 'unreadable':
          return [{ message: `${judgement.message}: admission refuses every pod of the namespace until its annotation is fixed` }];
      }
    },
  },
  {
    name: 'missing-default-tolerations',
    plugins: ['DefaultTolerationSeconds', 'DaemonSetTolerations'],
    check: (subject) => {
      const { pod, tolerations, settings } = subject;
      if (settings.enabled.has('DaemonSetTolerations') && isDaemonSetPod(pod)) {
        // The DaemonSet controller's set, each covered by some toleration of the pod (isSuperset):
        // PodTolerationRestriction's merge drops a set entry that a broader toleration of the pod
        // covers (an empty-key Exists, say), so coverage, not the exact entry, is what admission
        // leaves. A not-ready toleration bounded by tolerationSeconds does not cover the set's
        // unbounded one: that pod would be evicted from a failed node, which a daemon never is.
        const missing = daemonSetPodTolerations(pod.spec?.hostNetwork === true).filter(
          (daemon) => !tolerations.some((existing) => isSuperset(existing, daemon)),
        );
        if (missing.length === 0) return [];
        return [
          {
            message: `a DaemonSet's pod lacks the DaemonSet controller's tolerations ${spell(missing.map(describeToleration))}; ${recreate} (DaemonSetTolerations) adds them`,
          },
        ];
      }
      if (!settings.enabled.has('DefaultTolerationSeconds')) return [];
      const missing = [TaintKey.NodeNotReady, TaintKey.NodeUnreachable].filter((key) => !coversNodeCondition(tolerations, key));
      if (missing.length === 0) return [];
      return [
        {
          message: `lacks a toleration of ${missing.map((key) => `${key}:NoExecute`).join(' and ')} (evicted at once, not after tolerationSeconds, when its node fails); ${recreate} (DefaultTolerationSeconds) adds it`,
        },
      ];
    },
  },
  {
    name: 'missing-memory-pressure',
    plugins: ['PodTolerationRestriction'],
    check: (subject) => {
      const { pod, tolerations, settings } = subject;
      const wanted = memoryPressureToleration();
      if (isBestEffortPod(pod, settings.gates) || tolerations.some((toleration) => isSuperset(toleration, wanted))) return [];
      return [
        {
          message: `not BestEffort, yet lacks a toleration of ${wanted.key}:${wanted.effect} (kept off nodes under memory pressure it would survive); ${recreate} (PodTolerationRestriction) adds it`,
        },
      ];
    },
  },
  {
    name: 'invalid-toleration',
    plugins: ['TolerationValidation'],
    check: (subject) => {
      // Bounded as the review's validation is (the first maxFieldErrors, the rest counted): a stored
      // pod of 100,000 comparison tolerations read while the gate is off is one finding, not
      // 100,000 error objects and their paths.
      const errors = validateTolerations(
        subject.tolerations,
        'spec.tolerations',
        { allowComparisonOperators: subject.settings.gates.TaintTolerationComparisonOperators },
        new FieldErrorList(),
      );
      if (errors.empty) return [];
      const notExamined = errors.omitted > 0 ? `; and ${errors.omitted} more field errors` : '';
      return [
        {
          message: `the API server refuses this pod if it is created again: ${spell([...new Set(errors.errors.map(errorMessage))])}${notExamined}; fix the toleration in its workload`,
        },
      ];
    },
  },
] as const satisfies readonly AuditRule[];

/**
 * The rules on the node half of the pattern (src/tenancy/node-side.ts), judged on the cluster's
 * Nodes and Karpenter NodePools rather than on a pod: `node-pattern`, a Node labelled for a group
 * without its taint, tainted without its label, or labelled for one group and tainted for
 * another; `nodepool-pattern`, a NodePool whose template makes such nodes, or that serves another
 * group than the one `spec.nodePools` names it for; `runtimeclass-pattern`, a RuntimeClass whose
 * scheduling reaches a group's nodes (its nodeSelector on the group label, a toleration of a
 * group's taint) without `spec.runtimeClasses` listing it for that group
 * (src/tenancy/runtime-classes.ts). All belong to DedicatedNodes, which refuses such a NodePool on
 * admission, and a pod naming another group's RuntimeClass.
 */
export const nodeSideRuleNames = ['node-pattern', 'nodepool-pattern', 'runtimeclass-pattern'] as const;

/**
 * The rule on allocated DRA claims (auditClaim): `foreign-device-toleration`, a ResourceClaim whose
 * allocation used a toleration of another group's device taint (TenancyPolicy `spec.deviceTaint`).
 * It belongs to DedicatedNodes, whose device half refuses such a claim on admission.
 */
export const claimRuleNames = ['foreign-device-toleration'] as const;

export type AuditRuleName = (typeof rules)[number]['name'] | (typeof nodeSideRuleNames)[number] | (typeof claimRuleNames)[number];

/** Every rule name, in report order. */
export const auditRuleNames: readonly AuditRuleName[] = [...rules.map((rule) => rule.name), ...nodeSideRuleNames, ...claimRuleNames];

/**
 * The node-side findings of the cluster's Nodes and NodePools (any JSON: a file's or the API
 * server's), while DedicatedNodes is enabled; one per object, rule and policy, each naming the
 * object and the field. Linear in the objects (node-side.ts).
 */
export function auditNodeSide(
  nodes: readonly Node[],
  nodePools: readonly unknown[],
  settings: AuditSettings,
  runtimeClasses: readonly unknown[] = [],
): AuditViolation[] {
  const policies = settings.policies.policies;
  if (!settings.enabled.has('DedicatedNodes') || policies.length === 0) return [];
  const violations: AuditViolation[] = [];
  /** One violation a finding, about a cluster-scoped object named `name`. */
  const report = (
    name: string,
    kind: 'Node' | 'NodePool' | 'RuntimeClass',
    rule: AuditRuleName,
    findings: readonly { readonly message: string; readonly policy: { readonly name: string } }[],
  ): void => {
    for (const finding of findings) {
      violations.push({
        namespace: '',
        name,
        kind,
        node: kind === 'Node' ? name : '',
        rule,
        message: finding.message,
        policy: finding.policy.name,
      });
    }
  };
  for (const node of nodes) report(node.metadata.name, 'Node', 'node-pattern', nodeSideFindings(node, policies));
  for (const nodePool of nodePools) report(objectName(nodePool), 'NodePool', 'nodepool-pattern', nodePoolFindings(nodePool, policies));
  for (const runtimeClass of runtimeClasses) {
    report(objectName(runtimeClass), 'RuntimeClass', 'runtimeclass-pattern', runtimeClassFindings(runtimeClass, policies));
  }
  return violations;
}

/** `metadata.name` of any JSON object, or '' where it has none. */
function objectName(object: unknown): string {
  const metadata = isJsonObject(object) && isJsonObject(object.metadata) ? object.metadata : {};
  return typeof metadata.name === 'string' ? metadata.name : '';
}

/**
 * The findings of one stored ResourceClaim, while DedicatedNodes is enabled and a policy has
 * `spec.deviceTaint`: each toleration of its allocation (`status.allocation.devices.results[i].tolerations`,
 * a copy of the request's tolerations that the allocator used, k8s.io/api resource/v1
 * `DeviceRequestAllocationResult.Tolerations`) that reaches another group's devices, judged by
 * the admission side's own function (src/plugins/dedicated-devices.ts foreignDeviceTolerations)
 * for the claim's namespace as it stands now. An unallocated claim has used no device: admission
 * judged its spec, and the allocation, when it comes, is what counts. As at admission, `exempt`
 * plays no part (any pod of the namespace may use the claim) and an infrastructure namespace may
 * reach every group. A namespace the webhooks never see is left out unless `--all`.
 */
export function auditClaim(claim: unknown, namespace: Namespace | undefined, settings: AuditSettings): AuditViolation[] {
  const policies = settings.policies.policies.filter((policy) => policy.deviceTaint !== undefined);
  if (!settings.enabled.has('DedicatedNodes') || policies.length === 0 || !isJsonObject(claim)) return [];
  const metadata = isJsonObject(claim.metadata) ? claim.metadata : {};
  const name = typeof metadata.name === 'string' ? metadata.name : '';
  const namespaceName = typeof metadata.namespace === 'string' ? metadata.namespace : '';
  if (!settings.all && isExcludedNamespace(namespaceName, namespace, settings.exclusion)) return [];
  const lists = allocatedTolerationLists(claim);
  if (lists.length === 0) return [];
  const evaluator = createPolicyEvaluator({
    object: claim,
    oldObject: undefined,
    namespace,
    request: () => celRequest(offlineAttributes({ operation: 'CREATE', object: claim, namespace: namespaceName }), 'ResourceClaim'),
  });
  const groups = resolveNamespaceGroups(settings.policies, evaluator);
  const conflict = groups.conflict !== undefined;
  const violations: AuditViolation[] = [];
  for (const { policy, group } of judgedMemberships(settings.policies, groups)) {
    if (policy.deviceTaint === undefined) continue;
    const foreign = foreignDeviceTolerations(lists, policy, group, itemsSpelledOut);
    if (foreign.total === 0 || evaluator.infrastructure(policy)) continue;
    const more = foreign.total - foreign.messages.length;
    violations.push({
      namespace: namespaceName,
      name,
      kind: 'ResourceClaim',
      node: '',
      rule: 'foreign-device-toleration',
      policy: policy.name,
      message: `${foreign.messages.join('; ')}${more > 0 ? `; and ${more} more` : ''}; ${foreignDeviceReachRule(namespaceName, group, conflict)}. The devices stay allocated while the claim exists: delete its pods and the claim, and recreate it without the toleration`,
    });
  }
  return violations;
}

/** The tolerations of each allocation result, at their paths, naming the device each was used for. */
function allocatedTolerationLists(claim: JsonObject): DeviceTolerationList[] {
  const status = isJsonObject(claim.status) ? claim.status : {};
  const allocation = isJsonObject(status.allocation) ? status.allocation : {};
  const devices = isJsonObject(allocation.devices) ? allocation.devices : {};
  const results = Array.isArray(devices.results) ? devices.results : [];
  const lists: DeviceTolerationList[] = [];
  for (let i = 0; i < results.length; i++) {
    const result: unknown = results[i];
    if (!isJsonObject(result) || !Array.isArray(result.tolerations) || result.tolerations.length === 0) continue;
    const device = [result.driver, result.pool, result.device].map((part) => clipText(typeof part === 'string' ? part : '', 100)).join('/');
    lists.push({
      tolerations: result.tolerations as DeviceToleration[],
      request: i,
      path: () => `status.allocation.devices.results[${i}] (device ${device}).tolerations`,
    });
  }
  return lists;
}

/** The rules that judge tenancy: they find nothing without TenancyPolicies, whatever the pods. */
export const tenancyRuleNames: readonly AuditRuleName[] = [
  ...rules.filter((rule) => (rule.plugins as readonly string[]).includes('DedicatedNodes')).map((rule) => rule.name),
  ...nodeSideRuleNames,
  ...claimRuleNames,
];

/** Whether a name is one of the rules (for flags and report parsing). */
export function isAuditRuleName(name: string): name is AuditRuleName {
  return (auditRuleNames as readonly string[]).includes(name);
}

// ---------------------------------------------------------------------------------------------

/**
 * `foreign-node` (`foreign`: the node belongs to another group, outside an infrastructure
 * namespace) or `outside-group` (a tenant on a node without its group's label).
 */
function nodeFindings(subject: Subject, foreign: boolean): Finding[] {
  const node = subject.surroundings.node;
  if (node === undefined) return [];
  const { evaluator, memberships, conflict } = subject.tenancy();
  const findings: Finding[] = [];
  for (const { policy, group } of memberships) {
    const isTenant = group !== '' && !evaluator.exempt(policy);
    const problem = nodeNameProblem(node, policy, group, isTenant, 'spec');
    if (problem === undefined || problem.foreign !== foreign) continue;
    if (foreign) {
      if (evaluator.infrastructure(policy)) continue;
      findings.push({
        policy,
        message: `${problem.message}; ${foreignReachRule(subject.namespace, group, conflict)}: recreate the pod so that admission and the scheduler place it`,
      });
    } else {
      findings.push({
        policy,
        message: `${problem.message}; ${recreate} gives it the group's node requirement${exemptByRequester(policy)}`,
      });
    }
  }
  return findings;
}

/** A note for the tenant rules when the policy's exemption reads the request, which a stored pod no longer has. */
function exemptByRequester(policy: TenancyPolicy): string {
  return policy.exempt?.variables.has('request') === true
    ? ` (policy "${policy.name}" exempts pods by their request, which a stored pod no longer carries: if an exempt requester created this pod, it is exempt)`
    : '';
}

function describeToleration(toleration: Toleration): string {
  return `${toleration.key ?? ''}:${toleration.effect ?? ''}`;
}

/**
 * The `request` a stored pod is judged under: a CREATE of the pod by nobody (no name, no groups),
 * the request made up offline that `tolerator test` and `explain` send too.
 */
function auditRequest(pod: Pod, namespace: string): JsonObject {
  return celRequest(offlineAttributes({ object: pod, operation: 'CREATE', namespace }), 'Pod');
}

/**
 * A mirror pod, as far as a stored pod shows it: the annotation and the kubelet's controller
 * ownerReference to its own Node (see the file comment).
 */
export function isStoredMirrorPod(pod: Pod, node: Node | undefined): boolean {
  const annotations = pod.metadata?.annotations;
  if (annotations === undefined || !Object.hasOwn(annotations, MirrorPodAnnotation)) return false;
  const nodeName = pod.spec?.nodeName ?? '';
  if (nodeName === '') return false;
  const nodeUid = node?.metadata.uid;
  return (pod.metadata?.ownerReferences ?? []).some(
    (owner) =>
      owner.apiVersion === 'v1' &&
      owner.kind === 'Node' &&
      owner.controller === true &&
      owner.name === nodeName &&
      (nodeUid === undefined || owner.uid === nodeUid),
  );
}

/** Whether the webhooks' namespaceSelector leaves this namespace out. */
export function isExcludedNamespace(name: string, namespace: Namespace | undefined, exclusion: NamespaceExclusion): boolean {
  if (exclusion.names.has(name)) return true;
  const label = exclusion.label;
  return label !== undefined && namespace?.metadata.labels?.[label.key] === label.value;
}

/**
 * Audits one stored pod. Throws PolicyEvaluationError when a policy cannot be evaluated for it
 * (the caller counts the pod as undecided, as the webhook answers 500).
 */
export function auditPod(pod: Pod, surroundings: PodSurroundings, settings: AuditSettings): PodAudit {
  const phase = (pod.status as { phase?: unknown } | undefined)?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return { skipped: 'terminated' };
  const namespace = pod.metadata?.namespace ?? '';
  const name = pod.metadata?.name ?? '';
  if (!settings.all) {
    if (isStoredMirrorPod(pod, surroundings.node)) return { skipped: 'mirror' };
    if (isExcludedNamespace(namespace, surroundings.namespace, settings.exclusion)) return { skipped: 'excluded-namespace' };
  }
  const nodeName = pod.spec?.nodeName ?? '';
  let tenancy: TenancyFacts | undefined;
  const subject: Subject = {
    pod,
    namespace,
    name,
    nodeName,
    tolerations: pod.spec?.tolerations ?? [],
    surroundings,
    settings,
    tenancy: () => (tenancy ??= tenancyFacts(pod, namespace, surroundings.namespace, settings.policies)),
  };
  const violations: AuditViolation[] = [];
  const tenancyOn = settings.policies.policies.length > 0;
  for (const rule of rules as readonly AuditRule[]) {
    if (!rule.plugins.some((plugin) => settings.enabled.has(plugin))) continue;
    // The tenancy rules are DedicatedNodes', which does nothing without policies.
    if (rule.plugins.includes('DedicatedNodes') && !tenancyOn) continue;
    for (const finding of rule.check(subject)) {
      violations.push({
        namespace,
        name,
        node: nodeName,
        rule: rule.name as AuditRuleName,
        message: finding.message,
        ...(finding.policy === undefined ? {} : { policy: finding.policy.name }),
      });
    }
  }
  return { violations };
}

function tenancyFacts(pod: Pod, namespace: string, namespaceObject: Namespace | undefined, set: PolicySet): TenancyFacts {
  const evaluator = createPolicyEvaluator(
    { object: pod, oldObject: undefined, namespace: namespaceObject, request: auditRequest(pod, namespace) },
    set.namespaceVerdicts,
  );
  const groups = resolveNamespaceGroups(set, evaluator);
  // As the webhook judges an update in a disputed namespace: as a namespace of no group.
  return { evaluator, memberships: judgedMemberships(set, groups), conflict: groups.conflict !== undefined };
}

/** Report order: namespace, pod name, then the rules' order, then policy and message. */
export function compareViolations(a: AuditViolation, b: AuditViolation): number {
  return (
    compareStrings(a.namespace, b.namespace) ||
    compareStrings(a.kind ?? '', b.kind ?? '') ||
    compareStrings(a.name, b.name) ||
    auditRuleNames.indexOf(a.rule) - auditRuleNames.indexOf(b.rule) ||
    compareStrings(a.policy ?? '', b.policy ?? '') ||
    compareStrings(a.message, b.message)
  );
}

/** By UTF-16 code units, as Go's string comparison orders ASCII names: the same order on every machine, whatever its locale. */
function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
