import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { describeChange, explainCommand, explainManifest, policyCautionLines, reviewsFromManifests } from '../../src/cli/explain.js';
import { createPolicySet } from '../../src/tenancy/policy-set.js';
import { compilePolicy, labelPolicySpec } from '../tenancy/tenancy-fixtures.js';
import { runCommand } from '../support/command-io.js';
import { pipelineFromArgs } from '../support/harness.js';

const tenancyArgs = ['--policies=policies', '--cluster-state=test/fixtures/config/tenancy-cluster.yaml'];
/** What docs/offline.md's example runs examples/tenant-deployment.yaml against. */
const exampleArgs = ['--policies=policies', '--cluster-state=examples/tenant-cluster.yaml'];

async function explain(text: string, args: readonly string[] = tenancyArgs): Promise<string[][]> {
  const pipeline = pipelineFromArgs(args);
  const entries = reviewsFromManifests({ source: 'test.yaml', text });
  return Promise.all(entries.map((entry) => explainManifest(pipeline, entry)));
}

describe('tolerator explain', () => {
  it('explains the pods a tenant Deployment creates: the group, each toleration and the node requirement, with the rule behind each', async () => {
    const deployment = (await explain(readFileSync('examples/tenant-deployment.yaml', 'utf8'), exampleArgs))[0]!;
    assert.deepEqual(deployment, [
      'Deployment ml/trainer: the pods it creates',
      '  namespace ml: group "gpu" (policy dedicated-by-namespace-label)',
      deployment[2]!,
      '    + toleration node.kubernetes.io/not-ready Exists (NoExecute, for 300 s)',
      '    + toleration node.kubernetes.io/unreachable Exists (NoExecute, for 300 s)',
      deployment[5]!,
      '    + toleration node.kubernetes.io/memory-pressure Exists (NoSchedule)',
      deployment[7]!,
      '    + toleration dedicated Equal "gpu" (NoSchedule)',
      '    + required node affinity, term 0: dedicated In [gpu]',
      '  result: allowed, with the changes above',
    ]);
    assert.match(deployment[2]!, /^ {2}DefaultTolerationSeconds: .*not-ready or unreachable/);
    assert.match(deployment[5]!, /^ {2}PodTolerationRestriction: .*memory pressure/);
    assert.match(deployment[7]!, /^ {2}DedicatedNodes: the namespace belongs to a node group/);
  });

  it('explains ExtendedResourceToleration when enabled: the toleration for each extended resource, in byte order, with the rule', async () => {
    const pod =
      'apiVersion: v1\nkind: Pod\nmetadata: { name: trainer, namespace: shop }\nspec: { containers: [{ name: app, image: x, resources: { limits: { nvidia.com/gpu: 1, example.com/fpga: 1, cpu: 1 } } }] }\n';
    const lines = (await explain(pod, [...exampleArgs, '--enable-plugins=ExtendedResourceToleration']))[0]!;
    const at = lines.findIndex((line) => line.startsWith('  ExtendedResourceToleration: '));
    assert.ok(at > 0, lines.join('\n'));
    assert.deepEqual(lines.slice(at + 1, at + 3), [
      '    + toleration example.com/fpga Exists (NoSchedule)',
      '    + toleration nvidia.com/gpu Exists (NoSchedule)',
    ]);
    assert.ok(!(await explain(pod, exampleArgs))[0]!.some((line) => line.includes('ExtendedResourceToleration')), 'off by default');
  });

  it('says when a namespace has no group', async () => {
    const web = (await explain(readFileSync('examples/tenant-deployment.yaml', 'utf8'), exampleArgs))[1]!;
    assert.equal(web[1], '  namespace shop: no node group');
    assert.ok(!web.some((line) => line.includes('DedicatedNodes')));
  });

  it('names the plugin that denies and why', async () => {
    const debug = (await explain(readFileSync('examples/tenant-deployment.yaml', 'utf8'), exampleArgs))[2]!;
    assert.match(debug.find((line) => line.includes('denies')) ?? '', /DedicatedNodes denies: .*spec\.nodeSelector selects dedicated=pci/);
    assert.equal(debug.at(-1), '  result: denied by DedicatedNodes');
  });

  it("a pod both invalid and foreign is denied by the API server's validation (422), which runs before any validating webhook, not by DedicatedNodes (403)", async () => {
    const pod =
      "apiVersion: v1\nkind: Pod\nmetadata: { name: steal, namespace: ml }\nspec:\n  containers: [{ name: app, image: x }]\n  tolerations:\n  - { key: dedicated, operator: Equal, value: pci, effect: NoSchedule }\n  - { key: 'bad key!', operator: Exists, effect: NoSchedule }\n";
    const lines = (await explain(pod))[0]!;
    assert.equal(lines[1], '  namespace ml: group "gpu" (policy dedicated-by-namespace-label)');
    assert.match(
      lines.find((line) => line.includes('denies')) ?? '',
      /^ {2}TolerationValidation denies: Pod "steal" is invalid: spec\.tolerations\[1\]\.key: Invalid value: "bad key!"/,
    );
    assert.equal(lines.at(-1), '  result: denied by TolerationValidation');
  });

  it('an invalid pod of a namespace with no group says "no node group": a pod is placed in its group on the mutating side, before the validation that refuses it', async () => {
    const pod =
      "apiVersion: v1\nkind: Pod\nmetadata: { name: bad, namespace: shop }\nspec:\n  containers: [{ name: app, image: x }]\n  tolerations:\n  - { key: 'bad key!', operator: Exists, effect: NoSchedule }\n";
    const lines = (await explain(pod))[0]!;
    assert.equal(lines[1], '  namespace shop: no node group');
    assert.equal(lines.at(-1), '  result: denied by TolerationValidation');
  });

  it('explains a DaemonSet through its pods, which get the DaemonSet toleration set', async () => {
    const [daemonset = []] = await explain(
      [
        'apiVersion: apps/v1',
        'kind: DaemonSet',
        'metadata: { name: agent, namespace: shop }',
        'spec:',
        '  selector: { matchLabels: { app: agent } }',
        '  template:',
        '    metadata: { labels: { app: agent } }',
        '    spec: { hostNetwork: true, containers: [{ name: agent, image: agent:1 }] }',
      ].join('\n'),
      [],
    );
    assert.ok(daemonset.some((line) => line.startsWith('  DaemonSetTolerations: ')));
    assert.ok(daemonset.includes('    + toleration node.kubernetes.io/network-unavailable Exists (NoSchedule)'));
    // The DaemonSet set tolerates not-ready and unreachable for ever, so the bounded defaults never come.
    assert.ok(!daemonset.some((line) => line.startsWith('  DefaultTolerationSeconds')));
  });

  it('refuses a kind it does not read, naming the document', () => {
    assert.throws(
      () => reviewsFromManifests({ source: 'x.yaml', text: 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: a }\n' }),
      /x\.yaml: document 0: v1 ConfigMap is not a kind tolerator reads/,
    );
  });

  it('describes a change it has no words for by its operation and path', () => {
    assert.deepEqual(describeChange({ op: 'replace', path: '/spec/priority', value: 1 }), ['replace /spec/priority = 1']);
  });
});

describe('tolerator explain shows the cautions of the loaded policies', () => {
  it("names a policy that exempts on the pod's own label, and what a tenant could do with it", () => {
    const { set } = createPolicySet([compilePolicy('pod-label', labelPolicySpec())]);
    const lines = policyCautionLines(set);
    assert.equal(lines.length, 1);
    assert.match(
      lines[0] ?? '',
      /^caution: TenancyPolicy "pod-label" spec\.exempt reads object\.metadata\.labels, .*a tenant can exempt its own pods/,
    );
  });

  it('shows none for the shipped policies', () => {
    const { set } = createPolicySet([
      compilePolicy('namespace-label', { ...labelPolicySpec(), exempt: "namespaceObject.metadata.?labels['x'].orValue('') == 'true'" }),
    ]);
    assert.deepEqual(policyCautionLines(set), []);
  });

  it("shows PodNodeSelector's labels merged into the nodeSelector of a pod, with the rule behind them", async () => {
    const [lines = []] = await explain(
      'apiVersion: v1\nkind: Pod\nmetadata: { name: web, namespace: edge }\nspec: { nodeSelector: { kubernetes.io/os: linux }, containers: [{ name: app, image: x }] }\n',
      [
        '--enable-plugins=PodNodeSelector',
        '--admission-config=test/fixtures/config/pod-node-selector-admission.yaml',
        '--cluster-state=test/fixtures/config/pod-node-selector-cluster.yaml',
      ],
    );
    const at = lines.findIndex((line) => line.startsWith('  PodNodeSelector: '));
    assert.ok(at > 0, lines.join('\n'));
    assert.match(lines[at] ?? '', /scheduler\.alpha\.kubernetes\.io\/node-selector/);
    assert.deepEqual(lines.slice(at + 1, at + 3), [
      '    + nodeSelector node-role.kubernetes.io/edge=true',
      '    + nodeSelector topology.kubernetes.io/region=eu-west',
    ]);
  });

  it('describes a whole nodeSelector added, and a key with an escaped "/"', () => {
    assert.deepEqual(describeChange({ op: 'add', path: '/spec/nodeSelector', value: { zone: 'a', 'example.com/disk': 'ssd' } }), [
      '+ nodeSelector zone=a',
      '+ nodeSelector example.com/disk=ssd',
    ]);
    assert.deepEqual(describeChange({ op: 'add', path: '/spec/template/spec/nodeSelector/example.com~1a~0b', value: 'x' }), [
      '+ nodeSelector example.com/a~b=x',
    ]);
  });
});

describe('explain says a kube-system pod is not reviewed by the shipped webhooks', () => {
  const burstable = (namespace: string): string =>
    `apiVersion: v1\nkind: Pod\nmetadata: { name: p, namespace: ${namespace} }\nspec: { containers: [{ name: c, image: x, resources: { requests: { cpu: 100m } } }] }\n`;

  for (const namespace of ['kube-system', 'kube-node-lease', 'tolerator-system']) {
    it(`${namespace}: not reviewed, no memory-pressure or any other change`, async () => {
      const { code, stdout } = await runCommand(explainCommand, ['pod.yaml'], { 'pod.yaml': burstable(namespace) });
      assert.equal(code, 0);
      const lines = stdout.trimEnd().split('\n');
      assert.equal(lines[0], `Pod ${namespace}/p`);
      assert.match(
        lines[1] ?? '',
        new RegExp(`^ {2}not reviewed: the shipped webhook configurations exclude namespace ${namespace} \\(namespaceSelector`),
      );
      assert.equal(lines.at(-1), "  result: allowed, unchanged by tolerator (the API server's own admission plugins still apply)");
      assert.ok(!stdout.includes('memory-pressure'), stdout);
    });
  }

  it('a namespace labelled tolerator.dev/ignore=true in --cluster-state is not reviewed; the same namespace without the label is', async () => {
    const state = (labels: string): string => `apiVersion: v1\nkind: Namespace\nmetadata: { name: batch, labels: { ${labels} } }\n`;
    const optedOut = await runCommand(explainCommand, ['--cluster-state=state.yaml', '-o', 'json', 'pod.yaml'], {
      'pod.yaml': burstable('batch'),
      'state.yaml': state('tolerator.dev/ignore: "true"'),
    });
    const [explanation] = JSON.parse(optedOut.stdout) as { notReviewed?: string; steps: unknown[] }[];
    assert.match(explanation?.notReviewed ?? '', /labelled tolerator\.dev\/ignore=true/);
    assert.deepEqual(explanation?.steps, []);
    const reviewed = await runCommand(explainCommand, ['--cluster-state=state.yaml', 'pod.yaml'], {
      'pod.yaml': burstable('batch'),
      'state.yaml': state('team: a'),
    });
    assert.ok(reviewed.stdout.includes('+ toleration node.kubernetes.io/memory-pressure Exists (NoSchedule)'), reviewed.stdout);
  });
});

describe("explain prints the prefix policy's caution once", () => {
  it('each caution of policies/dedicated-by-namespace-prefix.yaml appears once in all the output, stdout and stderr together', () => {
    const result = spawnSync(
      process.execPath,
      [
        '--enable-experimental-regexp-engine-on-excessive-backtracks',
        '--import',
        'tsx',
        'src/main.ts',
        'explain',
        '--policies=policies',
        'examples/tenant-deployment.yaml',
      ],
      { cwd: join(import.meta.dirname, '..', '..'), encoding: 'utf8', timeout: 60_000 },
    );
    const all = `${result.stdout}\n${result.stderr}`;
    for (const field of ['spec.group', 'spec.infrastructure']) {
      // In the log's JSON the policy's name is quoted as \"…\": count both spellings.
      const said = all
        .split(/dedicated-by-namespace-prefix\\?" /)
        .filter((rest) => rest.startsWith(`${field} reads namespaceObject.metadata.name`)).length;
      assert.equal(said, 1, `${field}: ${all}`);
    }
  });
});
