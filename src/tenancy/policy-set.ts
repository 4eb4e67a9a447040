/**
 * The loaded policies as one value, and what they say about one request: each policy's group for
 * the namespace, whether the pod is exempt, whether the namespace is infrastructure.
 *
 * Expressions are evaluated lazily and at most once per request (`exempt` only for a tenant,
 * `infrastructure` only when a pod tolerates or targets a foreign group), so a policy's optional
 * rules cost nothing on the common path and cannot fail a request they have no say in.
 */
import type { JsonObject, Namespace } from '../api/types.js';
import { ExpressionEvaluationError, toCelVariables } from './cel.js';
import type { CelVariables } from './cel.js';
import { groupValueErrors } from './policy.js';
import type { PolicyLoadError, TenancyPolicy } from './policy.js';

export interface PolicySet {
  readonly policies: readonly TenancyPolicy[];
  /**
   * Groups already worked out, by Namespace object and policy, for group rules that read only
   * `namespaceObject`: the cluster state hands out the same object until the namespace changes
   * (an informer replaces it on update), so the answer is reused for every pod until then and 100
   * policies cost about what 1 does. Belongs to the set: a reload starts afresh.
   */
  readonly groupsByNamespace?: WeakMap<object, Map<TenancyPolicy, string>>;
  /** The files' texts the set was built from (src/tenancy/policy-directory.ts), in load order. */
  readonly sources?: readonly PolicySource[];
}

/** One policy file as it was read. */
export interface PolicySource {
  readonly file: string;
  readonly text: string;
}

export const emptyPolicySet: PolicySet = { policies: [] };

/** Builds a set; a policy name seen twice is an error, and the first file (by load order) wins. */
export function createPolicySet(policies: readonly TenancyPolicy[]): { set: PolicySet; errors: PolicyLoadError[] } {
  const byName = new Map<string, TenancyPolicy>();
  const errors: PolicyLoadError[] = [];
  for (const policy of policies) {
    const first = byName.get(policy.name);
    if (first !== undefined) {
      errors.push({
        file: policy.file,
        policy: policy.name,
        field: 'metadata.name',
        message: `duplicate policy name: already defined in ${first.file}`,
      });
      continue;
    }
    byName.set(policy.name, policy);
  }
  return { set: { policies: [...byName.values()], groupsByNamespace: new WeakMap() }, errors };
}

/** A policy could not be evaluated: the webhook cannot decide (HTTP 500; the failurePolicy applies). */
export class PolicyEvaluationError extends Error {
  override readonly name = 'PolicyEvaluationError';
}

/** What the expressions see. For a DaemonSet, `object` is its pod template presented as a Pod. */
export interface PolicyInputs {
  readonly object: JsonObject;
  readonly oldObject: JsonObject | undefined;
  /** Undefined when the cluster state does not know the namespace: then no group applies. */
  readonly namespace: Namespace | undefined;
  /**
   * Admission CEL's `request`, or a function that builds it: it is read only by a rule that names
   * `request` (the shipped prefix policy's `exempt`), and building it for every review was a
   * twentieth of an ordinary review's CPU time (bench/RESULTS.md's profile).
   */
  readonly request: JsonObject | (() => JsonObject);
}

export interface PolicyEvaluator {
  /** The namespace's group under `policy`, '' for none. */
  group(policy: TenancyPolicy): string;
  exempt(policy: TenancyPolicy): boolean;
  infrastructure(policy: TenancyPolicy): boolean;
}

/** Whether a compiled group rule depends on nothing but the Namespace object. */
function readsOnlyNamespace(policy: TenancyPolicy): boolean {
  const variables = policy.group.variables;
  return variables.size === 1 && variables.has('namespaceObject');
}

export function createPolicyEvaluator(inputs: PolicyInputs, groupsByNamespace?: PolicySet['groupsByNamespace']): PolicyEvaluator {
  let variables: CelVariables | undefined;
  const celVariables = (): CelVariables => {
    // Converted once per request, and only when some expression actually runs.
    variables ??= toCelVariables({
      object: inputs.object,
      oldObject: inputs.oldObject,
      namespaceObject: inputs.namespace,
      request: inputs.request,
    });
    return variables;
  };
  const groups = new Map<TenancyPolicy, string>();
  const exempts = new Map<TenancyPolicy, boolean>();
  const infrastructures = new Map<TenancyPolicy, boolean>();

  return {
    group(policy) {
      let group = groups.get(policy);
      const shared =
        groupsByNamespace !== undefined && inputs.namespace !== undefined && readsOnlyNamespace(policy) ? groupsByNamespace : undefined;
      if (group === undefined && shared !== undefined && inputs.namespace !== undefined) {
        group = shared.get(inputs.namespace)?.get(policy);
      }
      if (group === undefined) {
        // Without its Namespace object a namespace has no group (the brief's rule): nothing to read.
        group = inputs.namespace === undefined ? '' : run(policy, 'spec.group', () => policy.group.evaluate(celVariables()));
        const problems = group === '' ? [] : groupValueErrors(group);
        if (problems.length > 0) {
          throw new PolicyEvaluationError(
            `policy "${policy.name}" spec.group: gave ${JSON.stringify(group)}, which cannot be a label or toleration value: ${problems.join('; ')}`,
          );
        }
        groups.set(policy, group);
        if (shared !== undefined && inputs.namespace !== undefined) {
          let byPolicy = shared.get(inputs.namespace);
          if (byPolicy === undefined) {
            byPolicy = new Map();
            shared.set(inputs.namespace, byPolicy);
          }
          byPolicy.set(policy, group);
        }
      }
      return group;
    },
    exempt(policy) {
      let exempt = exempts.get(policy);
      if (exempt === undefined) {
        const expression = policy.exempt;
        exempt = expression === undefined ? false : run(policy, 'spec.exempt', () => expression.evaluate(celVariables()));
        exempts.set(policy, exempt);
      }
      return exempt;
    },
    infrastructure(policy) {
      let infrastructure = infrastructures.get(policy);
      if (infrastructure === undefined) {
        const expression = policy.infrastructure;
        // No namespace object, nothing to recognise it by: not infrastructure.
        infrastructure =
          expression === undefined || inputs.namespace === undefined
            ? false
            : run(policy, 'spec.infrastructure', () => expression.evaluate(celVariables()));
        infrastructures.set(policy, infrastructure);
      }
      return infrastructure;
    },
  };
}

function run<T>(policy: TenancyPolicy, field: string, evaluate: () => T): T {
  try {
    return evaluate();
  } catch (error) {
    if (error instanceof ExpressionEvaluationError) {
      throw new PolicyEvaluationError(`could not decide: policy "${policy.name}" (${policy.file}) ${field}: ${error.message}`, {
        cause: error,
      });
    }
    throw error;
  }
}

export interface Membership {
  readonly policy: TenancyPolicy;
  /** '' when the policy gives the namespace no group. */
  readonly group: string;
}

export type NamespaceGroups =
  | { readonly memberships: readonly Membership[]; readonly conflict?: undefined }
  | { readonly conflict: readonly Membership[]; readonly memberships?: undefined };

/**
 * Every policy's group for the namespace. Two policies giving different non-empty groups is a
 * misconfiguration that must be reported, never resolved by picking one: `conflict` lists the
 * policies with a group. Policies agreeing on the same group all apply.
 */
export function resolveNamespaceGroups(set: PolicySet, evaluator: PolicyEvaluator): NamespaceGroups {
  const memberships = set.policies.map((policy) => ({ policy, group: evaluator.group(policy) }));
  const named = memberships.filter((membership) => membership.group !== '');
  const distinct = new Set(named.map((membership) => membership.group));
  return distinct.size > 1 ? { conflict: named } : { memberships };
}

export function conflictMessage(namespace: string, conflict: readonly Membership[]): string {
  const each = conflict.map(({ policy, group }) => `policy "${policy.name}" gives group "${group}"`).join(', ');
  return `namespace "${namespace}" belongs to more than one dedicated-node group (${each}); the TenancyPolicies must agree on at most one group per namespace`;
}
