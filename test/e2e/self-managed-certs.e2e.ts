/**
 * The chart without cert-manager (certificates.mode=selfManaged) on a real kube-apiserver, as a
 * user installs and removes it: `helm install`, `tolerator serve` with the shipped ServiceAccount's
 * identity and the Deployment's own certificate flags, the API server calling it through the
 * chart's Service (clientConfig.service, unchanged: no url rewrite), a certificate of one minute
 * renewed and served without a restart, and `helm uninstall`, whose pre-delete hook deletes both
 * webhook configurations before anything else.
 *
 * There is no kubelet and no kube-proxy, so two things a cluster would do are done here:
 * - the Service's endpoint: kube-apiserver runs with --enable-aggregator-routing, so it dials the
 *   Service's endpoint instead of its cluster IP, and the test writes that endpoint (an Endpoints
 *   and an EndpointSlice) with this machine's first non-loopback IPv4 address, where tolerator
 *   listens (the API server refuses loopback endpoints). The TLS server name is still the
 *   Service's, `tolerator.tolerator-system.svc`, which the certificate must name;
 * - the hook Job's pod: the test runs the Job's own args as the Job's ServiceAccount, then marks
 *   the Job complete, which is what Helm waits for.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { REQUIRE_CONTROL_PLANE, skipWithoutControlPlane } from '../cluster/binaries.js';
import { startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import { pollUntil } from '../cluster/poll.js';
import {
  apiError,
  clientsFor,
  createObject,
  plain,
  stopChild,
  TOLERATOR_GROUPS,
  TOLERATOR_USER,
  type Manifest,
} from '../cluster/tolerator-on-cluster.js';
import { createApiRequest } from '../../src/kube/api-requests.js';
import { helmBinary } from '../support/helm-binary.js';
import { CHART_DIR, ROOT } from '../support/rendered-manifests.js';
import { startServe, type ServedProcess } from '../support/serve-process.js';
import type * as k8s from '@kubernetes/client-node';

/** The address the API server can be told to dial: the first non-internal IPv4 of this machine. */
function hostAddress(): string | undefined {
  for (const addresses of Object.values(networkInterfaces())) {
    for (const address of addresses ?? []) {
      if (address.family === 'IPv4' && !address.internal) return address.address;
    }
  }
  return undefined;
}

const helm = helmBinary();
const address = hostAddress();
const skip =
  skipWithoutControlPlane() ||
  ('skip' in helm ? helm.skip : false) ||
  (address === undefined ? 'no non-loopback IPv4 address: the API server refuses loopback endpoints' : false);
if (typeof skip === 'string' && REQUIRE_CONTROL_PLANE) throw new Error(`self-managed-certs.e2e.ts: ${skip}`);

const NAMESPACE = 'tolerator-system';
const SERVER_NAME = 'tolerator.tolerator-system.svc';
const memoryPressure = { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' };

/** Polls `probe` until `accept` takes its value (pollUntil, with the last value seen in the timeout's message). */
async function waitFor<T>(what: string, probe: () => Promise<T>, accept: (value: T) => boolean, timeoutMs: number): Promise<T> {
  let last: T | undefined;
  return pollUntil(
    what,
    async () => {
      last = await probe();
      return accept(last) ? last : undefined;
    },
    { timeoutMs, intervalMs: 500, describe: () => JSON.stringify(last).slice(0, 2_000) },
  );
}

describe('self-managed serving certificates on kube-apiserver', { skip }, () => {
  let dir: string;
  let plane: ControlPlane;
  let objects: k8s.KubernetesObjectApi;
  let served: ServedProcess | undefined;
  let firstLeaf: string;

  const runHelm = (args: readonly string[]) => {
    assert.ok('path' in helm);
    return spawnSync(helm.path, [...args, '--kubeconfig', plane.kubeconfig], { encoding: 'utf8', env: helmEnv() });
  };
  const helmEnv = (): NodeJS.ProcessEnv => ({
    ...process.env,
    HELM_CACHE_HOME: join(dir, 'helm', 'cache'),
    HELM_CONFIG_HOME: join(dir, 'helm', 'config'),
    HELM_DATA_HOME: join(dir, 'helm', 'data'),
  });
  const readSecret = async (): Promise<Record<string, string>> => {
    const secret = plain(
      await objects.read({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'tolerator-tls', namespace: NAMESPACE } }),
    ) as {
      data?: Record<string, string>;
    };
    return Object.fromEntries(
      Object.entries(secret.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]),
    );
  };
  const caBundles = async (): Promise<string[]> => {
    const bundles: string[] = [];
    for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
      const configuration = plain(
        await objects.read({ apiVersion: 'admissionregistration.k8s.io/v1', kind, metadata: { name: 'tolerator' } }),
      ) as { webhooks: { clientConfig: { caBundle?: string } }[] };
      for (const webhook of configuration.webhooks)
        bundles.push(Buffer.from(webhook.clientConfig.caBundle ?? '', 'base64').toString('utf8'));
    }
    return bundles;
  };
  /** A dry-run pod in a reviewed namespace, as the API server stores it after both webhooks (tolerator's memory-pressure toleration in it). */
  const dryRunPod = async (): Promise<Manifest> =>
    createObject(
      objects,
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { generateName: 'probe-', namespace: 'apps' },
        // Burstable: tolerator adds memory-pressure to every pod but a BestEffort one.
        spec: { containers: [{ name: 'app', image: 'registry.example/app:1', resources: { requests: { cpu: '100m' } } }] },
      },
      'All',
    );
  /** The certificate tolerator presents to a client that dials the endpoint and names the Service, verified against `ca`. */
  const servedCertificate = (ca: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const socket = connect({ host: address, port: served?.port ?? 0, servername: SERVER_NAME, ca }, () => {
        const peer = socket.getPeerX509Certificate();
        socket.end();
        if (peer === undefined) reject(new Error('no peer certificate'));
        else resolve(peer.toString());
      });
      socket.on('error', reject);
    });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-self-managed-'));
    plane = await startControlPlane({ dir, temporaryDir: true, apiserverArgs: ['--enable-aggregator-routing=true'] });
    ({ objects } = clientsFor(plane.kubeconfig));
  });

  after(async () => {
    if (served !== undefined) await stopChild(served.child, 'SIGKILL');
    await plane.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('installs with helm: an empty Secret, the grants, and webhooks without a caBundle', () => {
    const install = runHelm([
      'install',
      'tolerator',
      CHART_DIR,
      '--namespace',
      NAMESPACE,
      '--create-namespace',
      '--set',
      'certificates.mode=selfManaged',
      // One minute, renewed at 45 s: the renewal happens within this test.
      '--set',
      'certificates.selfManaged.validity=1m',
      '--set',
      'certificates.selfManaged.caValidity=1h',
    ]);
    assert.equal(install.status, 0, install.stderr);
  });

  it('serves with the Deployment’s certificate flags: it fills the Secret and writes the CA into every webhook', async () => {
    const deployment = plain(
      await objects.read({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'tolerator', namespace: NAMESPACE } }),
    ) as { spec: { template: { spec: { containers: { args: string[] }[] } } } };
    const args = deployment.spec.template.spec.containers[0]!.args;
    // Its --certificate-* flags, each with its value (`--flag=value`, or `--flag value`).
    const flags = args.flatMap((arg, index) =>
      !arg.startsWith('--certificate-') ? [] : arg.includes('=') ? [arg] : [arg, args[index + 1] ?? ''],
    );
    assert.ok(flags.includes('--certificate-secret'), args.join(' '));
    const identity = await plane.kubeconfigFor(TOLERATOR_USER, TOLERATOR_GROUPS);
    served = await startServe(['--kubeconfig', identity, ...flags, '--bind-address', address!, '--shutdown-delay', '0']);
    plane.adopt(served.child);

    const secret = await readSecret();
    const ca = new X509Certificate(secret['ca.crt']!);
    const leaf = new X509Certificate(secret['tls.crt']!);
    assert.ok(ca.ca);
    assert.ok(leaf.verify(ca.publicKey));
    assert.equal(leaf.subjectAltName, `DNS:${SERVER_NAME}, DNS:${SERVER_NAME}.cluster.local`);
    firstLeaf = secret['tls.crt']!;
    // Every webhook: the mutating one, the validating one on pods, the one on Karpenter NodePools
    // and the one on DeviceTaintRules.
    assert.deepEqual(await caBundles(), [secret['ca.crt'], secret['ca.crt'], secret['ca.crt'], secret['ca.crt']]);
  });

  it('is called by the API server through the chart’s Service, and its certificate verifies for the Service’s name', async () => {
    const port = served!.port;
    await createObject(objects, {
      apiVersion: 'v1',
      kind: 'Endpoints',
      metadata: { name: 'tolerator', namespace: NAMESPACE },
      subsets: [{ addresses: [{ ip: address }], ports: [{ name: 'https', port, protocol: 'TCP' }] }],
    });
    await createObject(objects, {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'tolerator-manual', namespace: NAMESPACE, labels: { 'kubernetes.io/service-name': 'tolerator' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: [address], conditions: { ready: true } }],
      ports: [{ name: 'https', port, protocol: 'TCP' }],
    });
    await createObject(objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'apps' } });
    // The webhook configurations and endpoints reach the admission chain through informers.
    const stored = await waitFor(
      'a dry-run pod mutated by tolerator',
      async () => {
        try {
          return await dryRunPod();
        } catch (error) {
          return apiError(error);
        }
      },
      (answer) => 'spec' in answer && JSON.stringify((answer.spec as { tolerations?: unknown }).tolerations).includes(memoryPressure.key),
      60_000,
    );
    assert.deepEqual(
      ((stored as Manifest).spec as { tolerations: unknown[] }).tolerations.find(
        (toleration) => (toleration as { key?: string }).key === memoryPressure.key,
      ),
      memoryPressure,
    );
  });

  it('renews the one-minute certificate at 45 s, serves the new one without a restart, and the API server keeps calling it', async () => {
    const renewed = await waitFor('a renewed tls.crt in the Secret', readSecret, (secret) => secret['tls.crt'] !== firstLeaf, 90_000);
    await waitFor(
      'tolerator to log the reload',
      () => Promise.resolve(served!.logs.filter((entry) => entry.msg === 'serving certificate reloaded').length),
      (count) => count >= 1,
      10_000,
    );
    assert.equal(served!.child.exitCode, null, 'the same process serves');
    const presented = await servedCertificate(renewed['ca.crt']!);
    assert.equal(presented, new X509Certificate(renewed['tls.crt']!).toString());
    assert.equal(renewed['ca.crt'], (await caBundles())[0], 'the CA, and so the caBundle, stay');
    // Past the first certificate's end: a new connection could only verify the renewed one.
    const firstEnd = new Date(new X509Certificate(firstLeaf).validTo).getTime();
    await waitFor(
      'the first certificate to expire',
      () => Promise.resolve(Date.now()),
      (now) => now > firstEnd + 1_000,
      90_000,
    );
    assert.notEqual(await servedCertificate(renewed['ca.crt']!), new X509Certificate(firstLeaf).toString());
    const stored = await dryRunPod();
    assert.match(JSON.stringify(stored.spec), /node\.kubernetes\.io\/memory-pressure/);
  });

  it('uninstalls: the pre-delete hook deletes both webhook configurations while the Deployment still exists, and nothing is left', async () => {
    assert.ok('path' in helm);
    const uninstall = spawn(
      helm.path,
      ['uninstall', 'tolerator', '--namespace', NAMESPACE, '--timeout', '3m', '--kubeconfig', plane.kubeconfig],
      {
        env: helmEnv(),
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let helmOutput = '';
    uninstall.stdout.on('data', (chunk: Buffer) => (helmOutput += chunk.toString()));
    uninstall.stderr.on('data', (chunk: Buffer) => (helmOutput += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => uninstall.once('exit', resolve));
    try {
      const job = await waitFor(
        'helm to create the pre-delete Job',
        async () => {
          try {
            return plain(
              await objects.read({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'tolerator-uninstall', namespace: NAMESPACE } }),
            ) as Manifest & { spec: { template: { spec: { serviceAccountName: string; containers: { args: string[] }[] } } } };
          } catch {
            return undefined;
          }
        },
        (found) => found !== undefined,
        60_000,
      );
      // The Job's pod, as a kubelet would run it: its own args, as its ServiceAccount.
      const pod = job!.spec.template.spec;
      const hookIdentity = await plane.kubeconfigFor(`system:serviceaccount:${NAMESPACE}:${pod.serviceAccountName}`, [
        'system:serviceaccounts',
        `system:serviceaccounts:${NAMESPACE}`,
      ]);
      const run = await waitFor(
        'the hook to be granted its deletions',
        () =>
          Promise.resolve(
            spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts', ...pod.containers[0]!.args, '--kubeconfig', hookIdentity], {
              cwd: ROOT,
              encoding: 'utf8',
            }),
          ),
        (result) => result.status === 0,
        30_000,
      );
      assert.match(run.stdout, /validatingwebhookconfigurations\/tolerator deleted/);
      assert.match(run.stdout, /mutatingwebhookconfigurations\/tolerator deleted/);
      await objects.read({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'tolerator', namespace: NAMESPACE } });
      // What the Job controller would write once the pod succeeded, through the status subresource.
      const now = new Date().toISOString();
      const request = createApiRequest(clientsFor(plane.kubeconfig).kubeconfig);
      const statusPath = `/apis/batch/v1/namespaces/${NAMESPACE}/jobs/tolerator-uninstall/status`;
      const current = (await request('GET', statusPath)).body as Manifest;
      const written = await request('PUT', statusPath, {
        ...current,
        status: {
          startTime: now,
          completionTime: now,
          succeeded: 1,
          conditions: [
            { type: 'SuccessCriteriaMet', status: 'True', lastProbeTime: now, lastTransitionTime: now },
            { type: 'Complete', status: 'True', lastProbeTime: now, lastTransitionTime: now },
          ],
        },
      });
      assert.equal(written.status, 200, JSON.stringify(written.body));
    } catch (error) {
      uninstall.kill('SIGKILL');
      throw error;
    }
    assert.equal(await exited, 0, helmOutput);
    for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
      const list = plain(await objects.list('admissionregistration.k8s.io/v1', kind)) as { items: unknown[] };
      assert.deepEqual(list.items, [], `${kind}: none left`);
    }
    await assert.rejects(readSecret(), (error: unknown) => apiError(error).code === 404);
  });
});
