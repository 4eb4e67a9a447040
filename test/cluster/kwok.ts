/**
 * Nodes that live: KWOK's controller (`kwok`, built by `npm run kwok:build` from tools/kwok/)
 * against a test control plane, as the simulated kubelet of every Node that carries the label
 * KWOK_MANAGED_LABEL. For those Nodes it does what a kubelet does for the control plane: fills
 * their status on registration (Ready, capacity, addresses: upstream's node-initialize Stage),
 * renews their Lease in kube-node-lease every leaseDurationSeconds/4 as the kubelet does, and
 * takes their pods through Running and Ready, and deletes a pod whose deletionTimestamp is set
 * (upstream's pod-ready, pod-complete and pod-delete Stages). Nodes without the label are left
 * alone, so fake-node.ts's Nodes and KWOK's can share a cluster.
 *
 * How a node fails on purpose, with KWOK's own mechanisms (read in sigs.k8s.io/kwok v0.8.0):
 * - NotReady: the label of upstream's chaos Stage node-not-ready
 *   (kustomize/stage/node/chaos/node-not-ready.yaml) makes KWOK report Ready=False, as a kubelet
 *   whose runtime is down does, while it still renews the Lease: the node lifecycle controller sees
 *   a reachable node that says it is not ready, and taints it not-ready.
 * - Unreachable: the managing label removed. kwok watches Nodes with the label selector given to
 *   the API server, so the watch reports the node as deleted; kwok's NodeController calls
 *   onNodeUnmanagedFunc, which releases the node's Lease hold (pkg/kwok/controllers/controller.go
 *   initNodeLeaseController), and nothing renews the Lease again: a kubelet that died. Its pods are
 *   no longer touched either (readOnlyFunc: a node whose lease kwok does not hold), so an evicted
 *   pod stays Terminating, as on a real node that is gone. An annotation selector would not do
 *   this: kwok filters annotations on the client, and a node whose annotation goes away raises no
 *   event at all (pkg/utils/informer/informer.go), so its Lease would be renewed for ever.
 * - A condition (MemoryPressure, DiskPressure, PIDPressure, NetworkUnavailable) while Ready:
 *   tolerator's own Stage, tools/kwok/stages/node-condition.yaml, which says why upstream's
 *   chaos stage cannot.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { REQUIRE_CONTROL_PLANE, REPO_ROOT, findControlPlane } from './binaries.js';
import type { ControlPlane, NodeLifecycleOptions } from './control-plane.js';
import { KWOK_BIN_DIR, KWOK_UPSTREAM_STAGES, stageFileName } from './kwok-build.js';
import { pollUntil } from './poll.js';
import { asKubernetesObject, createObject, plain, type Manifest } from './tolerator-on-cluster.js';

/** The label that puts a Node in kwok's hands (`--manage-nodes-with-label-selector`). */
export const KWOK_MANAGED_LABEL = 'kwok.tolerator.test/managed';
/** Upstream's chaos Stage node-not-ready acts on Nodes with this label set to "true". */
export const NOT_READY_STAGE_LABEL = 'node-not-ready.stage.kwok.x-k8s.io';
/** tools/kwok/stages/node-condition.yaml sets the condition this label names True. */
export const CONDITION_STAGE_LABEL = 'condition.kwok.tolerator.test/true';

/**
 * kwok's --node-lease-duration-seconds for the suites. kwok renews a Lease every duration/4
 * (±4 %), as the kubelet does (its 40 s default renews every 10 s): 8 s renews every 2 s, so
 * the node lifecycle controller's grace period (control-plane.ts: nodeLifecycleForKwok) can be
 * seconds, not the 50 s a real cluster waits, and still span several renewals.
 */
export const KWOK_LEASE_DURATION_SECONDS = 8;

/**
 * kube-controller-manager's node lifecycle periods for kwok's nodes (control-plane.ts
 * `nodeLifecycle`), scaled from upstream's defaults as the lease is: upstream's grace period, 50 s,
 * is five of the kubelet's 10 s renewals, and kwok renews every KWOK_LEASE_DURATION_SECONDS / 4 =
 * 2 s, so 10 s; a node is Unknown after five renewals missed, not after one late on a busy
 * machine. The monitor period, upstream's 5 s, is half a renewal there: 1 s here. The eviction
 * rate stays upstream's (0.1 nodes a second: one node tainted at once, the next 10 s later), so
 * the suites fail one node at a time.
 */
export const NODE_LIFECYCLE_FOR_KWOK: NodeLifecycleOptions = {
  monitorPeriodSeconds: 1,
  monitorGracePeriodSeconds: (5 * KWOK_LEASE_DURATION_SECONDS) / 4,
};

/** The kwok binary and the Stage files it runs with. */
export interface KwokBuild {
  readonly binary: string;
  /** sigs.k8s.io/kwok's version, as tools/kwok/bin/VERSION says. */
  readonly version: string;
  /** The upstream Stages the build copied, then tolerator's own (tools/kwok/stages/). */
  readonly stages: readonly string[];
}

/**
 * The kwok build, or why it cannot be used (one line): the one `npm run kwok:build` made in
 * tools/kwok/bin, or the folder TOLERATOR_KWOK_BIN names (a build made elsewhere: then the suite
 * runner builds nothing), as TOLERATOR_CONTROL_PLANE_BIN for the control plane.
 */
export function findKwok(): KwokBuild | string {
  const dir = process.env.TOLERATOR_KWOK_BIN ?? KWOK_BIN_DIR;
  const versionFile = join(dir, 'VERSION');
  const binary = join(dir, 'kwok');
  if (!existsSync(versionFile) || !existsSync(binary)) return `kwok is not built in ${dir} (npm run kwok:build)`;
  const upstream = KWOK_UPSTREAM_STAGES.map((stage) => join(dir, 'stages', stageFileName(stage)));
  const absent = upstream.filter((file) => !existsSync(file));
  if (absent.length > 0) return `${dir} lacks ${absent.length} stage files: rebuild with npm run kwok:build -- --force`;
  const ownDir = join(REPO_ROOT, 'tools', 'kwok', 'stages');
  const own = readdirSync(ownDir)
    .filter((file) => file.endsWith('.yaml'))
    .sort()
    .map((file) => join(ownDir, file));
  return { binary, version: readFileSync(versionFile, 'utf8').trim(), stages: [...upstream, ...own] };
}

/**
 * The `skip` option of a suite that needs the control plane and kwok: false when both are built,
 * else the reason. With TOLERATOR_REQUIRE_CONTROL_PLANE=1 a missing build throws instead.
 */
export function skipWithoutKwok(): string | false {
  const plane = findControlPlane();
  const kwok = findKwok();
  const missing = [plane, kwok].filter((found): found is string => typeof found === 'string');
  if (missing.length === 0) return false;
  if (REQUIRE_CONTROL_PLANE) throw new Error(`TOLERATOR_REQUIRE_CONTROL_PLANE=1 but ${missing.join('; ')}`);
  return `${missing.join('; ')}: skipped (TOLERATOR_REQUIRE_CONTROL_PLANE=1 makes this a failure)`;
}

export interface Kwok {
  readonly child: ChildProcess;
  readonly log: string;
  /** Stops kwok (SIGTERM) and waits for it to exit: its nodes stop renewing their Leases. */
  stop(): Promise<void>;
}

/**
 * Starts kwok against `plane` with the plane's cluster-admin kubeconfig, managing the Nodes that
 * carry KWOK_MANAGED_LABEL=true. Its PID is adopted by the plane's reaper and it is stopped with
 * the plane's other processes' owner: call stop() before plane.stop(), or let the reaper kill it.
 */
export async function startKwok(
  plane: ControlPlane,
  leaseDurationSeconds = KWOK_LEASE_DURATION_SECONDS,
  // Karpenter's KWOK provider labels its Nodes kwok-partition=a (karpenter.ts says why that one).
  nodeSelector = `${KWOK_MANAGED_LABEL}=true`,
): Promise<Kwok> {
  const build = findKwok();
  if (typeof build === 'string') throw new Error(build);
  const dir = join(plane.dir, 'kwok');
  mkdirSync(dir, { recursive: true });
  const log = join(plane.dir, 'logs', 'kwok.log');
  const fd = openSync(log, 'w');
  const child = spawn(
    build.binary,
    [
      `--kubeconfig=${plane.kubeconfig}`,
      ...build.stages.map((stage) => `--config=${stage}`),
      `--manage-nodes-with-label-selector=${nodeSelector}`,
      `--node-lease-duration-seconds=${leaseDurationSeconds}`,
      // No --node-port and no --server-address: kwok serves nothing (no kubelet API to fake here).
    ],
    // HOME of its own: kwok reads ~/.kwok/kwok.yaml as a config of its own besides --config.
    { stdio: ['ignore', fd, fd], env: { ...process.env, HOME: dir } },
  );
  closeSync(fd);
  plane.adopt(child);
  const exited = once(child, 'exit');
  // kwok logs "Starting" lines within a second of its start; one that exits at once (a bad
  // flag, an unreadable stage) is reported here rather than as nodes that never become Ready.
  const early = await Promise.race([exited.then(() => true), sleep(1_000).then(() => false)]);
  if (early) throw new Error(`kwok exited at start: ${readFileSync(log, 'utf8').slice(-2_000)}`);
  return {
    child,
    log,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * What every kwok node has: 4 CPUs, 16 GiB and 110 pods, as fake-node.ts's (far more than the
 * tests' pods request, so resource fit never decides). Given at registration as a kubelet gives
 * its capacity; node-initialize keeps a status.capacity/allocatable that is there.
 */
const resources = { cpu: '4', memory: '16Gi', pods: '110' } as const;

export interface KwokNodeOptions {
  readonly labels?: Readonly<Record<string, string>>;
  readonly taints?: readonly { readonly key: string; readonly value?: string; readonly effect: string }[];
}

/** A Node for kwok to manage: the kubelet's own labels and KWOK_MANAGED_LABEL, no conditions yet (kwok reports them). */
export function kwokNode(name: string, options: KwokNodeOptions = {}): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: {
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        [KWOK_MANAGED_LABEL]: 'true',
        ...options.labels,
      },
    },
    spec: options.taints === undefined ? {} : { taints: options.taints },
    status: { capacity: resources, allocatable: resources },
  };
}

export interface NodeTaint {
  readonly key: string;
  readonly value?: string;
  readonly effect: string;
  /** RFC 3339, set by the API server's client (the node lifecycle controller) for NoExecute taints. */
  readonly timeAdded?: string;
}

export interface NodeCondition {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly lastTransitionTime?: string;
}

export interface LiveNode extends Manifest {
  readonly spec: { readonly taints?: readonly NodeTaint[]; readonly unschedulable?: boolean };
  readonly status?: { readonly conditions?: readonly NodeCondition[] };
}

export async function readNode(objects: k8s.KubernetesObjectApi, name: string): Promise<LiveNode> {
  return plain(await objects.read({ apiVersion: 'v1', kind: 'Node', metadata: { name } })) as LiveNode;
}

export function conditionOf(node: LiveNode, type: string): NodeCondition | undefined {
  return node.status?.conditions?.find((condition) => condition.type === type);
}

export function taintOf(node: LiveNode, key: string, effect: string): NodeTaint | undefined {
  return node.spec.taints?.find((taint) => taint.key === key && taint.effect === effect);
}

/**
 * Creates kwok nodes and waits until each is Ready and carries no taint the cluster added on
 * registration (TaintNodesByCondition's not-ready:NoSchedule, which the node lifecycle controller
 * lifts once the node reports Ready): what a node that joined looks like.
 */
export async function createKwokNodes(
  objects: k8s.KubernetesObjectApi,
  nodes: Readonly<Record<string, KwokNodeOptions>>,
): Promise<LiveNode[]> {
  for (const [name, options] of Object.entries(nodes)) await createObject(objects, kwokNode(name, options));
  const ready: LiveNode[] = [];
  for (const [name, options] of Object.entries(nodes)) {
    let last: LiveNode | undefined;
    ready.push(
      await pollUntil(
        `kwok node ${name} Ready and without the registration taints`,
        async () => {
          last = await readNode(objects, name);
          const isReady = conditionOf(last, 'Ready')?.status === 'True';
          const taints = last.spec.taints ?? [];
          return isReady && taints.length === (options.taints?.length ?? 0) ? last : undefined;
        },
        { describe: () => JSON.stringify({ conditions: last?.status?.conditions, taints: last?.spec.taints }) },
      ),
    );
  }
  return ready;
}

async function patchNodeLabels(objects: k8s.KubernetesObjectApi, name: string, labels: Record<string, string | null>): Promise<void> {
  await objects.patch(
    asKubernetesObject({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels } }),
    undefined,
    undefined,
    undefined,
    undefined,
    k8s.PatchStrategy.MergePatch,
  );
}

/** The node reports Ready=False from now on (upstream's node-not-ready Stage), its Lease still renewed. */
export async function makeNodeNotReady(objects: k8s.KubernetesObjectApi, name: string): Promise<void> {
  await patchNodeLabels(objects, name, { [NOT_READY_STAGE_LABEL]: 'true' });
}

/** kwok lets go of the node: its Lease is never renewed again, as when a kubelet dies. */
export async function makeNodeUnreachable(objects: k8s.KubernetesObjectApi, name: string): Promise<void> {
  await patchNodeLabels(objects, name, { [KWOK_MANAGED_LABEL]: null });
}

/** The node reports `type` (MemoryPressure, DiskPressure, PIDPressure, NetworkUnavailable) True, and stays Ready. */
export async function setNodeCondition(objects: k8s.KubernetesObjectApi, name: string, type: string): Promise<void> {
  await patchNodeLabels(objects, name, { [CONDITION_STAGE_LABEL]: type });
}
