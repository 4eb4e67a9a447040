/**
 * `tolerator export` offline: the manifests for the default flags against golden files (the
 * differential test, test/differential/export.differential.ts, holds what they do on a real API
 * server), the API version per Kubernetes version, the shipped webhooks' namespace exclusions and
 * mirror-pod condition copied word for word, what is exported for which plugin, and each refusal
 * with its reason and exit code 2.
 *
 * After a deliberate change to the output: npm run -s tolerator -- export --kubernetes-version
 * 1.35 > test/fixtures/export/default-1.35.yaml (and 1.36, 1.37), and review the diff.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { defaultFeatureGates } from '../../src/api/feature-gates.js';
import { exportCommand } from '../../src/cli/export.js';
import { exportPolicies, excludeMirrorPods, reviewedNamespaces, type ExportSettings } from '../../src/export/export-policies.js';
import { selectPlugins } from '../../src/plugins/registry.js';
import { runCommand } from '../support/command-io.js';
import { ROOT } from '../support/rendered-manifests.js';

const fixtures = join(ROOT, 'test', 'fixtures');

const defaults: ExportSettings = {
  kubernetesVersion: '1.36',
  enabled: selectPlugins([], []),
  notReadySeconds: 300,
  unreachableSeconds: 300,
  podTolerationRestriction: {},
  podNodeSelectorConfigured: false,
  tenancyPolicies: [],
  gates: defaultFeatureGates,
};

type Doc = { apiVersion: string; kind: string; metadata: { name: string }; spec: Record<string, unknown> };

function documentsOf(settings: Partial<ExportSettings>): Doc[] {
  const result = exportPolicies({ ...defaults, ...settings });
  assert.ok(result.documents !== undefined, JSON.stringify(result.refusals));
  return result.documents as unknown as Doc[];
}

function mutatingExpression(settings: Partial<ExportSettings>): string {
  const policy = documentsOf(settings).find((document) => document.kind === 'MutatingAdmissionPolicy');
  assert.ok(policy);
  return JSON.stringify(policy.spec);
}

describe('tolerator export', () => {
  for (const version of ['1.35', '1.36', '1.37'] as const) {
    it(`writes the golden manifests for the default flags, Kubernetes ${version}`, async () => {
      const { code, stdout, stderr } = await runCommand(exportCommand, ['--kubernetes-version', version]);
      assert.equal(stderr, '');
      assert.equal(code, 0);
      assert.equal(stdout, readFileSync(join(fixtures, 'export', `default-${version}.yaml`), 'utf8'));
    });
  }

  it('uses MutatingAdmissionPolicy v1beta1 on 1.35 (and says what it needs), v1 from 1.36', async () => {
    const beta = await runCommand(exportCommand, ['--kubernetes-version', '1.35']);
    assert.match(
      beta.stdout,
      /^# MutatingAdmissionPolicy is beta and off in Kubernetes 1\.35: kube-apiserver needs --feature-gates=MutatingAdmissionPolicy=true and --runtime-config=admissionregistration\.k8s\.io\/v1beta1=true$/m,
    );
    const kinds = (stdout: string): string[] =>
      parseAllDocuments(stdout).map((document) => {
        const { apiVersion, kind } = document.toJS() as Doc;
        return `${apiVersion} ${kind}`;
      });
    assert.deepEqual(kinds(beta.stdout), [
      'admissionregistration.k8s.io/v1beta1 MutatingAdmissionPolicy',
      'admissionregistration.k8s.io/v1beta1 MutatingAdmissionPolicyBinding',
      'admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy',
      'admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding',
    ]);
    for (const version of ['1.36', '1.37']) {
      const ga = await runCommand(exportCommand, ['--kubernetes-version', version]);
      assert.doesNotMatch(ga.stdout, /v1beta1|runtime-config/);
      assert.equal(kinds(ga.stdout)[0], 'admissionregistration.k8s.io/v1 MutatingAdmissionPolicy');
    }
  });

  it("matches the shipped webhooks' namespaces and mirror-pod condition word for word", () => {
    for (const file of ['mutating-webhook.yaml', 'validating-webhook.yaml']) {
      const shipped = parse(readFileSync(join(ROOT, 'deploy', 'base', file), 'utf8')) as {
        webhooks: { namespaceSelector: unknown; matchConditions: { name: string; expression: string }[] }[];
      };
      const webhook = shipped.webhooks[0];
      assert.ok(webhook);
      assert.deepEqual(webhook.namespaceSelector, reviewedNamespaces);
      assert.deepEqual(webhook.matchConditions, [excludeMirrorPods]);
    }
    for (const document of documentsOf({})) {
      const spec = document.spec as { matchResources?: { namespaceSelector: unknown }; matchConditions?: unknown };
      if (document.kind.endsWith('Binding')) assert.deepEqual(spec.matchResources?.namespaceSelector, reviewedNamespaces);
      else assert.deepEqual(spec.matchConditions, [excludeMirrorPods]);
    }
  });

  it('exports each enabled plugin and only those: the flags decide, as for serve', () => {
    const all = mutatingExpression({});
    assert.match(all, /daemonPod/);
    assert.match(all, /tolerationSeconds': dyn\(300\)/);
    assert.match(all, /node\.kubernetes\.io\/memory-pressure/);
    const custom = mutatingExpression({ notReadySeconds: 60, unreachableSeconds: 7 });
    assert.match(
      custom,
      /not-ready'\), 'operator': dyn\('Exists'\), 'value': dyn\(''\), 'effect': dyn\('NoExecute'\), 'tolerationSeconds': dyn\(60\)/,
    );
    assert.match(
      custom,
      /unreachable'\), 'operator': dyn\('Exists'\), 'value': dyn\(''\), 'effect': dyn\('NoExecute'\), 'tolerationSeconds': dyn\(7\)/,
    );
    const noDaemonSet = mutatingExpression({ enabled: selectPlugins([], ['DaemonSetTolerations']) });
    assert.doesNotMatch(noDaemonSet, /daemonPod/);
    // Without PodTolerationRestriction there is no memory-pressure step and no annotation policy.
    const withoutRestriction = documentsOf({ enabled: selectPlugins([], ['PodTolerationRestriction']) });
    assert.deepEqual(
      withoutRestriction.map((document) => document.kind),
      ['MutatingAdmissionPolicy', 'MutatingAdmissionPolicyBinding'],
    );
    assert.doesNotMatch(JSON.stringify(withoutRestriction), /bestEffort/);
    // Nothing that mutates: no mutating policy at all.
    const none = documentsOf({
      enabled: selectPlugins([], ['DaemonSetTolerations', 'DefaultTolerationSeconds', 'PodTolerationRestriction']),
    });
    assert.deepEqual(none, []);
  });

  it('follows PodLevelResources in the QoS class, as the webhook does', () => {
    assert.match(mutatingExpression({}), /has\(object\.spec\.resources\)/);
    assert.doesNotMatch(mutatingExpression({ gates: { ...defaultFeatureGates, PodLevelResources: false } }), /object\.spec\.resources/);
  });

  it("follows PodLevelResourcesFixKubeletQOSClass at the version's default: from 1.37 a spec.resources naming no cpu, memory or hugepages leaves the class to the containers", async () => {
    const podLevelSet =
      "has(object.spec.resources) && (object.spec.resources.?requests.orValue({}).exists(n, n == 'cpu' || n == 'memory' || n.startsWith('hugepages-'))";
    const exported = async (version: string): Promise<string> =>
      (await runCommand(exportCommand, ['--kubernetes-version', version])).stdout;
    assert.ok(!(await exported('1.35')).includes(podLevelSet), '1.35: the gate does not exist');
    assert.ok(!(await exported('1.36')).includes(podLevelSet), '1.36: the gate does not exist');
    assert.ok((await exported('1.37')).includes(podLevelSet), '1.37: beta, on by default');
    const off = await runCommand(exportCommand, [
      '--kubernetes-version',
      '1.37',
      '--feature-gates',
      'PodLevelResourcesFixKubeletQOSClass=false',
    ]);
    assert.ok(!off.stdout.includes(podLevelSet), '--feature-gates turns it off');
  });

  it('refuses, with exit 2 and the reason, what it cannot reproduce: PodNodeSelector, cluster toleration lists, tenancy policies', async () => {
    const selector = await runCommand(exportCommand, ['--enable-plugins', 'PodNodeSelector']);
    assert.equal(selector.code, 2);
    assert.equal(selector.stdout, '');
    assert.match(
      selector.stderr,
      /^tolerator export: this configuration cannot be exported without a webhook:\n {2}PodNodeSelector: not exported: /,
    );

    const restriction = await runCommand(exportCommand, ['--admission-config', join(fixtures, 'config', 'admission-configuration.yaml')]);
    assert.equal(restriction.code, 2);
    assert.match(restriction.stderr, /PodTolerationRestriction: not exported: the cluster default tolerations and whitelist/);

    const tenancy = await runCommand(exportCommand, ['--policies', join(ROOT, 'policies')]);
    assert.equal(tenancy.code, 2);
    assert.match(tenancy.stderr, / {2}TenancyPolicy dedicated-by-namespace-label: not exported: /);
    assert.match(tenancy.stderr, / {2}TenancyPolicy dedicated-by-namespace-prefix: not exported: /);

    const tenancyOff = await runCommand(exportCommand, ['--policies', join(ROOT, 'policies'), '--disable-plugins', 'DedicatedNodes']);
    assert.equal(tenancyOff.code, 0, tenancyOff.stderr);
    // The same configuration with the plugin off is exported: the refusal is about what is enabled.
    const disabled = await runCommand(exportCommand, [
      '--admission-config',
      join(fixtures, 'config', 'admission-configuration.yaml'),
      '--disable-plugins',
      'PodTolerationRestriction',
    ]);
    assert.equal(disabled.code, 0, disabled.stderr);
  });

  it('refuses a version it does not know, and arguments, with exit 2', async () => {
    const version = await runCommand(exportCommand, ['--kubernetes-version', '1.34']);
    assert.equal(version.code, 2);
    assert.match(version.stderr, /--kubernetes-version must be one of 1\.35, 1\.36, 1\.37, got "1\.34"/);
    assert.equal(version.stdout, '');
    const argument = await runCommand(exportCommand, ['pods.yaml']);
    assert.equal(argument.code, 2);
    assert.equal(argument.stdout, '');
  });

  it('writes one file per object with --output-dir', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tolerator-export-'));
    try {
      const { code, stderr } = await runCommand(exportCommand, ['--kubernetes-version', '1.35', '--output-dir', join(dir, 'out')]);
      assert.equal(code, 0);
      assert.match(stderr, /--runtime-config=admissionregistration\.k8s\.io\/v1beta1=true/);
      const files = readdirSync(join(dir, 'out')).sort();
      assert.deepEqual(files, [
        'tolerator.dev-namespace-toleration-annotations.validatingadmissionpolicy.yaml',
        'tolerator.dev-namespace-toleration-annotations.validatingadmissionpolicybinding.yaml',
        'tolerator.dev-tolerations.mutatingadmissionpolicy.yaml',
        'tolerator.dev-tolerations.mutatingadmissionpolicybinding.yaml',
      ]);
      const policy = parse(readFileSync(join(dir, 'out', 'tolerator.dev-tolerations.mutatingadmissionpolicy.yaml'), 'utf8')) as Doc;
      assert.equal(policy.apiVersion, 'admissionregistration.k8s.io/v1beta1');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
