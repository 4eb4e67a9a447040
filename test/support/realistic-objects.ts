/**
 * Namespaces and Nodes as kube-apiserver stores and lists them in a real cluster, for the informer
 * tests and the scale bench: not the few fields tolerator reads, but everything around them that
 * a cache holding whole objects would hold too.
 *
 * A Node of a cloud VM is about 19 KB of JSON: its kubelet reports `status.images` (the 50
 * largest images on the node, kubelet's --node-status-max-images default, each with a digest and
 * a tag name), capacity and allocatable, five conditions with their heartbeats, addresses and
 * nodeInfo; three managers' `managedFields` entries; the annotations its kubelet and CSI driver
 * write. Of that, tolerator reads the name, uid, labels and `spec.taints`/`spec.unschedulable`.
 *
 * A Namespace is about 1 KB: a `kubectl create` managedFields entry, `spec.finalizers` and
 * `status.phase` around its labels and annotations.
 */
import type { KubeObject } from './fake-api-server.js';

type Json = Record<string, unknown>;

/** A stable hex string of `length` digits from `seed` (uids, digests, machine ids). */
function hex(seed: number, length: number): string {
  let text = '';
  let state = (seed * 2654435761 + 0x9e3779b9) >>> 0;
  while (text.length < length) {
    state = (state * 1664525 + 1013904223) >>> 0;
    text += state.toString(16).padStart(8, '0');
  }
  return text.slice(0, length);
}

function uid(seed: number): string {
  const h = hex(seed, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

const imageNames = [
  'kube-proxy',
  'aws-node',
  'aws-ebs-csi-driver',
  'livenessprobe',
  'csi-node-driver-registrar',
  'coredns',
  'pause',
  'fluent-bit',
  'node-exporter',
  'datadog-agent',
];

/** Entry `i` of a node's `status.images`: a digest name and a tag name, and the size. */
function image(node: number, i: number): Json {
  const repository = `602401143452.dkr.ecr.eu-west-1.amazonaws.com/eks/addons/${imageNames[i % imageNames.length] ?? 'app'}-${i}`;
  return {
    names: [`${repository}@sha256:${hex(node * 100 + i, 64)}`, `${repository}:v1.${i % 30}.${node % 10}-eksbuild.1`],
    sizeBytes: 10_000_000 + ((node * 7919 + i * 104_729) % 900_000_000),
  };
}

function condition(type: string, status: string, reason: string, message: string, heartbeat: string): Json {
  return { type, status, lastHeartbeatTime: heartbeat, lastTransitionTime: '2026-10-01T08:00:00Z', reason, message };
}

/** Status fields a kubelet's heartbeat rewrites (`heartbeat` is its RFC 3339 time). */
function nodeConditions(heartbeat: string): Json[] {
  return [
    condition('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available', heartbeat),
    condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure', heartbeat),
    condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available', heartbeat),
    condition('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status', heartbeat),
    condition('KernelDeadlock', 'False', 'KernelHasNoDeadlock', 'kernel has no deadlock', heartbeat),
  ];
}

/** `fieldsV1` as the server records a manager's fields: one `f:` key per field it set. */
function fieldsOf(keys: readonly string[]): Json {
  return Object.fromEntries(keys.map((key) => [`f:${key}`, {}]));
}

/**
 * `node` (its name, labels and taints as tolerator reads them) with everything else a cloud VM's
 * Node carries (see the module comment); `serial` makes uids, addresses and digests differ.
 */
export function storedNode(node: KubeObject, serial: number, heartbeat = '2026-11-30T12:00:00Z'): KubeObject {
  const name = node.metadata.name;
  const labels = (node.metadata.labels ?? {}) as Record<string, string>;
  const spec = (node.spec ?? {}) as Json;
  const ip = `10.${(serial >> 16) & 255}.${(serial >> 8) & 255}.${serial & 255}`;
  const instance = `i-0${hex(serial, 16)}`;
  const resources = {
    cpu: '8',
    'ephemeral-storage': '104845292Ki',
    'hugepages-1Gi': '0',
    'hugepages-2Mi': '0',
    memory: '32386544Ki',
    pods: '58',
  };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      uid: uid(serial),
      creationTimestamp: '2026-10-01T08:00:00Z',
      labels,
      annotations: {
        'alpha.kubernetes.io/provided-node-ip': ip,
        'csi.volume.kubernetes.io/nodeid': `{"ebs.csi.aws.com":"${instance}"}`,
        'node.alpha.kubernetes.io/ttl': '0',
        'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
      },
      managedFields: [
        {
          manager: 'kubelet',
          operation: 'Update',
          apiVersion: 'v1',
          time: '2026-10-01T08:00:00Z',
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:metadata': {
              'f:annotations': fieldsOf([
                'alpha.kubernetes.io/provided-node-ip',
                'node.alpha.kubernetes.io/ttl',
                'volumes.kubernetes.io/controller-managed-attach-detach',
              ]),
              'f:labels': fieldsOf(Object.keys(labels)),
            },
            'f:spec': fieldsOf(['providerID']),
          },
        },
        {
          manager: 'kube-controller-manager',
          operation: 'Update',
          apiVersion: 'v1',
          time: '2026-10-01T08:00:05Z',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:spec': { 'f:podCIDR': {}, 'f:podCIDRs': { '.': {}, [`v:"10.${serial & 255}.0.0/24"`]: {} } } },
        },
        {
          manager: 'kubelet',
          operation: 'Update',
          apiVersion: 'v1',
          time: heartbeat,
          fieldsType: 'FieldsV1',
          subresource: 'status',
          fieldsV1: {
            'f:status': {
              'f:allocatable': fieldsOf(Object.keys(resources)),
              'f:capacity': fieldsOf(Object.keys(resources)),
              'f:conditions': Object.fromEntries(
                ['DiskPressure', 'MemoryPressure', 'PIDPressure', 'Ready', 'KernelDeadlock'].map((type) => [
                  `k:{"type":"${type}"}`,
                  fieldsOf(['lastHeartbeatTime', 'lastTransitionTime', 'message', 'reason', 'status']),
                ]),
              ),
              'f:images': {},
              'f:nodeInfo': fieldsOf(['bootID', 'kernelVersion', 'kubeletVersion', 'machineID', 'osImage', 'systemUUID']),
            },
          },
        },
      ],
    },
    spec: {
      ...spec,
      providerID: `aws:///eu-west-1a/${instance}`,
      podCIDR: `10.${serial & 255}.0.0/24`,
      podCIDRs: [`10.${serial & 255}.0.0/24`],
    },
    status: {
      capacity: resources,
      allocatable: { ...resources, cpu: '7910m', 'ephemeral-storage': '95551679124', memory: '31369712Ki' },
      conditions: nodeConditions(heartbeat),
      addresses: [
        { type: 'InternalIP', address: ip },
        { type: 'InternalDNS', address: `ip-${ip.replaceAll('.', '-')}.eu-west-1.compute.internal` },
        { type: 'Hostname', address: `ip-${ip.replaceAll('.', '-')}.eu-west-1.compute.internal` },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID: hex(serial + 1, 32),
        systemUUID: uid(serial + 2).toUpperCase(),
        bootID: uid(serial + 3),
        kernelVersion: '6.1.115-126.197.amzn2023.x86_64',
        osImage: 'Amazon Linux 2023.6.20241121',
        containerRuntimeVersion: 'containerd://1.7.23',
        kubeletVersion: 'v1.35.0-eks-1a2b3c4',
        kubeProxyVersion: 'v1.35.0-eks-1a2b3c4',
        operatingSystem: 'linux',
        architecture: 'amd64',
      },
      images: Array.from({ length: 50 }, (_, i) => image(serial, i)),
      features: { supplementalGroupsPolicy: true },
      runtimeHandlers: [
        { name: 'runc', features: { recursiveReadOnlyMounts: true, userNamespaces: true } },
        { name: '', features: { recursiveReadOnlyMounts: true, userNamespaces: true } },
      ],
    },
  };
}

/** `namespace` (its name, labels and annotations) as kube-apiserver stores it after `kubectl create`. */
export function storedNamespace(namespace: KubeObject, serial: number): KubeObject {
  const labels = (namespace.metadata.labels ?? {}) as Record<string, string>;
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    ...namespace,
    metadata: {
      ...namespace.metadata,
      uid: uid(serial + 1_000_000),
      creationTimestamp: '2026-10-01T08:00:00Z',
      labels: { 'kubernetes.io/metadata.name': namespace.metadata.name, ...labels },
      managedFields: [
        {
          manager: 'kubectl-create',
          operation: 'Update',
          apiVersion: 'v1',
          time: '2026-10-01T08:00:00Z',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:metadata': { 'f:labels': fieldsOf(['kubernetes.io/metadata.name', ...Object.keys(labels)]) } },
        },
      ],
    },
    spec: { finalizers: ['kubernetes'] },
    status: { phase: 'Active' },
  };
}

/** `node` after its kubelet's next status update: new heartbeats, the rest unchanged. */
export function heartbeatNode(node: KubeObject, heartbeat: string): KubeObject {
  const status = node.status as Json;
  return { ...node, status: { ...status, conditions: nodeConditions(heartbeat) } };
}
