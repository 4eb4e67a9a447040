/**
 * What the admission pipeline needs to know about the cluster, as an interface: the composition
 * root passes in either informer caches (src/kube/informers.ts) or a static file
 * (src/kube/cluster-state-file.ts). The pure plugins receive the facts already read, in their
 * PluginContext.
 */
import type { Namespace, Node, RuntimeClass } from '../api/types.js';

export interface ClusterFacts {
  /**
   * The Namespace object: from the cache, or, for an informer-backed source, read once from the
   * API when the cache does not hold it yet (a namespace created a moment ago). Undefined when
   * it does not exist. Rejects only when the source could not answer at all (the webhook then
   * answers "could not decide" and the failurePolicy applies).
   */
  getNamespace(name: string): Promise<Namespace | undefined>;
  /** The Node object from the cache, or undefined when the cache lacks it. */
  getNode(name: string): Node | undefined;
  /**
   * The Node object: from the cache, or, for an informer-backed source, read once from the API
   * when the cache does not hold it (a node that joined a moment ago, or during a watch outage).
   * Undefined when it does not exist; rejects only when the source could not answer at all.
   */
  readNode(name: string): Promise<Node | undefined>;
  listNodes(): readonly Node[];
  /** Whether this source holds the cluster's nodes (false only for `emptyClusterFacts`). */
  readonly knowsNodes: boolean;
  /**
   * The RuntimeClass (node.k8s.io/v1) from the cache or the file, undefined when the source does
   * not hold it. Read only to say where a pod's tolerations and nodeSelector came from, never to
   * decide: a RuntimeClass created a moment ago that the cache lacks leaves the refusal unexplained,
   * not wrong. Rejects only when the source could not answer at all.
   */
  readRuntimeClass(name: string): Promise<RuntimeClass | undefined>;
  /** Every RuntimeClass the source holds (the audit's `runtimeclass-pattern`). */
  listRuntimeClasses(): readonly RuntimeClass[];
  /** True once every cache has synced; /readyz follows it. */
  isSynced(): boolean;
  stop(): Promise<void>;
}

/** A source with no cluster at all: no namespaces, no nodes, always ready. */
export const emptyClusterFacts: ClusterFacts = {
  getNamespace: () => Promise.resolve(undefined),
  getNode: () => undefined,
  readNode: () => Promise.resolve(undefined),
  listNodes: () => [],
  knowsNodes: false,
  readRuntimeClass: () => Promise.resolve(undefined),
  listRuntimeClasses: () => [],
  isSynced: () => true,
  stop: () => Promise.resolve(),
};
