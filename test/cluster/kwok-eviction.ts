/**
 * Watching a node fail and its pods go, for the suites on kwok's nodes (kwok.ts): every version
 * of the pods of a namespace and of the Nodes, as the API server's watch delivers them, each with
 * the test's monotonic clock at receipt. A pod evicted from a node that kwok still manages
 * (NotReady) is deleted by kwok's pod-delete Stage a moment after the taint eviction controller
 * marks it, so a LIST every few hundred milliseconds could miss the version that carries the
 * eviction's marks (DisruptionTarget, deletionTimestamp); a watch sees every version.
 *
 * When the eviction happened, on the API server's clock: the taint eviction controller
 * (pkg/controller/tainteviction/taint_eviction.go at v1.35.8, addConditionAndDeletePod) first
 * writes the condition DisruptionTarget=True, reason DeletionByTaintManager, whose
 * lastTransitionTime is its clock at that moment, then DELETEs the pod with the pod's own grace
 * period, so deletionTimestamp is that moment PLUS terminationGracePeriodSeconds (30 s unless the
 * pod says otherwise), not the moment of the eviction: deletionTimestamp − deletionGracePeriodSeconds is.
 */
import { performance } from 'node:perf_hooks';
import * as k8s from '@kubernetes/client-node';
import type { LiveNode, NodeTaint } from './kwok.js';
import { plain } from './tolerator-on-cluster.js';

export interface PodCondition {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly lastTransitionTime?: string;
}

export interface WatchedPod {
  readonly metadata: {
    readonly name: string;
    readonly namespace: string;
    readonly deletionTimestamp?: string;
    readonly deletionGracePeriodSeconds?: number;
  };
  readonly spec: { readonly nodeName?: string; readonly tolerations?: readonly unknown[] };
  readonly status?: { readonly conditions?: readonly PodCondition[] };
}

/** The first version of a pod that carried the eviction, and when the test received it. */
export interface Eviction {
  readonly pod: WatchedPod;
  /** performance.now() at receipt. */
  readonly receivedMs: number;
  /** The DisruptionTarget condition the taint eviction controller wrote (undefined if it was not in that version). */
  readonly disruptionTarget: PodCondition | undefined;
  /** deletionTimestamp − deletionGracePeriodSeconds: when the DELETE was made, to the second (API server clock). */
  readonly deletedAtMs: number;
}

/** When a taint was first seen on a node. */
export interface TaintSeen {
  readonly taint: NodeTaint;
  readonly node: LiveNode;
  readonly receivedMs: number;
}

export interface EvictionWatch {
  /** The eviction of pod `name`, once seen. */
  eviction(name: string): Eviction | undefined;
  /** The first version of Node `node` that carried the taint `key:effect`, once seen. */
  taint(node: string, key: string, effect: string): TaintSeen | undefined;
  /** Whether pod `name` was deleted (its DELETED event came). */
  deleted(name: string): boolean;
  stop(): void;
}

/** RFC 3339 (to the second, as metav1.Time serialises) to milliseconds. */
export function timeMs(rfc3339: string): number {
  const ms = Date.parse(rfc3339);
  if (Number.isNaN(ms)) throw new Error(`not a time: ${rfc3339}`);
  return ms;
}

/** Watches the pods of `namespace` and every Node until stop(). Resolves once both watches are open. */
export async function watchEvictions(kubeconfig: k8s.KubeConfig, namespace: string): Promise<EvictionWatch> {
  const watch = new k8s.Watch(kubeconfig);
  const evictions = new Map<string, Eviction>();
  const deleted = new Set<string>();
  const taints = new Map<string, TaintSeen>();
  const errors: unknown[] = [];
  const onError = (error: unknown): void => {
    if (error !== null && error !== undefined && !(error instanceof Error && error.name === 'AbortError')) errors.push(error);
  };
  const pods = await watch.watch(
    `/api/v1/namespaces/${namespace}/pods`,
    {},
    (type: string, object: unknown) => {
      const receivedMs = performance.now();
      if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') return;
      const pod = plain(object) as WatchedPod;
      const name = pod.metadata.name;
      if (type === 'DELETED') deleted.add(name);
      if (evictions.has(name) || pod.metadata.deletionTimestamp === undefined) return;
      const grace = pod.metadata.deletionGracePeriodSeconds ?? 0;
      evictions.set(name, {
        pod,
        receivedMs,
        disruptionTarget: pod.status?.conditions?.find((condition) => condition.type === 'DisruptionTarget'),
        deletedAtMs: timeMs(pod.metadata.deletionTimestamp) - grace * 1000,
      });
    },
    onError,
  );
  const nodes = await watch.watch(
    '/api/v1/nodes',
    {},
    (type: string, object: unknown) => {
      const receivedMs = performance.now();
      if (type !== 'ADDED' && type !== 'MODIFIED') return;
      const node = plain(object) as LiveNode;
      for (const taint of node.spec.taints ?? []) {
        const key = `${String(node.metadata.name)}/${taint.key}:${taint.effect}`;
        if (!taints.has(key)) taints.set(key, { taint, node, receivedMs });
      }
    },
    onError,
  );
  const check = (): void => {
    if (errors.length > 0) throw new Error(`the watch failed: ${String(errors[0])}`);
  };
  return {
    eviction: (name) => (check(), evictions.get(name)),
    taint: (node, key, effect) => (check(), taints.get(`${node}/${key}:${effect}`)),
    deleted: (name) => deleted.has(name),
    stop: () => {
      pods.abort();
      nodes.abort();
    },
  };
}
