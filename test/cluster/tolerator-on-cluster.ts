/**
 * tolerator registered in a real API server exactly as a user installs it: the webhook
 * configurations and RBAC rendered from deploy/ (`kubectl kustomize`) or from the Helm chart
 * (`helm template`), with only each webhook's `clientConfig` changed from the in-cluster Service
 * to `url: https://127.0.0.1:PORT/...` and a `caBundle` (envtest's rewrite: there is no
 * kube-proxy to reach a Service). Every rule, namespace selector, matchCondition, failure policy
 * and timeout is the shipped one. tolerator runs as `tolerator serve` on loopback with a
 * certificate this run's CA signs (IP SAN 127.0.0.1) and the identity of the shipped service
 * account, so the shipped ClusterRole is what it reads the cluster with.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { helmBinary } from '../support/helm-binary.js';
import { CHART_DIR, parseManifests, renderKustomize, ROOT, type KubeObject } from '../support/rendered-manifests.js';
import { startServe, type ServedProcess } from '../support/serve-process.js';
import { startControlPlane, type ControlPlane, type ControlPlaneOptions } from './control-plane.js';
import { signCertificate, createCertificateAuthority, type Pair } from './pki.js';

export type WebhookSource = 'kustomize' | 'helm';

/** The user the shipped ServiceAccount authenticates as (for a kubeconfig of tolerator's identity: ControlPlane.kubeconfigFor). */
export const TOLERATOR_USER = 'system:serviceaccount:tolerator-system:tolerator';
export const TOLERATOR_GROUPS = ['system:serviceaccounts', 'system:serviceaccounts:tolerator-system'];

/** Objects as the API server returns them through @kubernetes/client-node, made plain JSON for deepEqual. */
export function plain(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value)) as unknown;
}

/** A Kubernetes object as JSON: what the tests write and what they read back. */
export interface Manifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: Record<string, unknown>;
  readonly [field: string]: unknown;
}

/** client-node types objects as its generated classes; a Manifest fits their optional fields. */
export function asKubernetesObject(object: Manifest): k8s.KubernetesObject {
  return object;
}

/** Creates `object` (a dry run with `dryRun: 'All'`) and returns what the API server stored, as plain JSON. */
export async function createObject(objects: k8s.KubernetesObjectApi, object: Manifest, dryRun?: 'All'): Promise<Manifest> {
  return plain(await objects.create(asKubernetesObject(object), undefined, dryRun)) as Manifest;
}

/**
 * The shipped webhooks and the RBAC that tolerator's identity needs, rendered from `source`: with
 * `overlay`, kustomize's deploy/overlays/OVERLAY (or the chart with `helmValues`).
 */
export function renderShipped(source: WebhookSource, overlay?: string, helmValues: readonly string[] = []): KubeObject[] {
  if (source === 'kustomize') return renderKustomize(join(ROOT, 'deploy', ...(overlay === undefined ? [] : ['overlays', overlay])));
  const helm = helmBinary();
  if (!('path' in helm)) throw new Error(helm.skip);
  const run = spawnSync(
    helm.path,
    ['template', 'tolerator', CHART_DIR, '--namespace', 'tolerator-system', '--kube-version', '1.35.0', ...helmValues],
    {
      encoding: 'utf8',
    },
  );
  if (run.status !== 0) throw new Error(`helm template failed:\n${run.stderr}`);
  // A chart renders no Namespace for its release: `helm install --namespace tolerator-system
  // --create-namespace` makes it, and so must this install before the ServiceAccount in it.
  const namespace: KubeObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'tolerator-system' } };
  return [namespace, ...parseManifests(run.stdout, 'helm template')];
}

const INSTALLED_KINDS = new Set([
  'Namespace',
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
]);

/** The rendered objects this suite installs, webhooks pointed at `url` (no trailing slash) with `caBundle`. */
export function webhooksAt(objects: readonly KubeObject[], url: string, ca: string): Manifest[] {
  return objects
    .filter((object) => INSTALLED_KINDS.has(object.kind))
    .map((object) => {
      const copy = structuredClone(object) as Manifest & { webhooks?: Record<string, unknown>[] };
      if (copy.webhooks !== undefined) {
        // cert-manager's cainjector would fill caBundle; nothing else about the webhook changes.
        delete (copy.metadata as { annotations?: unknown }).annotations;
        for (const webhook of copy.webhooks) {
          const service = (webhook.clientConfig as { service: { path: string } }).service;
          webhook.clientConfig = { url: `${url}${service.path}`, caBundle: Buffer.from(ca).toString('base64') };
        }
      }
      return copy;
    });
}

export interface ToleratorOnClusterOptions {
  /**
   * A temporary folder of its own for this suite: the control plane's files and tolerator's. It is
   * removed, and every process killed, if the calling process dies without stop() (reaper.ts).
   */
  readonly dir: string;
  readonly plane?: Omit<ControlPlaneOptions, 'dir'>;
  /** Further `tolerator serve` flags (--policies, --admission-config, --enable-plugins, …). */
  readonly serveArgs?: readonly string[];
  readonly webhooks?: WebhookSource;
  /** Render deploy/overlays/OVERLAY rather than deploy/ (kustomize), e.g. `events`. */
  readonly overlay?: string;
  /** With `webhooks: 'helm'`: further `helm template` arguments (`--set events.enabled=true`). */
  readonly helmValues?: readonly string[];
}

export interface ToleratorOnCluster {
  readonly plane: ControlPlane;
  readonly kubeconfig: k8s.KubeConfig;
  readonly objects: k8s.KubernetesObjectApi;
  /** The running `tolerator serve` (undefined while stopped by stopTolerator). */
  tolerator(): ServedProcess | undefined;
  /** The serving certificate and key files tolerator watches, and the CA in the webhooks' caBundle. */
  readonly serving: { readonly cert: string; readonly key: string; readonly ca: Pair };
  /**
   * The webhooks (sorted) that logged a review of the object `name` with `operation`, waiting up
   * to 5 s for both: tolerator's log lines reach this process through a pipe, after its answers.
   */
  reviewedSides(name: string, operation: string): Promise<string[]>;
  /** Stops tolerator (SIGTERM) and waits for it to exit. */
  stopTolerator(): Promise<void>;
  /** Starts tolerator again on the same port, and waits for it to serve; `serveArgs` replace the suite's. */
  startTolerator(serveArgs?: readonly string[]): Promise<void>;
  /** Stops tolerator and the control plane. */
  stop(): Promise<void>;
}

/** The KubeConfig and API clients for a kubeconfig file. */
export function clientsFor(file: string): { kubeconfig: k8s.KubeConfig; objects: k8s.KubernetesObjectApi } {
  const kubeconfig = new k8s.KubeConfig();
  kubeconfig.loadFromFile(file);
  return { kubeconfig, objects: k8s.KubernetesObjectApi.makeApiClient(kubeconfig) };
}

/** The HTTP status of a client-node failure, and the Status object the API server sent with it. */
export function apiError(error: unknown): {
  code: number;
  status: { reason?: string; message?: string; code?: number; details?: unknown };
} {
  if (error instanceof k8s.ApiException) {
    const body = typeof error.body === 'string' ? error.body : JSON.stringify(error.body);
    let status: Record<string, unknown> = {};
    try {
      status = JSON.parse(body) as Record<string, unknown>;
    } catch {
      status = { message: body };
    }
    return { code: error.code, status };
  }
  throw error;
}

/** The rejection of `promise`, which must fail: its code and Status. */
export async function refusal(promise: Promise<unknown>): Promise<ReturnType<typeof apiError>> {
  try {
    await promise;
  } catch (error) {
    return apiError(error);
  }
  throw new Error('the request was admitted');
}

export async function startToleratorOnCluster(options: ToleratorOnClusterOptions): Promise<ToleratorOnCluster> {
  const plane = await startControlPlane({ dir: options.dir, temporaryDir: true, ...options.plane });
  let served: ServedProcess | undefined;
  try {
    const admin = clientsFor(plane.kubeconfig);
    const dir = join(options.dir, 'tolerator');
    mkdirSync(dir, { recursive: true });
    const ca = await createCertificateAuthority('tolerator-webhook-ca');
    const leaf = await signCertificate(ca, { commonName: 'tolerator', ips: ['127.0.0.1'], dnsNames: ['localhost'], usage: 'server' });
    const serving = { cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key'), ca };
    writeFileSync(serving.cert, leaf.cert);
    writeFileSync(serving.key, leaf.key, { mode: 0o600 });
    const identity = await plane.kubeconfigFor(TOLERATOR_USER, TOLERATOR_GROUPS);

    const serve = async (port: number, serveArgs: readonly string[] = options.serveArgs ?? []): Promise<ServedProcess> => {
      const process = await startServe([
        '--kubeconfig',
        identity,
        '--tls-cert-file',
        serving.cert,
        '--tls-private-key-file',
        serving.key,
        '--shutdown-delay',
        '0',
        '--shutdown-grace',
        '5',
        ...serveArgs,
        // startServe passes --port 0 first; a later --port wins (flags are last-wins, as pflag's).
        ...(port === 0 ? [] : ['--port', String(port)]),
      ]);
      plane.adopt(process.child);
      return process;
    };

    // RBAC and the namespace first, and in force, so tolerator's informers can list from the
    // start and its first read of the cluster's feature gates (GET /metrics) is not refused (it
    // would decide from /version's defaults until its next read, 5 min later); the webhooks once
    // it serves, since their URL holds its port.
    const rendered = renderShipped(options.webhooks ?? 'kustomize', options.overlay, options.helmValues);
    const installed = webhooksAt(rendered, 'https://127.0.0.1:0', ca.cert);
    const isWebhook = (object: Manifest): boolean => object.kind.endsWith('WebhookConfiguration');
    for (const object of installed.filter((object) => !isWebhook(object))) await install(admin.objects, object);
    await waitForGrant(identity);
    served = await serve(0);
    const port = served.port;
    for (const object of webhooksAt(rendered, `https://127.0.0.1:${port}`, ca.cert).filter(isWebhook)) {
      await install(admin.objects, object);
    }
    await waitForWebhooks(admin.objects, port, ca.cert);

    return {
      plane,
      ...admin,
      serving,
      tolerator: () => served,
      async reviewedSides(name, operation) {
        const deadline = Date.now() + 5_000;
        for (;;) {
          const sides = [
            ...new Set(
              (served?.logs ?? [])
                .filter((entry) => entry.msg === 'admission review' && entry.name === name && entry.operation === operation)
                .map((entry) => String(entry.webhook)),
            ),
          ].sort();
          if (sides.length >= 2 || Date.now() > deadline) return sides;
          await sleep(100);
        }
      },
      async stopTolerator() {
        const current = served;
        served = undefined;
        if (current !== undefined) await stopChild(current.child, 'SIGTERM');
      },
      async startTolerator(serveArgs) {
        if (served !== undefined) return;
        served = await serve(port, serveArgs);
      },
      async stop() {
        const current = served;
        served = undefined;
        if (current !== undefined) await stopChild(current.child, 'SIGKILL');
        await plane.stop();
      },
    };
  } catch (error) {
    if (served !== undefined) await stopChild(served.child, 'SIGKILL');
    await plane.stop();
    throw error;
  }
}

/**
 * Sends `signal` to `child` and resolves once it has exited, at once if it already has. A child
 * that died of a signal has `exitCode` null (its `signalCode` says which), and its 'exit' event
 * is past: waiting for another would never end, and the test file with it.
 */
export async function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  await exited;
}

/** GET `path` on tolerator's port (its /metrics), trusting the webhooks' CA. */
export function getFromTolerator(port: number, ca: string, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port, path, ca, timeout: 5_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        resolve(Buffer.concat(chunks).toString('utf8'));
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** The webhooks (`mutate`, `validate`) tolerator's /metrics counts reviews of, at any log level. */
export async function reviewedWebhooks(port: number, ca: string): Promise<Set<string>> {
  const text = await getFromTolerator(port, ca, '/metrics');
  const sides = new Set<string>();
  for (const match of text.matchAll(/^tolerator_admission_reviews_total\{[^}]*webhook="(\w+)"[^}]*\} (\d+)/gm)) {
    if (Number(match[2]) > 0) sides.add(match[1]!);
  }
  return sides;
}

/**
 * Creates `object`, or replaces the one already there: a plane restarted on the same etcd data
 * (a gate turned off under stored objects) still holds the last run's installation.
 */
async function install(objects: k8s.KubernetesObjectApi, object: Manifest): Promise<void> {
  try {
    await objects.create(asKubernetesObject(object));
  } catch (error) {
    if (!(error instanceof k8s.ApiException) || error.code !== 409) throw error;
    const { name, namespace } = object.metadata as { name: string; namespace?: string };
    const current = plain(
      await objects.read({ apiVersion: object.apiVersion, kind: object.kind, metadata: { name, namespace } }),
    ) as Manifest;
    await objects.replace(
      asKubernetesObject({ ...object, metadata: { ...object.metadata, resourceVersion: current.metadata.resourceVersion } }),
    );
  }
}

/**
 * The RBAC authorizer reads ClusterRoleBindings through an informer, a moment after they are
 * created: polls (at most 30 s) until tolerator's identity may GET /metrics, the last grant its
 * start needs.
 */
async function waitForGrant(identity: string): Promise<void> {
  const { objects } = clientsFor(identity);
  const review: Manifest = {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectAccessReview',
    metadata: {},
    spec: { nonResourceAttributes: { path: '/metrics', verb: 'get' } },
  };
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const answer = (await createObject(objects, review)) as Manifest & { status?: { allowed?: boolean } };
    if (answer.status?.allowed === true) return;
    await sleep(100);
  }
  throw new Error("tolerator's identity was not granted GET /metrics within 30 s of its ClusterRoleBinding");
}

/**
 * A new webhook configuration reaches the API server's admission chain through an informer, a
 * moment after it is created. Polls with a dry-run pod in `default` until tolerator's metrics
 * count a review from both webhooks (at most 60 s).
 */
async function waitForWebhooks(objects: k8s.KubernetesObjectApi, port: number, ca: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  const probe: Manifest = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { generateName: 'webhook-probe-', namespace: 'default' },
    spec: { containers: [{ name: 'c', image: 'probe' }] },
  };
  while (Date.now() < deadline) {
    await createObject(objects, probe, 'All').catch(() => undefined);
    const sides = await reviewedWebhooks(port, ca).catch(() => new Set<string>());
    if (sides.has('mutate') && sides.has('validate')) return;
    await sleep(200);
  }
  throw new Error('the webhooks were not called within 60 s of being registered');
}
