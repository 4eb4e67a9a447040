/**
 * The inputs of a plugin call, built as the admission pipeline would hand them over: request
 * attributes and a context of cluster facts.
 */
import { defaultFeatureGates, type FeatureGates } from '../../src/api/feature-gates.js';
import type { JsonObject, Namespace, Node, ObjectMeta } from '../../src/api/types.js';
import type { AdmissionAttributes, Operation, PluginContext } from '../../src/plugins/plugin.js';

/** A resource as a request names it: its group, its plural resource name and its kind. */
export interface RequestResource {
  readonly group: string;
  readonly resource: string;
  readonly kind: string;
}

export const podResource: RequestResource = { group: '', resource: 'pods', kind: 'Pod' };

export interface RequestOptions {
  /** The object before an UPDATE; an UPDATE without one changes nothing, so it is `object` itself. */
  readonly oldObject?: JsonObject;
  /** '' (the default) for the resource itself, e.g. 'status' or 'binding'. */
  readonly subResource?: string;
  /** The request's name; defaults to the object's `metadata.name`. */
  readonly name?: string;
  /** The request's namespace; defaults to the object's `metadata.namespace`, else `default`. */
  readonly namespace?: string;
}

/** The attributes of a `v1` request for `resource`. */
export function admissionAttributes(
  resource: RequestResource,
  operation: Operation,
  object: JsonObject | undefined,
  options: RequestOptions = {},
): AdmissionAttributes {
  const metadata = object?.metadata as ObjectMeta | undefined;
  return {
    operation,
    kind: { group: resource.group, version: 'v1', kind: resource.kind },
    resource: { group: resource.group, version: 'v1', resource: resource.resource },
    subResource: options.subResource ?? '',
    namespace: options.namespace ?? metadata?.namespace ?? 'default',
    name: options.name ?? metadata?.name ?? '',
    object,
    oldObject: options.oldObject ?? (operation === 'UPDATE' ? object : undefined),
    dryRun: false,
  };
}

/** The attributes of a request for a pod. */
export function podAttributes(operation: Operation, object: JsonObject, options: RequestOptions = {}): AdmissionAttributes {
  return admissionAttributes(podResource, operation, object, options);
}

export interface ClusterFacts {
  /** Gates that differ from the v1.35 defaults. */
  readonly gates?: Partial<FeatureGates>;
  /** The request's Namespace; absent: the cluster state does not know it. */
  readonly namespace?: Namespace;
  readonly nodes?: readonly Node[];
}

/** A plugin context over the given facts: default gates, no namespace and no nodes unless given. */
export function pluginContext(facts: ClusterFacts = {}): PluginContext {
  const nodes = facts.nodes ?? [];
  return {
    gates: { ...defaultFeatureGates, ...facts.gates },
    namespace: facts.namespace,
    node: (name) => nodes.find((node) => node.metadata.name === name),
    // Given nodes are the whole cluster; without any, nothing is known about nodes (offline).
    nodesKnown: facts.nodes !== undefined,
    nodes: () => nodes,
  };
}
