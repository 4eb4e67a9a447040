/**
 * `tolerator check` against a fake API server (plain HTTP on loopback, answering the wire shapes
 * kube-apiserver sends): what check reads, through the one request helper (src/kube/api-requests.ts)
 * and the one policy parser (src/tenancy/policy-directory.ts), and how it judges it. The real
 * API server is test/e2e/check.e2e.ts's.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { checkCommand } from '../../src/cli/check.js';
import { auditNodeSide } from '../../src/audit/audit-rules.js';
import type { CheckResult } from '../../src/audit/install-check.js';
import { defaultFeatureGates } from '../../src/api/feature-gates.js';
import { allPluginNames } from '../../src/plugins/registry.js';
import { createPolicySet } from '../../src/tenancy/policy-set.js';
import { runCommand } from '../support/command-io.js';
import { compilePolicy, labelPolicySpec, policyDocument } from '../tenancy/tenancy-fixtures.js';

type Route = { status: number; body: unknown } | { status: number; text: string };

/** The answers of an install whose Deployment has no ready pod yet, as a real cluster gives them. */
function installRoutes(overrides: Record<string, Route | undefined> = {}): Map<string, Route> {
  const service = { namespace: 'tolerator-system', name: 'tolerator', port: 443 };
  const webhook = (name: string, path: string): unknown => ({ name, clientConfig: { service: { ...service, path }, caBundle: '' } });
  const routes = new Map<string, Route>([
    [
      'GET /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/tolerator',
      { status: 200, body: { kind: 'MutatingWebhookConfiguration', webhooks: [webhook('mutate.tolerator.dev', '/mutate')] } },
    ],
    [
      'GET /apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/tolerator',
      { status: 200, body: { kind: 'ValidatingWebhookConfiguration', webhooks: [webhook('validate.tolerator.dev', '/validate')] } },
    ],
    ['GET /api/v1/namespaces/tolerator-system/services/tolerator', { status: 200, body: { kind: 'Service' } }],
    // The EndpointSlice controller's slice while no pod is ready: `endpoints: null`.
    [
      'GET /apis/discovery.k8s.io/v1/namespaces/tolerator-system/endpointslices',
      {
        status: 200,
        body: { kind: 'EndpointSliceList', metadata: {}, items: [{ metadata: { name: 'tolerator-abcde' }, endpoints: null }] },
      },
    ],
    ['GET /api/v1/namespaces/tolerator-system/secrets/tolerator-tls', { status: 404, body: { kind: 'Status', code: 404 } }],
    [
      'GET /api/v1/namespaces/tolerator-system/configmaps/tolerator-policies',
      { status: 200, body: { kind: 'ConfigMap', data: { 'policy.yaml': stringify(policyDocument('by-label', labelPolicySpec())) } } },
    ],
    ['POST /api/v1/namespaces/default/pods', { status: 201, body: { kind: 'Pod', spec: { tolerations: [] } } }],
    ['POST /api/v1/namespaces/kube-system/pods', { status: 201, body: { kind: 'Pod', spec: { tolerations: [] } } }],
    ['GET /metrics', { status: 200, text: 'kubernetes_feature_enabled{name="TaintTolerationComparisonOperators",stage="BETA"} 1\n' }],
    [
      'GET /api/v1/namespaces/tolerator-system/services/https:tolerator:443/proxy/metrics',
      { status: 503, body: { kind: 'Status', message: 'no endpoints available for service "tolerator"' } },
    ],
    [
      'GET /api/v1/nodes',
      {
        status: 200,
        body: {
          kind: 'NodeList',
          metadata: {},
          items: [
            { metadata: { name: 'pci-1', labels: { dedicated: 'pci' } }, spec: {} },
            {
              metadata: { name: 'pci-2', labels: { dedicated: 'pci' } },
              spec: { taints: [{ key: 'dedicated', value: 'pci', effect: 'NoSchedule' }] },
            },
          ],
        },
      },
    ],
    ['GET /apis/karpenter.sh/v1/nodepools', { status: 404, body: { kind: 'Status', code: 404 } }],
    ['GET /apis/node.k8s.io/v1/runtimeclasses', { status: 200, body: { kind: 'RuntimeClassList', metadata: {}, items: [] } }],
  ]);
  for (const [key, route] of Object.entries(overrides)) {
    if (route === undefined) routes.delete(key);
    else routes.set(key, route);
  }
  return routes;
}

describe('tolerator check against a fake API server', () => {
  let server: Server;
  let routes = installRoutes();
  let dir = '';
  let kubeconfig = '';

  before(async () => {
    server = createServer((request, response) => {
      const path = new URL(request.url ?? '/', 'http://x').pathname;
      const route = routes.get(`${request.method ?? ''} ${path}`);
      request.resume();
      if (route === undefined) {
        response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'Status', code: 404 }));
        return;
      }
      if ('text' in route) response.writeHead(route.status, { 'content-type': 'text/plain' }).end(route.text);
      else response.writeHead(route.status, { 'content-type': 'application/json' }).end(JSON.stringify(route.body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    dir = mkdtempSync(join(tmpdir(), 'tolerator-check-'));
    kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'fake', cluster: { server: `http://127.0.0.1:${port}`, 'insecure-skip-tls-verify': true } }],
        users: [{ name: 'admin', user: { token: 'x' } }],
        contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'admin' } }],
        'current-context': 'fake',
      }),
    );
  });

  after(() => {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const check = async (): Promise<{ code: number; checks: CheckResult[]; stderr: string }> => {
    const result = await runCommand(checkCommand, ['--kubeconfig', kubeconfig, '-o', 'json']);
    return {
      code: result.code,
      checks: (JSON.parse(result.stdout || '{"checks":[]}') as { checks: CheckResult[] }).checks,
      stderr: result.stderr,
    };
  };
  const byId = (checks: readonly CheckResult[], id: string): CheckResult[] => checks.filter((result) => result.id === id);

  it('slice.endpoints is not iterable: an EndpointSlice with endpoints: null (no ready pod) is a Service with no ready endpoint, not a crash', async () => {
    routes = installRoutes();
    const { code, checks, stderr } = await check();
    assert.equal(code, 1, stderr);
    const endpoints = [...byId(checks, 'mutating-endpoints'), ...byId(checks, 'validating-endpoints')];
    assert.equal(endpoints.length, 2);
    for (const result of endpoints) {
      assert.equal(result.ok, false);
      assert.match(result.message, /Service tolerator-system\/tolerator has no ready endpoints \(0 not ready\)/);
    }
  });

  it('a ConfigMap with kind: TenancyPolcy fails check as the server refuses it (the server parser, not a second one)', async () => {
    const misspelt = { ...policyDocument('by-label', labelPolicySpec()), kind: 'TenancyPolcy' };
    routes = installRoutes({
      'GET /api/v1/namespaces/tolerator-system/configmaps/tolerator-policies': {
        status: 200,
        body: { kind: 'ConfigMap', data: { 'policy.yaml': stringify(misspelt) } },
      },
    });
    const { checks } = await check();
    const [policies] = byId(checks, 'policies');
    assert.equal(policies?.ok, false);
    assert.match(policies.message, /policy\.yaml:1: document 1: not a TenancyPolicy: kind "TenancyPolcy"/);
  });

  it('check reports nodes that break the pattern: labelled for a group without its taint', async () => {
    routes = installRoutes();
    const { checks } = await check();
    const [nodes] = byId(checks, 'node-pattern');
    assert.equal(nodes?.ok, false);
    assert.match(nodes.message, /^1 finding on 2 nodes: Node "pci-1" metadata\.labels\[dedicated\]: labels the node for group "pci"/);
    const [nodePools] = byId(checks, 'nodepool-pattern');
    assert.equal(nodePools?.skipped, true);
    assert.match(nodePools.message, /does not serve karpenter\.sh\/v1 NodePools/);
  });

  const runtimeClassSpec = { ...labelPolicySpec(), runtimeClasses: { pci: ['gvisor-pci'] } };
  const runtimeClass = (name: string, value: string): Record<string, unknown> => ({
    apiVersion: 'node.k8s.io/v1',
    kind: 'RuntimeClass',
    metadata: { name },
    handler: 'runsc',
    scheduling: { tolerations: [{ key: 'dedicated', operator: 'Equal', value, effect: 'NoSchedule' }] },
  });
  /** The install with the policy that lists gvisor-pci for group pci, and these RuntimeClasses. */
  const runtimeClassRoutes = (items: readonly unknown[]): Map<string, Route> =>
    installRoutes({
      'GET /api/v1/namespaces/tolerator-system/configmaps/tolerator-policies': {
        status: 200,
        body: { kind: 'ConfigMap', data: { 'policy.yaml': stringify(policyDocument('by-label', runtimeClassSpec)) } },
      },
      'GET /apis/node.k8s.io/v1/runtimeclasses': { status: 200, body: { kind: 'RuntimeClassList', metadata: {}, items } },
    });

  it("check reports a RuntimeClass whose scheduling.tolerations hand a tenant another group's toleration: runtimeclass-pattern, the audit's finding word for word", async () => {
    // gvisor-pci is listed for pci and tolerates pci's taint (what the list is for); gvisor-gpu is
    // listed for nobody and tolerates gpu's: every pod that names it gets gpu's toleration.
    const items = [runtimeClass('gvisor-pci', 'pci'), runtimeClass('gvisor-gpu', 'gpu')];
    routes = runtimeClassRoutes(items);
    const { code, checks } = await check();
    assert.equal(code, 1);
    const [runtimeClasses] = byId(checks, 'runtimeclass-pattern');
    assert.equal(runtimeClasses?.ok, false);
    const audited = auditNodeSide(
      [],
      [],
      {
        gates: defaultFeatureGates,
        enabled: new Set(allPluginNames),
        policies: createPolicySet([compilePolicy('by-label', runtimeClassSpec)]).set,
        exclusion: { names: new Set(), label: undefined },
        all: false,
      },
      items,
    );
    assert.deepEqual(
      audited.map(({ name, rule }) => ({ name, rule })),
      [{ name: 'gvisor-gpu', rule: 'runtimeclass-pattern' }],
    );
    assert.equal(runtimeClasses.message, `1 finding on 2 RuntimeClasses: ${audited[0]!.message}`);
    assert.match(
      runtimeClasses.message,
      /RuntimeClass "gvisor-gpu" scheduling\.tolerations\[0\] tolerates .*"gpu".* but is listed for no group in spec\.runtimeClasses \(policy "by-label"\)/,
    );
    assert.match(runtimeClasses.hint ?? '', /spec\.runtimeClasses/);
  });

  it('check passes RuntimeClasses that reach only the groups that list them, and skips them without policies', async () => {
    routes = runtimeClassRoutes([runtimeClass('gvisor-pci', 'pci')]);
    const [clean] = byId((await check()).checks, 'runtimeclass-pattern');
    assert.deepEqual(clean, {
      id: 'runtimeclass-pattern',
      ok: true,
      message: "of 1 RuntimeClass, none reaches a group's nodes unless spec.runtimeClasses lists it for that group",
    });
    routes = installRoutes({
      'GET /api/v1/namespaces/tolerator-system/configmaps/tolerator-policies': { status: 200, body: { kind: 'ConfigMap', data: {} } },
    });
    const [skipped] = byId((await check()).checks, 'runtimeclass-pattern');
    assert.equal(skipped?.skipped, true);
    assert.match(skipped.message, /^no TenancyPolicy in the ConfigMap: the RuntimeClasses were not checked/);
  });

  it('check reports NodePools that break the pattern, by name, where Karpenter is installed', async () => {
    routes = installRoutes({
      'GET /apis/karpenter.sh/v1/nodepools': {
        status: 200,
        body: {
          kind: 'NodePoolList',
          metadata: {},
          items: [
            { metadata: { name: 'pci' }, spec: { template: { metadata: { labels: { dedicated: 'pci' } }, spec: { requirements: [] } } } },
            { metadata: { name: 'general' }, spec: { template: { spec: { requirements: [] } } } },
          ],
        },
      },
    });
    const { checks } = await check();
    const [nodePools] = byId(checks, 'nodepool-pattern');
    assert.equal(nodePools?.ok, false);
    assert.match(
      nodePools.message,
      /^1 finding on 2 NodePools: NodePool "pci" spec\.template\.metadata\.labels\[dedicated\]: labels its nodes for group "pci"/,
    );
  });
});
