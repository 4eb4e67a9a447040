/**
 * Nodes without a kubelet, for the suites that need kube-scheduler or the DaemonSet controller
 * to act on them: a Node created with a Ready condition, capacity and allocatable, as a kubelet
 * registers one and reports its status. kube-apiserver keeps `status` on a Node's CREATE (the
 * node strategy's PrepareForCreate does not reset it, unlike a pod's), so one request makes a
 * schedulable node. The control plane runs without the node lifecycle controller and without
 * TaintNodesByCondition (test/cluster/control-plane.ts), so nothing marks these nodes not-ready
 * for lack of heartbeats: they keep exactly the labels and taints given here.
 */
import type * as k8s from '@kubernetes/client-node';
import { createObject, type Manifest } from './tolerator-on-cluster.js';

export interface FakeNodeOptions {
  /** Labels besides the kubelet's own (kubernetes.io/hostname, kubernetes.io/os, kubernetes.io/arch). */
  readonly labels?: Readonly<Record<string, string>>;
  readonly taints?: readonly { readonly key: string; readonly value?: string; readonly effect: string }[];
  /** `spec.unschedulable`, as `kubectl cordon` sets it. */
  readonly unschedulable?: boolean;
}

/**
 * What every fake node has: 4 CPUs and 16 GiB (a small cloud instance, far more than the tests'
 * pods request, so the scheduler's resource fit never decides), and 110 pods, the kubelet's
 * default --max-pods. Allocatable equals capacity: no kubelet reserves anything here.
 */
const resources = { cpu: '4', memory: '16Gi', pods: '110' } as const;

/** The Node object a kubelet named `name` would have registered, Ready now. */
export function fakeNode(name: string, options: FakeNodeOptions = {}): Manifest {
  // RFC 3339 to the second, as metav1.Time serialises.
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', ...options.labels },
    },
    spec: {
      ...(options.taints === undefined ? {} : { taints: options.taints }),
      ...(options.unschedulable === undefined ? {} : { unschedulable: options.unschedulable }),
    },
    status: {
      capacity: resources,
      allocatable: resources,
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          message: 'fake node: no kubelet, created Ready by the test',
          lastHeartbeatTime: now,
          lastTransitionTime: now,
        },
      ],
    },
  };
}

/** Creates the nodes, in the order given, and returns them as stored (with their UIDs). */
export async function createFakeNodes(
  objects: k8s.KubernetesObjectApi,
  nodes: Readonly<Record<string, FakeNodeOptions>>,
): Promise<Manifest[]> {
  const created: Manifest[] = [];
  for (const [name, options] of Object.entries(nodes)) {
    created.push(await createObject(objects, fakeNode(name, options)));
  }
  return created;
}
