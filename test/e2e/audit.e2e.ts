/**
 * The audit of what is already running, against a real kube-apiserver: `tolerator audit
 * --kubeconfig` as a child process with tolerator's own identity and the RBAC of
 * deploy/overlays/audit, over more pods than one page holds; and the periodic audit of
 * `tolerator serve --audit-interval` writing PolicyReports into the real wgpolicyk8s.io CRD
 * (test/fixtures/crds), read back as the API server stored them.
 *
 * The pods that break a rule are ones admission never judged as they stand: created while their
 * namespace was labelled tolerator.dev/ignore=true (the label then removed), and tenant pods created
 * before their namespace joined a group. (A pod cannot be created in a reviewed namespace while
 * tolerator is down: the validating webhook refuses it, see failure-modes.e2e.ts.)
 *
 * kube-apiserver writes an audit log of every pod LIST (an audit policy of our own), which is how
 * the tests see the pages each client asked for: its `limit`, its `continue` token, its user.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { findKubectl, REPO_ROOT, skipWithoutControlPlane } from '../cluster/binaries.js';
import { createFakeNodes } from '../cluster/fake-node.js';
import { pollUntil } from '../cluster/poll.js';
import {
  asKubernetesObject,
  createObject,
  getFromTolerator,
  plain,
  startToleratorOnCluster,
  TOLERATOR_GROUPS,
  TOLERATOR_USER,
  type Manifest,
  type ToleratorOnCluster,
} from '../cluster/tolerator-on-cluster.js';
import { renderKustomize } from '../support/rendered-manifests.js';

const skip = skipWithoutControlPlane();

/**
 * 1,000 ordinary pods in one namespace, plus the handful the cases need: more than two of the
 * CLI's pages of 500 (client-go's pager default), so its list takes three requests, and ten of
 * the periodic audit's pages of 100. Created in a namespace no webhook reviews at the time, so
 * creating them costs the API server and etcd only.
 */
const BULK = 1_000;

/** Namespaces sort before the cases' (`late`, `legacy`) so their pods come on the list's last page. */
const bulk = 'bulk';
const fine = 'fine';
const late = 'late';
const legacy = 'legacy';

function pod(name: string, namespace: string, spec: Record<string, unknown> = {}, burstable = false): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      containers: [{ name: 'app', image: 'registry.example/app:1', ...(burstable ? { resources: { requests: { cpu: '10m' } } } : {}) }],
      ...spec,
    },
  };
}

/** Runs `tolerator audit` as a user runs it (a child process of the CLI), resolving to its exit code and output. */
function runAudit(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--enable-experimental-regexp-engine-on-excessive-backtracks', '--import', 'tsx', 'src/main.ts', 'audit', ...args],
      { cwd: REPO_ROOT, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

interface AuditEvent {
  readonly verb: string;
  readonly requestURI: string;
  readonly user: { readonly username: string };
  readonly responseStatus?: { readonly code?: number };
}

/** The pod LISTs kube-apiserver's audit log holds so far, in order. */
function podLists(auditLog: string): AuditEvent[] {
  if (!existsSync(auditLog)) return [];
  return readFileSync(auditLog, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as AuditEvent)
    .filter((event) => event.verb === 'list' && event.requestURI.startsWith('/api/v1/pods?'));
}

interface Finding {
  readonly namespace: string;
  readonly name: string;
  readonly rule: string;
  readonly policy?: string;
}

const policy = 'dedicated-by-namespace-label';

/** What the audit must find: every pod admission did not judge as it stands, and nothing else. */
const expected: Finding[] = [
  { namespace: late, name: 'tenant-0', rule: 'missing-pair', policy },
  { namespace: late, name: 'tenant-1', rule: 'missing-pair', policy },
  { namespace: legacy, name: 'burstable', rule: 'missing-memory-pressure' },
  { namespace: legacy, name: 'ghost', rule: 'unknown-node', policy },
  { namespace: legacy, name: 'on-gpu', rule: 'foreign-node', policy },
];

describe('the audit against kube-apiserver', { skip }, () => {
  let cluster: ToleratorOnCluster;
  let dir: string;
  let auditLog: string;
  let identity: string;
  let policies: string;
  let withoutAuditRbac: { code: number; stdout: string; stderr: string };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-audit-'));
    auditLog = join(dir, 'apiserver-audit.log');
    const auditPolicy = join(dir, 'audit-policy.yaml');
    writeFileSync(
      auditPolicy,
      [
        'apiVersion: audit.k8s.io/v1',
        'kind: Policy',
        'omitStages: [RequestReceived]',
        'rules:',
        '  - level: Metadata',
        '    verbs: [list]',
        '    resources: [{ group: "", resources: [pods] }]',
        '  - level: None',
        '',
      ].join('\n'),
    );
    policies = join(dir, 'policies');
    mkdirSync(policies);
    copyFileSync(join(REPO_ROOT, 'policies', `${policy}.yaml`), join(policies, `${policy}.yaml`));
    cluster = await startToleratorOnCluster({
      dir,
      plane: { apiserverArgs: [`--audit-policy-file=${auditPolicy}`, `--audit-log-path=${auditLog}`] },
      // 5 s: the first run 5 s after start (the interval, being under a minute), then one 5 s
      // after each run ends.
      serveArgs: ['--policies', policies, '--audit-interval', '5s'],
    });
    const { objects } = cluster;
    identity = await cluster.plane.kubeconfigFor(TOLERATOR_USER, TOLERATOR_GROUPS);

    await createFakeNodes(objects, {
      'gpu-1': { labels: { dedicated: 'gpu' }, taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] },
      'general-1': {},
    });
    // Opted out while their pods are created, so no webhook sees them; the label comes off after.
    for (const name of [bulk, legacy]) {
      await createObject(objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'tolerator.dev/ignore': 'true' } } });
    }
    for (const name of [fine, late]) await createObject(objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });

    const queue = Array.from({ length: BULK }, (_, i) => pod(`pod-${String(i).padStart(4, '0')}`, bulk));
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let next = queue.pop(); next !== undefined; next = queue.pop()) await createObject(objects, next);
      }),
    );
    await createObject(objects, pod('burstable', legacy, {}, true));
    await createObject(objects, pod('on-gpu', legacy, { nodeName: 'gpu-1' }));
    await createObject(objects, pod('ghost', legacy, { nodeName: 'ghost-1' }));
    // Reviewed and admitted while `late` belongs to no group; then it joins group gpu.
    await createObject(objects, pod('ok', fine, {}, true));
    await createObject(objects, pod('tenant-0', late, {}, true));
    await createObject(objects, pod('tenant-1', late, {}, true));
    const merge = k8s.PatchStrategy.MergePatch;
    for (const name of [bulk, legacy]) {
      await objects.patch(
        {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name, labels: { 'tolerator.dev/ignore': null } },
        } as unknown as k8s.KubernetesObject, // null deletes the label (JSON merge patch)
        undefined,
        undefined,
        undefined,
        undefined,
        merge,
      );
    }
    await objects.patch(
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: late, labels: { dedicated: 'gpu' } } },
      undefined,
      undefined,
      undefined,
      undefined,
      merge,
    );

    // The shipped ClusterRole alone: namespaces and nodes, no pods.
    withoutAuditRbac = await runAudit(['--kubeconfig', identity, '--policies', policies, '-o', 'json']);

    // deploy/overlays/audit's own RBAC (the ClusterRole tolerator-audit and its binding, the Role
    // of the audit Lease and its binding), and the CRD. Until the Lease's Role is in, serve's
    // tries for the Lease are refused and it does not audit.
    for (const object of renderKustomize(join(REPO_ROOT, 'deploy', 'overlays', 'audit'))) {
      if (/^(Cluster)?Role(Binding)?$/.test(object.kind) && object.metadata.name.startsWith('tolerator-audit')) {
        await objects.create(asKubernetesObject(object as Manifest));
      }
    }
    const crdFile = join(REPO_ROOT, 'test', 'fixtures', 'crds', 'wgpolicyk8s.io_policyreports.yaml');
    const crd = parseAllDocuments(readFileSync(crdFile, 'utf8'))[0]!.toJS() as Manifest;
    await createObject(objects, crd);
    await pollUntil(
      'the PolicyReport CRD established',
      async () => {
        const stored = plain(
          await objects.read({
            apiVersion: 'apiextensions.k8s.io/v1',
            kind: 'CustomResourceDefinition',
            metadata: { name: 'policyreports.wgpolicyk8s.io' },
          }),
        ) as Manifest & { status?: { conditions?: { type: string; status: string }[] } };
        return stored.status?.conditions?.some((condition) => condition.type === 'Established' && condition.status === 'True') === true
          ? true
          : undefined;
      },
      { timeoutMs: 30_000, retryOnError: true },
    );
  });
  after(async () => {
    await (cluster as ToleratorOnCluster | undefined)?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("without deploy/overlays/audit's RBAC, tolerator audit stops at the pod list with the API server's 403 (exit 2)", () => {
    assert.equal(withoutAuditRbac.code, 2, withoutAuditRbac.stderr);
    assert.equal(withoutAuditRbac.stdout, '');
    assert.match(
      withoutAuditRbac.stderr,
      /^tolerator audit: .*403.*pods is forbidden: User "system:serviceaccount:tolerator-system:tolerator" cannot list resource "pods" in API group "" at the cluster scope/m,
    );
  });

  it('tolerator audit --kubeconfig lists every pod in pages of 500 and finds each pod admission never judged as it stands', async (t) => {
    const listsBefore = podLists(auditLog).length;
    const run = await runAudit(['--kubeconfig', identity, '--policies', policies, '-o', 'json']);
    assert.equal(run.code, 1, run.stderr);
    const result = JSON.parse(run.stdout) as {
      violations: (Finding & { message: string; node: string })[];
      summary: { audited: number; skipped: number; undecided: number };
    };
    assert.deepEqual(
      result.violations.map(({ namespace, name, rule, policy: named }) => ({
        namespace,
        name,
        rule,
        ...(named === undefined ? {} : { policy: named }),
      })),
      expected,
    );
    // Every pod of the cluster was judged: the bulk, the five cases and the one that is fine (1,006).
    assert.deepEqual(result.summary, {
      ...result.summary,
      audited: BULK + 6,
      skipped: { terminated: 0, mirror: 0, 'excluded-namespace': 0 },
      undecided: 0,
    });
    // Its requests, as the API server logged them: pages of 500, the second and third with the
    // continue token of the one before, from tolerator's identity, each answered 200.
    const lists = podLists(auditLog)
      .slice(listsBefore)
      .filter((event) => new URL(event.requestURI, 'https://x').searchParams.get('limit') === '500');
    const pages = lists.map((event) => {
      const query = new URL(event.requestURI, 'https://x').searchParams;
      return { user: event.user.username, code: event.responseStatus?.code, continued: query.has('continue') };
    });
    assert.deepEqual(pages, [
      { user: TOLERATOR_USER, code: 200, continued: false },
      { user: TOLERATOR_USER, code: 200, continued: true },
      { user: TOLERATOR_USER, code: 200, continued: true },
    ]);
    t.diagnostic(`${result.summary.audited} pods audited in ${pages.length} pages of at most 500`);
  });

  it('the periodic audit writes one PolicyReport per namespace with violations into the wgpolicyk8s.io CRD, stored as written', async () => {
    type Report = Manifest & {
      summary: Record<string, number>;
      results: { policy: string; rule: string; result: string; resources: { name: string }[] }[] & Record<string, unknown>[];
    };
    const list = async (): Promise<Report[]> =>
      (plain(await cluster.objects.list('wgpolicyk8s.io/v1alpha2', 'PolicyReport')) as { items: Report[] }).items;
    const reports = await pollUntil(
      'reports in late and legacy',
      async () => {
        const items = await list();
        return items.length >= 2 ? items : undefined;
      },
      { timeoutMs: 60_000, retryOnError: true },
    );
    assert.deepEqual(reports.map((report) => report.metadata.namespace).sort(), [late, legacy]);
    for (const report of reports) {
      const namespace = report.metadata.namespace as string;
      const mine = expected.filter((finding) => finding.namespace === namespace);
      assert.equal(report.metadata.name, 'tolerator-audit');
      assert.deepEqual(report.metadata.labels, { 'app.kubernetes.io/managed-by': 'tolerator', 'app.kubernetes.io/component': 'audit' });
      assert.deepEqual(report.summary, { pass: 0, fail: mine.length, warn: 0, error: 0, skip: 0 });
      assert.deepEqual(
        report.results.map((result) => ({ namespace, name: result.resources[0]!.name, rule: result.rule, policy: result.policy })),
        mine.map((finding) => ({ ...finding, policy: finding.policy ?? 'tolerator' })),
      );
      for (const result of report.results) {
        // Every field tolerator writes survived the CRD's structural schema (pruning drops what it lacks).
        assert.deepEqual(Object.keys(result).sort(), [
          'category',
          'message',
          'policy',
          'properties',
          'resources',
          'result',
          'rule',
          'scored',
          'severity',
          'source',
          'timestamp',
        ]);
        assert.equal(result.result, 'fail');
        assert.equal(result.scored, true);
        assert.equal(result.source, 'tolerator');
        assert.equal(result.severity, 'medium');
        assert.deepEqual(result.resources, [{ apiVersion: 'v1', kind: 'Pod', namespace, name: result.resources[0]!.name }]);
      }
    }
    // The same findings on tolerator's /metrics.
    const metrics = await getFromTolerator(cluster.tolerator()!.port, cluster.serving.ca.cert, '/metrics');
    const gauges = [...metrics.matchAll(/^tolerator_audit_violations\{([^}]*)\} (\d+)/gm)]
      .map((match) => ({ labels: match[1]!, value: Number(match[2]) }))
      .filter((gauge) => gauge.value > 0);
    assert.equal(
      gauges.reduce((sum, gauge) => sum + gauge.value, 0),
      expected.length,
    );
    // Its pages of 100, from tolerator's identity: eleven for 1,006 pods (runs before the audit
    // RBAC was installed were refused at their first page, 403).
    const periodic = podLists(auditLog).filter((event) => new URL(event.requestURI, 'https://x').searchParams.get('limit') === '100');
    assert.deepEqual([...new Set(periodic.map((event) => event.user.username))], [TOLERATOR_USER]);
    const answered = periodic.filter((event) => event.responseStatus?.code === 200);
    assert.ok(answered.length >= 11, `${answered.length} pages of 100 answered`);
    assert.deepEqual(
      [...new Set(periodic.map((event) => event.responseStatus?.code))].sort(),
      periodic.length > answered.length ? [200, 403] : [200],
    );
  });

  it('tolerator audit -o yaml writes PolicyReports the API server accepts: kubectl apply --dry-run=server -f -', async () => {
    const run = await runAudit(['--kubeconfig', identity, '--policies', policies, '-o', 'yaml']);
    assert.equal(run.code, 1, run.stderr);
    const documents = parseAllDocuments(run.stdout).map((document) => document.toJS() as Manifest & { summary: Record<string, number> });
    assert.deepEqual(
      documents.map((report) => [report.apiVersion, report.kind, report.metadata.namespace, report.metadata.name]),
      [
        ['wgpolicyk8s.io/v1alpha2', 'PolicyReport', late, 'tolerator-audit'],
        ['wgpolicyk8s.io/v1alpha2', 'PolicyReport', legacy, 'tolerator-audit'],
      ],
    );
    const kubectl = findKubectl();
    assert.ok(kubectl !== undefined, 'kubectl, from the control plane build');
    const applied = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(
        kubectl.path,
        ['--kubeconfig', cluster.plane.kubeconfig, 'apply', '--dry-run=server', '-f', '-'],
        (error, stdout, stderr) => {
          resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
        },
      );
      child.stdin?.end(run.stdout);
    });
    assert.equal(applied.code, 0, applied.stderr);
    // Created or (the periodic audit wrote them already) configured: accepted by the CRD's schema either way.
    assert.match(applied.stdout, /^policyreport\.wgpolicyk8s\.io\/tolerator-audit (created|configured|unchanged) \(server dry run\)\n/);
    assert.equal(applied.stdout.trim().split('\n').length, 2);
  });

  it('a namespace whose violations are gone loses its report at the next run', async () => {
    for (const name of ['tenant-0', 'tenant-1']) {
      await cluster.objects.delete(
        asKubernetesObject({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: late } }),
        undefined,
        undefined,
        0,
      );
    }
    const remaining = await pollUntil(
      'the report in late deleted',
      async () => {
        const items = (plain(await cluster.objects.list('wgpolicyk8s.io/v1alpha2', 'PolicyReport')) as { items: Manifest[] }).items;
        return items.length === 1 ? items : undefined;
      },
      { timeoutMs: 60_000, retryOnError: true },
    );
    assert.deepEqual(
      remaining.map((report) => report.metadata.namespace),
      [legacy],
    );
  });
});
