/**
 * The audit against an API server (the fake one): `tolerator audit --kubeconfig`, the list in
 * pages with its 410 Gone restart and a connection cut mid-page, and the periodic audit of
 * `serve` with its metrics and policy reports.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { defaultFeatureGates } from '../../src/api/feature-gates.js';
import type { AuditSettings } from '../../src/audit/audit-rules.js';
import { runAudit } from '../../src/server/audit-run.js';
import { createPeriodicAudit, type PeriodicAudit, type PeriodicAuditOptions } from '../../src/server/periodic-audit.js';
import { createMetrics } from '../../src/http/metrics.js';
import { createApiRequest } from '../../src/kube/api-requests.js';
import { staticClusterFacts } from '../../src/kube/cluster-state-file.js';
import { listInPages } from '../../src/kube/paged-list.js';
import { allPluginNames } from '../../src/plugins/registry.js';
import { loadPolicyDirectory } from '../../src/tenancy/policy-directory.js';
import { audit } from '../support/audit-command.js';
import { allAuditPods, auditNamespaces, auditNodes, expectedRulesByPod, policiesDir, storedPod } from '../support/audit-fixtures.js';
import { FakeApiServer, type KubeObject } from '../support/fake-api-server.js';

const settings: AuditSettings = {
  gates: defaultFeatureGates,
  enabled: new Set(allPluginNames),
  policies: loadPolicyDirectory(policiesDir).set,
  exclusion: {
    names: new Set(['kube-system', 'kube-node-lease', 'tolerator-system']),
    label: { key: 'tolerator.dev/ignore', value: 'true' },
  },
  all: false,
};
const facts = staticClusterFacts({ namespaces: auditNamespaces, nodes: auditNodes });
const noPause = (): Promise<void> => Promise.resolve();
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

function rulesByPod(violations: readonly { namespace: string; name: string; rule: string }[]): Map<string, string[]> {
  const byPod = new Map<string, string[]>();
  for (const violation of violations) {
    const key = `${violation.namespace}/${violation.name}`;
    byPod.set(key, [...(byPod.get(key) ?? []), violation.rule].sort());
  }
  return byPod;
}

/** A directory holding the TenancyPolicy `gpus`: groups by the namespace label `dedicated`, devices by the taint gpu.example.com/dedicated. */
function devicePolicyDirectory(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tolerator-audit-api-devices-'));
  const spec = {
    group: "namespaceObject.metadata.?labels['dedicated'].orValue('')",
    taint: { key: 'dedicated', effect: 'NoSchedule' },
    nodeLabel: 'dedicated',
    deviceTaint: { key: 'gpu.example.com/dedicated', effect: 'NoSchedule' },
  };
  writeFileSync(
    join(dir, 'gpus.json'),
    JSON.stringify({ apiVersion: 'tolerator.dev/v1alpha1', kind: 'TenancyPolicy', metadata: { name: 'gpus' }, spec }),
  );
  return dir;
}

const expected = new Map([...expectedRulesByPod()].filter(([, rules]) => rules.length > 0));

describe('the audit against an API server', () => {
  let fake: FakeApiServer;
  let kubeconfig: string;

  before(async () => {
    fake = await FakeApiServer.start();
    for (const namespace of auditNamespaces) fake.put('namespaces', namespace);
    for (const node of auditNodes) fake.put('nodes', node);
    for (const pod of allAuditPods()) fake.putPod(pod as KubeObject);
    const dir = mkdtempSync(join(tmpdir(), 'tolerator-audit-'));
    kubeconfig = join(dir, 'kubeconfig.yaml');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'fake', cluster: { server: fake.url, 'insecure-skip-tls-verify': true } }],
        users: [{ name: 'anonymous', user: {} }],
        contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'anonymous' } }],
        'current-context': 'fake',
      }),
    );
  });
  after(async () => {
    await fake.close();
  });
  beforeEach(() => {
    fake.cutPodListAtPage(undefined);
    fake.expireContinueTokens(0);
  });

  it('tolerator audit --kubeconfig finds what it finds in the same cluster as a file', async () => {
    const { code, stdout, stderr } = await audit(
      ['--kubeconfig', kubeconfig, '--policies', policiesDir, '--enable-plugins', 'PodNodeSelector', '-o', 'json'],
      {},
    );
    assert.equal(stderr, '');
    assert.equal(code, 1);
    const output = JSON.parse(stdout) as { violations: { namespace: string; name: string; rule: string }[] };
    assert.deepEqual(rulesByPod(output.violations), expected);
    assert.ok(
      fake.podListRequests.every((request) => request.limit === '500'),
      'every pod list asks for a page',
    );
  });

  it('tolerator audit --kubeconfig lists Karpenter NodePools where they are served and reports a broken one by name', async () => {
    fake.karpenterNodePools = {
      status: 200,
      items: [
        {
          apiVersion: 'karpenter.sh/v1',
          kind: 'NodePool',
          metadata: { name: 'gpu-open' },
          spec: { template: { metadata: { labels: { dedicated: 'gpu' } }, spec: { requirements: [] } } },
        },
      ],
    };
    try {
      const { code, stdout, stderr } = await audit(
        ['--kubeconfig', kubeconfig, '--policies', policiesDir, '--rule', 'nodepool-pattern', '-o', 'json'],
        {},
      );
      assert.equal(stderr, '');
      assert.equal(code, 1);
      const output = JSON.parse(stdout) as { violations: { kind?: string; name: string; rule: string }[] };
      assert.deepEqual(
        output.violations.map(({ kind, name, rule }) => ({ kind, name, rule })),
        [{ kind: 'NodePool', name: 'gpu-open', rule: 'nodepool-pattern' }],
      );
    } finally {
      fake.karpenterNodePools = undefined;
    }
  });

  it("ResourceClaims from the API server: an allocated claim that tolerates another group's device taint is a foreign-device-toleration finding; a 403 is a note", async () => {
    const devicePolicies = devicePolicyDirectory();
    const tolerations = [{ key: 'gpu.example.com/dedicated', operator: 'Exists', effect: 'NoSchedule' }];
    fake.resourceClaims = {
      status: 200,
      items: [
        {
          apiVersion: 'resource.k8s.io/v1',
          kind: 'ResourceClaim',
          metadata: { name: 'stolen', namespace: 'tenant-a' },
          spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu', tolerations } }] } },
          status: { allocation: { devices: { results: [{ request: 'gpu', driver: 'd', pool: 'p', device: 'g', tolerations }] } } },
        },
      ],
    };
    try {
      const found = await audit(
        ['--kubeconfig', kubeconfig, '--policies', devicePolicies, '--rule', 'foreign-device-toleration', '-o', 'json'],
        {},
      );
      assert.equal(found.code, 1, found.stderr);
      assert.deepEqual(
        (JSON.parse(found.stdout) as { violations: { kind?: string; namespace: string; name: string }[] }).violations.map(
          ({ kind, namespace, name }) => ({ kind, namespace, name }),
        ),
        [{ kind: 'ResourceClaim', namespace: 'tenant-a', name: 'stolen' }],
      );
      fake.resourceClaims = { status: 403, items: [] };
      const refused = await audit(
        ['--kubeconfig', kubeconfig, '--policies', devicePolicies, '--rule', 'foreign-device-toleration', '-o', 'json'],
        {},
      );
      assert.match(
        refused.stderr,
        /^tolerator audit: ResourceClaims not audited: HTTP 403: resourceclaims\.resource\.k8s\.io is forbidden$/m,
      );
      assert.equal(refused.code, 0, refused.stderr);
    } finally {
      fake.resourceClaims = undefined;
    }
  });

  it('a caller that may not list NodePools: the audit says so on stderr and audits the pods', async () => {
    fake.karpenterNodePools = { status: 403, items: [] };
    try {
      const { code, stdout, stderr } = await audit(
        ['--kubeconfig', kubeconfig, '--policies', policiesDir, '--enable-plugins', 'PodNodeSelector', '-o', 'json'],
        {},
      );
      assert.match(stderr, /^tolerator audit: Karpenter NodePools not audited: HTTP 403: nodepools\.karpenter\.sh is forbidden$/m);
      assert.equal(code, 1);
      assert.deepEqual(
        rulesByPod((JSON.parse(stdout) as { violations: { namespace: string; name: string; rule: string }[] }).violations),
        expected,
      );
    } finally {
      fake.karpenterNodePools = undefined;
    }
  });

  it('lists in pages of `limit`, following `continue`, one page at a time', async () => {
    const before = fake.podListRequests.length;
    const pageSizes: number[] = [];
    const request = createApiRequest(fake.kubeConfig());
    const result = await runAudit(
      (handlers) =>
        listInPages(
          request,
          '/api/v1/pods',
          { pageSize: 4, maxRestarts: 3, pause: noPause },
          {
            onRestart: handlers.onRestart,
            onPage: async (items) => {
              pageSizes.push(items.length);
              await handlers.onPage(items);
            },
          },
        ),
      facts,
      settings,
    );
    assert.deepEqual(rulesByPod(result.violations), expected);
    const pods = allAuditPods().length;
    assert.equal(pageSizes.length, Math.ceil(pods / 4));
    assert.ok(pageSizes.every((size) => size <= 4));
    const requests = fake.podListRequests.slice(before);
    assert.equal(requests[0]?.continue, null);
    assert.ok(requests.slice(1).every((request) => request.continue !== null && request.limit === '4'));
  });

  it('a 410 Gone on continue starts the list over and forgets the pages seen; the result is the same', async () => {
    fake.expireContinueTokens(1);
    const request = createApiRequest(fake.kubeConfig());
    let restarts = 0;
    const result = await runAudit(
      (handlers) =>
        listInPages(
          request,
          '/api/v1/pods',
          { pageSize: 4, maxRestarts: 3, pause: noPause },
          {
            onPage: handlers.onPage,
            onRestart: () => {
              restarts += 1;
              handlers.onRestart();
            },
          },
        ),
      facts,
      settings,
    );
    assert.equal(restarts, 1);
    assert.deepEqual(rulesByPod(result.violations), expected);
    assert.equal(result.summary.audited, expectedRulesByPod().size, 'no pod counted twice');
  });

  it('a continue token that keeps expiring fails the list after the bounded restarts', async () => {
    fake.expireContinueTokens(10);
    const request = createApiRequest(fake.kubeConfig());
    await assert.rejects(
      listInPages(
        request,
        '/api/v1/pods',
        { pageSize: 4, maxRestarts: 3, pause: noPause },
        { onPage: () => undefined, onRestart: () => undefined },
      ),
      /continue token expired \(410 Gone\) 4 times/,
    );
  });

  it('a connection cut mid-page fails the list instead of taking half a page for a page', async () => {
    const request = createApiRequest(fake.kubeConfig());
    fake.cutPodListAtPage(fake.podPagesServedCount + 1);
    let pages = 0;
    await assert.rejects(
      listInPages(
        request,
        '/api/v1/pods',
        { pageSize: 4, maxRestarts: 3, pause: noPause },
        {
          onPage: () => {
            pages += 1;
          },
          onRestart: () => undefined,
        },
      ),
      /closed before the response was complete|aborted|ECONNRESET|socket hang up/,
    );
    assert.equal(pages, 1);
  });

  describe('the periodic audit of serve', () => {
    const pace = { pageSize: 4, requestsPerSecond: 1000, sliceMs: 1 };

    /** The periodic audit of these tests: hourly, the fixture's facts and settings, a fixed clock, silent; `options` override. */
    function periodicAudit(options: Partial<PeriodicAuditOptions> & Pick<PeriodicAuditOptions, 'request'>): PeriodicAudit {
      return createPeriodicAudit({
        intervalMs: 3_600_000,
        facts,
        settings: () => settings,
        metrics: createMetrics({ collectProcessMetrics: false }),
        logger: silent,
        now: () => 1_700_000_000_000,
        pace,
        ...options,
      });
    }

    it('publishes the violations by rule and namespace, the completion time, and no report without the CRD', async () => {
      const metrics = createMetrics({ collectProcessMetrics: false });
      const reportRequests = fake.reportRequests.length;
      const periodic = periodicAudit({
        request: createApiRequest(fake.kubeConfig()),
        metrics,
      });
      assert.equal(await periodic.runOnce(), 'completed');
      const text = await metrics.registry.metrics();
      assert.match(text, /tolerator_audit_violations\{rule="foreign-node",namespace="shared"\} 3/);
      assert.match(text, /tolerator_audit_violations\{rule="missing-pair",namespace="tenant-a"\} 1/);
      assert.match(text, /tolerator_audit_last_completed_timestamp_seconds 1700000000/);
      assert.match(text, /tolerator_audit_runs_total\{result="completed"\} 1/);
      // Discovery only: both report APIs answered 404, nothing written, nothing failed.
      assert.deepEqual(
        fake.reportRequests.slice(reportRequests).map((request) => `${request.method} ${request.path}`),
        ['GET /apis/wgpolicyk8s.io/v1alpha2', 'GET /apis/openreports.io/v1alpha1'],
      );
      assert.doesNotMatch(text, /tolerator_audit_report_writes_total\{result="failure"\}/);
    });

    it('pages over maxPageBytes are listed again in smaller pages: the run completes with the same findings', async () => {
      const whole = createMetrics({ collectProcessMetrics: false });
      const small = createMetrics({ collectProcessMetrics: false });
      const run = (metrics: typeof whole, maxPageBytes: number) =>
        periodicAudit({
          request: createApiRequest(fake.kubeConfig()),
          metrics,
          pace: { ...pace, maxPageBytes },
        }).runOnce();
      assert.equal(await run(whole, 100 * 1024 * 1024), 'completed');
      const pagesBefore = fake.podPagesServedCount;
      // Room for the largest pod and the list around it: a page of one always fits, most of four do not.
      const largest = Math.max(...allAuditPods().map((pod) => JSON.stringify(pod).length));
      assert.equal(await run(small, largest + 512), 'completed');
      assert.ok(fake.podPagesServedCount - pagesBefore > Math.ceil(allAuditPods().length / pace.pageSize));
      assert.equal(
        await small.registry.getSingleMetricAsString('tolerator_audit_violations'),
        await whole.registry.getSingleMetricAsString('tolerator_audit_violations'),
      );
    });

    it("a node the informer cache lacks is read live at the audit's pace, not once per pod as fast as the API server answers", async () => {
      // Pods bound to nodes that do not exist (created before tolerator, or where no policy refuses
      // them): each name is one live read, and a tenant chooses how many names there are.
      const missing = new Set(['ghost-1', 'ghost-2', 'ghost-3', 'ghost-4', 'ghost-5']);
      const pods = [...missing].map((node) => storedPod({ namespace: 'shared', name: `on-${node}`, node }));
      // Each read is timed by the pacer's own last reading of its clock (the moment it let the
      // request go), not by when this code runs after it: a loaded machine delays that
      // continuation by a few milliseconds, which would make the next gap look short.
      let lastClockReading = 0;
      const clock = (): number => (lastClockReading = performance.now());
      const reads: number[] = [];
      const counting = {
        ...facts,
        readNode: (name: string) => {
          if (missing.has(name)) reads.push(lastClockReading);
          return facts.readNode(name);
        },
      };
      const rate = 20;
      const periodic = periodicAudit({
        request: createApiRequest(fake.kubeConfig()),
        clock,
        facts: counting,
        metrics: createMetrics({ collectProcessMetrics: false }),
        pace: { ...pace, pageSize: 100, requestsPerSecond: rate },
      });
      for (const pod of pods) fake.putPod(pod as KubeObject);
      try {
        assert.equal(await periodic.runOnce(), 'completed');
      } finally {
        for (const pod of pods) fake.deletePod('shared', (pod.metadata as { name: string }).name);
      }
      assert.equal(reads.length, missing.size);
      // The pace is a lower bound on the gap between requests (a timer never fires early by more than its 1 ms resolution).
      for (let i = 1; i < reads.length; i++) assert.ok((reads[i] ?? 0) - (reads[i - 1] ?? 0) >= 1000 / rate - 1, `read ${i} came too soon`);
    });

    it('a run cut mid-list leaves the previous metrics, counts the failure, and the next run publishes anew', async () => {
      const metrics = createMetrics({ collectProcessMetrics: false });
      let clock = 1_700_000_000_000;
      const periodic = periodicAudit({
        request: createApiRequest(fake.kubeConfig()),
        metrics,
        now: () => clock,
      });
      assert.equal(await periodic.runOnce(), 'completed');
      const first = await metrics.registry.getSingleMetricAsString('tolerator_audit_violations');
      clock += 60_000;
      fake.cutPodListAtPage(fake.podPagesServedCount + 1);
      assert.equal(await periodic.runOnce(), 'failed');
      assert.equal(await metrics.registry.getSingleMetricAsString('tolerator_audit_violations'), first);
      const text = await metrics.registry.metrics();
      assert.match(text, /tolerator_audit_last_completed_timestamp_seconds 1700000000\n/);
      assert.match(text, /tolerator_audit_runs_total\{result="failed"\} 1/);
      fake.cutPodListAtPage(undefined);
      assert.equal(await periodic.runOnce(), 'completed');
      assert.match(await metrics.registry.metrics(), /tolerator_audit_last_completed_timestamp_seconds 1700000060\n/);
    });

    it(
      'stop() aborts the page in flight and resolves without waiting for it; the stopped run publishes nothing',
      { timeout: 30_000 },
      async () => {
        const metrics = createMetrics({ collectProcessMetrics: false });
        // The page requests go through this wrapper, which records how each one settled and when.
        const events: string[] = [];
        const real = createApiRequest(fake.kubeConfig());
        const periodic = periodicAudit({
          request: (method, path, body, limits) =>
            real(method, path, body, limits).then(
              (response) => {
                events.push(`${path.split('?')[0] ?? ''} answered`);
                return response;
              },
              (error: unknown) => {
                events.push(`${path.split('?')[0] ?? ''} rejected: ${error instanceof Error ? error.message : String(error)}`);
                throw error;
              },
            ),
          metrics,
          pace: { ...pace, firstRunDelayMs: 0 },
        });
        // The second page sends half its body, then nothing: it would end only at the request's 60 s deadline.
        const hung = fake.hangPodListAtPage(fake.podPagesServedCount + 1);
        periodic.start();
        await hung.sent;
        await periodic.stop();
        events.push('stop() resolved');
        await hung.abandoned;
        assert.deepEqual(events, ['/api/v1/pods answered', '/api/v1/pods rejected: the periodic audit was stopped', 'stop() resolved']);
        const text = await metrics.registry.metrics();
        assert.doesNotMatch(text, /tolerator_audit_runs_total\{/);
        assert.doesNotMatch(text, /tolerator_audit_violations\{/);
        assert.match(text, /tolerator_audit_last_completed_timestamp_seconds 0\n/);
      },
    );

    it('stop() during the pause between pages ends the run there: no page is requested after it', { timeout: 30_000 }, async () => {
      const metrics = createMetrics({ collectProcessMetrics: false });
      const pages = fake.podPagesServedCount;
      const periodic = periodicAudit({
        request: createApiRequest(fake.kubeConfig()),
        metrics,
        // One request every 100 s: the pause after the first page would last that long.
        pace: { ...pace, requestsPerSecond: 0.01, firstRunDelayMs: 0 },
      });
      periodic.start();
      while (fake.podPagesServedCount === pages) await new Promise((resolve) => setTimeout(resolve, 5));
      await periodic.stop();
      assert.equal(fake.podPagesServedCount, pages + 1);
      assert.doesNotMatch(await metrics.registry.metrics(), /tolerator_audit_runs_total\{/);
    });

    it('writes one PolicyReport per namespace with violations when the CRD is served, replaces it, and deletes it once clean', async () => {
      const local = await FakeApiServer.start();
      try {
        local.installReportCrd('wgpolicyk8s.io', 'v1alpha2', 'policyreports');
        const bad = storedPod({ namespace: 'shared', name: 'on-b', node: 'node-b' });
        local.putPod(bad as KubeObject);
        local.putPod(storedPod({ namespace: 'tenant-a', name: 'tenant-on-plain', node: 'plain' }) as KubeObject);
        const metrics = createMetrics({ collectProcessMetrics: false });
        const periodic = periodicAudit({
          request: createApiRequest(local.kubeConfig()),
          metrics,
        });
        assert.equal(await periodic.runOnce(), 'completed');
        assert.deepEqual([...local.reports.keys()].sort(), ['shared/tolerator-audit', 'tenant-a/tolerator-audit']);
        const report = local.reports.get('shared/tolerator-audit');
        assert.ok(report !== undefined);
        assert.equal(report.apiVersion, 'wgpolicyk8s.io/v1alpha2');
        assert.equal(report.kind, 'PolicyReport');
        assert.deepEqual(report.metadata.labels, { 'app.kubernetes.io/managed-by': 'tolerator', 'app.kubernetes.io/component': 'audit' });
        const results = report.results as { policy: string; rule: string; result: string; resources: unknown[]; timestamp: unknown }[];
        assert.deepEqual(
          results.map(({ policy, rule, result }) => ({ policy, rule, result })),
          [
            { policy: 'dedicated-by-namespace-label', rule: 'foreign-node', result: 'fail' },
            { policy: 'tolerator', rule: 'missing-default-tolerations', result: 'fail' },
            { policy: 'tolerator', rule: 'missing-memory-pressure', result: 'fail' },
          ],
        );
        const [first] = results;
        assert.ok(first);
        assert.deepEqual(first.resources, [{ apiVersion: 'v1', kind: 'Pod', namespace: 'shared', name: 'on-b' }]);
        assert.deepEqual(first.timestamp, { seconds: 1_700_000_000, nanos: 0 });
        assert.deepEqual(report.summary, { pass: 0, fail: 3, warn: 0, error: 0, skip: 0 });

        // The tenant's pod is fixed (recreated with the pair), the shared one stays: shared's
        // report is replaced, tenant-a's deleted.
        local.putPod(
          storedPod({
            namespace: 'tenant-a',
            name: 'tenant-on-plain',
            node: 'node-a',
            burstable: false,
            tolerations: [
              { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
              { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
              { key: 'dedicated', operator: 'Equal', value: 'a', effect: 'NoSchedule' },
            ],
            affinity: {
              nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                  nodeSelectorTerms: [{ matchExpressions: [{ key: 'dedicated', operator: 'In', values: ['a'] }] }],
                },
              },
            },
          }) as KubeObject,
        );
        const before = local.reportRequests.length;
        assert.equal(await periodic.runOnce(), 'completed');
        assert.deepEqual([...local.reports.keys()], ['shared/tolerator-audit']);
        assert.deepEqual(
          local.reportRequests.slice(before).map((request) => request.method),
          ['GET', 'GET', 'PUT', 'DELETE'],
        );
        assert.match(await metrics.registry.metrics(), /tolerator_audit_report_writes_total\{result="success"\} 4/);
      } finally {
        await local.close();
      }
    });

    describe('ResourceClaims', () => {
      const deviceKey = 'gpu.example.com/dedicated';
      const devicePolicies = devicePolicyDirectory();
      const deviceSettings: AuditSettings = { ...settings, policies: loadPolicyDirectory(devicePolicies).set };
      const tolerations = [{ key: deviceKey, operator: 'Equal', value: 'b', effect: 'NoSchedule' }];
      const stolen: KubeObject = {
        apiVersion: 'resource.k8s.io/v1',
        kind: 'ResourceClaim',
        metadata: { name: 'stolen', namespace: 'tenant-a' },
        spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu', tolerations } }] } },
        status: { allocation: { devices: { results: [{ request: 'gpu', driver: 'd', pool: 'p', device: 'g', tolerations }] } } },
      };
      /** The run's log lines, as the logger was called. */
      const recording = (): {
        lines: { level: string; fields: Record<string, unknown>; message: string }[];
        logger: PeriodicAuditOptions['logger'];
      } => {
        const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
        const log =
          (level: string) =>
          (fields: Record<string, unknown>, message?: string): void => {
            lines.push({ level, fields, message: message ?? '' });
          };
        return {
          lines,
          logger: { info: log('info'), warn: log('warn'), error: log('error') },
        };
      };

      /** One run of the periodic audit with the device policy against `local`, which completes. */
      const completedRun = async (
        local: FakeApiServer,
      ): Promise<{ metrics: ReturnType<typeof createMetrics>; lines: ReturnType<typeof recording>['lines'] }> => {
        const metrics = createMetrics({ collectProcessMetrics: false });
        const { lines, logger } = recording();
        const periodic = periodicAudit({ request: createApiRequest(local.kubeConfig()), metrics, logger, settings: () => deviceSettings });
        assert.equal(await periodic.runOnce(), 'completed');
        return { metrics, lines };
      };

      it("the periodic audit reads ResourceClaims: a foreign device toleration is a foreign-device-toleration violation, in its namespace's PolicyReport", async () => {
        const local = await FakeApiServer.start();
        try {
          local.installReportCrd('wgpolicyk8s.io', 'v1alpha2', 'policyreports');
          local.resourceClaims = { status: 200, items: [stolen] };
          const { metrics, lines } = await completedRun(local);
          assert.match(
            await metrics.registry.metrics(),
            /tolerator_audit_violations\{rule="foreign-device-toleration",namespace="tenant-a"\} 1/,
          );
          const report = local.reports.get('tenant-a/tolerator-audit');
          assert.ok(report !== undefined, "a report in the claim's namespace");
          const results = report.results as { policy: string; rule: string; category: string; resources: unknown[] }[];
          assert.deepEqual(
            results.filter((result) => result.rule === 'foreign-device-toleration'),
            [
              {
                ...results.find((result) => result.rule === 'foreign-device-toleration'),
                policy: 'gpus',
                rule: 'foreign-device-toleration',
                category: 'Dedicated devices',
                resources: [{ apiVersion: 'resource.k8s.io/v1', kind: 'ResourceClaim', namespace: 'tenant-a', name: 'stolen' }],
              },
            ],
          );
          // Listed in pages at the audit's pace: one probe of one item, then pages of pageSize.
          assert.deepEqual(local.resourceClaimRequests, [
            '/apis/resource.k8s.io/v1/resourceclaims?limit=1',
            `/apis/resource.k8s.io/v1/resourceclaims?limit=${pace.pageSize}`,
          ]);
          assert.equal(lines.find((line) => line.message === 'audit completed')?.fields.resourceClaims, 1);
        } finally {
          await local.close();
        }
      });

      it('the periodic audit skips ResourceClaims where resource.k8s.io/v1 is not served or may not be listed, and completes the rest', async () => {
        const local = await FakeApiServer.start();
        try {
          for (const namespace of auditNamespaces) local.put('namespaces', namespace);
          local.putPod(storedPod({ namespace: 'shared', name: 'on-b', node: 'node-b' }) as KubeObject);
          for (const [served, said] of [
            [undefined, /^skipped: the API server does not serve resource\.k8s\.io\/v1 ResourceClaims$/],
            [
              { status: 403, items: [] },
              /^skipped: may not list ResourceClaims \(HTTP 403: resourceclaims\.resource\.k8s\.io is forbidden\)$/,
            ],
          ] as const) {
            local.resourceClaims = served;
            const { metrics, lines } = await completedRun(local);
            assert.match(await metrics.registry.metrics(), /tolerator_audit_violations\{rule="foreign-node",namespace="shared"\} 1/);
            assert.match(String(lines.find((line) => line.message === 'audit completed')?.fields.resourceClaims), said);
            assert.equal(lines.filter((line) => line.level === 'warn').length, served === undefined ? 0 : 1);
          }
        } finally {
          await local.close();
        }
      });

      it('without a TenancyPolicy that has spec.deviceTaint the periodic audit sends no ResourceClaim request', async () => {
        fake.resourceClaims = { status: 200, items: [stolen] };
        try {
          const before = fake.resourceClaimRequests.length;
          const { lines, logger } = recording();
          assert.equal(await periodicAudit({ request: createApiRequest(fake.kubeConfig()), logger }).runOnce(), 'completed');
          assert.equal(fake.resourceClaimRequests.length, before);
          assert.equal(
            lines.find((line) => line.message === 'audit completed')?.fields.resourceClaims,
            'skipped: no TenancyPolicy has spec.deviceTaint',
          );
        } finally {
          fake.resourceClaims = undefined;
        }
      });
    });

    it('pause(): another replica holds the audit Lease, so this one clears its audit series and a run that ends publishes nothing', async () => {
      const metrics = createMetrics({ collectProcessMetrics: false });
      const periodic = periodicAudit({ request: createApiRequest(fake.kubeConfig()), metrics });
      assert.equal(await periodic.runOnce(), 'completed');
      assert.match(await metrics.registry.getSingleMetricAsString('tolerator_audit_violations'), /tolerator_audit_violations\{/);
      periodic.pause();
      assert.doesNotMatch(await metrics.registry.getSingleMetricAsString('tolerator_audit_violations'), /tolerator_audit_violations\{/);
      assert.equal(await periodic.runOnce(), 'failed');
      assert.doesNotMatch(await metrics.registry.getSingleMetricAsString('tolerator_audit_violations'), /tolerator_audit_violations\{/);
      assert.match(await metrics.registry.metrics(), /tolerator_audit_runs_total\{result="completed"\} 1/);
      await periodic.stop();
    });
  });

  it("tolerator audit -n NS asks the API server for that namespace's pods only", async () => {
    const { code, stdout } = await audit(['--kubeconfig', kubeconfig, '--policies', policiesDir, '-o', 'json', '-n', 'shared'], {});
    assert.ok(code === 0 || code === 1);
    assert.deepEqual(fake.namespacedPodLists.slice(-1), ['shared']);
    const output = JSON.parse(stdout) as { violations: { namespace: string }[] };
    assert.ok(output.violations.every((violation) => violation.namespace === 'shared'));
  });

  it('tolerator audit --group-by workload reads each owning ReplicaSet once, and follows it to its Deployment', async () => {
    const owned = (name: string): KubeObject => ({
      ...storedPod({ namespace: 'shared', name, tolerations: [] }),
      metadata: {
        name,
        namespace: 'shared',
        uid: `uid-${name}`,
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-5f6c7', uid: 'uid-rs', controller: true }],
      },
    });
    fake.putPod(owned('web-5f6c7-a'));
    fake.putPod(owned('web-5f6c7-b'));
    fake.putOwned({
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name: 'web-5f6c7',
        namespace: 'shared',
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'uid-d', controller: true }],
      },
    });
    try {
      const reads = fake.ownerReads.length;
      const { code, stdout } = await audit(
        ['--kubeconfig', kubeconfig, '--policies', policiesDir, '-o', 'json', '--group-by', 'workload', '-n', 'shared'],
        {},
      );
      assert.equal(code, 1);
      const output = JSON.parse(stdout) as { workloads: { kind: string; name: string; pods: number; rule: string }[] };
      const web = output.workloads.filter((row) => row.kind === 'Deployment' && row.name === 'web');
      assert.ok(web.length > 0);
      assert.ok(web.every((row) => row.pods === 2));
      assert.deepEqual(fake.ownerReads.slice(reads), ['/apis/apps/v1/namespaces/shared/replicasets/web-5f6c7']);
    } finally {
      fake.deletePod('shared', 'web-5f6c7-a');
      fake.deletePod('shared', 'web-5f6c7-b');
    }
  });
});
