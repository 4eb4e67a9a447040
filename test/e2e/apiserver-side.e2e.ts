/**
 * What the API server's side of a review costs and looks like, measured through a real
 * kube-apiserver rather than a stand-in: the work of applying tolerator's JSON Patch, the body the
 * API server really sends (its JSON escapes `<`, `>` and `&` as `\u003c`, `\u003e`, `\u0026`),
 * and its answer when tolerator stalls past the webhooks' `timeoutSeconds: 5`.
 *
 * A recording proxy (TLS, a certificate from the webhooks' CA) sits between the API server and
 * tolerator for these tests: the webhooks' URLs point at it, the rest of the shipped
 * configuration is unchanged. It records each body in both directions and can hold a path's
 * requests unanswered. A second control plane runs the in-tree PodTolerationRestriction, with no
 * webhook, for what upstream stores.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpsRequest, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import jsonpatch, { type Operation } from 'fast-json-patch';
import { skipWithoutControlPlane } from '../cluster/binaries.js';
import { pollUntil } from '../cluster/poll.js';
import { startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import { signCertificate } from '../cluster/pki.js';
import {
  apiError,
  asKubernetesObject,
  clientsFor,
  createObject,
  plain,
  refusal,
  startToleratorOnCluster,
  type Manifest,
  type ToleratorOnCluster,
} from '../cluster/tolerator-on-cluster.js';

const skip = skipWithoutControlPlane();

const notReady = { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 };
const unreachable = { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 };
const memoryPressure = { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' };

/** One exchange the proxy relayed (or held). */
interface Exchange {
  readonly path: string;
  readonly request: Buffer;
  response?: Buffer;
  status?: number;
}

/**
 * HTTPS on 127.0.0.1 in front of tolerator: every request is read whole, recorded, and sent on
 * to tolerator, whose answer is recorded and returned; a path set to `hold` is never answered
 * (the API server's own deadline ends the call).
 */
class RecordingProxy {
  readonly exchanges: Exchange[] = [];
  readonly hold = new Set<string>();
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;

  private constructor(
    pair: { cert: string; key: string },
    private readonly ca: string,
    private readonly target: () => number,
  ) {
    this.server = createServer({ cert: pair.cert, key: pair.key }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const path = (req.url ?? '').split('?', 1)[0]!;
        const exchange: Exchange = { path, request: Buffer.concat(chunks) };
        this.exchanges.push(exchange);
        if (this.hold.has(path)) return;
        const upstream = httpsRequest(
          {
            host: '127.0.0.1',
            port: this.target(),
            path: req.url,
            method: 'POST',
            ca: this.ca,
            headers: { 'content-type': req.headers['content-type'] ?? '', 'content-length': exchange.request.length },
          },
          (answer) => {
            const parts: Buffer[] = [];
            answer.on('data', (chunk: Buffer) => parts.push(chunk));
            answer.on('end', () => {
              exchange.response = Buffer.concat(parts);
              exchange.status = answer.statusCode;
              res.writeHead(answer.statusCode ?? 502, { 'content-type': answer.headers['content-type'] ?? 'application/json' });
              res.end(exchange.response);
            });
          },
        );
        upstream.on('error', () => res.destroy());
        upstream.end(exchange.request);
      });
    });
    this.server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  static async start(pair: { cert: string; key: string }, ca: string, target: () => number): Promise<RecordingProxy> {
    const proxy = new RecordingProxy(pair, ca, target);
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get url(): string {
    return `https://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The requests whose AdmissionReview names the object `name`, for `path`. */
  about(name: string, path: string): Exchange[] {
    const marker = Buffer.from(`"name":"${name}"`);
    return this.exchanges.filter((exchange) => exchange.path === path && exchange.request.includes(marker));
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => {
      this.server.close(() => {
        resolve();
      });
    });
  }
}

/**
 * The array elements gopkg.in/evanphx/json-patch.v4 (what kube-apiserver's mutating dispatcher
 * applies a webhook's patch with) copies to apply `patch` to `document`: each `add` at an index
 * and each `remove` allocates a new array and copies every other element into it
 * (partialArray.add and .remove), so n removals from an array of n cost n²/2 copies.
 */
function arrayCopiesToApply(document: unknown, patch: readonly Operation[]): number {
  let copies = 0;
  let current = structuredClone(document);
  for (const operation of patch) {
    const slash = operation.path.lastIndexOf('/');
    const parent: unknown = jsonpatch.getValueByPointer(current, operation.path.slice(0, slash));
    if (Array.isArray(parent) && operation.path.slice(slash + 1) !== '-') {
      if (operation.op === 'remove') copies += parent.length - 1;
      if (operation.op === 'add') copies += parent.length;
    }
    current = jsonpatch.applyOperation(current, operation, false, true).newDocument;
  }
  return copies;
}

interface Review {
  readonly request: { readonly object: Manifest };
}
interface ReviewAnswer {
  readonly response: { readonly patch?: string };
}

describe("the API server's side of a review, through kube-apiserver", { skip }, () => {
  let cluster: ToleratorOnCluster;
  let inTree: ControlPlane;
  let proxy: RecordingProxy;
  let dir: string;

  const nsDefault = { key: 'example.com/namespace-default', operator: 'Exists', effect: 'NoSchedule' };
  const annotations = { 'scheduler.alpha.kubernetes.io/defaultTolerations': JSON.stringify([nsDefault]) };

  /** Points every shipped webhook at `base` (the proxy, or tolerator itself), keeping its path. */
  async function pointWebhooksAt(base: string): Promise<void> {
    for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
      const current = plain(
        await cluster.objects.read({ apiVersion: 'admissionregistration.k8s.io/v1', kind, metadata: { name: 'tolerator' } }),
      ) as Manifest & { webhooks: { clientConfig: { url: string } }[] };
      for (const webhook of current.webhooks) webhook.clientConfig.url = base + new URL(webhook.clientConfig.url).pathname;
      await cluster.objects.replace(asKubernetesObject(current));
    }
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-apiserver-side-'));
    [cluster, inTree] = await Promise.all([
      startToleratorOnCluster({ dir: join(dir, 'webhook') }),
      startControlPlane({ dir: join(dir, 'in-tree'), enableAdmissionPlugins: ['PodTolerationRestriction'] }),
    ]);
    const pair = await signCertificate(cluster.serving.ca, { commonName: 'proxy', ips: ['127.0.0.1'], usage: 'server' });
    proxy = await RecordingProxy.start(pair, cluster.serving.ca.cert, () => cluster.tolerator()!.port);
    await pointWebhooksAt(proxy.url);
    // The API server's webhook informer takes the change a moment later: a dry run until both
    // webhooks' calls come through the proxy.
    const probe = (name: string): Manifest => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default' },
      spec: { containers: [{ name: 'c', image: 'probe' }] },
    });
    let attempt = 0;
    await pollUntil(
      'both webhooks called through the proxy',
      async () => {
        const name = `probe-${++attempt}`;
        await createObject(cluster.objects, probe(name), 'All');
        return proxy.about(name, '/mutate').length > 0 && proxy.about(name, '/validate').length > 0 ? true : undefined;
      },
      { timeoutMs: 30_000, retryOnError: true },
    );
    await createObject(cluster.objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'merge', annotations } });
    await createObject(cluster.objects, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'merge-unreviewed', annotations, labels: { 'tolerator.dev/ignore': 'true' } },
    });
    await createObject(cluster.objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'apps' } });
    await createObject(clientsFor(inTree.kubeconfig).objects, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'merge', annotations },
    });
  });
  after(async () => {
    await (proxy as RecordingProxy | undefined)?.close();
    await (cluster as ToleratorOnCluster | undefined)?.stop();
    await (inTree as ControlPlane | undefined)?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('applying tolerator patch: a pod with n duplicate tolerations in a namespace with defaultTolerations', () => {
    const duplicate = { key: 'example.com/duplicate', operator: 'Equal', value: 'v', effect: 'NoSchedule' };
    const n = 2_000;
    const duplicates = (count: number, name: string, namespace: string): Manifest => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace },
      spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }], tolerations: Array.from({ length: count }, () => duplicate) },
    });
    const timed = async <T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> => {
      const started = performance.now();
      const value = await work();
      return { value, ms: Math.round(performance.now() - started) };
    };
    const measured: { count: number; copies: number; patchOperations: number; tolerator: number; unreviewed: number; inTree: number }[] =
      [];

    for (const count of [n, 4 * n]) {
      it(`${count} duplicates: the API server accepts tolerator's patch and stores what the in-tree PodTolerationRestriction stores`, async (t) => {
        const name = `duplicates-${count}`;
        const withTolerator = await timed(() => createObject(cluster.objects, duplicates(count, name, 'merge'), 'All'));
        const unreviewed = await timed(() => createObject(cluster.objects, duplicates(count, name, 'merge-unreviewed'), 'All'));
        const upstream = await timed(() => createObject(clientsFor(inTree.kubeconfig).objects, duplicates(count, name, 'merge'), 'All'));
        // PodTolerationRestriction's merge (tolerations.MergeTolerations(pod's, namespace's))
        // keeps one of equal tolerations: the pod's once, the DefaultTolerationSeconds pair the
        // API server added before any webhook was called, then the namespace's default.
        const merged = [duplicate, notReady, unreachable, nsDefault];
        assert.deepEqual((withTolerator.value.spec as { tolerations: unknown }).tolerations, merged);
        assert.deepEqual((upstream.value.spec as { tolerations: unknown }).tolerations, merged);
        // Without review the pod keeps all of them (the in-tree plugin is off on this plane).
        assert.equal((unreviewed.value.spec as { tolerations: unknown[] }).tolerations.length, count + 2);

        const [exchange] = proxy.about(name, '/mutate');
        assert.ok(exchange?.response !== undefined, 'the mutating review went through the proxy');
        const review = JSON.parse(exchange.request.toString('utf8')) as Review;
        const answer = JSON.parse(exchange.response.toString('utf8')) as ReviewAnswer;
        const patch = JSON.parse(Buffer.from(answer.response.patch ?? '', 'base64').toString('utf8')) as Operation[];
        // The patch, applied to the object the API server sent, gives what it stored.
        const applied = jsonpatch.applyPatch(structuredClone(review.request.object), patch, true, false).newDocument;
        assert.deepEqual((applied.spec as { tolerations: unknown }).tolerations, merged);
        measured.push({
          count,
          copies: arrayCopiesToApply(review.request.object, patch),
          patchOperations: patch.length,
          tolerator: withTolerator.ms,
          unreviewed: unreviewed.ms,
          inTree: upstream.ms,
        });
        t.diagnostic(
          `dry-run create: ${withTolerator.ms} ms through tolerator, ${unreviewed.ms} ms unreviewed, ${upstream.ms} ms with the in-tree plugin; ` +
            `patch of ${patch.length} operations, ${exchange.response.length} B answer`,
        );
      });
    }

    it("the API server's work to apply tolerator's patch is linear: array copies at 4n at most 4.5 times those at n", (t) => {
      const [small, large] = measured;
      assert.ok(small !== undefined && large !== undefined, 'both sizes measured');
      t.diagnostic(
        `array copies: ${small.copies} at n=${small.count}, ${large.copies} at 4n (${(large.copies / small.copies).toFixed(1)}x)`,
      );
      assert.ok(large.copies <= 4.5 * small.copies, `${large.copies} copies at 4n against ${small.copies} at n`);
    });
  });
  it("DRADeviceTaints off (1.35's default): the validating webhook never receives a claim's device tolerations — the mutating one does, and the API server drops them between (PrepareForCreate) — so a toleration that reaches validation was kept by a gate that is on, whatever tolerator was told", async (t) => {
    const minor = Number(/^v1\.(\d+)\./.exec(cluster.plane.version)?.[1]);
    if (minor >= 36) {
      t.skip(`Kubernetes 1.${minor} has DRADeviceTaints on by default`);
      return;
    }
    const claim: Manifest = {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaim',
      metadata: { name: 'gate-off-claim', namespace: 'apps' },
      spec: {
        devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu.example.com', tolerations: [{ operator: 'Exists' }] } }] },
      },
    };
    const stored = await createObject(cluster.objects, claim, 'All');
    const tolerationsIn = (object: unknown): unknown =>
      (object as { spec: { devices: { requests: { exactly: { tolerations?: unknown } }[] } } }).spec.devices.requests[0]!.exactly
        .tolerations;
    assert.equal(tolerationsIn(stored), undefined);
    const sent = (path: string): unknown => {
      const [exchange] = proxy.about('gate-off-claim', path);
      assert.ok(exchange !== undefined, `no ${path} call for the claim`);
      return tolerationsIn((JSON.parse(exchange.request.toString('utf8')) as { request: { object: unknown } }).request.object);
    };
    assert.deepEqual(sent('/mutate'), [{ operator: 'Exists' }]);
    assert.equal(sent('/validate'), undefined);
  });

  describe("the body kube-apiserver sends: its JSON escapes <, > and & (Go's encoding/json, HTML-safe)", () => {
    const withValue = (name: string, namespace: string, value: string, labels?: Record<string, string>): Manifest => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace, ...(labels === undefined ? {} : { labels }) },
      spec: { containers: [{ name: 'app', image: 'registry.example/app:1', env: [{ name: 'PAGE', value }] }] },
    });
    /** 7 MiB: the largest body tolerator reads (src/http/app.ts maxBodyBytes). */
    const maxBodyBytes = 7 * 1024 * 1024;

    it('each of <, > and & arrives as a 6-byte \\u escape: 5 bytes more than the character the pod holds', async () => {
      const third = 10_000;
      const plainValue = 'a'.repeat(3 * third);
      const markup = '<'.repeat(third) + '>'.repeat(third) + '&'.repeat(third);
      const stored = await createObject(cluster.objects, withValue('escape-markup', 'apps', markup), 'All');
      await createObject(cluster.objects, withValue('escape-letter', 'apps', plainValue), 'All');
      // Stored as written: the escape is the wire's, not the object's.
      assert.equal((stored.spec as { containers: { env: { value: string }[] }[] }).containers[0]!.env[0]!.value, markup);
      const [markupReview] = proxy.about('escape-markup', '/mutate');
      const [letterReview] = proxy.about('escape-letter', '/mutate');
      assert.ok(markupReview !== undefined && letterReview !== undefined);
      const text = markupReview.request.toString('latin1');
      for (const escape of ['\\u003c', '\\u003e', '\\u0026']) assert.equal(text.split(escape).length - 1, third, escape);
      assert.equal(/[<>&]/.test(text), false, 'no raw <, > or & in the body');
      // The two reviews differ only in those characters (names of the same length, one uid each).
      assert.equal(markupReview.request.length - letterReview.request.length, 5 * 3 * third);
    });

    /**
     * What became of an UPDATE whose review is larger than 7 MiB: either tolerator's validating
     * webhook answered it (200, allowed) and the API server went on, or the call failed and the
     * API server refused the write (failurePolicy Fail). Never a write the validating webhook did
     * not answer. (tolerator reads at most 7 MiB on main; a larger, escaping-aware limit is being
     * built on another branch, under which the first outcome is the expected one.)
     */
    function judgeLargeUpdate(
      reviews: readonly Exchange[],
      outcome: { code: number; message: string },
    ): 'reviewed and allowed' | 'refused: the validating call failed' {
      const validate = reviews.find((exchange) => exchange.path === '/validate');
      assert.ok(validate !== undefined, 'the validating webhook was called');
      if (outcome.code === 200) {
        assert.equal(validate.status, 200);
        assert.equal((JSON.parse(validate.response!.toString('utf8')) as { response: { allowed: boolean } }).response.allowed, true);
        return 'reviewed and allowed';
      }
      assert.equal(outcome.code, 500);
      // tolerator's 413, its message as the API server passes it on (not a reset connection:
      // src/http/app.ts maxDrainedBytes).
      assert.match(
        outcome.message,
        /^Internal error occurred: failed calling webhook "validate\.tolerator\.dev": failed to call webhook: request body is larger than the limit of \d+ MiB$/,
      );
      assert.equal(validate.status, 413);
      return 'refused: the validating call failed';
    }

    const updatesOf = (name: string): Exchange[] =>
      proxy.exchanges.filter(
        (exchange) => exchange.request.includes(`"name":"${name}"`) && exchange.request.includes('"operation":"UPDATE"'),
      );

    async function outcomeOf(write: Promise<unknown>): Promise<{ code: number; message: string }> {
      try {
        await write;
        return { code: 200, message: '' };
      } catch (error) {
        const { code, status } = apiError(error);
        return { code, message: status.message ?? '' };
      }
    }

    it('an UPDATE the escaping takes past 7 MiB (a 0.7 MB pod of <): answered by the validating webhook or refused, never written unreviewed', async (t) => {
      // 700,000 '<': a 0.7 MB pod whose CREATE review is 4.2 MB on the wire and whose UPDATE
      // review (object and oldObject) is 8.4 MB.
      const value = '<'.repeat(700_000);
      await createObject(cluster.objects, withValue('escape-update', 'apps', value));
      const stored = plain(
        await cluster.objects.read({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'escape-update', namespace: 'apps' } }),
      ) as Manifest;
      const changed: Manifest = { ...stored, metadata: { ...stored.metadata, labels: { touched: 'yes' } } };
      const outcome = await outcomeOf(cluster.objects.replace(asKubernetesObject(changed)));
      const reviews = updatesOf('escape-update');
      assert.deepEqual(
        reviews.map((exchange) => exchange.path),
        ['/mutate', '/validate'],
      );
      for (const exchange of reviews) assert.ok(exchange.request.length > maxBodyBytes, `${exchange.request.length} B`);
      const verdict = judgeLargeUpdate(reviews, outcome);
      const after = plain(
        await cluster.objects.read({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'escape-update', namespace: 'apps' } }),
      ) as Manifest;
      assert.deepEqual(after.metadata.labels, verdict === 'reviewed and allowed' ? { touched: 'yes' } : undefined);
      const create = proxy.about('escape-update', '/mutate')[0]!;
      t.diagnostic(
        `CREATE review ${create.request.length} B; UPDATE review ${reviews[0]!.request.length} B: ${verdict}` +
          (outcome.code === 200 ? '' : ` (${outcome.code}: ${outcome.message})`),
      );
    });

    it("the largest UPDATE review: a pod stored at etcd's 1.5 MiB limit, updated (dry run) with a body at the API server's 3 MiB limit", async (t) => {
      // Stored unreviewed (opted out), then reviewed once the label says otherwise.
      await createObject(cluster.objects, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: 'escape-largest', labels: { 'tolerator.dev/ignore': 'true' } },
      });
      // 1,450,000 '<' in an environment variable: etcd's --max-request-bytes is 1.5 MiB
      // (1,572,864 B), and the pod is stored as protobuf, one byte each.
      const storedLength = 1_450_000;
      await createObject(cluster.objects, withValue('escape-largest', 'escape-largest', '<'.repeat(storedLength)));
      await cluster.objects.patch(
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'escape-largest', labels: { 'tolerator.dev/ignore': 'false' } } },
        undefined,
        undefined,
        undefined,
        undefined,
        k8s.PatchStrategy.MergePatch,
      );
      const stored = plain(
        await cluster.objects.read({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'escape-largest', namespace: 'escape-largest' } }),
      ) as Manifest & { spec: { containers: { image: string }[] } };
      // An image (mutable, and of no bounded length) of 1,680,000 '<': with the stored variable and
      // the rest of the pod, a body under kube-apiserver's 3 MiB (3,145,728 B) request limit.
      const imageLength = 1_680_000;
      const updated = structuredClone(stored);
      updated.spec.containers[0]!.image = '<'.repeat(imageLength);
      const outcome = await outcomeOf(cluster.objects.replace(asKubernetesObject(updated), undefined, 'All'));
      const reviews = updatesOf('escape-largest');
      assert.deepEqual(
        reviews.map((exchange) => exchange.path),
        ['/mutate', '/validate'],
      );
      // oldObject (the variable) and object (the variable and the image), 6 bytes a character.
      const largest = reviews[0]!.request.length;
      assert.ok(largest > 6 * (2 * storedLength + imageLength), `${largest} B`);
      const verdict = judgeLargeUpdate(reviews, outcome);
      t.diagnostic(`largest UPDATE review: ${largest} B (${(largest / 1024 / 1024).toFixed(1)} MiB) to each webhook: ${verdict}`);
    });
  });

  describe("a stalled tolerator: the webhooks' timeoutSeconds 5", () => {
    const burstable = (name: string): Manifest => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'apps' },
      spec: { containers: [{ name: 'app', image: 'registry.example/app:1', resources: { requests: { cpu: '10m' } } }] },
    });
    const deadline =
      /^Internal error occurred: failed calling webhook "validate\.tolerator\.dev": failed to call webhook: Post "https:\/\/127\.0\.0\.1:\d+\/validate\?timeout=5s": context deadline exceeded$/;

    it("the mutating call held: after its 5 s the pod is admitted without tolerator's defaults (Ignore)", async (t) => {
      proxy.hold.add('/mutate');
      try {
        const started = performance.now();
        const stored = await createObject(cluster.objects, burstable('stall-mutate'));
        const ms = Math.round(performance.now() - started);
        t.diagnostic(`admitted after ${ms} ms`);
        assert.deepEqual((stored.spec as { tolerations: unknown }).tolerations, [notReady, unreachable]);
        assert.ok(ms >= 5_000, `${ms} ms`);
      } finally {
        proxy.hold.delete('/mutate');
      }
    });

    it("the validating call held: after its 5 s the pod is refused with the API server's deadline error (Fail)", async (t) => {
      proxy.hold.add('/validate');
      try {
        const started = performance.now();
        const { code, status } = await refusal(createObject(cluster.objects, burstable('stall-validate')));
        const ms = Math.round(performance.now() - started);
        t.diagnostic(`kube-apiserver after ${ms} ms: ${code} ${status.reason ?? ''}: ${status.message ?? ''}`);
        assert.equal(code, 500);
        assert.equal(status.reason, 'InternalError');
        assert.match(status.message ?? '', deadline);
        assert.ok(ms >= 5_000, `${ms} ms`);
      } finally {
        proxy.hold.delete('/validate');
      }
    });

    it('tolerator itself stopped (SIGSTOP, as a blocked event loop): both calls wait their 5 s, then the validating one refuses', async (t) => {
      const child = cluster.tolerator()!.child;
      child.kill('SIGSTOP');
      try {
        const started = performance.now();
        const { code, status } = await refusal(createObject(cluster.objects, burstable('stall-both')));
        const ms = Math.round(performance.now() - started);
        t.diagnostic(`kube-apiserver after ${ms} ms: ${code}: ${status.message ?? ''}`);
        assert.equal(code, 500);
        assert.match(status.message ?? '', deadline);
        assert.ok(ms >= 10_000, `${ms} ms`);
      } finally {
        child.kill('SIGCONT');
      }
      const stored = await pollUntil(
        'a pod admitted once tolerator runs again',
        () => createObject(cluster.objects, burstable(`after-stall-${Date.now()}`)),
        { timeoutMs: 30_000, retryOnError: true },
      );
      assert.deepEqual((stored.spec as { tolerations: unknown }).tolerations, [notReady, unreachable, memoryPressure]);
    });
  });
  describe('kube-apiserver calling tolerator directly (no proxy)', () => {
    before(async () => {
      await pointWebhooksAt(`https://127.0.0.1:${cluster.tolerator()!.port}`);
      // Until the API server's informer has the change, calls still reach the proxy.
      let attempt = 0;
      await pollUntil(
        'the webhooks called directly',
        async () => {
          const name = `direct-probe-${++attempt}`;
          await createObject(
            cluster.objects,
            {
              apiVersion: 'v1',
              kind: 'Pod',
              metadata: { name, namespace: 'default' },
              spec: { containers: [{ name: 'c', image: 'probe' }] },
            },
            'All',
          );
          return proxy.about(name, '/mutate').length === 0 ? true : undefined;
        },
        { timeoutMs: 30_000, retryOnError: true },
      );
    });

    it("UPDATEs whose reviews pass 7 MiB, four times: the API server reports tolerator's 413 message each time, never a broken pipe", async (t) => {
      const name = 'escape-direct';
      await createObject(cluster.objects, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: 'apps' },
        spec: { containers: [{ name: 'app', image: 'registry.example/app:1', env: [{ name: 'PAGE', value: '<'.repeat(700_000) }] }] },
      });
      const messages: string[] = [];
      for (let attempt = 0; attempt < 4; attempt++) {
        const stored = plain(
          await cluster.objects.read({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'apps' } }),
        ) as Manifest;
        const changed: Manifest = { ...stored, metadata: { ...stored.metadata, labels: { attempt: String(attempt) } } };
        try {
          await cluster.objects.replace(asKubernetesObject(changed));
          messages.push('admitted');
        } catch (error) {
          messages.push(apiError(error).status.message ?? '');
        }
      }
      t.diagnostic(messages.join('\n'));
      for (const message of messages) {
        // Under a larger, escaping-aware limit (another branch) these are admitted, reviewed.
        if (message === 'admitted') continue;
        assert.match(
          message,
          /^Internal error occurred: failed calling webhook "validate\.tolerator\.dev": failed to call webhook: request body is larger than the limit of \d+ MiB$/,
        );
      }
    });
  });
});
