/**
 * DeviceTaintRuleSafety: a DeviceTaintRule (resource.k8s.io, cluster-scoped; v1alpha3 in 1.35,
 * v1beta2 in 1.36, v1 in 1.37, the same `spec` in all three) taints every device its
 * `deviceSelector` matches, and with `NoExecute` the device taint eviction controller deletes every
 * pod whose claim was allocated such a device and does not tolerate the taint — in every namespace,
 * without PodDisruptionBudgets. Kubernetes accepts every shape of selector. This plugin refuses (or,
 * with `--device-taint-rule-safety warn`, warns about) the three that take a cluster down by mistake:
 *
 * 1. `omitted-selector`: no `deviceSelector` with NoSchedule or NoExecute. The API documents it as
 *    "no devices are matched" (so the rule does nothing), but kube-scheduler 1.35 through 1.37.0
 *    treats it as every device and blocks all allocation (kubernetes/kubernetes#141620, fixed for
 *    1.38 and in 1.37.1+ by the cherry-pick #141998, not in 1.36 or 1.35).
 * 2. `empty-selector`: `deviceSelector: {}` with NoSchedule or NoExecute, which matches every device
 *    of every driver (kubernetes/kubernetes#141422), unless the rule says so on purpose with the
 *    annotation `tolerator.dev/select-all-devices: "true"`.
 * 3. `no-dry-run`: NoExecute without the dry run KEP-5055 recommends: the same rule with effect
 *    None first, whose status (condition EvictionInProgress, reason NoEffect) the controller writes
 *    with how many pods would be evicted; then an UPDATE that changes only the effect to NoExecute.
 *    A CREATE with NoExecute, or an UPDATE to NoExecute from anything but a None rule whose
 *    simulation the controller has written for the current generation, or one that changes the
 *    selector or the taint's key or value at the same time, is refused unless the rule carries
 *    `tolerator.dev/skip-dry-run: "<reason>"` (break glass: whoever may create DeviceTaintRules,
 *    cluster-level RBAC, may set it; the reason is kept in the object for the post-mortem).
 *
 * It also warns about a selector that names a pool or device but no driver (pool and device names
 * are unique only within a driver). It never mutates: the API server owns `timeAdded`.
 *
 * Upstream: k8s.io/api resource/v1 (v1beta2, v1alpha3) types.go `DeviceTaintRuleSpec`,
 * `DeviceTaintSelector`; pkg/controller/devicetainteviction/device_taint_eviction.go
 * `ruleMatchesDevice` (nil selector: nothing; empty: everything) and the status it writes.
 */
import { ownField, stringField } from '../api/json-fields.js';
import { jsonEqual } from '../api/types.js';
import { clipText } from '../api/text-bounds.js';
import type { AdmissionAttributes, Denial, ValidatingPlugin, ValidationOutcome } from './plugin.js';

export const selectAllDevicesAnnotation = 'tolerator.dev/select-all-devices';
export const skipDryRunAnnotation = 'tolerator.dev/skip-dry-run';

export type DeviceTaintRuleEnforcement = 'Deny' | 'Warn';

export interface DeviceTaintRuleSafetyConfig {
  /** Deny (the default): refuse an unsafe rule. Warn: admit it with a warning and an audit annotation. */
  readonly enforcement?: DeviceTaintRuleEnforcement;
}

/** The check that refused a rule: the audit annotation's value and the first words of its message. */
export type DeviceTaintRuleFinding = 'omitted-selector' | 'empty-selector' | 'no-dry-run';

const resourceGroup = 'resource.k8s.io';
const selectorFields = ['driver', 'pool', 'device'] as const;

const own = ownField;
const text = stringField;

function isDeviceTaintRuleRequest(attributes: AdmissionAttributes): boolean {
  return (
    attributes.resource.group === resourceGroup && attributes.resource.resource === 'devicetaintrules' && attributes.subResource === ''
  );
}

/** The selector's fields that are set (a field set to null is unset, as a nil pointer). */
function selectorOf(rule: unknown): Readonly<Record<string, string>> | undefined {
  const selector = own(own(rule, 'spec'), 'deviceSelector');
  if (selector === undefined || selector === null) return undefined;
  const set: Record<string, string> = {};
  for (const field of selectorFields) {
    const value = own(selector, field);
    if (value !== undefined && value !== null) set[field] = text(value);
  }
  return set;
}

function taintOf(rule: unknown): { key: string; value: string; effect: string } {
  const taint = own(own(rule, 'spec'), 'taint');
  return { key: text(own(taint, 'key')), value: text(own(taint, 'value')), effect: text(own(taint, 'effect')) };
}

function annotation(rule: unknown, name: string): string | undefined {
  const value = own(own(own(rule, 'metadata'), 'annotations'), name);
  return typeof value === 'string' ? value : undefined;
}

/**
 * Whether the controller has simulated the stored rule as it stands: its status holds the
 * EvictionInProgress condition for the stored generation (the controller writes it at once for a
 * new or changed rule, with reason NoEffect for effect None).
 */
function simulated(stored: unknown): boolean {
  const generation = own(own(stored, 'metadata'), 'generation');
  const conditions = own(own(stored, 'status'), 'conditions');
  if (typeof generation !== 'number' || !Array.isArray(conditions)) return false;
  for (const condition of conditions) {
    if (own(condition, 'type') === 'EvictionInProgress' && own(condition, 'observedGeneration') === generation) return true;
  }
  return false;
}

const evicting = new Set(['NoSchedule', 'NoExecute']);

/** The first unsafe shape of `rule`, with why; undefined when it is safe. */
export function unsafeDeviceTaintRule(
  rule: unknown,
  operation: AdmissionAttributes['operation'],
  stored: unknown,
): { readonly finding: DeviceTaintRuleFinding; readonly message: string } | undefined {
  const taint = taintOf(rule);
  if (!evicting.has(taint.effect)) return undefined;
  const selector = selectorOf(rule);
  if (selector === undefined) {
    return {
      finding: 'omitted-selector',
      message:
        `spec.deviceSelector is omitted with effect ${taint.effect}. The API documents an omitted selector as matching no device, ` +
        'but kube-scheduler 1.35 through 1.37.0 treats it as every device of every driver and blocks all allocation cluster-wide ' +
        '(kubernetes/kubernetes#141620). Name the devices (driver, pool, device), or write deviceSelector: {} with the annotation ' +
        `${selectAllDevicesAnnotation}: "true" to mean every device`,
    };
  }
  if (Object.keys(selector).length === 0 && annotation(rule, selectAllDevicesAnnotation) !== 'true') {
    return {
      finding: 'empty-selector',
      message:
        `spec.deviceSelector is empty with effect ${taint.effect}: it matches every device of every driver ` +
        (taint.effect === 'NoExecute'
          ? 'and deletes every pod that uses one, in every namespace (kubernetes/kubernetes#141422). '
          : 'and stops allocation of every device in the cluster. ') +
        `Name the devices (driver, pool, device), or set the annotation ${selectAllDevicesAnnotation}: "true" if every device is meant`,
    };
  }
  if (taint.effect !== 'NoExecute' || text(annotation(rule, skipDryRunAnnotation)) !== '') return undefined;
  const dryRun =
    'create the rule with effect None first, wait until the device taint eviction controller has written its simulation ' +
    '(status condition EvictionInProgress, reason NoEffect: how many pods would be evicted), then change only the effect to NoExecute; ' +
    `or set the annotation ${skipDryRunAnnotation}: "<reason>" to skip the dry run`;
  if (operation !== 'UPDATE') {
    return { finding: 'no-dry-run', message: `a DeviceTaintRule is created with effect NoExecute without a dry run: ${dryRun}` };
  }
  const before = taintOf(stored);
  const sameTarget = jsonEqual(selectorOf(stored) ?? null, selector) && before.key === taint.key && before.value === taint.value;
  if (before.effect === 'NoExecute' && sameTarget) return undefined;
  if (before.effect === 'None' && sameTarget && simulated(stored)) return undefined;
  const why = !sameTarget
    ? 'the update changes the deviceSelector or the taint key or value along with the effect NoExecute'
    : before.effect !== 'None'
      ? `the stored rule has effect ${JSON.stringify(clipText(before.effect, 100))}, not None`
      : 'the controller has not yet written its simulation of the stored rule (no EvictionInProgress condition for its generation)';
  return { finding: 'no-dry-run', message: `effect NoExecute without a dry run of the same devices: ${why}. To evict safely, ${dryRun}` };
}

export function createDeviceTaintRuleSafety(config: DeviceTaintRuleSafetyConfig = {}) {
  const enforcement = config.enforcement ?? 'Deny';
  return {
    name: 'DeviceTaintRuleSafety',

    handles(attributes: AdmissionAttributes): boolean {
      return isDeviceTaintRuleRequest(attributes) && (attributes.operation === 'CREATE' || attributes.operation === 'UPDATE');
    },

    validate(object, attributes): ValidationOutcome {
      const warnings: string[] = [];
      const selector = selectorOf(object);
      if (selector !== undefined && selector.driver === undefined && (selector.pool !== undefined || selector.device !== undefined)) {
        warnings.push(
          'spec.deviceSelector names a pool or device but no driver: pool and device names are unique only within a driver, so this rule may taint devices of other drivers too',
        );
      }
      const unsafe = unsafeDeviceTaintRule(object, attributes.operation, attributes.oldObject);
      if (unsafe === undefined) return warnings.length === 0 ? {} : { warnings };
      const name = typeof own(object.metadata, 'name') === 'string' ? (own(object.metadata, 'name') as string) : attributes.name;
      if (enforcement === 'Warn') {
        return {
          warnings: [...warnings, `DeviceTaintRule ${JSON.stringify(clipText(name, 253))}: ${unsafe.message}`],
          auditAnnotations: { 'device-taint-rule-safety': unsafe.finding },
        };
      }
      const denial: Denial = {
        reason: 'Forbidden',
        message: unsafe.message,
        object: { group: resourceGroup, resource: 'devicetaintrules', name },
      };
      return { denial, auditAnnotations: { 'device-taint-rule-safety': unsafe.finding }, ...(warnings.length === 0 ? {} : { warnings }) };
    },
  } satisfies ValidatingPlugin;
}
