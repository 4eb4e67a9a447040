/**
 * The TenancyPolicy resource (docs/architecture.md#tenancy-policies): its type once loaded, and
 * the parsing of one decoded document into it. Every field is checked, and every problem is
 * reported (not only the first), with the file, the field, and for CEL the line and column inside
 * the expression.
 */
import type { TaintEffect } from '../api/types.js';
import { isJsonObject } from '../api/types.js';
import { compileExpression } from './cel.js';
import type { CompiledExpression, ExpressionPosition, ExpressionResultType } from './cel.js';
import { isQualifiedName, isValidLabelValue } from '../validation/name-validation.js';
import { clipText } from '../api/text-bounds.js';
import { parseDeviceTaint, type DeviceGroupTaint } from './device-policy.js';
import { parseRuntimeClasses, type RuntimeClassAllowList } from './runtime-classes.js';
import { parseGroupNodeLabelValues, type GroupNodeLabelValues } from './group-node-labels.js';

export const tenancyPolicyApiVersion = 'tolerator.dev/v1alpha1';
export const tenancyPolicyKind = 'TenancyPolicy';

/** Deny refuses the request; Warn lets it through with AdmissionReview warnings. */
export type Enforcement = 'Deny' | 'Warn';

export interface DedicatedTaint {
  readonly key: string;
  readonly effect: TaintEffect;
}

export interface TenancyPolicy {
  readonly name: string;
  /** The file the policy came from, for messages. */
  readonly file: string;
  /** CEL → the namespace's group; '' means the namespace belongs to no group. */
  readonly group: CompiledExpression<'string'>;
  /** Nodes of group G carry the taint `<key>=G:<effect>`. */
  readonly taint: DedicatedTaint;
  /** Nodes of group G carry the label `<nodeLabel>=G`. */
  readonly nodeLabel: string;
  /** CEL on the pod: true leaves it out of the tenant rules. */
  readonly exempt: CompiledExpression<'bool'> | undefined;
  /** CEL: true lets the namespace's pods tolerate every group (node agents). */
  readonly infrastructure: CompiledExpression<'bool'> | undefined;
  readonly enforcement: Enforcement;
  /**
   * The Karpenter NodePools each group names (`spec.nodePools`, optional): NodePool name → the
   * one group it must serve. A group that names NodePools is served by those alone
   * (src/tenancy/node-side.ts); an empty map when the policy names none.
   */
  readonly nodePools: ReadonlyMap<string, string>;
  /**
   * The group's DRA device taint (`spec.deviceTaint`, optional; src/tenancy/device-policy.ts):
   * undefined when the policy says nothing about devices.
   */
  readonly deviceTaint?: DeviceGroupTaint;
  /**
   * The RuntimeClasses each group may use (`spec.runtimeClasses`, optional; src/tenancy/runtime-classes.ts):
   * a RuntimeClass listed for some groups is refused to every other, and a group that lists its
   * RuntimeClasses is kept to them. Empty when the policy lists none.
   */
  readonly runtimeClasses: RuntimeClassAllowList;
  /**
   * The node label values of each group's pools (`spec.nodeLabelValues`, optional;
   * src/tenancy/group-node-labels.ts): a group named there has nodes labelled with any of its
   * values; any other group, nodes labelled with the group itself.
   */
  readonly nodeLabelValues: GroupNodeLabelValues;
  /**
   * What the loader warns about without refusing the policy: `group`, `exempt` or `infrastructure`
   * reading fields the pod's author writes, which lets a tenant choose its own answer.
   */
  readonly cautions: readonly string[];
}

export interface PolicyLoadError {
  readonly file: string;
  /** 1-based line in the file of the offending value, when the source positions are known. */
  readonly line?: number;
  /** 1-based index of the YAML document in its file, for a document that is not a TenancyPolicy at all. */
  readonly document?: number;
  /** metadata.name, when the document has one. */
  readonly policy?: string;
  /** The field at fault, e.g. `spec.group`. */
  readonly field?: string;
  /** For CEL errors: where inside the expression. */
  readonly expressionPosition?: ExpressionPosition;
  readonly message: string;
}

/**
 * `file:line: TenancyPolicy "name": spec.group: line 1, column 5 of the expression: message`, or
 * `file:line: document 2: message` for a document that is not a TenancyPolicy.
 */
export function formatPolicyLoadError(error: PolicyLoadError): string {
  const parts = [error.line === undefined ? error.file : `${error.file}:${error.line}`];
  if (error.document !== undefined) {
    parts.push(`document ${error.document}`);
  }
  if (error.policy !== undefined) {
    parts.push(`${tenancyPolicyKind} "${error.policy}"`);
  }
  if (error.field !== undefined) {
    parts.push(error.field);
  }
  if (error.expressionPosition !== undefined) {
    parts.push(`line ${error.expressionPosition.line}, column ${error.expressionPosition.column} of the expression`);
  }
  parts.push(error.message);
  return parts.join(': ');
}

/** Where a document came from: its file and, when known, the line of a field's value. */
export interface DocumentOrigin {
  readonly file: string;
  lineOf(path: readonly string[]): number | undefined;
}

export type PolicyParseResult =
  | { readonly policy: TenancyPolicy; readonly errors: readonly [] }
  | { readonly policy?: undefined; readonly errors: readonly PolicyLoadError[] };

/**
 * The group taint's effects: those that keep a pod that does not tolerate the taint off the node.
 * Not PreferNoSchedule: kube-scheduler only scores it (TaintToleration's Score) and Karpenter's
 * relaxation tolerates it (preferences.go toleratePreferNoScheduleTaints), so every pod of the
 * cluster could still run on the group's nodes.
 */
const effects: readonly TaintEffect[] = ['NoSchedule', 'NoExecute'];
const enforcements: readonly Enforcement[] = ['Deny', 'Warn'];
const specFields = new Set([
  'group',
  'taint',
  'nodeLabel',
  'exempt',
  'infrastructure',
  'enforcement',
  'nodePools',
  'deviceTaint',
  'runtimeClasses',
  'nodeLabelValues',
]);
const taintFields = new Set(['key', 'effect']);
/** metadata.name follows the rule of most Kubernetes object names: a DNS-1123 subdomain, ≤ 253. */
const objectNameFormat = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const objectNameMaxLength = 253;

/**
 * Parses a document already known to be `kind: TenancyPolicy`. Unknown fields in `spec` are
 * errors, not ignored: a misspelt `exmpt` silently dropped would leave pods un-exempted.
 */
export function parseTenancyPolicy(document: unknown, origin: DocumentOrigin): PolicyParseResult {
  const errors: PolicyLoadError[] = [];
  let name: string | undefined;
  const report = (path: readonly string[], message: string, extra: Partial<PolicyLoadError> = {}): void => {
    const line = origin.lineOf(path);
    errors.push({
      file: origin.file,
      ...(line === undefined ? {} : { line }),
      ...(name === undefined ? {} : { policy: name }),
      field: path.join('.'),
      message,
      ...extra,
    });
  };

  if (!isJsonObject(document)) {
    errors.push({ file: origin.file, message: 'a TenancyPolicy must be an object' });
    return { errors };
  }
  const metadata = document.metadata;
  const rawName = isJsonObject(metadata) ? metadata.name : undefined;
  if (typeof rawName === 'string' && rawName.length > 0) {
    name = rawName;
    if (rawName.length > objectNameMaxLength || !objectNameFormat.test(rawName)) {
      report(['metadata', 'name'], `must be a lowercase RFC 1123 subdomain of at most ${objectNameMaxLength} characters`);
    }
  } else {
    report(['metadata', 'name'], 'required: a non-empty string');
  }
  if (document.apiVersion !== tenancyPolicyApiVersion) {
    report(['apiVersion'], `must be ${tenancyPolicyApiVersion}, got ${show(document.apiVersion)}`);
  }

  const spec = document.spec;
  if (!isJsonObject(spec)) {
    report(['spec'], 'required: an object');
    return { errors };
  }
  for (const field of Object.keys(spec)) {
    if (!specFields.has(field)) {
      report(['spec', field], `unknown field; known fields are ${[...specFields].join(', ')}`);
    }
  }

  const compile = <T extends ExpressionResultType>(field: string, resultType: T, required: boolean): CompiledExpression<T> | undefined => {
    const source = spec[field];
    if (source === undefined && !required) {
      return undefined;
    }
    if (typeof source !== 'string' || source.trim().length === 0) {
      report(['spec', field], `required: a CEL expression (a string) evaluating to ${resultType}`);
      return undefined;
    }
    const compiled = compileExpression(source, resultType);
    if (compiled.error !== undefined) {
      report(
        ['spec', field],
        compiled.error.message,
        compiled.error.position === undefined ? {} : { expressionPosition: compiled.error.position },
      );
      return undefined;
    }
    return compiled.expression;
  };

  const group = compile('group', 'string', true);
  const exempt = compile('exempt', 'bool', false);
  const infrastructure = compile('infrastructure', 'bool', false);

  const taint = parseTaint(spec.taint, report);

  const nodeLabel = spec.nodeLabel;
  if (typeof nodeLabel !== 'string') {
    report(['spec', 'nodeLabel'], 'required: a label key');
  } else {
    for (const message of isQualifiedName(nodeLabel)) {
      report(['spec', 'nodeLabel'], `must be a valid label key: ${message}`);
    }
  }

  // Absent means Deny: a policy that forgot the field should protect, not merely warn.
  const enforcement = spec.enforcement ?? 'Deny';
  if (!enforcements.includes(enforcement as Enforcement)) {
    report(['spec', 'enforcement'], `unsupported value ${show(enforcement)}: supported values are ${enforcements.join(', ')}`);
  }

  const nodePools = parseNodePools(spec.nodePools, report);
  const deviceTaint = parseDeviceTaint(spec.deviceTaint, report);
  const runtimeClasses = parseRuntimeClasses(spec.runtimeClasses, report);
  const nodeLabelValues = parseGroupNodeLabelValues(spec.nodeLabelValues, report);

  if (errors.length > 0 || name === undefined || group === undefined || taint === undefined || typeof nodeLabel !== 'string') {
    return { errors };
  }
  const cautions = [
    ...tenantWrittenCautions(name, 'group', group),
    ...tenantWrittenCautions(name, 'exempt', exempt),
    ...tenantWrittenCautions(name, 'infrastructure', infrastructure),
    ...namespaceNameCautions(name, 'group', group),
    ...namespaceNameCautions(name, 'exempt', exempt),
    ...namespaceNameCautions(name, 'infrastructure', infrastructure),
  ];
  return {
    policy: {
      name,
      file: origin.file,
      group,
      taint,
      nodeLabel,
      exempt,
      infrastructure,
      enforcement: enforcement as Enforcement,
      nodePools,
      runtimeClasses,
      nodeLabelValues,
      ...(deviceTaint === undefined ? {} : { deviceTaint }),
      cautions,
    },
    errors: [],
  };
}

/** What each rule lets a tenant do when it decides from fields the tenant writes. */
const tenantWrittenConsequences: Record<'group' | 'exempt' | 'infrastructure', string> = {
  group: "a tenant can choose its own group, and with it another group's nodes",
  exempt: "a tenant can exempt its own pods and run them outside its group's nodes",
  infrastructure: "a tenant can declare itself infrastructure and reach every group's nodes",
};

function tenantWrittenCautions(
  name: string,
  field: 'group' | 'exempt' | 'infrastructure',
  expression: CompiledExpression<ExpressionResultType> | undefined,
): string[] {
  const reads = expression?.tenantWrittenReads ?? [];
  if (reads.length === 0) {
    return [];
  }
  return [
    `${tenancyPolicyKind} "${name}" spec.${field} reads ${reads.join(', ')}, which whoever creates the pod or workload writes: ${tenantWrittenConsequences[field]}. Decide it from what a tenant cannot write: namespaceObject (its labels are set by whoever may update namespaces) or request.userInfo (set by the API server from the caller's credentials)`,
  ];
}

/** What each rule lets anyone who may create namespaces do when it decides from the namespace's name. */
const namespaceNameConsequences: Record<'group' | 'exempt' | 'infrastructure', string> = {
  group: "anyone who may create a namespace can name it into any group, and run on that group's nodes",
  exempt: 'anyone who may create a namespace can name it so that its pods are exempt',
  infrastructure: "anyone who may create a namespace can name it as infrastructure and reach every group's nodes",
};

/** See namespaceNameReads in cel.ts: a name is chosen by whoever creates the namespace. */
function namespaceNameCautions(
  name: string,
  field: 'group' | 'exempt' | 'infrastructure',
  expression: CompiledExpression<ExpressionResultType> | undefined,
): string[] {
  const reads = expression?.namespaceNameReads ?? [];
  if (reads.length === 0) {
    return [];
  }
  return [
    `${tenancyPolicyKind} "${name}" spec.${field} reads ${reads.join(', ')}: the namespace's name, which whoever creates the namespace chooses. Wherever users may create namespaces (a self-provisioner role, hierarchical namespaces, Capsule), ${namespaceNameConsequences[field]}. Use it only where the platform team alone creates namespaces, or decide from a namespace label that a policy engine guards on create and update`,
  ];
}

function parseTaint(taint: unknown, report: (path: readonly string[], message: string) => void): DedicatedTaint | undefined {
  if (!isJsonObject(taint)) {
    report(['spec', 'taint'], 'required: an object with key and effect (the value is the group)');
    return undefined;
  }
  let valid = true;
  for (const field of Object.keys(taint)) {
    if (!taintFields.has(field)) {
      report(
        ['spec', 'taint', field],
        field === 'value' ? 'must not be set: the taint value is the group' : 'unknown field; known fields are key, effect',
      );
      valid = false;
    }
  }
  const { key, effect } = taint;
  if (typeof key !== 'string') {
    report(['spec', 'taint', 'key'], 'required: a taint key');
    valid = false;
  } else {
    for (const message of isQualifiedName(key)) {
      report(['spec', 'taint', 'key'], `must be a qualified name: ${message}`);
      valid = false;
    }
  }
  if (!effects.includes(effect as TaintEffect)) {
    report(
      ['spec', 'taint', 'effect'],
      `unsupported value ${show(effect)}: supported values are ${effects.join(', ')}${
        effect === 'PreferNoSchedule' ? ' (PreferNoSchedule repels no pod for sure: the group nodes would stay open to every pod)' : ''
      }`,
    );
    valid = false;
  }
  return valid ? { key: key as string, effect: effect as TaintEffect } : undefined;
}

/**
 * `spec.nodePools`: a mapping from a group to the names of its Karpenter NodePools, e.g.
 * `{pci: [pci-general, pci-gpu]}`. A mapping rather than CEL: the platform team writes NodePools
 * and names them, so the list is what it reviews, and a NodePool's group is then a look-up, with
 * nothing to evaluate on a NodePool's write. A NodePool belongs to one group: a name under two
 * groups is an error naming both.
 */
function parseNodePools(value: unknown, report: (path: readonly string[], message: string) => void): Map<string, string> {
  const byName = new Map<string, string>();
  if (value === undefined) {
    return byName;
  }
  if (!isJsonObject(value)) {
    report(['spec', 'nodePools'], 'must be a mapping of group to a list of NodePool names, e.g. {pci: [pci-general, pci-gpu]}');
    return byName;
  }
  for (const [group, names] of Object.entries(value)) {
    const at = ['spec', 'nodePools', group];
    for (const message of groupValueErrors(group)) {
      report(at, `the group ${show(clipped(group))} is not a valid group (a label value): ${message}`);
    }
    if (!Array.isArray(names) || names.length === 0) {
      report(at, 'must be a non-empty list of NodePool names');
      continue;
    }
    for (const [index, nodePool] of names.entries()) {
      const path = [...at, String(index)];
      if (typeof nodePool !== 'string' || nodePool.length > objectNameMaxLength || !objectNameFormat.test(nodePool)) {
        report(
          path,
          `must be a NodePool name (a lowercase RFC 1123 subdomain of at most ${objectNameMaxLength} characters), got ${show(typeof nodePool === 'string' ? clipped(nodePool) : nodePool)}`,
        );
        continue;
      }
      const named = byName.get(nodePool);
      if (named !== undefined && named !== group) {
        report(path, `NodePool "${nodePool}" is named by the groups ${show(named)} and ${show(group)}: a NodePool serves one group`);
        continue;
      }
      byName.set(nodePool, group);
    }
  }
  return byName;
}

/** A value for a message: at most 63 characters (a group, a label value), the rest counted. */
function clipped(value: string): string {
  return clipText(value, 63);
}

/** Why a group value cannot be used, or [] when it can: it becomes a label and toleration value. */
export function groupValueErrors(group: string): string[] {
  return isValidLabelValue(group);
}

/** A value as written, for messages; JSON.stringify gives undefined for an absent one. */
function show(value: unknown): string {
  return value === undefined ? 'nothing' : JSON.stringify(value);
}
