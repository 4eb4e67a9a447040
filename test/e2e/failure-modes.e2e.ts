/**
 * The failure modes the README states ("When the webhook is down", "Install on a cluster"),
 * through a real kube-apiserver with the shipped webhooks: what a user's `kubectl` gets while
 * tolerator is stopped and once it is back, what the mutating webhook's `failurePolicy: Ignore`
 * does when only its call fails, a serving certificate rotated on disk while pods are being
 * created, and the namespaces the webhooks' `namespaceSelector` never sends.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from 'node:tls';
import { isDeepStrictEqual } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { skipWithoutControlPlane } from '../cluster/binaries.js';
import { pollUntil } from '../cluster/poll.js';
import { freePort } from '../cluster/control-plane.js';
import { signCertificate } from '../cluster/pki.js';
import {
  apiError,
  asKubernetesObject,
  createObject,
  plain,
  refusal,
  startToleratorOnCluster,
  type Manifest,
  type ToleratorOnCluster,
} from '../cluster/tolerator-on-cluster.js';

const skip = skipWithoutControlPlane();

/** What the API server's in-tree DefaultTolerationSeconds (on by default) adds by itself. */
const notReady = { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 };
const unreachable = { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 };
/** What only tolerator adds (PodTolerationRestriction's, for a pod that is not BestEffort). */
const memoryPressure = { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' };

const reviewed = 'apps';
const optedOut = 'quiet';

/**
 * A Burstable pod: the kind that gets memory-pressure from tolerator and from nothing else. Its
 * security context passes Pod Security `restricted`, which `tolerator-system` enforces (as
 * deploy/ labels it).
 */
function pod(name: string, namespace: string): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'app',
          image: 'registry.example/app:1',
          resources: { requests: { cpu: '10m' } },
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        },
      ],
    },
  };
}

function tolerationsOf(object: Manifest): unknown {
  return (object.spec as { tolerations?: unknown }).tolerations;
}

/** `Internal error occurred: failed calling webhook "NAME": failed to call webhook: Post "URL": CAUSE`, kube-apiserver's text. */
function failedCalling(webhook: string, path: string, cause: string): RegExp {
  return new RegExp(
    `^Internal error occurred: failed calling webhook "${webhook}": failed to call webhook: Post "https://127\\.0\\.0\\.1:\\d+${path}\\?timeout=5s": ${cause}$`,
  );
}

describe('failure modes through kube-apiserver', { skip }, () => {
  let cluster: ToleratorOnCluster;
  let dir: string;
  let counter = 0;
  const unique = (prefix: string): string => `${prefix}-${++counter}`;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-failure-'));
    cluster = await startToleratorOnCluster({ dir });
    await createObject(cluster.objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: reviewed } });
    await createObject(cluster.objects, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: optedOut, labels: { 'tolerator.dev/ignore': 'true' } },
    });
  });
  after(async () => {
    await (cluster as ToleratorOnCluster | undefined)?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Whether tolerator has logged a review of a pod named `name` (either webhook). */
  const reviewedByTolerator = (name: string): boolean =>
    (cluster.tolerator()?.logs ?? []).some((entry) => entry.msg === 'admission review' && entry.name === name);

  describe('tolerator stopped', () => {
    before(async () => {
      await cluster.stopTolerator();
    });

    it('a pod in any reviewed namespace is refused by the validating webhook (Fail) with the API server\'s "failed calling webhook" error', async (t) => {
      const { code, status } = await refusal(createObject(cluster.objects, pod(unique('down'), reviewed)));
      t.diagnostic(`kube-apiserver: ${code} ${status.reason ?? ''}: ${status.message ?? ''}`);
      assert.equal(code, 500);
      assert.equal(status.code, 500);
      assert.equal(status.reason, 'InternalError');
      // The mutating webhook's call failed first and was ignored (failurePolicy Ignore): the
      // error is the validating webhook's. `apps` is no tenant namespace: the refusal is not
      // tenancy's, every reviewed namespace gets it.
      assert.match(
        status.message ?? '',
        failedCalling('validate.tolerator.dev', '/validate', 'dial tcp 127\\.0\\.0\\.1:\\d+: connect: connection refused'),
      );
    });

    it('a workload in a reviewed namespace is refused the same way (the validating webhook reviews Deployments)', async () => {
      const deployment: Manifest = {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: unique('web'), namespace: reviewed },
        spec: {
          selector: { matchLabels: { app: 'web' } },
          template: { metadata: { labels: { app: 'web' } }, spec: pod('t', reviewed).spec as Record<string, unknown> },
        },
      };
      const { code, status } = await refusal(createObject(cluster.objects, deployment));
      assert.equal(code, 500);
      assert.match(status.message ?? '', failedCalling('validate.tolerator.dev', '/validate', 'dial tcp .*connection refused'));
    });

    it("pods in kube-system and in a tolerator.dev/ignore=true namespace are still created, with the API server's defaults only", async () => {
      for (const namespace of ['kube-system', optedOut]) {
        const stored = await createObject(cluster.objects, pod(unique('while-down'), namespace));
        assert.deepEqual(tolerationsOf(stored), [notReady, unreachable], namespace);
      }
    });

    after(async () => {
      await cluster.startTolerator();
    });
  });

  it("tolerator back: pods flow again, with tolerator's defaults, reviewed by both webhooks", async () => {
    const name = await pollUntil(
      'a pod admitted after tolerator restarted',
      async () => {
        const candidate = unique('back');
        await createObject(cluster.objects, pod(candidate, reviewed));
        return candidate;
      },
      { timeoutMs: 30_000, retryOnError: true },
    );
    const stored = plain(
      await cluster.objects.read({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: reviewed } }),
    ) as Manifest;
    assert.deepEqual(tolerationsOf(stored), [notReady, unreachable, memoryPressure]);
    assert.deepEqual(await cluster.reviewedSides(name, 'CREATE'), ['mutate', 'validate']);
  });

  it("only the mutating call failing (failurePolicy Ignore): the pod is admitted without tolerator's defaults", async () => {
    // The one way to see Ignore at work: both webhooks are one process, so "tolerator down"
    // fails both calls and the validating one refuses. Here the mutating webhook alone points at a
    // port nothing listens on (as a Service without endpoints for /mutate would be).
    const webhooks = await cluster.objects.read({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: 'tolerator' },
    });
    const original = plain(webhooks) as Manifest & { webhooks: { clientConfig: { url: string } }[] };
    const dead = structuredClone(original);
    dead.webhooks[0]!.clientConfig.url = `https://127.0.0.1:${await freePort()}/mutate`;
    await cluster.objects.replace(asKubernetesObject(dead));
    try {
      // The API server's webhook informer takes the change a moment later: poll with dry runs.
      const stored = await pollUntil(
        'a pod admitted without memory-pressure',
        async () => {
          const result = await createObject(cluster.objects, pod(unique('mutate-down'), reviewed), 'All');
          return isDeepStrictEqual(tolerationsOf(result), [notReady, unreachable]) ? result : undefined;
        },
        { timeoutMs: 30_000, retryOnError: true },
      );
      assert.deepEqual(tolerationsOf(stored), [notReady, unreachable]);
      // Validated all the same: only tolerator's validating webhook logged it.
      assert.deepEqual(await cluster.reviewedSides(stored.metadata.name as string, 'CREATE'), ['validate']);
    } finally {
      const current = plain(
        await cluster.objects.read({
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'MutatingWebhookConfiguration',
          metadata: { name: 'tolerator' },
        }),
      ) as Manifest & { webhooks: { clientConfig: { url: string } }[] };
      current.webhooks[0]!.clientConfig.url = original.webhooks[0]!.clientConfig.url;
      await cluster.objects.replace(asKubernetesObject(current));
      await pollUntil(
        'the mutating webhook restored',
        async () => {
          const result = await createObject(cluster.objects, pod(unique('mutate-back'), reviewed), 'All');
          return isDeepStrictEqual(tolerationsOf(result), [notReady, unreachable, memoryPressure]) ? true : undefined;
        },
        { timeoutMs: 30_000, retryOnError: true },
      );
    }
  });

  describe('the serving certificate rotated on disk while pods are created', () => {
    /**
     * Dry-run creates from `workers` concurrent clients until `stop` resolves: every outcome, with
     * when it ended. Dry runs are admitted, defaulted, validated and reviewed by both webhooks
     * (sideEffects None), and leave etcd as it was.
     */
    async function createInLoop(workers: number, stop: Promise<void>): Promise<{ at: number; error?: string }[]> {
      const outcomes: { at: number; error?: string }[] = [];
      let stopped = false;
      void stop.then(() => (stopped = true));
      await Promise.all(
        Array.from({ length: workers }, async () => {
          while (!stopped) {
            try {
              await createObject(cluster.objects, pod(unique('rotating'), reviewed), 'All');
              outcomes.push({ at: Date.now() });
            } catch (error) {
              const { code, status } = apiError(error);
              outcomes.push({ at: Date.now(), error: `${code}: ${status.message ?? ''}` });
            }
          }
        }),
      );
      return outcomes;
    }

    /** The certificate a new TLS connection to tolerator is served, as the API server's next dial sees it. */
    async function servedFingerprint(): Promise<string> {
      const port = cluster.tolerator()!.port;
      return new Promise((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port, ca: cluster.serving.ca.cert }, () => {
          resolve(socket.getPeerX509Certificate()!.fingerprint256);
          socket.end();
        });
        socket.on('error', reject);
      });
    }

    /**
     * Rotates with `write` while 4 clients create pods, then sends a burst from 16 (which needs new
     * connections); asserts that nothing failed and that a new connection gets the new certificate.
     */
    async function rotateUnderLoad(write: (cert: string, key: string) => Promise<void> | void): Promise<string> {
      const next = await signCertificate(cluster.serving.ca, {
        commonName: 'tolerator',
        ips: ['127.0.0.1'],
        dnsNames: ['localhost'],
        usage: 'server',
      });
      const logs = cluster.tolerator()!.logs;
      const reloadsBefore = logs.filter((entry) => entry.msg === 'serving certificate reloaded').length;
      let endLoop!: () => void;
      const loop = createInLoop(4, new Promise<void>((resolve) => (endLoop = resolve)));
      // Let the loop run on the old certificate first (connections open, keep-alive).
      await sleep(2_000);
      const rotatedAt = Date.now();
      await write(next.cert, next.key);
      await pollUntil(
        'tolerator logging the reload',
        () => (logs.filter((entry) => entry.msg === 'serving certificate reloaded').length > reloadsBefore ? true : undefined),
        { timeoutMs: 20_000, retryOnError: true },
      );
      const reloadedAt = Date.now();
      // More concurrent requests than the loop has connections: the API server dials new ones,
      // which are served the new certificate and verified against the unchanged caBundle.
      const burst = await createInLoop(16, sleep(2_000));
      await sleep(1_000);
      endLoop();
      const outcomes = [...(await loop), ...burst];
      const failures = outcomes.filter((outcome) => outcome.error !== undefined);
      assert.deepEqual(failures, [], 'no create failed during the rotation');
      assert.ok(outcomes.filter((outcome) => outcome.at < rotatedAt).length > 0, 'creates before the rotation');
      assert.ok(outcomes.filter((outcome) => outcome.at > reloadedAt).length > 0, 'creates after the reload');
      assert.equal(await servedFingerprint(), new X509Certificate(next.cert).fingerprint256);
      return `${outcomes.length} dry-run creates, none failed; the reload was logged ${reloadedAt - rotatedAt} ms after the write began`;
    }

    it('written as a Secret volume update lands (the kubelet swaps the ..data symlink in one rename): no request fails', async (t) => {
      // The kubelet's AtomicWriter layout: DIR/tls.crt -> ..data/tls.crt, ..data -> ..<timestamp>/.
      // First move the helper's plain files into that layout, with the same content (no reload).
      const certDir = dirname(cluster.serving.cert);
      const version = (label: string, cert: string, key: string): string => {
        const folder = join(certDir, `..${label}`);
        mkdirSync(folder);
        writeFileSync(join(folder, 'tls.crt'), cert);
        writeFileSync(join(folder, 'tls.key'), key, { mode: 0o600 });
        return `..${label}`;
      };
      const swapData = (target: string): void => {
        symlinkSync(target, join(certDir, '..data_tmp'));
        renameSync(join(certDir, '..data_tmp'), join(certDir, '..data'));
      };
      const first = version('2026_01_01_00_00_00.1', readFileSync(cluster.serving.cert, 'utf8'), readFileSync(cluster.serving.key, 'utf8'));
      swapData(first);
      for (const file of ['tls.crt', 'tls.key']) {
        symlinkSync(join('..data', file), join(certDir, `${file}.tmp`));
        renameSync(join(certDir, `${file}.tmp`), join(certDir, file));
      }
      t.diagnostic(
        await rotateUnderLoad((cert, key) => {
          swapData(version('2026_01_01_00_00_00.2', cert, key));
          rmSync(join(certDir, first), { recursive: true });
        }),
      );
    });

    it('written one file at a time (certificate, then key 500 ms later): the mismatched pair is refused, the old one serves, no request fails', async (t) => {
      const certDir = dirname(cluster.serving.cert);
      const logs = cluster.tolerator()!.logs;
      const refusedBefore = logs.filter(
        (entry) => entry.msg === 'serving certificate not reloaded; the previous certificate keeps serving',
      ).length;
      const summary = await rotateUnderLoad(async (cert, key) => {
        // Each file replaced atomically (write aside, rename over), the two 500 ms apart.
        writeFileSync(join(certDir, 'next.crt'), cert);
        renameSync(join(certDir, 'next.crt'), cluster.serving.cert);
        await sleep(500);
        writeFileSync(join(certDir, 'next.key'), key, { mode: 0o600 });
        renameSync(join(certDir, 'next.key'), cluster.serving.key);
      });
      // The half-rotated pair (new certificate, old key) was seen and refused meanwhile.
      assert.ok(
        logs.filter((entry) => entry.msg === 'serving certificate not reloaded; the previous certificate keeps serving').length >
          refusedBefore,
      );
      t.diagnostic(summary);
    });
  });

  it('a tolerator.dev/ignore=true namespace, kube-system and tolerator-system are not reviewed: no review logged, stored without memory-pressure', async () => {
    const skipped = ['kube-system', 'tolerator-system', optedOut].map((namespace) => ({ namespace, name: unique('unreviewed') }));
    for (const { namespace, name } of skipped) {
      const stored = await createObject(cluster.objects, pod(name, namespace));
      assert.deepEqual(tolerationsOf(stored), [notReady, unreachable], namespace);
    }
    // A pod reviewed after them: once its review is logged, theirs would have been (one ordered log).
    const sentinel = unique('sentinel');
    await createObject(cluster.objects, pod(sentinel, reviewed));
    assert.deepEqual(await cluster.reviewedSides(sentinel, 'CREATE'), ['mutate', 'validate']);
    for (const { namespace, name } of skipped) assert.equal(reviewedByTolerator(name), false, namespace);
  });
});
