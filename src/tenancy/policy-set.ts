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
import { groupLabelConflict } from './group-node-labels.js';
import type { PolicyLoadError, TenancyPolicy } from './policy.js';

export interface PolicySet {
  readonly policies: readonly TenancyPolicy[];
  /**
   * Verdicts already worked out, by Namespace object and policy, for the rules (group, exempt,
   * infrastructure) whose expression reads only `namespaceObject`: the cluster state hands out the
   * same object until the namespace changes (an informer replaces it on update), so the answer is
   * reused for every pod until then and 100 policies cost about what 1 does. Belongs to the set: a
   * reload starts afresh.
   */
  readonly namespaceVerdicts?: WeakMap<object, Map<TenancyPolicy, NamespaceVerdicts>>;
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
  return { set: { policies: [...byName.values()], namespaceVerdicts: new WeakMap() }, errors };
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

/** A rule of a policy: its three expressions, each decided once per request. */
type Rule = 'group' | 'exempt' | 'infrastructure';

/** What the rules of one policy gave for one Namespace object. */
export interface NamespaceVerdicts {
  group?: string;
  exempt?: boolean;
  infrastructure?: boolean;
}

/** Whether an expression depends on nothing but the Namespace object. */
function readsOnlyNamespace(expression: { readonly variables: ReadonlySet<string> }): boolean {
  return expression.variables.size === 1 && expression.variables.has('namespaceObject');
}

export function createPolicyEvaluator(inputs: PolicyInputs, namespaceVerdicts?: PolicySet['namespaceVerdicts']): PolicyEvaluator {
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
  const own = new Map<TenancyPolicy, NamespaceVerdicts>();
  const namespace = inputs.namespace;

  /**
   * Where a rule's verdict is kept: across requests, by Namespace object, when its expression
   * reads only `namespaceObject`; else for this request alone.
   */
  const verdicts = (policy: TenancyPolicy, expression: { readonly variables: ReadonlySet<string> }): NamespaceVerdicts => {
    if (namespaceVerdicts !== undefined && namespace !== undefined && readsOnlyNamespace(expression)) {
      let byPolicy = namespaceVerdicts.get(namespace);
      if (byPolicy === undefined) {
        byPolicy = new Map();
        namespaceVerdicts.set(namespace, byPolicy);
      }
      let shared = byPolicy.get(policy);
      if (shared === undefined) {
        shared = {};
        byPolicy.set(policy, shared);
      }
      return shared;
    }
    let mine = own.get(policy);
    if (mine === undefined) {
      mine = {};
      own.set(policy, mine);
    }
    return mine;
  };

  const decide = <R extends Rule>(
    policy: TenancyPolicy,
    rule: R,
    fallback: NonNullable<NamespaceVerdicts[R]>,
  ): NonNullable<NamespaceVerdicts[R]> => {
    const expression = policy[rule];
    // No expression, or (group and infrastructure) no Namespace object to read: the rule's
    // fallback, with nothing to evaluate (a namespace the cluster state does not know has no
    // group and is not infrastructure).
    if (expression === undefined || (rule !== 'exempt' && namespace === undefined)) return fallback;
    const kept = verdicts(policy, expression);
    const known = kept[rule];
    if (known !== undefined) return known;
    const value = run(policy, `spec.${rule}`, () => expression.evaluate(celVariables())) as NonNullable<NamespaceVerdicts[R]>;
    if (rule === 'group' && value !== '') {
      const problems = groupValueErrors(value as string);
      if (problems.length > 0) {
        throw new PolicyEvaluationError(
          `policy "${policy.name}" spec.group: gave ${JSON.stringify(value)}, which cannot be a label or toleration value: ${problems.join('; ')}`,
        );
      }
      const conflict = groupLabelConflict(policy, value as string);
      if (conflict !== undefined) {
        throw new PolicyEvaluationError(`policy "${policy.name}" spec.group: ${conflict}`);
      }
    }
    kept[rule] = value;
    return value;
  };

  return {
    group: (policy) => decide(policy, 'group', ''),
    exempt: (policy) => decide(policy, 'exempt', false),
    infrastructure: (policy) => decide(policy, 'infrastructure', false),
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
