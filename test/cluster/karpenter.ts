/**
 * Karpenter on a test control plane: its CustomResourceDefinitions, installed from the build
 * (`npm run karpenter:build` copies them from the pinned module), and its KWOK cloud provider
 * (`sigs.k8s.io/karpenter/kwok`, the binary Karpenter's own end-to-end suites run) as a process on
 * this machine, pointed at the plane's API server. The provider "launches" an instance by creating
 * the Node itself, as a kubelet would register it (kwok/cloudprovider/cloudprovider.go: Create
 * starts a goroutine that creates the Node after the KWOKNodeClass's nodeRegistrationDelay), marked
 * for the KWOK controller by the label and annotation `kwok.x-k8s.io/node: fake` and the label
 * `kwok-partition: a` (addInstanceLabels, addKwokAnnotation); a kwok controller managing the nodes
 * with that label (test/cluster/kwok.ts, KARPENTER_KWOK_NODE_SELECTOR) makes them Ready, renews
 * their Leases and plays their pods. Until a node is Ready Karpenter counts its NodeClaim as not
 * initialized, and consolidates nothing.
 *
 * How it runs, from pkg/operator/options/options.go and pkg/operator/operator.go of the pinned
 * release (each is an environment variable there, read by `env.WithDefault…`):
 * - KUBECONFIG: controller-runtime's ctrl.GetConfigOrDie reads it; the identity is a client
 *   certificate of the user `karpenter` in system:masters (a test shortcut for the chart's
 *   ClusterRoles: nothing here tests Karpenter's RBAC).
 * - DISABLE_LEADER_ELECTION=true: one replica; with it on, controller-runtime would look for its
 *   namespace in the in-cluster service-account file and fail outside a pod.
 * - METRICS_PORT and HEALTH_PROBE_PORT: free ports found on 127.0.0.1. Karpenter binds them as
 *   `:PORT` (fmt.Sprintf(":%d") in NewOperator), every interface: the release has no flag for the
 *   address. Only /readyz is read, on 127.0.0.1.
 * - BATCH_IDLE_DURATION / BATCH_MAX_DURATION: how long the provisioner gathers pending pods before
 *   it decides (1 s / 10 s by default); shorter here so a test waits less, never so short that a
 *   test's pods created together are decided one by one.
 * - No webhooks: the release serves none (NodePool validation is the CRDs' CEL rules), and
 *   SYSTEM_NAMESPACE, which the chart sets, is read by nothing in it.
 * - The instance types are the provider's embedded list (kwok/cloudprovider/instance_types.json:
 *   144 types `c|s|m-<n>x-<arch>-<os>`, zones test-zone-a…d, spot and on-demand); a NodePool
 *   narrows them with requirements.
 * - One KWOKNodeClass, `default` (KWOK_NODE_CLASS_REF), which every NodePool names. Its CRD
 *   declares a default status of Ready=True, but kube-apiserver drops `status` on the create of a
 *   resource with a status subresource and never stored or served that default: the NodePools
 *   stayed NodeClassReady=False ("Node Class Readiness Unknown") and Karpenter ignored them
 *   ("ignoring nodepool, not ready"). Nothing in the provider sets the status (Karpenter's own e2e
 *   environment only ever blocks its updates), so the launcher writes Ready=True through the
 *   status subresource, as a cloud provider's node class controller would.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type * as k8s from '@kubernetes/client-node';
import { parseManifests } from '../support/rendered-manifests.js';
import { freePort, type ControlPlane } from './control-plane.js';
import { findKarpenter, type KarpenterBuild } from './karpenter-binaries.js';
import { pollUntil } from './poll.js';
import { asKubernetesObject, plain, type Manifest } from './tolerator-on-cluster.js';

/**
 * The kwok controller's node selector for Karpenter's Nodes (test/cluster/kwok.ts startKwok): the
 * KWOK provider labels every Node it creates `kwok-partition=<one of kwokPartitions>`, which is
 * ["a"] (kwok/cloudprovider/const.go, addInstanceLabels), and Karpenter's own install of kwok
 * (hack/install-kwok.sh) runs it with `--manage-nodes-with-label-selector=kwok-partition=a`.
 * A label, not the `kwok.x-k8s.io/node: fake` annotation the provider also sets: kwok filters
 * annotations on the client and would never let go of a node (kwok.ts says why).
 */
export const KARPENTER_KWOK_NODE_SELECTOR = 'kwok-partition=a';

/** The nodeClassRef of every NodePool here: the KWOKNodeClass startKarpenter makes. */
export const KWOK_NODE_CLASS_REF = { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' } as const;

export interface KarpenterOptions {
  readonly plane: ControlPlane;
  /** The admin client of the plane, to install the CRDs with. */
  readonly objects: k8s.KubernetesObjectApi;
  /** Extra environment for the process (a feature gate, a log level). */
  readonly env?: Readonly<Record<string, string>>;
}

export interface Karpenter {
  readonly build: KarpenterBuild;
  readonly log: string;
  readonly child: ChildProcess;
  /** The last `lines` of its log, for a failure message. */
  tail(lines?: number): string;
  /** SIGTERM, then SIGKILL after 10 s; resolves once it has exited. */
  stop(): Promise<void>;
}

/** The last lines of a log file. */
function tailOf(file: string, lines: number): string {
  if (!existsSync(file)) return '(no log)';
  return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
}

function status(url: string): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = httpRequest(url, { timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => {
      resolve(undefined);
    });
    req.end();
  });
}

/** Creates each CRD of the build and waits until the API server serves it (Established). */
export async function installKarpenterCrds(objects: k8s.KubernetesObjectApi, build: KarpenterBuild): Promise<string[]> {
  const names: string[] = [];
  for (const file of build.crds) {
    for (const crd of parseManifests(readFileSync(file, 'utf8'), file)) {
      await objects.create(asKubernetesObject(crd as Manifest));
      names.push(crd.metadata.name);
    }
  }
  for (const name of names) {
    await pollUntil(`CRD ${name} Established`, async () => {
      const read = plain(
        await objects.read({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name } }),
      ) as { status?: { conditions?: { type: string; status: string }[] } };
      return read.status?.conditions?.some((condition) => condition.type === 'Established' && condition.status === 'True') === true
        ? true
        : undefined;
    });
  }
  return names;
}

/** Creates the KWOKNodeClass `default` and marks it Ready through its status subresource (see above). */
async function createReadyNodeClass(plane: ControlPlane, objects: k8s.KubernetesObjectApi): Promise<void> {
  await objects.create(
    asKubernetesObject({ apiVersion: 'karpenter.kwok.sh/v1alpha1', kind: 'KWOKNodeClass', metadata: { name: KWOK_NODE_CLASS_REF.name } }),
  );
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const status = {
    conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: '', lastTransitionTime: now, observedGeneration: 1 }],
  };
  const patched = spawnSync(
    plane.binaries.path('kubectl'),
    [
      '--kubeconfig',
      plane.kubeconfig,
      'patch',
      'kwoknodeclass',
      KWOK_NODE_CLASS_REF.name,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status }),
    ],
    { encoding: 'utf8' },
  );
  if (patched.status !== 0) throw new Error(`marking the KWOKNodeClass Ready failed: ${patched.stderr}`);
}

/**
 * Installs the CRDs and the Ready KWOKNodeClass `default`, starts Karpenter's KWOK provider against `plane`, adopted by the plane's
 * reaper, and waits (at most 60 s) until its /readyz answers 200: its caches synced and the
 * NodePool and NodeClaim kinds mapped (the "crd" check in NewOperator).
 */
export async function startKarpenter(options: KarpenterOptions): Promise<Karpenter> {
  const build = findKarpenter();
  if (typeof build === 'string') throw new Error(build);
  await installKarpenterCrds(options.objects, build);
  await createReadyNodeClass(options.plane, options.objects);
  const kubeconfig = await options.plane.kubeconfigFor('karpenter', ['system:masters']);
  const [metricsPort, healthPort] = [await freePort(), await freePort()];
  const log = join(options.plane.dir, 'logs', 'karpenter.log');
  const fd = openSync(log, 'w');
  const child = spawn(build.binary, [], {
    stdio: ['ignore', fd, fd],
    env: {
      PATH: process.env.PATH ?? '',
      KUBECONFIG: kubeconfig,
      DISABLE_LEADER_ELECTION: 'true',
      METRICS_PORT: String(metricsPort),
      HEALTH_PROBE_PORT: String(healthPort),
      LOG_LEVEL: 'debug',
      // 0.5 s of quiet ends a batch (default 1 s); 5 s at most (default 10 s).
      BATCH_IDLE_DURATION: '500ms',
      BATCH_MAX_DURATION: '5s',
      ...options.env,
    },
  });
  closeSync(fd);
  options.plane.adopt(child);
  const exited = (): boolean => child.exitCode !== null || child.signalCode !== null;
  const stop = async (): Promise<void> => {
    if (exited()) return;
    const done = once(child, 'exit');
    child.kill('SIGTERM');
    if ((await Promise.race([done, sleep(10_000).then(() => 'timeout' as const)])) === 'timeout') {
      child.kill('SIGKILL');
      await done;
    }
  };
  const deadline = Date.now() + 60_000;
  while (!exited() && Date.now() < deadline) {
    if ((await status(`http://127.0.0.1:${healthPort}/readyz`)) === 200) {
      return { build, log, child, tail: (lines = 40) => tailOf(log, lines), stop };
    }
    await sleep(250);
  }
  const why = exited() ? `exited with ${String(child.exitCode ?? child.signalCode)}` : 'was not ready within 60 s';
  await stop();
  throw new Error(`karpenter ${build.version} ${why}; the end of ${log}:\n${tailOf(log, 40)}`);
}
