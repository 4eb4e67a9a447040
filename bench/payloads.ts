/**
 * What the bench sends and the files the servers start with: AdmissionReview bodies taken from the
 * captured fixtures (test/fixtures/reviews/*.json, whose `review` field is the wire body), pods
 * grown to many containers or tolerations, cluster-state files of N namespaces (and M nodes), and
 * directories of N TenancyPolicies.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LoadRequest } from './protocol.js';

type Json = Record<string, unknown>;

export interface Payload extends LoadRequest {
  readonly name: string;
  /** The answer tolerator must give, checked once before any load. */
  readonly expectAllowed: boolean;
}

const fixtureDir = new URL('../test/fixtures/reviews/', import.meta.url);

function fixtureReview(file: string): Json {
  const fixture = JSON.parse(readFileSync(new URL(file, fixtureDir), 'utf8')) as { review: Json };
  return fixture.review;
}

function payload(name: string, file: string, path: LoadRequest['path'], expectAllowed = true): Payload {
  return { name, path, body: JSON.stringify(fixtureReview(file)), expectAllowed };
}

/** The realistic mix, each sent in turn on every connection. */
export function mixPayloads(): Payload[] {
  return [
    payload('BestEffort pod', 'besteffort-create-no-tolerations.json', '/mutate'),
    payload('Burstable pod', 'burstable-create-no-tolerations.json', '/mutate'),
    payload('Guaranteed pod', 'guaranteed-create.json', '/mutate'),
    payload('DaemonSet pod', 'daemonset-pod-create.json', '/mutate'),
    payload('tenant pod', 'tenant-pod-create.json', '/mutate'),
    payload('tenant pod (validate)', 'tenant-pod-after-mutation-create.json', '/validate'),
  ];
}

/**
 * The Burstable pod of the fixtures with `containers` copies of its container (each with its own
 * name and requests, so the QoS computation sees them all) and `tolerations` distinct tolerations.
 */
export function grownPod(containers: number, tolerations: number): Payload {
  const review = fixtureReview('burstable-create-no-tolerations.json');
  const request = review.request as Json;
  const object = request.object as Json;
  const spec = object.spec as Json;
  const [container] = spec.containers as Json[];
  if (container === undefined) throw new Error('the Burstable fixture has no container');
  spec.containers = Array.from({ length: containers }, (_, i) => ({ ...structuredClone(container), name: `app-${i}` }));
  if (tolerations > 0) {
    spec.tolerations = Array.from({ length: tolerations }, (_, i) => ({
      key: `example.com/pool-${i}`,
      operator: 'Equal',
      value: 'true',
      effect: i % 2 === 0 ? 'NoSchedule' : 'PreferNoSchedule',
    }));
  }
  return {
    name: `${containers} containers, ${tolerations} tolerations`,
    path: '/mutate',
    body: JSON.stringify(review),
    expectAllowed: true,
  };
}

/** The namespaces and nodes the mix needs (as test/fixtures/config/tenancy-cluster.yaml has them). */
function baseNamespaces(): Json[] {
  const ns = (name: string, labels: Record<string, string> = {}): Json =>
    namespace(name, { 'kubernetes.io/metadata.name': name, ...labels });
  return [
    ns('shop'),
    ns('ml', { dedicated: 'gpu' }),
    ns('payments', { dedicated: 'pci' }),
    ns('monitoring', { 'tolerator.dev/node-infrastructure': 'true' }),
    ns('team-a-dev'),
    ns('kube-system'),
    ns('default'),
    ns('kube-public'),
    ns('kube-node-lease'),
    ns('batch-jobs'),
  ];
}

/** A Namespace as `kubectl get namespaces -o json` lists it (without managedFields). */
function namespace(name: string, labels: Record<string, string>, annotations?: Record<string, string>): Json {
  let serial = 7;
  for (let i = 0; i < name.length; i++) serial = (serial * 31 + name.charCodeAt(i)) >>> 0;
  const hex = serial.toString(16).padStart(8, '0');
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name,
      uid: `${hex}-1a2b-4c3d-8e9f-${hex}${hex.slice(0, 4)}`,
      resourceVersion: String(1000 + (serial % 900_000)),
      creationTimestamp: '2026-11-01T00:00:00Z',
      labels,
      ...(annotations === undefined ? {} : { annotations }),
    },
    spec: { finalizers: ['kubernetes'] },
    status: { phase: 'Active' },
  };
}

function node(name: string, labels: Record<string, string>, taint?: { key: string; value: string }): Json {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } },
    spec: taint === undefined ? {} : { taints: [{ ...taint, effect: 'NoSchedule' }] },
  };
}

/**
 * A node as a cloud provider labels it: host, OS and architecture, instance type, region and
 * zone, node group and lifecycle (12 labels). Every tenth is a `gpu` node of the tenancy policy
 * (labelled and tainted dedicated=gpu), every twentieth after it a team-a node; spot nodes carry
 * a PreferNoSchedule taint.
 */
function cloudNode(i: number): Json {
  const name = `ip-10-0-${Math.floor(i / 250)}-${i % 250}.eu-west-1.compute.internal`;
  const zone = `eu-west-1${'abc'[i % 3] ?? 'a'}`;
  const spot = i % 4 === 0;
  const labels: Record<string, string> = {
    'kubernetes.io/hostname': name,
    'kubernetes.io/os': 'linux',
    'kubernetes.io/arch': 'amd64',
    'beta.kubernetes.io/os': 'linux',
    'beta.kubernetes.io/arch': 'amd64',
    'node.kubernetes.io/instance-type': ['m5.2xlarge', 'c5.4xlarge', 'r5.xlarge', 'p3.2xlarge'][i % 4] ?? 'm5.2xlarge',
    'topology.kubernetes.io/region': 'eu-west-1',
    'topology.kubernetes.io/zone': zone,
    'failure-domain.beta.kubernetes.io/zone': zone,
    'eks.amazonaws.com/nodegroup': `ng-${i % 12}`,
    'node.kubernetes.io/lifecycle': spot ? 'spot' : 'on-demand',
  };
  const taints: Json[] = spot ? [{ key: 'example.com/spot', value: 'true', effect: 'PreferNoSchedule' }] : [];
  if (i % 10 === 0) {
    labels.dedicated = 'gpu';
    taints.push({ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' });
  } else if (i % 20 === 1) {
    labels.tenant = 'team-a';
    taints.push({ key: 'tenant', value: 'team-a', effect: 'NoSchedule' });
  } else {
    labels['example.com/pool'] = 'general';
  }
  return { apiVersion: 'v1', kind: 'Node', metadata: { name, labels }, spec: taints.length === 0 ? {} : { taints } };
}

/**
 * A `v1` `List` of `count` Namespaces (the ten the mix needs, then team namespaces with labels
 * and, on every tenth, the defaultTolerations annotation) and Nodes — the five the mix needs and,
 * with `nodeCount` above five, cloud nodes (cloudNode) up to that count — written as JSON.
 */
export function writeClusterState(path: string, count: number, nodeCount = 5): void {
  const { namespaces, nodes } = clusterObjects(count, nodeCount);
  writeFileSync(path, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...namespaces, ...nodes] }));
}

/** The Namespaces and Nodes of writeClusterState, as objects. */
export function clusterObjects(count: number, nodeCount = 5): { namespaces: Json[]; nodes: Json[] } {
  const namespaces = baseNamespaces();
  for (let i = namespaces.length; i < count; i++) {
    const name = `app-${String(i).padStart(5, '0')}`;
    const labels = { 'kubernetes.io/metadata.name': name, team: `team-${i % 97}`, environment: i % 3 === 0 ? 'production' : 'staging' };
    const annotations =
      i % 10 === 0
        ? {
            'scheduler.alpha.kubernetes.io/defaultTolerations':
              '[{"key":"example.com/batch","operator":"Equal","value":"true","effect":"NoSchedule"}]',
          }
        : undefined;
    namespaces.push(namespace(name, labels, annotations));
  }
  const nodes = [
    node('gpu-1', { dedicated: 'gpu' }, { key: 'dedicated', value: 'gpu' }),
    node('pci-1', { dedicated: 'pci' }, { key: 'dedicated', value: 'pci' }),
    node('team-a-1', { tenant: 'team-a' }, { key: 'tenant', value: 'team-a' }),
    node('worker-1', {}),
    node('worker-2', {}),
  ];
  for (let i = nodes.length; i < nodeCount; i++) nodes.push(cloudNode(i));
  return { namespaces, nodes };
}

/**
 * `count` TenancyPolicies: the shipped label policy (policies/dedicated-by-namespace-label.yaml,
 * which gives the mix's tenant namespace `ml` its group) and `count - 1` policies of the same
 * shape on their own label keys (`dedicated-1`, …), which no namespace of the mix carries: the
 * cost of policies that must be evaluated and say "no group".
 */
export function writePolicies(dir: string, count: number): void {
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < count; i++) {
    const key = i === 0 ? 'dedicated' : `dedicated-${i}`;
    const name = i === 0 ? 'dedicated-by-namespace-label' : `dedicated-by-label-${i}`;
    writeFileSync(
      join(dir, `${name}.yaml`),
      `apiVersion: tolerator.dev/v1alpha1
kind: TenancyPolicy
metadata:
  name: ${name}
spec:
  group: "namespaceObject.metadata.?labels['${key}'].orValue('')"
  taint: { key: ${key}, effect: NoSchedule }
  nodeLabel: ${key}
  exempt: "object.metadata.?labels['tolerator.dev/exempt'].orValue('') == 'true'"
  infrastructure: "namespaceObject.metadata.?labels['tolerator.dev/node-infrastructure'].orValue('') == 'true'"
  enforcement: Deny
`,
    );
  }
}
