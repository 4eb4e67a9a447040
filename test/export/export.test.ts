/**
 * `tolerator export` offline: the manifests for the default flags against golden files (the
 * differential test, test/differential/export.differential.ts, holds what they do on a real API
 * server), the API version per Kubernetes version, the shipped webhooks' namespace exclusions and
 * mirror-pod condition copied word for word, what is exported for which plugin, and each refusal
 * with its reason and exit code 2; the tenancy policies for the shipped namespace-label
 * TenancyPolicy (golden), and the refusal of every other policy shape.
 *
 * After a deliberate change to the output: npm run -s tolerator -- export --kubernetes-version
 * 1.35 > test/fixtures/export/default-1.35.yaml (and 1.36, 1.37), and for tenancy-1.36.yaml the
 * same with --policies DIR, DIR holding only policies/dedicated-by-namespace-label.yaml; review the
 * diff.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { defaultFeatureGates } from '../../src/api/feature-gates.js';
import { exportCommand } from '../../src/cli/export.js';
import { exportPolicies, excludeMirrorPods, reviewedNamespaces, type ExportSettings } from '../../src/export/export-policies.js';
import { selectPlugins } from '../../src/plugins/registry.js';
import { resourceKindByResource, resourceKinds } from '../../src/api/resource-kinds.js';
import { podSite, templateSites } from '../../src/export/tenancy-cel.js';
import { runCommand } from '../support/command-io.js';
import { ROOT } from '../support/rendered-manifests.js';

const fixtures = join(ROOT, 'test', 'fixtures');

/** The shipped namespace-label policy: the one TenancyPolicy shape export translates. */
const labelPolicy = readFileSync(join(ROOT, 'policies', 'dedicated-by-namespace-label.yaml'), 'utf8');

/** Runs `body` with a temporary --policies directory holding `files`. */
async function withPolicies(files: Record<string, string>, body: (dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tolerator-export-policies-'));
  try {
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    await body(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

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

  it('refuses, with exit 2 and the reason, what it cannot reproduce: PodNodeSelector, ExtendedResourceToleration, cluster toleration lists, tenancy policies', async () => {
    const selector = await runCommand(exportCommand, ['--enable-plugins', 'PodNodeSelector']);
    assert.equal(selector.code, 2);
    assert.equal(selector.stdout, '');
    assert.match(
      selector.stderr,
      /^tolerator export: this configuration cannot be exported without a webhook:\n {2}PodNodeSelector: not exported: /,
    );

    const extended = await runCommand(exportCommand, ['--enable-plugins', 'ExtendedResourceToleration']);
    assert.equal(extended.code, 2);
    assert.equal(extended.stdout, '');
    assert.match(
      extended.stderr,
      /^tolerator export: this configuration cannot be exported without a webhook:\n {2}ExtendedResourceToleration: not exported: .*--enable-admission-plugins ExtendedResourceToleration/,
    );

    const restriction = await runCommand(exportCommand, ['--admission-config', join(fixtures, 'config', 'admission-configuration.yaml')]);
    assert.equal(restriction.code, 2);
    assert.match(restriction.stderr, /PodTolerationRestriction: not exported: the cluster default tolerations and whitelist/);

    // The shipped directory holds two policies: export translates one.
    const tenancy = await runCommand(exportCommand, ['--policies', join(ROOT, 'policies')]);
    assert.equal(tenancy.code, 2);
    assert.match(
      tenancy.stderr,
      / {2}DedicatedNodes: not exported: 2 TenancyPolicies \(dedicated-by-namespace-label, dedicated-by-namespace-prefix\); export translates one/,
    );

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

  it('exports the tenancy pair and guarantee for the shipped namespace-label policy (golden), its nodeName rule said in the header', async () => {
    await withPolicies({ 'label.yaml': labelPolicy }, async (dir) => {
      const { code, stdout, stderr } = await runCommand(exportCommand, ['--policies', dir, '--kubernetes-version', '1.36']);
      assert.equal(stderr, '');
      assert.equal(code, 0);
      assert.equal(stdout, readFileSync(join(fixtures, 'export', 'tenancy-1.36.yaml'), 'utf8'));
      const documents = parseAllDocuments(stdout).map((document) => document.toJSON() as Doc);
      assert.deepEqual(
        documents.map((document) => `${document.kind} ${document.metadata.name}`),
        [
          'MutatingAdmissionPolicy tolerator.dev-tolerations',
          'MutatingAdmissionPolicyBinding tolerator.dev-tolerations',
          'ValidatingAdmissionPolicy tolerator.dev-namespace-toleration-annotations',
          'ValidatingAdmissionPolicyBinding tolerator.dev-namespace-toleration-annotations',
          'MutatingAdmissionPolicy tolerator.dev-tenancy-daemonsets',
          'MutatingAdmissionPolicyBinding tolerator.dev-tenancy-daemonsets',
          'ValidatingAdmissionPolicy tolerator.dev-tenancy',
          'ValidatingAdmissionPolicyBinding tolerator.dev-tenancy',
          ...['daemonsets', 'workloads', 'jobs', 'cronjobs', 'replicationcontrollers', 'podtemplates'].flatMap((site) => [
            `ValidatingAdmissionPolicy tolerator.dev-tenancy-${site}`,
            `ValidatingAdmissionPolicyBinding tolerator.dev-tenancy-${site}`,
          ]),
        ],
      );
      const mutating = documents[0] as Doc & { spec: { mutations: unknown[]; variables: { name: string }[] } };
      // The toleration list (the group toleration its last step) and the affinity, apart.
      assert.equal(mutating.spec.mutations.length, 2);
      assert.equal(mutating.spec.variables.at(-1)?.name, 'dedicatedNodes');
      assert.match(JSON.stringify(mutating.spec.variables[0]), /namespaceObject\.metadata\.\?labels\[\?'dedicated'\]\.orValue\(''\)/);
      const guarantee = documents[6] as Doc & { spec: { validations: unknown[]; failurePolicy: string; matchConditions: unknown[] } };
      assert.equal(guarantee.spec.failurePolicy, 'Fail');
      assert.deepEqual(guarantee.spec.matchConditions, [excludeMirrorPods]);
      assert.equal(guarantee.spec.validations.length, 5);
      assert.match(stdout, /^# TenancyPolicy dedicated-by-namespace-label: spec\.nodeName is judged more strictly than by the webhook/m);
      // The NodePool check is the webhook's and the audit's: said, not silently dropped.
      assert.match(stdout, /^# TenancyPolicy dedicated-by-namespace-label: the node half is not exported: Karpenter NodePools/m);
      // Each template policy reads the spec where its kind holds it, and only objects that hold one.
      const cronJobs = documents.find((document) => document.metadata.name === 'tolerator.dev-tenancy-cronjobs');
      assert.match(JSON.stringify(cronJobs?.spec), /object\.spec\.jobTemplate\.spec\.template\.spec\.\?tolerations/);
      assert.match(JSON.stringify(cronJobs?.spec), /has\(object\.spec\.jobTemplate\.spec\.template\.spec\)/);
    });
  });

  it('refuses a TenancyPolicy it cannot translate exactly, with the reason: another group rule, another exempt rule, Warn', async () => {
    const prefixPolicy = readFileSync(join(ROOT, 'policies', 'dedicated-by-namespace-prefix.yaml'), 'utf8');
    await withPolicies({ 'prefix.yaml': prefixPolicy }, async (dir) => {
      const prefix = await runCommand(exportCommand, ['--policies', dir]);
      assert.equal(prefix.code, 2, prefix.stderr);
      assert.match(
        prefix.stderr,
        / {2}TenancyPolicy dedicated-by-namespace-prefix: not exported: spec\.group is not of the one shape export translates exactly/,
      );
    });
    const variants: Record<string, [string, string, RegExp]> = {
      'an exempt rule that reads the pod': [
        "exempt: \"namespaceObject.metadata.?labels['tolerator.dev/exempt'].orValue('') == 'true'\"",
        "exempt: \"object.metadata.?labels['exempt'].orValue('') == 'true'\"",
        /spec\.exempt is not of the one shape/,
      ],
      'an infrastructure rule that is not an equality': [
        "infrastructure: \"namespaceObject.metadata.?labels['tolerator.dev/node-infrastructure'].orValue('') == 'true'\"",
        "infrastructure: \"namespaceObject.metadata.?labels['tolerator.dev/node-infrastructure'].orValue('') != ''\"",
        /spec\.infrastructure is not of the one shape/,
      ],
      'a group label read with a default': [
        "group: \"namespaceObject.metadata.?labels['dedicated'].orValue('')\"",
        "group: \"namespaceObject.metadata.?labels['dedicated'].orValue('shared')\"",
        /spec\.group is not of the one shape/,
      ],
      'enforcement Warn': ['enforcement: Deny', 'enforcement: Warn', /enforcement Warn; export writes the guarantee only as a denial/],
    };
    for (const [title, [from, to, reason]] of Object.entries(variants)) {
      assert.ok(labelPolicy.includes(from), title);
      await withPolicies({ 'policy.yaml': labelPolicy.replace(from, to) }, async (dir) => {
        const result = await runCommand(exportCommand, ['--policies', dir]);
        assert.equal(result.code, 2, `${title}: ${result.stderr}`);
        assert.equal(result.stdout, '');
        assert.match(result.stderr, reason, title);
      });
    }
    // The same rule spelt with [?'…'] and spaces is the same rule, and is exported.
    const spelt = labelPolicy.replace(
      "group: \"namespaceObject.metadata.?labels['dedicated'].orValue('')\"",
      "group: \"namespaceObject.metadata.?labels[?'dedicated'].orValue( '' )\"",
    );
    await withPolicies({ 'policy.yaml': spelt }, async (dir) => {
      const result = await runCommand(exportCommand, ['--policies', dir]);
      assert.equal(result.code, 0, result.stderr);
    });
    // DedicatedNodes off: the policies decide nothing, so nothing about them is exported or refused.
    const off = await runCommand(exportCommand, ['--policies', join(ROOT, 'policies'), '--disable-plugins', 'DedicatedNodes']);
    assert.equal(off.code, 0, off.stderr);
    assert.doesNotMatch(off.stdout, /tolerator\.dev-tenancy/);
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

  it('export keeps no list of workload kinds of its own: every kind with a pod template in src/api/resource-kinds.ts is one template site, under a unique name', () => {
    const templated = resourceKinds.filter((kind) => kind.podSpecPath.length > 1);
    const covered = templateSites.flatMap((site) =>
      site.resources.map((resource) => {
        const kind = resourceKindByResource(site.apiGroup, resource);
        assert.ok(kind !== undefined, `${site.name}: ${site.apiGroup}/${resource} is not a kind of resource-kinds.ts`);
        assert.deepEqual(site.segments, kind.podSpecPath, `${site.name}: ${resource} holds its pod spec elsewhere`);
        return kind;
      }),
    );
    assert.deepEqual(covered.map((kind) => kind.kind).sort(), templated.map((kind) => kind.kind).sort());
    assert.equal(new Set(templateSites.map((site) => site.name)).size, templateSites.length);
    assert.ok(!templateSites.some((site) => site.name === podSite.name));
  });
});
