/**
 * The device half of DedicatedNodes (docs/tenancy.md, "Devices"): a group's DRA devices carry its
 * device taint (`spec.deviceTaint` of a TenancyPolicy, src/tenancy/device-policy.ts), and
 *
 * - a ResourceClaim or ResourceClaimTemplate (CREATE: a claim's spec is immutable, and so is a
 *   template's) in a namespace may not tolerate another group's device taint, in any form
 *   (src/tenancy/device-reach.ts), unless the namespace is infrastructure. No `exempt`: a claim is
 *   not a pod's own. Any pod of its namespace may name it in `spec.resourceClaims[].resourceClaimName`
 *   (the API has no cross-namespace reference; a claim is shared by up to 256 pods of its
 *   namespace, `status.reservedFor`), so exempting a claim's creator — a platform admin creating
 *   it in a tenant namespace — would hand another group's devices to every tenant pod there.
 *   For the same reason the claim's `request.userInfo` is empty, as for a pod template;
 * - a DeviceTaintRule (CREATE, and an UPDATE that changes its spec) that reaches the groups'
 *   devices (device-reach.ts `deviceTaintRuleReach`) is refused unless its author is a platform
 *   identity (group `system:masters` or one of the policy's `deviceTaint.platformGroups`).
 *
 * Each policy's `enforcement` decides between a denial and a warning. Claims are judged whatever
 * tolerator's view of DRADeviceTaints: with the gate off the API server drops device tolerations
 * before validating webhooks see them (PrepareForCreate), so a claim that arrives with some was
 * kept by an API server whose gate is on, whatever tolerator was told (a replica already upgraded
 * while `/metrics` was read from another, a `--feature-gates` pinned wrong). Skipping on the view
 * would let exactly those claims through unjudged.
 */
import { valueAt } from '../api/pod-template.js';
import { clipText } from '../api/text-bounds.js';
import { jsonEqual } from '../api/types.js';
import { deviceTolerationLists, type DeviceTolerationList } from '../tolerations/device-tolerations.js';
import { deviceTaintPattern, deviceTaintRuleReach, foreignDeviceGroupsTolerated, isPlatformIdentity } from '../tenancy/device-reach.js';
import { conflictMessage, createPolicyEvaluator, resolveNamespaceGroups, type PolicySet } from '../tenancy/policy-set.js';
import type { TenancyPolicy } from '../tenancy/policy.js';
import { namespaceStanding } from '../tenancy/verdict-texts.js';
import { celRequest } from './admission-request.js';
import { claimTargetOf, resourceGroup } from './device-toleration-validation.js';
import type { AdmissionAttributes, Denial, PluginContext, ValidationOutcome } from './plugin.js';

/** Audit annotation keys (the API server prefixes each with `<webhook name>/`). */
export const deviceAuditKeys = {
  /** The same keys as DedicatedNodes' for a pod, so that `explain` and the audit log read the group alike. */
  policy: 'dedicated-nodes-policy',
  group: 'dedicated-nodes-group',
  decision: 'dedicated-devices-decision',
  infrastructure: 'dedicated-devices-infrastructure',
} as const;

/** How many violations a denial or the warnings spell out; the rest are counted (as DedicatedNodes' violationsSpelledOut). */
const spelledOut = 10;

function isDeviceTaintRuleRequest(attributes: AdmissionAttributes): boolean {
  return (
    attributes.resource.group === resourceGroup && attributes.resource.resource === 'devicetaintrules' && attributes.subResource === ''
  );
}

/** The requests the device half judges: a claim or template CREATE, a DeviceTaintRule CREATE or UPDATE. */
export function isDeviceTenancyRequest(attributes: AdmissionAttributes): boolean {
  if (claimTargetOf(attributes) !== undefined) return attributes.operation === 'CREATE';
  return isDeviceTaintRuleRequest(attributes) && (attributes.operation === 'CREATE' || attributes.operation === 'UPDATE');
}

interface Violation {
  readonly policy: TenancyPolicy;
  readonly message: string;
  /** How many violations this entry stands for: 1, or the count of those past the spelled-out ones (message ''). */
  readonly count?: number;
}

/** The policies that say how devices map to groups. */
function devicePolicies(set: PolicySet): TenancyPolicy[] {
  return set.policies.filter((policy) => policy.deviceTaint !== undefined);
}

/** What foreignDeviceTolerations found: the first messages, and how many there are in all. */
export interface ForeignDeviceTolerations {
  /** At most `limit` messages, in the claim's order. */
  readonly messages: readonly string[];
  readonly total: number;
}

/**
 * The device tolerations of `lists` that reach another group's devices under `policy`, for a
 * namespace of group `ownGroup` ('' for none): the first `limit` as messages, and the count of all.
 * A tenant chooses how many tolerations a claim has (no limit is enforced), so nothing is built
 * past the limit. Shared with the audit of allocated claims (src/audit/audit-rules.ts), which
 * judges `status.allocation.devices.results[].tolerations`.
 */
export function foreignDeviceTolerations(
  lists: readonly DeviceTolerationList[],
  policy: TenancyPolicy,
  ownGroup: string,
  limit: number,
): ForeignDeviceTolerations {
  const deviceTaint = policy.deviceTaint;
  const messages: string[] = [];
  let total = 0;
  if (deviceTaint === undefined) return { messages, total };
  for (const entry of lists) {
    for (let j = 0; j < entry.tolerations.length; j++) {
      const tolerated = foreignDeviceGroupsTolerated(entry.tolerations[j] ?? {}, deviceTaint, ownGroup);
      if (tolerated === undefined) continue;
      total++;
      if (messages.length < limit) {
        messages.push(`${entry.path()}[${j}] tolerates ${tolerated} (${deviceTaintPattern(deviceTaint)}, policy "${policy.name}")`);
      }
    }
  }
  return { messages, total };
}

/** Why reaching another group's devices is refused: the namespace's standing and the one exception. */
export function foreignDeviceReachRule(namespace: string, group: string, conflict: boolean): string {
  return `${namespaceStanding(namespace, group, conflict)}, and only an infrastructure namespace may reach other groups' devices`;
}

/** The device half's verdict on a request isDeviceTenancyRequest accepted. */
export function validateDeviceTenancy(set: PolicySet, attributes: AdmissionAttributes, context: PluginContext): ValidationOutcome {
  const policies = devicePolicies(set);
  const object = attributes.object;
  if (policies.length === 0 || object === undefined) return {};
  return isDeviceTaintRuleRequest(attributes) ? judgeRule(policies, attributes) : judgeClaim(set, policies, attributes, context);
}

function judgeClaim(
  set: PolicySet,
  policies: readonly TenancyPolicy[],
  attributes: AdmissionAttributes,
  context: PluginContext,
): ValidationOutcome {
  const target = claimTargetOf(attributes);
  const object = attributes.object;
  if (target === undefined || object === undefined) return {};
  const lists = deviceTolerationLists(valueAt(object, target.specPath), target.specPath.join('.'));
  if (lists.length === 0) return {};
  const evaluator = createPolicyEvaluator(
    { object, oldObject: undefined, namespace: context.namespace, request: () => celRequest(attributes, target.kind) },
    set.namespaceVerdicts,
  );
  const groups = resolveNamespaceGroups(set, evaluator);
  const namespace = attributes.namespace;
  const violations: Violation[] = [];
  const infrastructureUses: string[] = [];
  if (groups.conflict !== undefined) {
    const message = conflictMessage(namespace, groups.conflict);
    const deny = groups.conflict.some(({ policy }) => policy.enforcement === 'Deny');
    return deny ? { denial: forbidden(message, target.kind, object, attributes) } : { warnings: [`DedicatedNodes: ${message}`] };
  }
  let member: { policy: TenancyPolicy; group: string } | undefined;
  for (const { policy, group: ownGroup } of groups.memberships) {
    if (!policies.includes(policy)) continue;
    if (ownGroup !== '') member ??= { policy, group: ownGroup };
    const foreign = foreignDeviceTolerations(lists, policy, ownGroup, spelledOut);
    if (foreign.total === 0) continue;
    const more = foreign.total - foreign.messages.length;
    if (evaluator.infrastructure(policy)) {
      infrastructureUses.push(`${policy.name}: ${foreign.messages.join('; ')}${more > 0 ? `; and ${more} more` : ''}`);
      continue;
    }
    const rule = foreignDeviceReachRule(namespace, ownGroup, false);
    for (const message of foreign.messages) violations.push({ policy, message: `${message}; ${rule}` });
    // The rest are counted, not spelled out: decide() adds "and N more violations".
    if (more > 0) violations.push({ policy, message: '', count: more });
  }
  const outcome = decide(violations, target.kind, object, attributes);
  const auditAnnotations: Record<string, string> = {
    ...(member === undefined ? {} : { [deviceAuditKeys.policy]: member.policy.name, [deviceAuditKeys.group]: member.group }),
    [deviceAuditKeys.decision]: outcome.denial !== undefined ? 'denied' : outcome.warnings !== undefined ? 'warned' : 'allowed',
  };
  if (infrastructureUses.length > 0) {
    auditAnnotations[deviceAuditKeys.infrastructure] = `allowed for an infrastructure namespace: ${infrastructureUses.join(' | ')}`;
  }
  return { ...outcome, auditAnnotations };
}

function judgeRule(policies: readonly TenancyPolicy[], attributes: AdmissionAttributes): ValidationOutcome {
  const object = attributes.object;
  if (object === undefined) return {};
  // An update that leaves the spec alone (a label, an annotation) changes no device's taint.
  if (attributes.operation === 'UPDATE' && jsonEqual(valueAt(object, ['spec']), valueAt(attributes.oldObject, ['spec']))) return {};
  const user = attributes.userInfo;
  const violations: Violation[] = [];
  for (const policy of policies) {
    const deviceTaint = policy.deviceTaint;
    if (deviceTaint === undefined || isPlatformIdentity(user?.groups, deviceTaint)) continue;
    const reach = deviceTaintRuleReach(object, deviceTaint);
    if (reach.length === 0) continue;
    const author =
      user === undefined || user.username === ''
        ? 'its requester is unknown (a review made up offline has none)'
        : `${JSON.stringify(clipText(user.username, 253))} is in none of the platform groups (${[
            'system:masters',
            ...deviceTaint.platformGroups,
          ]
            .map((g) => JSON.stringify(clipText(g, 253)))
            .join(', ')})`;
    violations.push({
      policy,
      message: `${reach.join('; ')}. A DeviceTaintRule that reaches the groups' devices may be written only by a platform identity, and ${author} (policy "${policy.name}")`,
    });
  }
  const outcome = decide(violations, 'DeviceTaintRule', object, attributes);
  return violations.length === 0
    ? {}
    : { ...outcome, auditAnnotations: { [deviceAuditKeys.decision]: outcome.denial !== undefined ? 'denied' : 'warned' } };
}

const resourceOfKind: Readonly<Record<string, string>> = {
  ResourceClaim: 'resourceclaims',
  ResourceClaimTemplate: 'resourceclaimtemplates',
  DeviceTaintRule: 'devicetaintrules',
};

function nameOf(object: unknown, attributes: AdmissionAttributes): string {
  const name = valueAt(object, ['metadata', 'name']);
  return typeof name === 'string' && name !== '' ? name : attributes.name;
}

function forbidden(message: string, kind: string, object: unknown, attributes: AdmissionAttributes): Denial {
  return {
    reason: 'Forbidden',
    message,
    object: { group: resourceGroup, resource: resourceOfKind[kind] ?? '', name: nameOf(object, attributes) },
  };
}

/** Deny-policy violations deny together (one message); Warn-policy violations become warnings. */
function decide(
  violations: readonly Violation[],
  kind: string,
  object: unknown,
  attributes: AdmissionAttributes,
): { denial?: Denial; warnings?: readonly string[] } {
  const denying = violations.filter(({ policy }) => policy.enforcement === 'Deny');
  const warning = violations.filter(({ policy }) => policy.enforcement === 'Warn');
  const counted = (list: readonly Violation[]): number => list.reduce((sum, violation) => sum + (violation.count ?? 1), 0);
  const spelled = (list: readonly Violation[]): Violation[] => list.filter(({ message }) => message !== '').slice(0, spelledOut);
  const warnings = spelled(warning).map(({ policy, message }) => `DedicatedNodes (enforcement Warn, policy "${policy.name}"): ${message}`);
  const warningsLeft = counted(warning) - warnings.length;
  if (warningsLeft > 0) warnings.push(`DedicatedNodes (enforcement Warn): and ${warningsLeft} more violations of the same kinds`);
  const withWarnings = warnings.length > 0 ? { warnings } : {};
  if (denying.length === 0) return withWarnings;
  const listed = spelled(denying).map(({ message }) => message);
  const deniedLeft = counted(denying) - listed.length;
  if (deniedLeft > 0) listed.push(`and ${deniedLeft} more violations of the same kinds`);
  return { denial: forbidden(listed.join('; '), kind, object, attributes), ...withWarnings };
}
