/**
 * The node half of the pattern on a real API server (kube-apiserver and kube-controller-manager
 * from the pinned binaries, tolerator with the shipped webhooks, deploy/):
 * - the shipped `validate-nodepools.tolerator.dev` rule for `karpenter.sh` `nodepools` is
 *   accepted while the API server serves no such API, and changes nothing there;
 * - with Karpenter's own NodePool CRD (test/fixtures/crds/karpenter.sh_nodepools.yaml, v1.15.0),
 *   NodePools are judged on CREATE and UPDATE through the API server, after Karpenter's schema
 *   and CEL rules; with tolerator down the rule's failurePolicy Ignore lets the platform team's
 *   write in, and `tolerator audit` and `tolerator check` then name the NodePool;
 * - `tolerator check` on a Service whose Deployment has no ready pod: the EndpointSlice
 *   controller writes `endpoints: null`, which check once crashed on.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseAllDocuments, stringify } from 'yaml';
import type { CheckResult } from '../../src/audit/install-check.js';
import { createApiRequest } from '../../src/kube/api-requests.js';
import { REPO_ROOT, skipWithoutControlPlane } from '../cluster/binaries.js';
import { pollUntil } from '../cluster/poll.js';
import {
  asKubernetesObject,
  plain,
  refusal,
  startToleratorOnCluster,
  type Manifest,
  type ToleratorOnCluster,
} from '../cluster/tolerator-on-cluster.js';

const skip = skipWithoutControlPlane();

const policyFile = 'dedicated-nodepools.yaml';
const policyText = stringify({
  apiVersion: 'tolerator.dev/v1alpha1',
  kind: 'TenancyPolicy',
  metadata: { name: 'dedicated-nodepools' },
  spec: {
    group: "namespaceObject.metadata.?labels['dedicated'].orValue('')",
    taint: { key: 'dedicated', effect: 'NoSchedule' },
    nodeLabel: 'node-restriction.kubernetes.io/dedicated',
    nodePools: { pci: ['pci-general'] },
    enforcement: 'Deny',
  },
});

const groupLabel = 'node-restriction.kubernetes.io/dedicated';
const pciTaint = { key: 'dedicated', value: 'pci', effect: 'NoSchedule' };

function nodePool(
  name: string,
  template: { labels?: Record<string, string>; requirements?: unknown[]; taints?: unknown[]; startupTaints?: unknown[] },
): Manifest {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name },
    spec: {
      template: {
        ...(template.labels === undefined ? {} : { metadata: { labels: template.labels } }),
        spec: {
          nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
          requirements: template.requirements ?? [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
          ...(template.taints === undefined ? {} : { taints: template.taints }),
          ...(template.startupTaints === undefined ? {} : { startupTaints: template.startupTaints }),
        },
      },
    },
  };
}

describe('the node half on a real API server: NodePools, and check with kube-controller-manager', { skip }, () => {
  let dir = '';
  let policies = '';
  let cluster: ToleratorOnCluster | undefined;

  const tolerator = (...args: string[]): { status: number | null; stdout: string; stderr: string } => {
    const result = spawnSync(
      process.execPath,
      ['--enable-experimental-regexp-engine-on-excessive-backtracks', '--import', 'tsx', 'src/main.ts', ...args],
      { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000, env: { ...process.env, KUBECONFIG: '' } },
    );
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  };
  const check = (): { status: number | null; checks: CheckResult[]; output: string } => {
    const result = tolerator('check', '--kubeconfig', cluster!.plane.kubeconfig, '-o', 'json');
    let checks: CheckResult[] = [];
    try {
      checks = (JSON.parse(result.stdout) as { checks: CheckResult[] }).checks;
    } catch {
      // the assertions print the output
    }
    return { status: result.status, checks, output: `${result.stdout}${result.stderr}` };
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-nodepools-'));
    policies = join(dir, 'policies');
    mkdirSync(policies);
    writeFileSync(join(policies, policyFile), policyText);
    cluster = await startToleratorOnCluster({ dir, plane: { controllerManager: true }, serveArgs: ['--policies', policies] });
    await cluster.objects.create(
      asKubernetesObject({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'tolerator-policies', namespace: 'tolerator-system' },
        data: { [policyFile]: policyText },
      }),
    );
  });

  after(async () => {
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a webhook rule for karpenter.sh nodepools and nodeclaims, an API the cluster does not serve, is accepted and changes nothing else', async () => {
    const stored = plain(
      await cluster!.objects.read({
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: 'tolerator' },
      }),
    ) as { webhooks: { name: string; failurePolicy: string; rules: { apiGroups: string[]; resources: string[] }[] }[] };
    const hook = stored.webhooks.find((webhook) => webhook.name === 'validate-nodepools.tolerator.dev');
    assert.ok(hook, JSON.stringify(stored.webhooks.map((webhook) => webhook.name)));
    assert.deepEqual(
      hook.rules.map((rule) => [rule.apiGroups, rule.resources]),
      [[['karpenter.sh'], ['nodepools', 'nodeclaims']]],
    );
    assert.equal(hook.failurePolicy, 'Ignore');
    // Pods are still reviewed as before: a dry-run pod gets the defaults.
    const api = createApiRequest(cluster!.kubeconfig);
    const answer = await api('POST', '/api/v1/namespaces/default/pods?dryRun=All', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'probe' },
      spec: { containers: [{ name: 'app', image: 'app:1' }] },
    });
    assert.equal(answer.status, 201, JSON.stringify(answer.body));
    const tolerations = (answer.body as { spec: { tolerations: { key?: string }[] } }).spec.tolerations;
    assert.ok(tolerations.some((toleration) => toleration.key === 'node.kubernetes.io/not-ready'));
  });

  it('check with kube-controller-manager: a Deployment with no ready pod (EndpointSlice endpoints: null) is a failed check, not a crash', async () => {
    const objects = cluster!.objects;
    const labels = { 'app.kubernetes.io/name': 'tolerator-unready' };
    await objects.create(
      asKubernetesObject({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'tolerator-unready', namespace: 'tolerator-system' },
        spec: { ports: [{ port: 443, targetPort: 8443 }], selector: labels },
      }),
    );
    await objects.create(
      asKubernetesObject({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'tolerator-unready', namespace: 'tolerator-system' },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          // No node and no scheduler for it: its pod stays Pending, never ready.
          template: { metadata: { labels }, spec: { containers: [{ name: 'server', image: 'registry.k8s.io/pause:3.10' }] } },
        },
      }),
    );
    const api = createApiRequest(cluster!.kubeconfig);
    // What the EndpointSlice controller writes for a Service with no ready pod, read raw.
    const slice = await pollUntil(
      'the EndpointSlice of the Service with no ready pod',
      async () => {
        const listed = await api(
          'GET',
          '/apis/discovery.k8s.io/v1/namespaces/tolerator-system/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dtolerator-unready',
        );
        const items = (listed.body as { items?: Record<string, unknown>[] } | undefined)?.items ?? [];
        return items[0];
      },
      { timeoutMs: 60_000, retryOnError: true },
    );
    assert.equal(slice.endpoints, null, `the real EndpointSlice: ${JSON.stringify(slice)}`);

    const original = plain(
      await objects.read({
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'MutatingWebhookConfiguration',
        metadata: { name: 'tolerator' },
      }),
    ) as Manifest & { webhooks: { clientConfig: Record<string, unknown> }[] };
    const broken = structuredClone(original);
    for (const webhook of broken.webhooks) {
      webhook.clientConfig = {
        service: { namespace: 'tolerator-system', name: 'tolerator-unready', port: 443, path: '/mutate' },
        caBundle: webhook.clientConfig.caBundle,
      };
    }
    await objects.replace(asKubernetesObject(broken));
    try {
      const result = check();
      assert.equal(result.status, 1, result.output);
      const endpoints = result.checks.find((entry) => entry.id === 'mutating-endpoints');
      assert.equal(endpoints?.ok, false, result.output);
      assert.match(endpoints.message, /Service tolerator-system\/tolerator-unready has no ready endpoints \(0 not ready\)/);
    } finally {
      const current = plain(
        await objects.read({
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'MutatingWebhookConfiguration',
          metadata: { name: 'tolerator' },
        }),
      ) as Manifest;
      await objects.replace(asKubernetesObject({ ...current, webhooks: original.webhooks }));
    }
  });

  describe('with Karpenter’s NodePool CRD (v1.15.0)', () => {
    before(async () => {
      const crdFile = join(REPO_ROOT, 'test', 'fixtures', 'crds', 'karpenter.sh_nodepools.yaml');
      const crd = parseAllDocuments(readFileSync(crdFile, 'utf8'))[0]!.toJS() as Manifest;
      await cluster!.objects.create(asKubernetesObject(crd));
      await pollUntil(
        'the NodePool CRD established and served',
        async () => {
          const api = createApiRequest(cluster!.kubeconfig);
          const listed = await api('GET', '/apis/karpenter.sh/v1/nodepools');
          return listed.status === 200 ? true : undefined;
        },
        { timeoutMs: 30_000, retryOnError: true },
      );
    });

    it('a NodePool that labels and taints its nodes for the group it is named for is created', async () => {
      await cluster!.objects.create(asKubernetesObject(nodePool('pci-general', { labels: { [groupLabel]: 'pci' }, taints: [pciTaint] })));
    });

    const refused: { name: string; pool: Manifest; says: RegExp }[] = [
      {
        name: 'labels its nodes for a group without tainting them',
        pool: nodePool('pci-open', { labels: { [groupLabel]: 'pci' } }),
        says: /nodepools\.karpenter\.sh "pci-open" is forbidden: NodePool "pci-open" spec\.template\.metadata\.labels\[node-restriction\.kubernetes\.io\/dedicated\]: labels its nodes for group "pci"/,
      },
      {
        name: 'taints only in startupTaints',
        pool: nodePool('pci-startup', { labels: { [groupLabel]: 'pci' }, startupTaints: [pciTaint] }),
        says: /spec\.template\.spec\.startupTaints\[0\] does not count/,
      },
      {
        name: 'Exists on the group label (nodes for every group)',
        pool: nodePool('any-group', { requirements: [{ key: groupLabel, operator: 'Exists' }], taints: [pciTaint] }),
        says: /spec\.template\.spec\.requirements\[0\]: the requirement node-restriction\.kubernetes\.io\/dedicated Exists/,
      },
      {
        name: 'serves the group that names another NodePool',
        pool: nodePool('pci-stray', { requirements: [{ key: groupLabel, operator: 'In', values: ['pci'] }], taints: [pciTaint] }),
        says: /names its NodePools in TenancyPolicy spec\.nodePools \("pci-general"\), and this one is not among them/,
      },
    ];
    for (const { name, pool, says } of refused) {
      it(`a NodePool that ${name} is refused on CREATE, naming it and the field (403)`, async () => {
        const { code, status } = await refusal(cluster!.objects.create(asKubernetesObject(pool)));
        assert.equal(code, 403, JSON.stringify(status));
        assert.match(status.message ?? '', says);
      });
    }

    it('an UPDATE that removes the taint is refused; one that only annotates is not', async () => {
      const read = async (): Promise<Manifest> =>
        plain(
          await cluster!.objects.read({ apiVersion: 'karpenter.sh/v1', kind: 'NodePool', metadata: { name: 'pci-general' } }),
        ) as Manifest;
      const stored = (await read()) as Manifest & { spec: { template: { spec: { taints?: unknown[] } } } };
      const untainted = structuredClone(stored);
      delete untainted.spec.template.spec.taints;
      const { code, status } = await refusal(cluster!.objects.replace(asKubernetesObject(untainted)));
      assert.equal(code, 403, JSON.stringify(status));
      const annotated = structuredClone(await read());
      annotated.metadata.annotations = { 'karpenter.sh/nodepool-hash': '12345' };
      await cluster!.objects.replace(asKubernetesObject(annotated));
    });

    it('with tolerator down the rule’s failurePolicy Ignore admits the write; then audit and check name the NodePool', async () => {
      await cluster!.stopTolerator();
      try {
        await cluster!.objects.create(asKubernetesObject(nodePool('pci-open', { labels: { [groupLabel]: 'pci' } })));
      } finally {
        await cluster!.startTolerator();
      }
      const audit = tolerator(
        'audit',
        '--kubeconfig',
        cluster!.plane.kubeconfig,
        '--policies',
        policies,
        '--rule',
        'nodepool-pattern',
        '-o',
        'json',
      );
      assert.equal(audit.status, 1, `${audit.stdout}${audit.stderr}`);
      const violations = (JSON.parse(audit.stdout) as { violations: { kind?: string; name: string; rule: string; message: string }[] })
        .violations;
      // Two findings of the one NodePool: the label without the taint, and a NodePool for pci outside spec.nodePools.
      assert.deepEqual(
        violations.map(({ kind, name, rule }) => ({ kind, name, rule })),
        [
          { kind: 'NodePool', name: 'pci-open', rule: 'nodepool-pattern' },
          { kind: 'NodePool', name: 'pci-open', rule: 'nodepool-pattern' },
        ],
      );
      assert.match(violations.map((violation) => violation.message).join('\n'), /without the group's taint dedicated=pci:NoSchedule/);
      assert.match(violations.map((violation) => violation.message).join('\n'), /this one is not among them/);
      const result = check();
      const nodePools = result.checks.find((entry) => entry.id === 'nodepool-pattern');
      assert.equal(nodePools?.ok, false, result.output);
      assert.match(nodePools.message, /^2 findings on 2 NodePools: NodePool "pci-open" /);
    });
  });
});
