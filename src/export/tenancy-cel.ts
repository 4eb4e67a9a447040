/**
 * DedicatedNodes (src/plugins/dedicated-nodes.ts) for one TenancyPolicy, written as Kubernetes CEL
 * for `tolerator export`: the pair on the mutating side (the group's toleration, and the group
 * requirement ANDed into every required node-affinity term), the guarantee on the validating side.
 * Pure text generation, like tolerations-cel.ts, and held against the webhook on a real API server
 * by test/differential/export.differential.ts.
 *
 * Only one shape of policy is translated: its group, exempt and infrastructure rules each read one
 * namespace label (policies/dedicated-by-namespace-label.yaml). Those read nothing a tenant
 * writes, cannot fail, and mean the same in Kubernetes' CEL as in tolerator's, so the translation
 * is exact. Any other rule is refused by recognizeTenancyPolicy with its reason: tolerator's CEL is
 * not Kubernetes' (another library, other extension functions, the webhook presenting templates as
 * pods and a template's requester as nobody), and a rule that means something slightly different
 * would export a weaker guarantee without saying so.
 */
import { daemonSetKind, resourceKinds, type ResourceKind } from '../api/resource-kinds.js';
import { isQualifiedName } from '../validation/name-validation.js';
import type { TenancyPolicy } from '../tenancy/policy.js';

/** A namespace label rule, as recognized in a policy. */
interface LabelRead {
  readonly label: string;
}

/** The one policy shape export translates. */
export interface LabelTenancy {
  readonly name: string;
  readonly groupLabel: string;
  readonly taintKey: string;
  readonly taintEffect: string;
  readonly nodeLabel: string;
  /** `namespace label == value`, or undefined for no rule. */
  readonly exempt: (LabelRead & { readonly value: string }) | undefined;
  readonly infrastructure: (LabelRead & { readonly value: string }) | undefined;
}

/** A CEL string literal, single-quoted; a label key or value needs no escape, anything else gets one. */
const stringLiteral = String.raw`'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"`;
/** `namespaceObject.metadata.?labels['K'].orValue('')`, optionally `[?'K']`, spaces allowed between tokens. */
const labelRead = String.raw`namespaceObject\s*\.\s*metadata\s*\.\s*\?\s*labels\s*\[\s*\??\s*(?:${stringLiteral})\s*\]\s*\.\s*orValue\s*\(\s*(?:''|"")\s*\)`;
const groupShape = new RegExp(String.raw`^\s*${labelRead}\s*$`);
const equalityShape = new RegExp(String.raw`^\s*${labelRead}\s*==\s*(?:${stringLiteral})\s*$`);

/** The literal's text when it holds no escape (a label key or value never needs one). */
function plainLiteral(single: string | undefined, double: string | undefined): string | undefined {
  const text = single ?? double;
  return text === undefined || text.includes('\\') ? undefined : text;
}

/** The policy as a LabelTenancy, or the reason it cannot be translated exactly. */
export function recognizeTenancyPolicy(policy: TenancyPolicy): LabelTenancy | { readonly reason: string } {
  const group = groupShape.exec(policy.group.source);
  const groupLabel = group === null ? undefined : plainLiteral(group[1], group[2]);
  if (groupLabel === undefined || isQualifiedName(groupLabel).length > 0) {
    return {
      reason: `not exported: spec.group is not of the one shape export translates exactly, namespaceObject.metadata.?labels['<label>'].orValue('') (a group from one namespace label); got ${JSON.stringify(policy.group.source)}. Keep the webhook for this policy`,
    };
  }
  const rule = (field: 'exempt' | 'infrastructure'): (LabelRead & { value: string }) | undefined | { reason: string } => {
    const expression = policy[field];
    if (expression === undefined) return undefined;
    const match = equalityShape.exec(expression.source);
    const label = match === null ? undefined : plainLiteral(match[1], match[2]);
    const value = match === null ? undefined : plainLiteral(match[3], match[4]);
    if (label === undefined || value === undefined || isQualifiedName(label).length > 0) {
      return {
        reason: `not exported: spec.${field} is not of the one shape export translates exactly, namespaceObject.metadata.?labels['<label>'].orValue('') == '<value>' (one namespace label); got ${JSON.stringify(expression.source)}. Keep the webhook for this policy`,
      };
    }
    return { label, value };
  };
  const exempt = rule('exempt');
  if (exempt !== undefined && 'reason' in exempt) return exempt;
  const infrastructure = rule('infrastructure');
  if (infrastructure !== undefined && 'reason' in infrastructure) return infrastructure;
  if (policy.enforcement !== 'Deny') {
    return {
      reason:
        'not exported: enforcement Warn; export writes the guarantee only as a denial (its agreement with the webhook is measured for Deny). Keep the webhook for this policy, or set enforcement: Deny',
    };
  }
  if (policy.nodeLabelValues.valuesByGroup.size > 0) {
    return {
      reason:
        "not exported: spec.nodeLabelValues; the admission policies written here require <nodeLabel> In [<group>], not a group's several pools. Keep the webhook for this policy",
    };
  }
  if (policy.runtimeClasses.groupsByName.size > 0) {
    return {
      reason:
        "not exported: spec.runtimeClasses; the admission policies written here do not check a pod's runtimeClassName against the groups' RuntimeClasses. Keep the webhook for this policy",
    };
  }
  return {
    name: policy.name,
    groupLabel,
    taintKey: policy.taint.key,
    taintEffect: policy.taint.effect,
    nodeLabel: policy.nodeLabel,
    exempt,
    infrastructure,
  };
}

export function quote(text: string): string {
  return `'${text.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
}

function namespaceLabel(label: string): string {
  return `namespaceObject.metadata.?labels[?${quote(label)}].orValue('')`;
}

/**
 * The variables both policies start from, in order: the namespace's group ('' for none), whether
 * the pod is exempt, whether the namespace is infrastructure, and whether the pod is a tenant
 * (a group, not exempt). The webhook evaluates exempt only for a namespace with a group, and
 * infrastructure only for a foreign reach; label reads cannot fail, so evaluating them always
 * decides the same.
 */
export function tenancyVariables(tenancy: LabelTenancy): { name: string; expression: string }[] {
  const equality = (rule: { label: string; value: string } | undefined): string =>
    rule === undefined ? 'false' : `${namespaceLabel(rule.label)} == ${quote(rule.value)}`;
  return [
    { name: 'group', expression: namespaceLabel(tenancy.groupLabel) },
    { name: 'exempt', expression: equality(tenancy.exempt) },
    { name: 'infrastructure', expression: equality(tenancy.infrastructure) },
    { name: 'tenant', expression: "variables.group != '' && !variables.exempt" },
  ];
}

/**
 * Where the pod spec under decision is, and when each rule applies there (src/plugins/dedicated-nodes.ts):
 * a pod's own spec, or a workload's template.
 */
export interface PodSpecSite {
  /** The exported objects' name suffix: `tolerator.dev-tenancy-<name>`. */
  readonly name: string;
  /** The resources (of one API group) whose objects hold the spec at `segments`. */
  readonly apiGroup: string;
  readonly resources: readonly string[];
  /** The path of the pod spec in the object: `['spec']`, `['spec', 'template', 'spec']`, … */
  readonly segments: readonly string[];
  /** What the messages call these objects. */
  readonly what: string;
  /** CEL: when the mutating side gives the pair. */
  readonly mutate: string;
  /** CEL: when the whole pair (toleration, requirement in every term) is required. */
  readonly judgePair: string;
  /** CEL: when a node choice that excludes the group is refused. */
  readonly judgeContradictions: string;
}

/** The spec's CEL in `root` (`object` or `oldObject`). */
function specCel(site: PodSpecSite, root: 'object' | 'oldObject'): string {
  return [root, ...site.segments].join('.');
}

/** The template changed (or is new): the webhook judges a template in full only then. */
function templateChanged(segments: readonly string[]): string {
  return `request.operation == 'CREATE' || ${['object', ...segments].join('.')} != ${['oldObject', ...segments].join('.')}`;
}

/** A pod's own spec: the pair and its node choice are judged on CREATE, the only time they can be set. */
export const podSite: PodSpecSite = {
  name: 'pods',
  apiGroup: '',
  resources: ['pods'],
  segments: ['spec'],
  what: 'pods',
  mutate: "request.operation == 'CREATE'",
  judgePair: "request.operation == 'CREATE'",
  judgeContradictions: "request.operation == 'CREATE'",
};

/**
 * The workload templates, one site for each API group and template path among the kinds of
 * src/api/resource-kinds.ts (the one list: a kind added there is exported too), since one policy
 * matches the resources of one group. A DaemonSet's template is given the pair on every CREATE and
 * UPDATE (its controller places a pod on every node the template selects), and a contradicting node
 * choice is refused then by the mutating side; the whole pair is required when the template
 * changed. Every other template's pods get the pair when they are created: only a contradicting
 * node choice in a changed template is refused. Tolerations and nodeName are judged as for pods,
 * in every template.
 */
export const templateSites: readonly PodSpecSite[] = [
  {
    name: daemonSetKind.resource,
    apiGroup: daemonSetKind.group,
    resources: [daemonSetKind.resource],
    segments: daemonSetKind.podSpecPath,
    what: 'DaemonSet pod templates',
    mutate: 'true',
    judgePair: templateChanged(daemonSetKind.podSpecPath),
    judgeContradictions: 'true',
  },
  ...sitesByGroupAndPath(resourceKinds.filter((kind) => kind !== daemonSetKind && kind.podSpecPath.length > 1)).map(
    ({ name, apiGroup, resources, segments }): PodSpecSite => ({
      name,
      apiGroup,
      resources,
      segments,
      what: 'pod templates',
      mutate: 'false',
      judgePair: 'false',
      judgeContradictions: templateChanged(segments),
    }),
  ),
];

interface KindGroup {
  name: string;
  readonly apiGroup: string;
  readonly resources: string[];
  readonly segments: readonly string[];
}

/**
 * The kinds grouped by API group and pod spec path, in the order of their first kind. A group of
 * one resource is named after it; apps' Deployments, ReplicaSets and StatefulSets share one, named
 * `workloads` as the exported policies always were (test/export/export.test.ts holds the names
 * unique).
 */
function sitesByGroupAndPath(kinds: readonly ResourceKind[]): KindGroup[] {
  const groups: KindGroup[] = [];
  for (const kind of kinds) {
    const path = kind.podSpecPath.join('/');
    const group = groups.find((candidate) => candidate.apiGroup === kind.group && candidate.segments.join('/') === path);
    if (group === undefined) {
      groups.push({ name: kind.resource, apiGroup: kind.group, resources: [kind.resource], segments: kind.podSpecPath });
    } else {
      group.resources.push(kind.resource);
      group.name = 'workloads';
    }
  }
  return groups;
}

/**
 * A matchCondition: the object holds a pod spec at the site (a ReplicationController's template is
 * optional; the webhook leaves an object without one alone).
 */
export function holdsPodSpecCel(site: PodSpecSite): string {
  const steps = site.segments.map((_, index) => `has(${['object', ...site.segments.slice(0, index + 1)].join('.')})`);
  return steps.join(' && ');
}

function termsCelAt(site: PodSpecSite): string {
  return `${specCel(site, 'object')}.?affinity.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution.?nodeSelectorTerms.orValue([])`;
}

/** The preferred node affinity terms of the spec at `site` (groupContradictions reads them too). */
function preferredCelAt(site: PodSpecSite): string {
  return `${specCel(site, 'object')}.?affinity.?nodeAffinity.?preferredDuringSchedulingIgnoredDuringExecution.orValue([])`;
}

function pathOf(site: PodSpecSite, rest: string): string {
  return `/${site.segments.join('/')}${rest}`;
}

/**
 * termHoldsGroup (src/tenancy/node-affinity.ts): a term that matches nothing (no expressions, no
 * fields), or one with `<nodeLabel> In [G]` (values non-empty, every one G).
 */
function termHoldsGroupCel(tenancy: LabelTenancy, term: string): string {
  const expressions = `${term}.?matchExpressions.orValue([])`;
  return `((size(${expressions}) == 0 && size(${term}.?matchFields.orValue([])) == 0) || ${expressions}.exists(r, r.key == ${quote(tenancy.nodeLabel)} && r.operator == 'In' && size(r.?values.orValue([])) > 0 && r.values.all(v, v == variables.group)))`;
}

/** The requirement `<nodeLabel> In [G]`, as a value for a JSON Patch. */
function requirementCel(tenancy: LabelTenancy): string {
  return `{'key': dyn(${quote(tenancy.nodeLabel)}), 'operator': dyn('In'), 'values': dyn([variables.group])}`;
}

/** The group toleration `{key, Equal, G, effect}`, in tolerations-cel.ts's normalized form. */
export function groupTolerationCel(tenancy: LabelTenancy): string {
  return `{'key': dyn(${quote(tenancy.taintKey)}), 'operator': dyn('Equal'), 'value': dyn(variables.group), 'effect': dyn(${quote(tenancy.taintEffect)})}`;
}

/**
 * withGroupToleration on a normalized list: appended unless the very same one (key, operator,
 * value, effect) is there. For a tenant's CREATE only, as the webhook mutates pods only then.
 */
export function withGroupTolerationCel(tenancy: LabelTenancy, list: string): string {
  const present = `${list}.exists(g, g.key == ${quote(tenancy.taintKey)} && g.operator == 'Equal' && g.value == variables.group && g.effect == ${quote(tenancy.taintEffect)})`;
  return `!(request.operation == 'CREATE' && variables.tenant) || ${present} ? ${list} : ${list} + [${groupTolerationCel(tenancy)}]`;
}

/** The same on a template's own tolerations, as a JSON Patch: appended, or the list created. */
export function groupTolerationPatchCel(tenancy: LabelTenancy, site: PodSpecSite): string {
  const spec = specCel(site, 'object');
  const present = `${spec}.?tolerations.orValue([]).exists(g, g.?key.orValue('') == ${quote(tenancy.taintKey)} && g.?operator.orValue('') == 'Equal' && g.?value.orValue('') == variables.group && g.?effect.orValue('') == ${quote(tenancy.taintEffect)})`;
  const toleration = groupTolerationCel(tenancy);
  return `!(${site.mutate} && variables.tenant) || ${present} ? [] : has(${spec}.tolerations) ? [JSONPatch{op: 'add', path: '${pathOf(site, '/tolerations/-')}', value: ${toleration}}] : [JSONPatch{op: 'add', path: '${pathOf(site, '/tolerations')}', value: [${toleration}]}]`;
}

/**
 * requireGroupInEveryTerm as JSON Patch operations: the requirement appended to every required
 * term that lacks it; with no term at all, one term holding just the requirement, added at the
 * deepest part of the path that exists (the webhook keeps every other field of those objects).
 * Nothing when the site's mutating rule does not apply or the spec already has it (so
 * reinvocation adds nothing).
 */
export function groupRequirementPatchCel(tenancy: LabelTenancy, site: PodSpecSite = podSite): string {
  const requirement = requirementCel(tenancy);
  const term = `{'matchExpressions': [${requirement}]}`;
  const required = `{'nodeSelectorTerms': [${term}]}`;
  const nodeAffinity = `{'requiredDuringSchedulingIgnoredDuringExecution': ${required}}`;
  const spec = specCel(site, 'object');
  const terms = termsCelAt(site);
  const termsPath = pathOf(site, '/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms');
  const patch = (path: string, value: string): string => `JSONPatch{op: 'add', path: ${path}, value: ${value}}`;
  const whole = `!has(${spec}.affinity) ? [${patch(`'${pathOf(site, '/affinity')}'`, `{'nodeAffinity': ${nodeAffinity}}`)}] : !has(${spec}.affinity.nodeAffinity) ? [${patch(`'${pathOf(site, '/affinity/nodeAffinity')}'`, nodeAffinity)}] : !has(${spec}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution) ? [${patch(`'${pathOf(site, '/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution')}'`, required)}] : [${patch(`'${termsPath}'`, `[${term}]`)}]`;
  const each = `${terms}.transformList(i, t, !${termHoldsGroupCel(tenancy, 't')}, has(t.matchExpressions) ? ${patch(`'${termsPath}/' + string(i) + '/matchExpressions/-'`, requirement)} : ${patch(`'${termsPath}/' + string(i) + '/matchExpressions'`, `[${requirement}]`)})`;
  return `!(${site.mutate} && variables.tenant) ? [] : size(${terms}) == 0 ? (${whole}) : ${each}`;
}

/**
 * A decimal integer that strconv.ParseInt(s, 10, 64) takes and that CEL's int() converts without
 * overflow: a sign, then at most 18 digits after leading zeros (below 2^63 whatever they are).
 * Integers of 19 digits are not recognized, so a `Gt`/`Lt` on them counts as excluding the group:
 * stricter than the webhook, never weaker (docs/without-a-webhook.md).
 */
function safeIntegerCel(text: string): string {
  return `${text}.matches('^[+-]?0*[0-9]{1,18}$')`;
}

/**
 * admitsValue (src/tenancy/node-affinity.ts) of a requirement on the group label for G:
 * labels.Requirement.Matches for one node labelled G; operators the API server refuses anyway
 * pass.
 */
function admitsGroupCel(r: string): string {
  const values = `${r}.?values.orValue([])`;
  const bound = `(size(${values}) > 0 ? ${r}.values[0] : '')`;
  const integers = `${safeIntegerCel('variables.group')} && ${safeIntegerCel(bound)}`;
  return `(${r}.operator == 'In' ? variables.group in ${values} : ${r}.operator == 'NotIn' ? !(variables.group in ${values}) : ${r}.operator == 'DoesNotExist' ? false : ${r}.operator == 'Gt' ? ${integers} && int(variables.group) > int(${bound}) : ${r}.operator == 'Lt' ? ${integers} && int(variables.group) < int(${bound}) : true)`;
}

/**
 * toleratesOwnGroup: ToleratesTaint for `<key>=G:<effect>` with the comparison operators held off
 * (a Gt/Lt toleration never counts as the group's own).
 */
function toleratesOwnGroupCel(tenancy: LabelTenancy, t: string): string {
  const operator = `${t}.?operator.orValue('')`;
  return `((${t}.?effect.orValue('') == '' || ${t}.effect == ${quote(tenancy.taintEffect)}) && (${t}.?key.orValue('') == '' || ${t}.key == ${quote(tenancy.taintKey)}) && (${operator} == 'Exists' || ((${operator} == '' || ${operator} == 'Equal') && ${t}.?value.orValue('') == variables.group)))`;
}

/**
 * foreignGroupsTolerated: a toleration of the dedicated taint of a group other than the
 * namespace's own: Exists on the key (or the empty key), Equal with a value other than '' and G,
 * and Gt/Lt, which reach every group named by an integer in range under a scheduler with the
 * comparison-operator gate on, whatever the API server's gate.
 */
function toleratesForeignGroupCel(tenancy: LabelTenancy, t: string): string {
  const operator = `${t}.?operator.orValue('')`;
  const value = `${t}.?value.orValue('')`;
  return `((${t}.?effect.orValue('') == '' || ${t}.effect == ${quote(tenancy.taintEffect)}) && (${t}.?key.orValue('') == '' || ${t}.key == ${quote(tenancy.taintKey)}) && (${operator} in ['Exists', 'Gt', 'Lt'] || ((${operator} == '' || ${operator} == 'Equal') && ${value} != '' && ${value} != variables.group)))`;
}

/** matchToleration: key, operator, value and effect equal, absent read as "". */
function sameTolerationCel(a: string, b: string): string {
  return (['key', 'operator', 'value', 'effect'] as const)
    .map((field) => `${a}.?${field}.orValue('') == ${b}.?${field}.orValue('')`)
    .join(' && ');
}

export interface Validation {
  readonly expression: string;
  readonly messageExpression: string;
  readonly reason: 'Forbidden';
}

/**
 * The guarantee at a site (CREATE and UPDATE), as the webhook's validating DedicatedNodes judges
 * it, but for spec.nodeName: see the last rule.
 */
export function tenancyValidations(tenancy: LabelTenancy, site: PodSpecSite = podSite): Validation[] {
  const spec = specCel(site, 'object');
  const oldSpec = specCel(site, 'oldObject');
  const field = site.segments.join('.');
  const taint = `${quote(`${tenancy.taintKey}=`)} + variables.group + ${quote(`:${tenancy.taintEffect}`)}`;
  const subject = `'${site.what} in namespace ' + namespaceObject.metadata.name + ' (group ' + variables.group + ', policy ${tenancy.name})'`;
  const terms = termsCelAt(site);
  const nodeSelector = `${spec}.?nodeSelector[?${quote(tenancy.nodeLabel)}]`;
  const tenantPair = `(${site.judgePair}) && variables.tenant`;
  const tenantChoice = `(${site.judgeContradictions}) && variables.tenant`;
  const oldTolerations = `request.operation == 'CREATE' ? [] : ${oldSpec}.?tolerations.orValue([])`;
  const belongs = `(variables.group == '' ? 'namespace ' + namespaceObject.metadata.name + ' belongs to no group' : 'namespace ' + namespaceObject.metadata.name + ' belongs to group ' + variables.group)`;
  return [
    {
      // The group toleration (the mutating policy gives it).
      expression: `!(${tenantPair}) || ${spec}.?tolerations.orValue([]).exists(t, ${toleratesOwnGroupCel(tenancy, 't')})`,
      messageExpression: `${subject} + ' must tolerate the taint ' + ${taint} + ': ${field}.tolerations lacks {key: ${tenancy.taintKey}, operator: Equal, value: ' + variables.group + ', effect: ${tenancy.taintEffect}}'`,
      reason: 'Forbidden',
    },
    {
      // groupContradictions: a nodeSelector, a required term or a preferred term on the group
      // label that excludes G, or an empty required term.
      expression: `!(${tenantChoice}) || (${nodeSelector}.orValue(variables.group) == variables.group && ${terms}.all(t, size(t.?matchExpressions.orValue([])) + size(t.?matchFields.orValue([])) > 0 && t.?matchExpressions.orValue([]).all(r, r.key != ${quote(tenancy.nodeLabel)} || ${admitsGroupCel('r')})) && ${preferredCelAt(site)}.all(p, p.?preference.?matchExpressions.orValue([]).all(r, r.key != ${quote(tenancy.nodeLabel)} || ${admitsGroupCel('r')})))`,
      messageExpression: `${subject} + ' may only run on nodes labelled ${tenancy.nodeLabel}=' + variables.group + ', but the pod asks for other nodes (${field}.nodeSelector, a required or preferred node affinity term on ${tenancy.nodeLabel}, or an empty required term)'`,
      reason: 'Forbidden',
    },
    {
      // missingGroupRequirement: the requirement in every required term (the mutating policy ANDs it in).
      expression: `!(${tenantPair}) || (size(${terms}) > 0 && ${terms}.all(t, ${termHoldsGroupCel(tenancy, 't')}))`,
      messageExpression: `${subject} + ' must require ${tenancy.nodeLabel} In [' + variables.group + '] in every required node affinity term'`,
      reason: 'Forbidden',
    },
    {
      // No toleration of another group's taint, outside an infrastructure namespace; on UPDATE only
      // the tolerations the update adds (none of the old spec's has the same four fields).
      expression: `variables.infrastructure || !${spec}.?tolerations.orValue([]).exists(t, ${toleratesForeignGroupCel(tenancy, 't')} && !(${oldTolerations}).exists(o, ${sameTolerationCel('o', 't')}))`,
      messageExpression: `'${field}.tolerations tolerates the dedicated taint of another group (${tenancy.taintKey}=<group>:${tenancy.taintEffect}, policy ${tenancy.name}); ' + ${belongs} + ', and only an infrastructure namespace may reach other groups\\' nodes'`,
      reason: 'Forbidden',
    },
    {
      // nodeName skips the scheduler and the NoSchedule taint; the webhook reads the named Node's
      // groups, which no admission policy can. Stricter instead: a spec that names a node at create
      // (or an update that changes it) is refused, unless its namespace is infrastructure and it
      // is no tenant (the webhook lets exactly those reach any node).
      expression: `${spec}.?nodeName.orValue('') == '' || (request.operation == 'UPDATE' && ${oldSpec}.?nodeName.orValue('') == ${spec}.nodeName) || (variables.infrastructure && !variables.tenant)`,
      messageExpression: `'${field}.nodeName is set: without a webhook the named node\\'s dedicated-node group cannot be read (policy ${tenancy.name}), so only pods of an infrastructure namespace that are no tenants may name a node; leave nodeName to the scheduler'`,
      reason: 'Forbidden',
    },
  ];
}
