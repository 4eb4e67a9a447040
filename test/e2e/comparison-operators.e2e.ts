/**
 * `Gt`/`Lt` tolerations (TaintTolerationComparisonOperators, alpha and off in 1.35 through 1.37) through a real
 * kube-apiserver with the shipped webhooks, the gate on and then off, and tolerator reading which
 * from the API server's own `/metrics` (no `--feature-gates` flag).
 *
 * One etcd, two API servers in turn: the first runs with the gate on and stores a pod and a
 * Deployment that use `Gt`; the second starts on the same data with the gate off, as after a
 * control plane rolled the gate back. Upstream's ratchet (pkg/api/pod/util.go
 * allowTaintTolerationComparisonOperators: the gate, or an old object that already uses Gt/Lt) is
 * only observable that way.
 *
 * Where the API server refuses an object itself (its validation runs before any validating
 * webhook), the validating webhook is never called; tolerator's verdict on the same object is then
 * asked directly, with an AdmissionReview posted to the running `tolerator serve`, and must be the
 * API server's answer word for word (code, reason, message, causes).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request as httpsRequest, type RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { defaultAtVersion, formatVersion, parseKubernetesVersion, type KubernetesVersion } from '../../src/api/feature-gate-history.js';
import { findControlPlane, skipWithoutControlPlane } from '../cluster/binaries.js';
import {
  asKubernetesObject,
  clientsFor,
  createObject,
  plain,
  refusal,
  startToleratorOnCluster,
  type Manifest,
  type ToleratorOnCluster,
} from '../cluster/tolerator-on-cluster.js';
import { callServe } from '../support/serve-process.js';

const skip = skipWithoutControlPlane();
const gate = 'TaintTolerationComparisonOperators';

/**
 * The version of the binaries under test (`npm run test:e2e -- --version 1.37`): what tolerator's
 * /readyz names as the cluster's `/version`, and the version whose default it falls back to.
 */
function versionUnderTest(): KubernetesVersion {
  const built = findControlPlane();
  if (typeof built === 'string') throw new Error(built);
  const version = parseKubernetesVersion({ gitVersion: built.version });
  if (version === undefined) throw new Error(`the build's VERSION ${JSON.stringify(built.version)} is not a Kubernetes version`);
  return version;
}
const namespace = 'gauges';

const gt = (value: string): Record<string, string> => ({ key: 'example.com/cpu-generation', operator: 'Gt', value, effect: 'NoSchedule' });
const lt = (value: string): Record<string, string> => ({
  key: 'example.com/memory-generation',
  operator: 'Lt',
  value,
  effect: 'NoSchedule',
});

function pod(name: string, tolerations: unknown[] = []): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }], ...(tolerations.length > 0 ? { tolerations } : {}) },
  };
}

function deployment(name: string, tolerations: unknown[]): Manifest {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace },
    spec: {
      replicas: 0,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }], tolerations },
      },
    },
  };
}

/** A GET of a non-resource path (`/metrics`) with the kubeconfig's credentials. */
async function getRaw(kubeconfig: k8s.KubeConfig, path: string): Promise<{ status: number; body: string }> {
  const options: RequestOptions = {};
  await kubeconfig.applyToHTTPSOptions(options);
  const url = new URL(path, kubeconfig.getCurrentCluster()?.server);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** The sample lines of a Prometheus exposition whose name and labels start with `prefix`. */
function samples(body: string, prefix: string): string[] {
  return body.split('\n').filter((line) => line.startsWith(prefix));
}

interface Verdict {
  readonly allowed: boolean;
  readonly status?: { code?: number; reason?: string; message?: string; details?: unknown };
}

const resources = {
  Pod: { group: '', version: 'v1', resource: 'pods' },
  PodTemplate: { group: '', version: 'v1', resource: 'podtemplates' },
  ReplicationController: { group: '', version: 'v1', resource: 'replicationcontrollers' },
  Deployment: { group: 'apps', version: 'v1', resource: 'deployments' },
  ReplicaSet: { group: 'apps', version: 'v1', resource: 'replicasets' },
  StatefulSet: { group: 'apps', version: 'v1', resource: 'statefulsets' },
  DaemonSet: { group: 'apps', version: 'v1', resource: 'daemonsets' },
  Job: { group: 'batch', version: 'v1', resource: 'jobs' },
  CronJob: { group: 'batch', version: 'v1', resource: 'cronjobs' },
} as const;

/**
 * tolerator's validating verdict on `object` (and `oldObject` for an UPDATE), asked as the API
 * server asks it: an admission.k8s.io/v1 AdmissionReview posted to /validate of the running serve.
 */
async function validatingVerdict(cluster: ToleratorOnCluster, object: Manifest, oldObject?: Manifest): Promise<Verdict> {
  const served = cluster.tolerator();
  assert.ok(served, 'tolerator is running');
  const kind = object.kind as keyof typeof resources;
  const resource = resources[kind];
  const review = {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: randomUUID(),
      kind: { group: resource.group, version: resource.version, kind },
      resource,
      requestKind: { group: resource.group, version: resource.version, kind },
      requestResource: resource,
      name: object.metadata.name,
      namespace,
      operation: oldObject === undefined ? 'CREATE' : 'UPDATE',
      userInfo: { username: 'admin', groups: ['system:masters', 'system:authenticated'] },
      object,
      oldObject: oldObject ?? null,
      dryRun: false,
      options: null,
    },
  };
  const agent = new Agent({ ca: cluster.serving.ca.cert });
  const answer = await callServe(agent, served.port, '/validate', JSON.stringify(review));
  agent.destroy();
  assert.equal(answer.status, 200, answer.body);
  return (JSON.parse(answer.body) as { response: Verdict }).response;
}

/** The parts of a Status a user sees: what the API server answered must be what tolerator answers. */
function seen(status: Verdict['status']): unknown {
  return { code: status?.code, reason: status?.reason, message: status?.message, details: status?.details };
}

/**
 * The webhooks (sorted) that logged allowing a review of the `kind` named `name` with `operation`,
 * once they include every one of `expected`, or after 5 s: tolerator's log lines reach this
 * process through a pipe, a moment after its answers.
 */
async function allowedBy(
  cluster: ToleratorOnCluster,
  name: string,
  operation: string,
  kind: string,
  expected: readonly string[],
): Promise<string[]> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const sides = [
      ...new Set(
        (cluster.tolerator()?.logs ?? [])
          .filter(
            (entry) =>
              entry.msg === 'admission review' &&
              entry.name === name &&
              entry.kind === kind &&
              entry.operation === operation &&
              entry.decision === 'allowed',
          )
          .map((entry) => String(entry.webhook)),
      ),
    ].sort();
    if (expected.every((side) => sides.includes(side)) || Date.now() > deadline) return sides;
    await sleep(100);
  }
}

async function read(cluster: ToleratorOnCluster, kind: 'Pod' | 'Deployment', name: string): Promise<Manifest> {
  const apiVersion = kind === 'Pod' ? 'v1' : 'apps/v1';
  return plain(await cluster.objects.read({ apiVersion, kind, metadata: { name, namespace } })) as Manifest;
}

function tolerationsOf(object: Manifest): unknown[] {
  const spec = object.spec as { tolerations?: unknown[]; template?: { spec: { tolerations?: unknown[] } } };
  return (object.kind === 'Pod' ? spec.tolerations : spec.template?.spec.tolerations) ?? [];
}

function withTolerations(object: Manifest, tolerations: unknown[]): Manifest {
  const copy = structuredClone(object) as Manifest & {
    spec: { tolerations?: unknown[]; template?: { spec: { tolerations?: unknown[] } } };
  };
  if (copy.kind === 'Pod') copy.spec.tolerations = tolerations;
  else copy.spec.template!.spec.tolerations = tolerations;
  return copy;
}

/** Checks the gate tolerator reports, in /readyz?verbose and in its metric, against `enabled`. */
async function assertToleratorGate(cluster: ToleratorOnCluster, enabled: boolean): Promise<void> {
  const served = cluster.tolerator();
  assert.ok(served);
  const agent = new Agent({ ca: cluster.serving.ca.cert });
  const readyz = await callServe(agent, served.port, '/readyz?verbose');
  const metrics = await callServe(agent, served.port, '/metrics');
  agent.destroy();
  assert.equal(readyz.status, 200, readyz.body);
  assert.ok(readyz.body.split('\n').includes(`feature gate ${gate}=${enabled} source=cluster-metrics`), readyz.body);
  const { major, minor } = versionUnderTest();
  assert.match(readyz.body, new RegExp(`/metrics: ok; /version: ok \\(v${major}\\.${minor}\\.\\d+\\)`));
  assert.deepEqual(samples(metrics.body, `tolerator_feature_gate_enabled{name="${gate}"`), [
    `tolerator_feature_gate_enabled{name="${gate}",source="cluster-metrics"} ${enabled ? 1 : 0}`,
  ]);
}

describe('Gt/Lt through kube-apiserver: the gate on, then turned off under stored objects', { skip }, () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-comparison-'));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  describe(`kube-apiserver with ${gate}=true`, () => {
    let cluster: ToleratorOnCluster;
    before(async () => {
      cluster = await startToleratorOnCluster({ dir, plane: { featureGates: `${gate}=true` } });
      await createObject(cluster.objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    });
    after(async () => {
      await (cluster as ToleratorOnCluster | undefined)?.stop();
    });

    it('the API server reports the gate on in its /metrics, and tolerator, without a flag, reads it from there', async () => {
      const apiserver = await getRaw(cluster.kubeconfig, '/metrics');
      assert.equal(apiserver.status, 200);
      assert.deepEqual(samples(apiserver.body, `kubernetes_feature_enabled{name="${gate}"`), [
        `kubernetes_feature_enabled{name="${gate}",stage="ALPHA"} 1`,
      ]);
      await assertToleratorGate(cluster, true);
    });

    it('a pod with a Gt and an Lt toleration is stored with them, both webhooks having allowed it', async () => {
      const stored = await createObject(cluster.objects, pod('ratchet', [gt('5'), lt('9')]));
      assert.deepEqual(tolerationsOf(stored).slice(0, 2), [gt('5'), lt('9')]);
      assert.deepEqual(await allowedBy(cluster, 'ratchet', 'CREATE', 'Pod', ['mutate', 'validate']), ['mutate', 'validate']);
      // Kept for the gate-off API server below, with a pod that has no Gt/Lt.
      await createObject(cluster.objects, pod('plain'));
    });

    for (const [name, value] of [
      ['a non-canonical value', '0550'],
      ['a value beyond int64', '9223372036854775808'],
    ] as const) {
      it(`a Gt toleration with ${name} is refused with the API server's own 422, and tolerator's verdict is the same`, async () => {
        const body = pod(`bad-${value.length}`, [gt(value)]);
        const answer = await refusal(createObject(cluster.objects, body));
        assert.equal(answer.code, 422);
        assert.match(
          answer.status.message ?? '',
          new RegExp(`^Pod "bad-${value.length}" is invalid: spec\\.tolerations\\[0\\]\\.value: Invalid value: "${value}": `),
        );
        const verdict = await validatingVerdict(cluster, body);
        assert.equal(verdict.allowed, false);
        assert.deepEqual(seen(verdict.status), seen(answer.status));
      });
    }

    it("a Deployment whose template has a Gt toleration is stored, tolerator's validating webhook having allowed it", async () => {
      const stored = await createObject(cluster.objects, deployment('ratchet', [gt('5')]));
      assert.deepEqual(tolerationsOf(stored), [gt('5')]);
      assert.deepEqual(await allowedBy(cluster, 'ratchet', 'CREATE', 'Deployment', ['validate']), ['validate']);
    });
    it("without the grant to GET /metrics, a restarted tolerator falls back to /version's default (off: alpha through 1.37) and refuses what the API server allows, as the README warns", async () => {
      const version = versionUnderTest();
      // The premise: the version's default is off (feature-gate-table.e2e.ts holds the table to /metrics).
      assert.deepEqual(defaultAtVersion(gate, version), { enabled: false, stage: 'ALPHA', beyondTable: false });
      const role = plain(
        await cluster.objects.read({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'tolerator' } }),
      ) as Manifest & { rules: { nonResourceURLs?: string[] }[] };
      const rules = role.rules.map((rule) => (rule.nonResourceURLs === undefined ? rule : { ...rule, nonResourceURLs: ['/version'] }));
      await cluster.objects.replace(asKubernetesObject({ ...role, rules }));
      // The RBAC authorizer reads roles through an informer: wait until tolerator's identity is refused.
      const identity = clientsFor(
        await cluster.plane.kubeconfigFor('system:serviceaccount:tolerator-system:tolerator', [
          'system:serviceaccounts',
          'system:serviceaccounts:tolerator-system',
        ]),
      );
      const deadline = Date.now() + 30_000;
      for (;;) {
        const review = (await createObject(identity.objects, {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SelfSubjectAccessReview',
          metadata: {},
          spec: { nonResourceAttributes: { path: '/metrics', verb: 'get' } },
        })) as Manifest & { status?: { allowed?: boolean } };
        if (review.status?.allowed !== true) break;
        assert.ok(Date.now() < deadline, 'GET /metrics was still granted 30 s after the ClusterRole lost it');
        await sleep(100);
      }
      await cluster.stopTolerator();
      await cluster.startTolerator();
      const served = cluster.tolerator();
      assert.ok(served);
      const agent = new Agent({ ca: cluster.serving.ca.cert });
      let readyz = await callServe(agent, served.port, '/readyz?verbose');
      // /readyz answers 503 until the first read of the gates is over (15 s at most).
      while (readyz.status !== 200 && Date.now() < deadline + 15_000) {
        await sleep(200);
        readyz = await callServe(agent, served.port, '/readyz?verbose');
      }
      agent.destroy();
      assert.equal(readyz.status, 200, readyz.body);
      const lines = readyz.body.split('\n');
      assert.ok(
        lines.includes(`feature gate ${gate}=false source=cluster-version (v${formatVersion(version)}: alpha default)`),
        readyz.body,
      );
      assert.match(readyz.body, /\/metrics: GET \/metrics: HTTP 403 /);
      const answer = await refusal(createObject(cluster.objects, pod('after-grant-lost', [gt('5')]), 'All'));
      assert.equal(
        answer.status.message,
        'admission webhook "validate.tolerator.dev" denied the request: Pod "after-grant-lost" is invalid: spec.tolerations[0].operator: Unsupported value: "Gt": supported values: "Equal", "Exists", "Lt", "Gt"',
      );
    });
  });

  describe(`kube-apiserver with ${gate} off (its default), on the same etcd`, () => {
    let cluster: ToleratorOnCluster;
    before(async () => {
      cluster = await startToleratorOnCluster({ dir });
    });
    after(async () => {
      await (cluster as ToleratorOnCluster | undefined)?.stop();
    });

    it('the API server reports the gate off in its /metrics, and tolerator, without a flag, reads it from there', async () => {
      const apiserver = await getRaw(cluster.kubeconfig, '/metrics');
      assert.deepEqual(samples(apiserver.body, `kubernetes_feature_enabled{name="${gate}"`), [
        `kubernetes_feature_enabled{name="${gate}",stage="ALPHA"} 0`,
      ]);
      await assertToleratorGate(cluster, false);
    });

    it("a new pod with a Gt toleration is refused with the API server's own message, and tolerator's verdict is the same", async () => {
      const body = pod('refused', [gt('5')]);
      const answer = await refusal(createObject(cluster.objects, body));
      assert.deepEqual(seen(answer.status), {
        code: 422,
        reason: 'Invalid',
        message:
          'Pod "refused" is invalid: spec.tolerations[0].operator: Unsupported value: "Gt": supported values: "Equal", "Exists", "Lt", "Gt"',
        details: {
          name: 'refused',
          kind: 'Pod',
          causes: [
            {
              reason: 'FieldValueNotSupported',
              message: 'Unsupported value: "Gt": supported values: "Equal", "Exists", "Lt", "Gt"',
              field: 'spec.tolerations[0].operator',
            },
          ],
        },
      });
      assert.deepEqual(seen((await validatingVerdict(cluster, body)).status), seen(answer.status));
    });

    it("a new Deployment whose template has a Gt toleration is refused by the API server, and tolerator's verdict is the same", async () => {
      const body = deployment('refused', [gt('5')]);
      const answer = await refusal(createObject(cluster.objects, body));
      assert.equal(answer.code, 422);
      assert.equal(
        answer.status.message,
        'Deployment.apps "refused" is invalid: spec.template.spec.tolerations[0].operator: Unsupported value: "Gt": supported values: "Equal", "Exists", "Lt", "Gt"',
      );
      assert.deepEqual(seen((await validatingVerdict(cluster, body)).status), seen(answer.status));
    });

    const tolerationsAnnotation = 'scheduler.alpha.kubernetes.io/tolerations';
    const template = (tolerations: unknown[], annotations?: Record<string, string>, restartPolicy = 'Always'): unknown => ({
      metadata: { labels: { app: 'a' }, ...(annotations === undefined ? {} : { annotations }) },
      spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }], restartPolicy, tolerations },
    });
    const selector = { matchLabels: { app: 'a' } };
    const objects: { name: string; object: Manifest }[] = [
      {
        name: "a Gt toleration in a pod's tolerations annotation",
        object: {
          ...pod('annotated'),
          metadata: { name: 'annotated', namespace, annotations: { [tolerationsAnnotation]: JSON.stringify([gt('5')]) } },
        },
      },
      {
        // core.Toleration has no json tags: Go names the field TolerationSeconds, not tolerationSeconds.
        name: "a string tolerationSeconds in a pod's tolerations annotation (Go's error names the field Toleration.TolerationSeconds)",
        object: {
          ...pod('mistyped'),
          metadata: {
            name: 'mistyped',
            namespace,
            annotations: { [tolerationsAnnotation]: '[{"key":"k","operator":"Exists","tolerationSeconds":"5"}]' },
          },
        },
      },
      {
        name: 'several errors in one toleration list, reported in upstream order',
        object: pod('several', [
          { ...gt('05'), tolerationSeconds: 5 },
          { key: '', operator: 'Gt', value: 'x', effect: 'Sometimes' },
          { key: 'k', operator: 'gt', value: '5' },
        ]),
      },
      {
        name: "a CronJob's job template, in its annotation and its spec",
        object: {
          apiVersion: 'batch/v1',
          kind: 'CronJob',
          metadata: { name: 'nightly', namespace },
          spec: {
            schedule: '0 3 * * *',
            jobTemplate: { spec: { template: template([gt('5')], { [tolerationsAnnotation]: JSON.stringify([lt('7')]) }, 'Never') } },
          },
        },
      },
      {
        name: "a DaemonSet's template",
        object: {
          apiVersion: 'apps/v1',
          kind: 'DaemonSet',
          metadata: { name: 'agent', namespace },
          spec: { selector, template: template([gt('5')]) },
        },
      },
      {
        name: "a StatefulSet's template",
        object: {
          apiVersion: 'apps/v1',
          kind: 'StatefulSet',
          metadata: { name: 'db', namespace },
          spec: { selector, serviceName: 'db', template: template([lt('5')]) },
        },
      },
      {
        name: "a Job's template",
        object: {
          apiVersion: 'batch/v1',
          kind: 'Job',
          metadata: { name: 'once', namespace },
          spec: { template: template([gt('5')], undefined, 'Never') },
        },
      },
      {
        name: "a ReplicationController's template",
        object: {
          apiVersion: 'v1',
          kind: 'ReplicationController',
          metadata: { name: 'legacy', namespace },
          spec: { selector: { app: 'a' }, template: template([gt('5')]) },
        },
      },
      {
        name: "a PodTemplate's template, in its annotation and its spec",
        object: {
          apiVersion: 'v1',
          kind: 'PodTemplate',
          metadata: { name: 'shape', namespace },
          template: template([gt('5')], { [tolerationsAnnotation]: JSON.stringify([gt('09')]) }),
        },
      },
      {
        name: "a ReplicaSet whose template's tolerations annotation does not parse",
        object: {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          metadata: { name: 'broken', namespace },
          spec: { selector, template: template([gt('5')], { [tolerationsAnnotation]: 'not json' }) },
        },
      },
    ];
    for (const row of objects) {
      it(`${row.name}: the API server's refusal is tolerator's verdict, word for word`, async () => {
        const answer = await refusal(createObject(cluster.objects, row.object, 'All'));
        assert.equal(answer.code, 422, answer.status.message);
        assert.doesNotMatch(answer.status.message ?? '', /admission webhook/);
        const verdict = await validatingVerdict(cluster, row.object);
        assert.equal(verdict.allowed, false);
        assert.deepEqual(seen(verdict.status), seen(answer.status));
      });
    }

    it('an UPDATE of the pod stored with Gt under the gate is allowed (the ratchet), by the API server and by both webhooks', async () => {
      const stored = await read(cluster, 'Pod', 'ratchet');
      const changed: Manifest = { ...stored, metadata: { ...stored.metadata, labels: { touched: 'yes' } } };
      const updated = plain(await cluster.objects.replace(asKubernetesObject(changed))) as Manifest;
      assert.deepEqual(updated.metadata.labels, { touched: 'yes' });
      assert.deepEqual(tolerationsOf(updated), tolerationsOf(stored));
      assert.deepEqual(await allowedBy(cluster, 'ratchet', 'UPDATE', 'Pod', ['mutate', 'validate']), ['mutate', 'validate']);
    });

    it('the ratchet lets that pod add another Lt toleration, but still checks its value, as tolerator does', async () => {
      const stored = await read(cluster, 'Pod', 'ratchet');
      const added = withTolerations(stored, [...tolerationsOf(stored), lt('3')]);
      const updated = plain(await cluster.objects.replace(asKubernetesObject(added))) as Manifest;
      assert.deepEqual(tolerationsOf(updated).at(-1), lt('3'));

      const again = await read(cluster, 'Pod', 'ratchet');
      const bad = withTolerations(again, [...tolerationsOf(again), lt('07')]);
      const answer = await refusal(cluster.objects.replace(asKubernetesObject(bad)));
      assert.equal(answer.code, 422);
      const index = tolerationsOf(again).length;
      assert.match(
        answer.status.message ?? '',
        new RegExp(
          `^Pod "ratchet" is invalid: spec\\.tolerations\\[${index}\\]\\.value: Invalid value: "07": must be a valid decimal integer in canonical form$`,
        ),
      );
      assert.deepEqual(seen((await validatingVerdict(cluster, bad, again)).status), seen(answer.status));
    });

    it("an UPDATE adding Gt to a pod stored without Gt/Lt is refused (nothing to ratchet on), and tolerator's verdict is the same", async () => {
      const stored = await read(cluster, 'Pod', 'plain');
      const added = withTolerations(stored, [...tolerationsOf(stored), gt('5')]);
      const answer = await refusal(cluster.objects.replace(asKubernetesObject(added)));
      assert.equal(answer.code, 422);
      assert.match(answer.status.message ?? '', /^Pod "plain" is invalid: spec\.tolerations\[\d+\]\.operator: Unsupported value: "Gt": /);
      assert.deepEqual(seen((await validatingVerdict(cluster, added, stored)).status), seen(answer.status));
    });

    it("the Deployment stored with Gt may change its template's Gt (the ratchet reads the old template), and its validating review is allowed", async () => {
      const stored = await read(cluster, 'Deployment', 'ratchet');
      const changed = withTolerations(stored, [gt('6')]);
      const updated = plain(await cluster.objects.replace(asKubernetesObject(changed))) as Manifest;
      assert.deepEqual(tolerationsOf(updated), [gt('6')]);
      assert.deepEqual(await allowedBy(cluster, 'ratchet', 'UPDATE', 'Deployment', ['validate']), ['validate']);
    });

    it("once its template drops Gt, putting Gt back is refused, and tolerator's verdict is the same", async () => {
      const stored = await read(cluster, 'Deployment', 'ratchet');
      await cluster.objects.replace(
        asKubernetesObject(withTolerations(stored, [{ key: 'example.com/cpu-generation', operator: 'Exists' }])),
      );
      const dropped = await read(cluster, 'Deployment', 'ratchet');
      const readded = withTolerations(dropped, [gt('6')]);
      const answer = await refusal(cluster.objects.replace(asKubernetesObject(readded)));
      assert.equal(
        answer.status.message,
        'Deployment.apps "ratchet" is invalid: spec.template.spec.tolerations[0].operator: Unsupported value: "Gt": supported values: "Equal", "Exists", "Lt", "Gt"',
      );
      assert.deepEqual(seen((await validatingVerdict(cluster, readded, dropped)).status), seen(answer.status));
    });
  });
});
