import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { simulateCommand, type PodReport } from '../../src/cli/simulate.js';
import { runCommand, type CommandResult } from '../support/command-io.js';

const root = join(import.meta.dirname, '..', '..');
const nodesFile = join(root, 'examples', 'cluster-nodes.yaml');
const podsFile = join(root, 'examples', 'pods.yaml');
const gateOn = '--feature-gates=TaintTolerationComparisonOperators=true';

/** Runs the command with in-memory output; `files` shadows the disk for the paths it names. */
function simulate(argv: readonly string[], files: Record<string, string> = {}): Promise<CommandResult> {
  return runCommand(simulateCommand, argv, files);
}

async function reports(argv: readonly string[]): Promise<PodReport[]> {
  const { stdout } = await simulate([...argv, '-o', 'json']);
  return JSON.parse(stdout) as PodReport[];
}

function placement(all: readonly PodReport[], pod: string, node: string): PodReport['nodes'][number] {
  const found = all.find((report) => report.pod === pod)?.nodes.find((candidate) => candidate.node === node);
  assert.ok(found, `${pod} on ${node}`);
  return found;
}

describe('tolerator simulate on the example cluster', () => {
  const rows: {
    name: string;
    args: string[];
    pod: string;
    node: string;
    field: 'schedulable' | 'preferred' | 'evictAfterSeconds';
    want: boolean | number | null;
  }[] = [
    {
      name: 'with the gate on, the Gt 900 toleration lets the pod onto the node tainted 950',
      args: [gateOn],
      pod: 'Pod/needs-new-cpu',
      node: 'cpu-950',
      field: 'schedulable',
      want: true,
    },
    {
      name: 'with the gate on, the Gt 900 toleration does not tolerate the node tainted high',
      args: [gateOn],
      pod: 'Pod/needs-new-cpu',
      node: 'cpu-high',
      field: 'schedulable',
      want: false,
    },
    {
      name: 'with the gate off, the Gt 900 toleration tolerates not even the node tainted 950',
      args: [],
      pod: 'Pod/needs-new-cpu',
      node: 'cpu-950',
      field: 'schedulable',
      want: false,
    },
    { name: 'the PreferNoSchedule node is schedulable', args: [], pod: 'Pod/plain', node: 'spot-1', field: 'schedulable', want: true },
    { name: 'the PreferNoSchedule node is not preferred', args: [], pod: 'Pod/plain', node: 'spot-1', field: 'preferred', want: false },
    {
      name: 'a pod without a NoExecute toleration is evicted at once from the maintenance node',
      args: ['--running'],
      pod: 'Pod/plain',
      node: 'maintenance-1',
      field: 'evictAfterSeconds',
      want: 0,
    },
    {
      name: 'a pod tolerating maintenance for 3600 s is evicted after 3600 s',
      args: ['--running'],
      pod: 'Pod/survives-maintenance',
      node: 'maintenance-1',
      field: 'evictAfterSeconds',
      want: 3600,
    },
    {
      name: 'a pod tolerating maintenance without tolerationSeconds is never evicted',
      args: ['--running'],
      pod: 'Pod/ignores-maintenance',
      node: 'maintenance-1',
      field: 'evictAfterSeconds',
      want: null,
    },
    {
      name: 'a running pod stays on a node whose NoSchedule taint it does not tolerate',
      args: ['--running'],
      pod: 'Pod/plain',
      node: 'cpu-high',
      field: 'schedulable',
      want: true,
    },
    {
      name: 'the Deployment is judged by its template: Gt node affinity on the label picks the 950 node',
      args: [gateOn],
      pod: 'Deployment/fast-cpu',
      node: 'cpu-950',
      field: 'schedulable',
      want: true,
    },
    {
      name: 'the Deployment is judged by its template: Gt node affinity excludes the plain node',
      args: [gateOn],
      pod: 'Deployment/fast-cpu',
      node: 'plain-1',
      field: 'schedulable',
      want: false,
    },
    {
      name: "a DaemonSet pod carries the controller's tolerations and lands on the cordoned node",
      args: [],
      pod: 'DaemonSet/node-agent',
      node: 'cordoned-1',
      field: 'schedulable',
      want: true,
    },
  ];
  for (const row of rows) {
    it(row.name, async () => {
      const all = await reports(['--nodes', nodesFile, ...row.args, podsFile]);
      assert.equal(placement(all, row.pod, row.node)[row.field], row.want);
    });
  }

  it('JSON gives per pod and node exactly {node, schedulable, preferred, reasons, evictAfterSeconds}', async () => {
    const all = await reports(['--nodes', nodesFile, gateOn, podsFile]);
    assert.deepEqual(placement(all, 'Pod/needs-new-cpu', 'cpu-high'), {
      node: 'cpu-high',
      schedulable: false,
      preferred: false,
      reasons: ['taint example.com/cpu-generation=high:NoSchedule is not tolerated'],
      evictAfterSeconds: null,
    });
  });

  it('the table has one header, the pod named once, and the reasons', async () => {
    const { stdout, code } = await simulate(['--nodes', nodesFile, gateOn, podsFile]);
    assert.equal(code, 0);
    const lines = stdout.split('\n');
    assert.match(lines[0] ?? '', /^POD\s+NODE\s+SCHEDULABLE\s+PREFERRED\s+EVICTED\s+REASONS$/);
    assert.match(lines[1] ?? '', /^Pod\/needs-new-cpu\s+cpu-950\s+yes\s+yes\s+never$/);
    assert.match(lines[2] ?? '', /^\s+cpu-high\s+no\s+no\s+never\s+taint example\.com\/cpu-generation=high:NoSchedule is not tolerated$/);
  });

  it('the table shows eviction times as at once, after Ns and never', async () => {
    const { stdout } = await simulate(['--nodes', nodesFile, '--running', podsFile]);
    assert.match(stdout, /maintenance-1\s+no\s+no\s+at once/);
    assert.match(stdout, /maintenance-1\s+yes\s+yes\s+after 3600s/);
    assert.match(stdout, /maintenance-1\s+yes\s+yes\s+never/);
  });

  it('--mutate runs the pod through the admission pipeline first: a tenant pod is restricted to its group', async () => {
    const cluster = join(root, 'test', 'fixtures', 'config', 'tenancy-cluster.yaml');
    const pod = 'apiVersion: v1\nkind: Pod\nmetadata: { name: trainer, namespace: ml }\nspec: { containers: [{ name: app, image: x }] }\n';
    const { stdout } = await simulate(['--nodes', cluster, '--mutate', `--policies=${join(root, 'policies')}`, '-o', 'json', 'pod.yaml'], {
      'pod.yaml': pod,
    });
    const all = JSON.parse(stdout) as PodReport[];
    assert.deepEqual(
      all[0]?.nodes.filter((candidate) => candidate.schedulable).map((candidate) => candidate.node),
      ['gpu-1'],
    );
  });
});

describe('tolerator simulate --mutate with PodNodeSelector', () => {
  it("judges the pod with its namespace's node selector merged in", async () => {
    const cluster = join(root, 'test', 'fixtures', 'config', 'pod-node-selector-cluster.yaml');
    const pod = 'apiVersion: v1\nkind: Pod\nmetadata: { name: web, namespace: eu }\nspec: { containers: [{ name: app, image: x }] }\n';
    const schedulable = async (extra: string[]): Promise<string[]> => {
      const { stdout } = await simulate(['--nodes', cluster, '-o', 'json', ...extra, 'pod.yaml'], { 'pod.yaml': pod });
      const all = JSON.parse(stdout) as PodReport[];
      return (all[0]?.nodes ?? []).filter((candidate) => candidate.schedulable).map((candidate) => candidate.node);
    };
    assert.deepEqual(await schedulable([]), ['edge-1', 'worker-1'], 'as written, the pod fits both untainted nodes');
    assert.deepEqual(await schedulable(['--mutate', '--enable-plugins=PodNodeSelector']), ['edge-1'], 'the namespace keeps it in eu-west');
  });
});

describe('tolerator simulate --mutate with ExtendedResourceToleration', () => {
  it('a pod requesting nvidia.com/gpu tolerates the GPU node once the plugin is enabled', async () => {
    const nodes = [
      'apiVersion: v1\nkind: Node\nmetadata: { name: gpu-1 }\nspec: { taints: [{ key: nvidia.com/gpu, effect: NoSchedule }] }',
      'apiVersion: v1\nkind: Node\nmetadata: { name: plain-1 }\nspec: {}',
    ].join('\n---\n');
    const pod =
      'apiVersion: v1\nkind: Pod\nmetadata: { name: trainer }\nspec: { containers: [{ name: app, image: x, resources: { limits: { nvidia.com/gpu: 1 } } }] }\n';
    const schedulable = async (extra: string[]): Promise<string[]> => {
      const { stdout } = await simulate(['--nodes', 'nodes.yaml', '-o', 'json', ...extra, 'pod.yaml'], {
        'nodes.yaml': nodes,
        'pod.yaml': pod,
      });
      const all = JSON.parse(stdout) as PodReport[];
      return (all[0]?.nodes ?? []).filter((candidate) => candidate.schedulable).map((candidate) => candidate.node);
    };
    assert.deepEqual(await schedulable(['--mutate']), ['plain-1'], 'off by default: no toleration');
    assert.deepEqual(await schedulable(['--mutate', '--enable-plugins=ExtendedResourceToleration']), ['gpu-1', 'plain-1']);
  });
});

describe('tolerator simulate exit codes', () => {
  const nowhere = 'apiVersion: v1\nkind: Pod\nmetadata: { name: nowhere }\nspec: { nodeSelector: { zone: mars } }\n';
  const rows: { name: string; argv: string[]; files?: Record<string, string>; want: number }[] = [
    { name: 'every pod fits some node: 0', argv: ['--nodes', nodesFile, gateOn, podsFile], want: 0 },
    { name: 'with the gate off the Gt Deployment fits no node: 1', argv: ['--nodes', nodesFile, podsFile], want: 1 },
    { name: 'a pod that fits no node: 1', argv: ['--nodes', nodesFile, 'nowhere.yaml'], files: { 'nowhere.yaml': nowhere }, want: 1 },
    { name: 'no --nodes: 2', argv: [podsFile], want: 2 },
    { name: 'no pod file: 2', argv: ['--nodes', nodesFile], want: 2 },
    { name: 'an unknown output format: 2', argv: ['--nodes', nodesFile, '-o', 'xml', podsFile], want: 2 },
    { name: 'an unknown flag: 2', argv: ['--nodes', nodesFile, '--frobnicate', podsFile], want: 2 },
    { name: 'a missing file: 2', argv: ['--nodes', nodesFile, join(root, 'no-such-file.yaml')], want: 2 },
    { name: 'malformed YAML: 2', argv: ['--nodes', nodesFile, 'bad.yaml'], files: { 'bad.yaml': 'kind: [Pod' }, want: 2 },
    { name: 'a nodes file without nodes: 2', argv: ['--nodes', podsFile, podsFile], want: 2 },
  ];
  for (const row of rows) {
    it(row.name, async () => {
      const { code } = await simulate(row.argv, row.files);
      assert.equal(code, row.want);
    });
  }

  it('a pod that fits nowhere is named on stderr', async () => {
    const { stderr } = await simulate(['--nodes', nodesFile, 'nowhere.yaml'], { 'nowhere.yaml': nowhere });
    assert.equal(stderr, 'tolerator simulate: Pod/nowhere fits none of the 6 nodes\n');
  });
});

describe('simulate names the TaintTolerationComparisonOperators gate when a Gt toleration is not tolerated because the gate is off', () => {
  const pod =
    'apiVersion: v1\nkind: Pod\nmetadata: { name: counts }\nspec:\n  tolerations: [{ key: gpu-count, operator: Gt, value: "2", effect: NoSchedule }, { key: lease, operator: Lt, value: "9", effect: NoExecute }]\n  containers: [{ name: c, image: x }]\n';
  const nodes =
    'apiVersion: v1\nkind: Node\nmetadata: { name: n1 }\nspec:\n  taints: [{ key: gpu-count, value: "4", effect: NoSchedule }, { key: lease, value: "3", effect: NoExecute }]\n';
  const gateNote = (index: number, operator: string): string =>
    ` (the ${operator} toleration spec.tolerations[${index}] would tolerate it with feature gate TaintTolerationComparisonOperators on, and it is off: pass --feature-gates TaintTolerationComparisonOperators=true if your API server has it on)`;

  it('gate off: the NoSchedule and the NoExecute reason each name the gate and the toleration', async () => {
    const { stdout, code } = await simulate(['--nodes', 'nodes.yaml', '-o', 'json', 'pod.yaml'], { 'pod.yaml': pod, 'nodes.yaml': nodes });
    assert.equal(code, 1);
    const all = JSON.parse(stdout) as PodReport[];
    assert.deepEqual(placement(all, 'Pod/counts', 'n1').reasons, [
      `taint gpu-count=4:NoSchedule is not tolerated${gateNote(0, 'Gt')}`,
      `taint lease=3:NoExecute is not tolerated${gateNote(1, 'Lt')}: evicted at once`,
    ]);
  });

  it('gate on: tolerated, no reason', async () => {
    const { code, stdout } = await simulate(['--nodes', 'nodes.yaml', gateOn, '-o', 'json', 'pod.yaml'], {
      'pod.yaml': pod,
      'nodes.yaml': nodes,
    });
    assert.equal(code, 0);
    assert.deepEqual(placement(JSON.parse(stdout) as PodReport[], 'Pod/counts', 'n1').reasons, []);
  });

  it('a taint no toleration of the pod is written for says nothing of the gate', async () => {
    const other = nodes.replaceAll('gpu-count', 'zone').replaceAll('lease', 'maint');
    const { stdout } = await simulate(['--nodes', 'nodes.yaml', '-o', 'json', 'pod.yaml'], { 'pod.yaml': pod, 'nodes.yaml': other });
    assert.deepEqual(placement(JSON.parse(stdout) as PodReport[], 'Pod/counts', 'n1').reasons, [
      'taint zone=4:NoSchedule is not tolerated',
      'taint maint=3:NoExecute is not tolerated: evicted at once',
    ]);
  });
});
