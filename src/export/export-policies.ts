/**
 * `tolerator export`'s decisions: which of the configured rules a MutatingAdmissionPolicy and a
 * ValidatingAdmissionPolicy reproduce exactly, their manifests for a Kubernetes version, and, for
 * what they cannot reproduce, the refusal and its reason. Pure: the settings in, documents or
 * refusals out (src/cli/export.ts reads the flags and writes the YAML).
 *
 * What each plugin can express was decided by reading Kubernetes' CEL environment and trying it
 * on kube-apiserver v1.35.8 (docs/without-a-webhook.md has the table):
 * - DaemonSetTolerations, DefaultTolerationSeconds and PodTolerationRestriction's memory-pressure
 *   toleration are exported as one MutatingAdmissionPolicy: one variable a step, in the webhook's
 *   plugin order (src/plugins/registry.ts), and one JSONPatch mutation. `spec.tolerations` is an
 *   atomic list, which an ApplyConfiguration can only replace whole with a list it cannot
 *   compute (its expressions build objects, not lists from lists): the mutation writes the whole
 *   new list with one JSONPatch `add` (which replaces).
 * - PodTolerationRestriction's namespace annotations hold JSON, which Kubernetes CEL has no
 *   function to decode: a ValidatingAdmissionPolicy refuses the pods of a namespace that carries
 *   one (with the reason), never admits them without the namespace's rules.
 * - TolerationValidation checks what kube-apiserver's own validation of pods and pod templates
 *   already checks (src/plugins/toleration-validation.ts), so nothing is exported for it.
 * - SchedulingWarnings reads Nodes, which no admission policy can: only warnings are lost (it
 *   never changes or refuses a pod), so it is left out with a note.
 * - DedicatedNodes, for one TenancyPolicy whose group, exempt and infrastructure rules each read
 *   one namespace label (src/export/tenancy-cel.ts; any other shape, or more than one policy, is
 *   refused): the pair joins the MutatingAdmissionPolicy (the group toleration as the last
 *   toleration step, the webhook's plugin order; the group requirement as a second JSONPatch
 *   mutation), and the guarantee is a ValidatingAdmissionPolicy of its own. Its nodeName rule is
 *   stricter than the webhook's, which reads the named Node: no admission policy reads Nodes.
 *   Workload templates are judged as the webhook judges them, and DaemonSet templates get the
 *   pair from a MutatingAdmissionPolicy of their own.
 * - PodNodeSelector, ExtendedResourceToleration and PodTolerationRestriction's cluster lists are
 *   refused: export does not translate them (the reasons are in `refusals`).
 */
import type { FeatureGates } from '../api/feature-gates.js';
import { TaintKey } from '../api/types.js';
import { daemonSetPodTolerations } from '../plugins/daemonset-tolerations.js';
import {
  memoryPressureToleration,
  namespaceDefaultTolerationsAnnotation,
  namespaceTolerationsWhitelistAnnotation,
  type PodTolerationRestrictionConfig,
} from '../plugins/pod-toleration-restriction.js';
import type { PluginName } from '../plugins/plugin.js';
import type { TenancyPolicy } from '../tenancy/policy.js';
import {
  groupRequirementPatchCel,
  groupTolerationPatchCel,
  holdsPodSpecCel,
  podSite,
  recognizeTenancyPolicy,
  templateSites,
  tenancyValidations,
  tenancyVariables,
  withGroupTolerationCel,
  type LabelTenancy,
  type PodSpecSite,
} from './tenancy-cel.js';
import {
  addOrUpdateCel,
  appendMissingCel,
  coversNodeConditionCel,
  isBestEffortCel,
  laterFreeCel,
  mergeKeptCel,
  normalizedTolerationsCel,
  tolerationLiteral,
} from './tolerations-cel.js';

export const exportVersions = ['1.35', '1.36', '1.37'] as const;
export type ExportVersion = (typeof exportVersions)[number];

export interface ExportSettings {
  readonly kubernetesVersion: ExportVersion;
  readonly enabled: readonly PluginName[];
  readonly notReadySeconds: number;
  readonly unreachableSeconds: number;
  readonly podTolerationRestriction: PodTolerationRestrictionConfig;
  /** Whether `--admission-config` configured PodNodeSelector (a cluster default or whitelists). */
  readonly podNodeSelectorConfigured: boolean;
  /** The loaded TenancyPolicy documents. */
  readonly tenancyPolicies: readonly TenancyPolicy[];
  readonly gates: FeatureGates;
}

/** One part of the configuration that export will not write, and why. */
export interface Refusal {
  /** The plugin or `TenancyPolicy <name>`. */
  readonly subject: string;
  readonly reason: string;
}

export type Manifest = Readonly<Record<string, unknown>>;

export type ExportResult =
  | { readonly refusals: readonly Refusal[]; readonly documents?: undefined }
  | {
      readonly refusals?: undefined;
      readonly documents: readonly Manifest[];
      /** What is left out on purpose (not a weaker copy of a rule), for the output's header. */
      readonly notes: readonly string[];
      /** What the target API server needs before it accepts the documents. */
      readonly requirements: readonly string[];
    };

/** The names of the exported objects, each its binding's name too. */
export const exportedNames = {
  mutating: 'tolerator.dev-tolerations',
  validating: 'tolerator.dev-namespace-toleration-annotations',
  /** The tenancy guarantee on pods; on templates `tolerator.dev-tenancy-<site>` (tenancy-cel.ts templateSites). */
  tenancy: 'tolerator.dev-tenancy',
} as const;

/**
 * The namespaces the shipped webhooks review (deploy/base/*-webhook.yaml namespaceSelector):
 * test/export/export-policies.test.ts holds the two equal.
 */
export const reviewedNamespaces = {
  matchExpressions: [
    { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'kube-node-lease', 'tolerator-system'] },
    { key: 'tolerator.dev/ignore', operator: 'NotIn', values: ['true'] },
  ],
} as const;

/** The shipped webhooks' mirror-pod matchCondition, word for word (the same test holds it). */
export const excludeMirrorPods = {
  name: 'exclude-mirror-pods',
  expression:
    "request.resource.resource != 'pods' || !has(object.metadata.annotations) || !('kubernetes.io/config.mirror' in object.metadata.annotations) || !(request.userInfo.username.startsWith('system:node:') && has(request.userInfo.groups) && 'system:nodes' in request.userInfo.groups)",
} as const;

/**
 * v1beta1 in 1.35 (beta, off by default), v1 from 1.36 (GA, on by default): KEP-3962 and the
 * admissionregistration.k8s.io API of each release.
 */
export function mutatingPolicyApiVersion(version: ExportVersion): string {
  return version === '1.35' ? 'admissionregistration.k8s.io/v1beta1' : 'admissionregistration.k8s.io/v1';
}

/**
 * Why the device half of a TenancyPolicy (`spec.deviceTaint`) is refused rather than exported. The
 * claim rule itself is a pure function of the claim and its Namespace, which CEL could state; but
 * a ValidatingAdmissionPolicy would have to walk requests × subrequests × tolerations (three
 * nested comprehensions over lists the API server does not bound: the 16 tolerations a request
 * is documented to hold are not enforced, docs/devices.md), so its estimated cost is unbounded and
 * kube-apiserver refuses the expression or a large claim exceeds the runtime budget; and the
 * DeviceTaintRule half needs the requester's groups against a list that is the policy's, which
 * export has no field for. Nothing short of all of it keeps the guarantee, so nothing is exported.
 */
export const deviceTenancyNotExported =
  "not exported: spec.deviceTaint (tenancy for DRA devices) is not reproduced by an admission policy. A claim's device tolerations sit in requests × firstAvailable subrequests × tolerations, three nested lists whose length the API server does not bound (the documented 16 tolerations per request are not enforced), so a ValidatingAdmissionPolicy's CEL cost cannot be bounded; and the DeviceTaintRule rule needs the policy's platformGroups. Keep the webhook, or remove spec.deviceTaint";

/** What export says about the DRA plugins of main: none changes a pod, and none is written as an admission policy. */
const deviceNotes: readonly (readonly [PluginName, string])[] = [
  [
    'DeviceTolerationValidation',
    "DeviceTolerationValidation: nothing to export; kube-apiserver's own validation of ResourceClaims and ResourceClaimTemplates checks every rule it checks (the empty-effect warning is the webhook's only)",
  ],
  [
    'DeviceTolerationRestriction',
    'DeviceTolerationRestriction: not exported; its namespace annotations hold JSON that Kubernetes CEL cannot decode, and a default is a mutation of claims. Keep the webhook for device defaults and allow-lists',
  ],
  [
    'DeviceTaintRuleSafety',
    'DeviceTaintRuleSafety: not exported; keep the webhook (devicetaintrules.validate.tolerator.dev) for the checks of DeviceTaintRules',
  ],
];

export function exportPolicies(settings: ExportSettings): ExportResult {
  const enabled = new Set(settings.enabled);
  const refusals: Refusal[] = [];
  const notes: string[] = [];
  if (enabled.has('PodNodeSelector')) {
    refusals.push({
      subject: 'PodNodeSelector',
      reason:
        'not exported: the namespace annotation scheduler.alpha.kubernetes.io/node-selector is a label selector text (labels.ConvertSelectorToLabelsMap) that export does not translate to CEL; keep the webhook, or disable the plugin',
    });
  } else if (settings.podNodeSelectorConfigured) {
    notes.push(
      'PodNodeSelector is configured in --admission-config but not enabled: nothing exported for it, as the webhook does nothing with it',
    );
  }
  if (enabled.has('ExtendedResourceToleration')) {
    refusals.push({
      subject: 'ExtendedResourceToleration',
      reason:
        "not exported: its rule (which resource names are extended: a qualified name outside kubernetes.io, not 'requests.'-prefixed; the tolerations added in the names' byte order; an equal one replaced in place) has not been written in CEL and proven against the in-tree plugin; keep the webhook, enable the in-tree plugin (--enable-admission-plugins ExtendedResourceToleration) where the API server's flags can be set, or disable the plugin",
    });
  }
  const ptr = settings.podTolerationRestriction;
  if (enabled.has('PodTolerationRestriction') && ((ptr.default?.length ?? 0) > 0 || (ptr.whitelist?.length ?? 0) > 0)) {
    refusals.push({
      subject: 'PodTolerationRestriction',
      reason:
        'not exported: the cluster default tolerations and whitelist of --admission-config apply only where a namespace has no annotation, and export does not translate them to CEL; keep the webhook, or remove them',
    });
  }
  // As serve: the policies decide only while DedicatedNodes is enabled.
  const policies = enabled.has('DedicatedNodes') ? settings.tenancyPolicies : [];
  let tenancy: LabelTenancy | undefined;
  if (policies.length > 1) {
    refusals.push({
      subject: 'DedicatedNodes',
      reason: `not exported: ${policies.length} TenancyPolicies (${policies.map((policy) => policy.name).join(', ')}); export translates one, as the webhook's resolution of a namespace that two policies put in different groups (a conflict, refused or warned) is not written in CEL. Keep the webhook, or keep one policy`,
    });
  } else if (policies[0]?.deviceTaint !== undefined) {
    refusals.push({ subject: `TenancyPolicy ${policies[0].name}`, reason: deviceTenancyNotExported });
  } else if (policies[0] !== undefined) {
    const recognized = recognizeTenancyPolicy(policies[0]);
    if ('reason' in recognized) refusals.push({ subject: `TenancyPolicy ${policies[0].name}`, reason: recognized.reason });
    else tenancy = recognized;
  }
  if (refusals.length > 0) {
    return { refusals };
  }
  if (enabled.has('TolerationValidation')) {
    notes.push(
      "TolerationValidation: nothing to export; kube-apiserver's own validation of pods and pod templates checks every rule it checks",
    );
  }
  for (const [plugin, note] of deviceNotes) {
    if (enabled.has(plugin)) notes.push(note);
  }
  if (enabled.has('SchedulingWarnings')) {
    notes.push(
      'SchedulingWarnings: not exported; an admission policy cannot read Nodes. It only warns: no pod is changed or refused differently',
    );
  }

  if (tenancy !== undefined) {
    notes.push(
      `TenancyPolicy ${tenancy.name}: spec.nodeName is judged more strictly than by the webhook (which reads the named Node): a pod that names a node at create is refused unless its namespace is infrastructure and the pod no tenant`,
    );
    notes.push(
      `TenancyPolicy ${tenancy.name}: the node half is not exported: Karpenter NodePools (karpenter.sh/v1) that label nodes for a group without its taint, and spec.nodePools, are checked by the webhook's validate-nodepools.tolerator.dev and reported by tolerator audit (nodepool-pattern, node-pattern), not by these policies`,
    );
  }

  const { variables, mutations } = tolerationSteps(settings, enabled, tenancy);

  const documents: Manifest[] = [];
  const mutatingApi = mutatingPolicyApiVersion(settings.kubernetesVersion);
  if (mutations.length > 0) {
    documents.push(
      {
        apiVersion: mutatingApi,
        kind: 'MutatingAdmissionPolicy',
        metadata: { name: exportedNames.mutating, labels: exportLabels },
        spec: {
          // Fail: a policy that cannot be evaluated (its CEL cost budget exceeded by a huge pod)
          // refuses the pod rather than admitting it without its tolerations.
          failurePolicy: 'Fail',
          // As the mutating webhook: run again when a later mutation changed the pod. Every
          // mutation here is idempotent (a second run finds its tolerations covered).
          reinvocationPolicy: 'IfNeeded',
          matchConstraints: podRules,
          matchConditions: [excludeMirrorPods],
          variables,
          mutations,
        },
      },
      {
        apiVersion: mutatingApi,
        kind: 'MutatingAdmissionPolicyBinding',
        metadata: { name: exportedNames.mutating, labels: exportLabels },
        spec: { policyName: exportedNames.mutating, matchResources: { namespaceSelector: reviewedNamespaces } },
      },
    );
  }
  if (enabled.has('PodTolerationRestriction')) documents.push(...namespaceAnnotationPolicy());
  if (tenancy !== undefined) documents.push(...tenancyGuaranteePolicy(tenancy, mutatingApi));

  const requirements =
    settings.kubernetesVersion === '1.35' && mutations.length > 0
      ? [
          'MutatingAdmissionPolicy is beta and off in Kubernetes 1.35: kube-apiserver needs --feature-gates=MutatingAdmissionPolicy=true and --runtime-config=admissionregistration.k8s.io/v1beta1=true',
        ]
      : [];
  return { documents, notes, requirements };
}

const exportLabels = { 'app.kubernetes.io/name': 'tolerator', 'app.kubernetes.io/component': 'exported-policy' };

/** The mutating webhook's pod rule: pods themselves (no subresource), CREATE and UPDATE. */
const podRules = {
  resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['pods'], scope: 'Namespaced' }],
};

interface Variable {
  readonly name: string;
  readonly expression: string;
}

/**
 * The tolerations each enabled plugin leaves, as the policy's variables, each computed from the
 * previous one in the webhook's plugin order, and the one mutation that writes the last one. One
 * mutation, not one a plugin: every step reads its predecessor's list by name, so none depends on
 * how the API server feeds one mutation's output to the next.
 */
function tolerationSteps(
  settings: ExportSettings,
  enabled: ReadonlySet<PluginName>,
  tenancy: LabelTenancy | undefined,
): { variables: Variable[]; mutations: Manifest[] } {
  const variables: Variable[] = [
    ...(tenancy === undefined ? [] : tenancyVariables(tenancy)),
    { name: 'podTolerations', expression: normalizedTolerationsCel('object.spec.?tolerations.orValue([])') },
  ];
  let current = 'variables.podTolerations';
  const step = (name: string, expression: string): void => {
    variables.push({ name, expression });
    current = `variables.${name}`;
  };
  if (enabled.has('DaemonSetTolerations')) {
    variables.push({
      name: 'daemonPod',
      expression:
        "object.metadata.?ownerReferences.orValue([]).exists(o, o.apiVersion == 'apps/v1' && o.kind == 'DaemonSet' && o.?controller.orValue(false))",
    });
    // On CREATE the controller's AddOrUpdate; on UPDATE only what is missing is appended
    // (src/plugins/daemonset-tolerations.ts). The host-network toleration comes last, and only
    // for a host-network pod.
    const withNetwork = daemonSetPodTolerations(true);
    withNetwork.forEach((daemon, index) => {
      const hostNetworkOnly = index >= daemonSetPodTolerations(false).length;
      const applies = hostNetworkOnly ? 'variables.daemonPod && object.spec.?hostNetwork.orValue(false)' : 'variables.daemonPod';
      step(
        `daemonSet${index + 1}`,
        `!(${applies}) ? ${current} : request.operation == 'CREATE' ? ${addOrUpdateCel(current, daemon)} : ${appendMissingCel(current, daemon)}`,
      );
    });
  }
  if (enabled.has('DefaultTolerationSeconds')) {
    const notReady = tolerationLiteral({
      key: TaintKey.NodeNotReady,
      operator: 'Exists',
      effect: 'NoExecute',
      tolerationSeconds: settings.notReadySeconds,
    });
    const unreachable = tolerationLiteral({
      key: TaintKey.NodeUnreachable,
      operator: 'Exists',
      effect: 'NoExecute',
      tolerationSeconds: settings.unreachableSeconds,
    });
    step(
      'defaultTolerationSeconds',
      `${current} + (${coversNodeConditionCel(current, TaintKey.NodeNotReady)} ? [] : [${notReady}]) + (${coversNodeConditionCel(current, TaintKey.NodeUnreachable)} ? [] : [${unreachable}])`,
    );
  }
  if (enabled.has('PodTolerationRestriction')) {
    // Not BestEffort: on CREATE the tolerations MergeTolerations'd with memory-pressure (which
    // also drops those of the pod's own that another covers, as upstream); on UPDATE only
    // memory-pressure appended, when the merge keeps it (src/plugins/pod-toleration-restriction.ts).
    const before = current;
    variables.push({ name: 'bestEffort', expression: isBestEffortCel(settings.gates) });
    variables.push({ name: 'withMemoryPressure', expression: `${before} + [${tolerationLiteral(memoryPressureToleration())}]` });
    variables.push({ name: 'laterFree', expression: laterFreeCel('variables.withMemoryPressure') });
    variables.push({ name: 'kept', expression: mergeKeptCel('variables.withMemoryPressure', 'variables.laterFree') });
    step(
      'podTolerationRestriction',
      `variables.bestEffort ? ${before} : request.operation == 'CREATE' ? variables.withMemoryPressure.transformList(x, y, variables.kept[x], y) : variables.kept[size(variables.withMemoryPressure) - 1] ? variables.withMemoryPressure : ${before}`,
    );
  }
  // DedicatedNodes runs after PodTolerationRestriction: its toleration is the last one added.
  if (tenancy !== undefined) step('dedicatedNodes', withGroupTolerationCel(tenancy, current));
  if (current === 'variables.podTolerations') return { variables: [], mutations: [] };
  // Written only when the list changed, so a pod that needs nothing gets no patch. `add` on an
  // existing member replaces it (RFC 6902 4.1), and creates it when the pod has no tolerations.
  const mutations: Manifest[] = [
    {
      patchType: 'JSONPatch',
      jsonPatch: {
        expression: `${current} == variables.podTolerations ? [] : [JSONPatch{op: 'add', path: '/spec/tolerations', value: ${current}}]`,
      },
    },
  ];
  // The affinity, apart: it reads only the pod's affinity, which the first mutation leaves alone.
  if (tenancy !== undefined)
    mutations.push({ patchType: 'JSONPatch', jsonPatch: { expression: groupRequirementPatchCel(tenancy, podSite) } });
  return { variables, mutations };
}

/**
 * The tenancy policies beside the toleration one: the guarantee (DedicatedNodes' validating side)
 * on pods and on every kind of workload template, and the pair for DaemonSet templates (a
 * mutating policy of their own: it matches other objects than the pods' one). See tenancy-cel.ts.
 */
function tenancyGuaranteePolicy(tenancy: LabelTenancy, mutatingApi: string): Manifest[] {
  const documents: Manifest[] = [];
  const binding = (apiVersion: string, kind: string, name: string, extra: Record<string, unknown>): Manifest => ({
    apiVersion,
    kind,
    metadata: { name, labels: exportLabels },
    spec: { policyName: name, ...extra, matchResources: { namespaceSelector: reviewedNamespaces } },
  });
  const holdsSpec = (site: PodSpecSite): Manifest[] =>
    site === podSite ? [] : [{ name: 'holds-pod-template', expression: holdsPodSpecCel(site) }];
  const daemonSets = templateSites.find((site) => site.name === 'daemonsets');
  if (daemonSets !== undefined) {
    const name = `${exportedNames.tenancy}-${daemonSets.name}`;
    documents.push(
      {
        apiVersion: mutatingApi,
        kind: 'MutatingAdmissionPolicy',
        metadata: { name, labels: exportLabels },
        spec: {
          failurePolicy: 'Fail',
          reinvocationPolicy: 'IfNeeded',
          matchConstraints: rulesFor(daemonSets),
          matchConditions: [excludeMirrorPods, ...holdsSpec(daemonSets)],
          variables: tenancyVariables(tenancy),
          mutations: [
            { patchType: 'JSONPatch', jsonPatch: { expression: groupTolerationPatchCel(tenancy, daemonSets) } },
            { patchType: 'JSONPatch', jsonPatch: { expression: groupRequirementPatchCel(tenancy, daemonSets) } },
          ],
        },
      },
      binding(mutatingApi, 'MutatingAdmissionPolicyBinding', name, {}),
    );
  }
  for (const site of [podSite, ...templateSites]) {
    const name = site === podSite ? exportedNames.tenancy : `${exportedNames.tenancy}-${site.name}`;
    documents.push(
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicy',
        metadata: { name, labels: exportLabels },
        spec: {
          // Fail: a pod too large for the CEL cost budget is refused, never admitted unjudged.
          failurePolicy: 'Fail',
          matchConstraints: rulesFor(site),
          matchConditions: [excludeMirrorPods, ...holdsSpec(site)],
          variables: tenancyVariables(tenancy),
          validations: tenancyValidations(tenancy, site),
        },
      },
      binding('admissionregistration.k8s.io/v1', 'ValidatingAdmissionPolicyBinding', name, { validationActions: ['Deny'] }),
    );
  }
  return documents;
}

/** A site's objects, CREATE and UPDATE, no subresource (as the shipped webhooks' rules). */
function rulesFor(site: PodSpecSite): Manifest {
  return {
    resourceRules: [
      {
        apiGroups: [site.apiGroup],
        apiVersions: ['v1'],
        operations: ['CREATE', 'UPDATE'],
        resources: [...site.resources],
        scope: 'Namespaced',
      },
    ],
  };
}

/**
 * The namespace annotations of PodTolerationRestriction hold JSON that Kubernetes CEL cannot
 * decode, so their pods are refused rather than admitted without their namespace's rules: the
 * defaults annotation on CREATE (the only time it is read), the whitelist on CREATE and UPDATE of
 * a pod with tolerations (the only time it is checked). The values that decode to no tolerations
 * at all ("", "[]", "null": no defaults, no whitelist) change nothing and are let through.
 */
function namespaceAnnotationPolicy(): Manifest[] {
  const annotation = (name: string): string => `namespaceObject.metadata.?annotations[?'${name}']`;
  const holdsTolerations = (name: string): string =>
    `${annotation(name)}.hasValue() && !(${annotation(name)}.value() in ['', '[]', 'null'])`;
  const refused = (name: string): string =>
    `'namespace ' + namespaceObject.metadata.name + ' has the annotation ${name}, whose JSON Kubernetes CEL cannot decode: tolerator export cannot apply it, so its pods are refused (run tolerator\\'s webhook, or remove the annotation)'`;
  return [
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: exportedNames.validating, labels: exportLabels },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: podRules,
        matchConditions: [excludeMirrorPods],
        validations: [
          {
            expression: `request.operation != 'CREATE' || !(${holdsTolerations(namespaceDefaultTolerationsAnnotation)})`,
            messageExpression: refused(namespaceDefaultTolerationsAnnotation),
            reason: 'Forbidden',
          },
          {
            expression: `size(object.spec.?tolerations.orValue([])) == 0 || !(${holdsTolerations(namespaceTolerationsWhitelistAnnotation)})`,
            messageExpression: refused(namespaceTolerationsWhitelistAnnotation),
            reason: 'Forbidden',
          },
        ],
      },
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: exportedNames.validating, labels: exportLabels },
      spec: {
        policyName: exportedNames.validating,
        validationActions: ['Deny'],
        matchResources: { namespaceSelector: reviewedNamespaces },
      },
    },
  ];
}
