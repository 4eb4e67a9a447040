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
 * - TenancyPolicy documents are refused: the guarantee's nodeName check reads the named Node, and
 *   an admission policy reads no Node.
 * - PodNodeSelector and PodTolerationRestriction's cluster lists are refused: export does not
 *   translate them (the reasons are in `refusals`).
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
  /** The names of the loaded TenancyPolicy documents. */
  readonly tenancyPolicies: readonly string[];
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
  const ptr = settings.podTolerationRestriction;
  if (enabled.has('PodTolerationRestriction') && ((ptr.default?.length ?? 0) > 0 || (ptr.whitelist?.length ?? 0) > 0)) {
    refusals.push({
      subject: 'PodTolerationRestriction',
      reason:
        'not exported: the cluster default tolerations and whitelist of --admission-config apply only where a namespace has no annotation, and export does not translate them to CEL; keep the webhook, or remove them',
    });
  }
  // As serve: the policies decide only while DedicatedNodes is enabled.
  for (const name of enabled.has('DedicatedNodes') ? settings.tenancyPolicies : []) {
    refusals.push({
      subject: `TenancyPolicy ${name}`,
      reason:
        "not exported: the tenancy guarantee refuses a pod whose spec.nodeName names another group's node, which needs that Node's labels and taints, and an admission policy can read no Node (only the object, its namespace and parameters); without it a tenant could pin a pod past the dedicated taints. Keep the webhook for tenancy",
    });
  }
  if (refusals.length > 0) {
    return { refusals };
  }
  if (enabled.has('TolerationValidation')) {
    notes.push(
      "TolerationValidation: nothing to export; kube-apiserver's own validation of pods and pod templates checks every rule it checks",
    );
  }
  if (enabled.has('SchedulingWarnings')) {
    notes.push(
      'SchedulingWarnings: not exported; an admission policy cannot read Nodes. It only warns: no pod is changed or refused differently',
    );
  }

  const { variables, mutations } = tolerationSteps(settings, enabled);

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
function tolerationSteps(settings: ExportSettings, enabled: ReadonlySet<PluginName>): { variables: Variable[]; mutations: Manifest[] } {
  const variables: Variable[] = [{ name: 'podTolerations', expression: normalizedTolerationsCel('object.spec.?tolerations.orValue([])') }];
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
  if (current === 'variables.podTolerations') return { variables: [], mutations: [] };
  // Written only when the list changed, so a pod that needs nothing gets no patch. `add` on an
  // existing member replaces it (RFC 6902 4.1), and creates it when the pod has no tolerations.
  const mutation = {
    patchType: 'JSONPatch',
    jsonPatch: {
      expression: `${current} == variables.podTolerations ? [] : [JSONPatch{op: 'add', path: '/spec/tolerations', value: ${current}}]`,
    },
  };
  return { variables, mutations: [mutation] };
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
