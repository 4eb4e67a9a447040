import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadClusterStateFile, parseClusterState, staticClusterFacts } from '../../src/kube/cluster-state-file.js';

function fixturePath(name: string): string {
  return fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
}

/** A fresh parse of a fixture file, with its file name as the source. */
function parseFixture(name: string): ReturnType<typeof parseClusterState> {
  return parseClusterState(readFileSync(fixturePath(name), 'utf8'), name);
}

describe('parseClusterState', () => {
  it('reads Namespaces and Nodes from multi-document YAML, skipping empty documents', () => {
    const state = parseFixture('cluster-state.yaml');

    assert.deepEqual(
      state.namespaces.map((namespace) => [namespace.metadata.name, namespace.metadata.labels]),
      [['team-a', { dedicated: 'a' }]],
    );
    assert.deepEqual(
      state.nodes.map((node) => node.metadata.name),
      ['node-1', 'node-2'],
    );
    assert.deepEqual(state.nodes[0]?.spec?.taints, [{ key: 'dedicated', value: 'a', effect: 'NoSchedule' }]);
  });

  it('warns about other kinds, naming the document', () => {
    const state = parseFixture('cluster-state.yaml');

    assert.deepEqual(state.warnings, [
      'cluster-state.yaml: document 3: v1 ConfigMap ignored (only v1 Namespace, Node, karpenter.sh/v1 NodePool, node.k8s.io/v1 RuntimeClass and lists of them are read)',
    ]);
  });

  it('reads a v1 List in JSON, with a nested NodeList whose items omit apiVersion and kind', () => {
    const state = parseFixture('cluster-state-list.json');

    assert.deepEqual(
      state.namespaces.map((namespace) => namespace.metadata.annotations),
      [{ 'scheduler.alpha.kubernetes.io/defaultTolerations': '[]' }],
    );
    assert.deepEqual(
      state.nodes.map((node) => [node.apiVersion, node.kind, node.metadata.name]),
      [
        ['v1', 'Node', 'node-1'],
        ['v1', 'Node', 'node-2'],
      ],
    );
    assert.deepEqual(state.nodes[0]?.spec?.taints, [{ key: 'gpu', effect: 'NoSchedule' }]);
    assert.deepEqual(state.warnings, []);
  });

  it('reads a v1 List in YAML, as kubectl get -o yaml writes it', () => {
    const state = parseFixture('cluster-state-list.yaml');

    assert.deepEqual(
      state.namespaces.map((namespace) => namespace.metadata.name),
      ['kube-system', 'team-a'],
    );
    assert.deepEqual(
      state.nodes.map((node) => node.spec?.taints?.[0]?.key),
      ['node-role.kubernetes.io/control-plane'],
    );
    assert.deepEqual(state.warnings, []);
  });

  it('names the item path when warning inside a list', () => {
    const text = JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [{ apiVersion: 'v1', kind: 'List', items: [{ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' } }] }],
    });

    assert.deepEqual(parseClusterState(text, 'state.json').warnings, [
      'state.json: document 1, items[0].items[0]: apps/v1 Deployment ignored (only v1 Namespace, Node, karpenter.sh/v1 NodePool, node.k8s.io/v1 RuntimeClass and lists of them are read)',
    ]);
  });

  it('skips a Namespace of another apiVersion with a warning', () => {
    const state = parseClusterState('apiVersion: v2\nkind: Namespace\nmetadata: {name: x}\n', 'state.yaml');

    assert.deepEqual(state.namespaces, []);
    assert.deepEqual(state.warnings, [
      'state.yaml: document 1: v2 Namespace ignored (only v1 Namespace, Node, karpenter.sh/v1 NodePool, node.k8s.io/v1 RuntimeClass and lists of them are read)',
    ]);
  });

  it('keeps the later of two objects with the same name, with a warning', () => {
    const text = [
      'apiVersion: v1',
      'kind: Node',
      'metadata: {name: n, labels: {v: "1"}}',
      '---',
      'apiVersion: v1',
      'kind: Node',
      'metadata: {name: n, labels: {v: "2"}}',
    ].join('\n');
    const state = parseClusterState(text, 'state.yaml');

    assert.deepEqual(
      state.nodes.map((node) => node.metadata.labels),
      [{ v: '2' }],
    );
    assert.deepEqual(state.warnings, ['state.yaml: document 2: Node "n" appears again; the later one is used']);
  });

  it('reads an empty file as an empty cluster', () => {
    assert.deepEqual(parseClusterState('', 'empty.yaml'), {
      namespaces: [],
      nodes: [],
      pods: [],
      controllers: new Map(),
      nodePools: [],
      resourceClaims: [],
      runtimeClasses: [],
      warnings: [],
    });
  });

  it('skips Pods with a warning unless asked to read them (tolerator audit)', () => {
    const text = [
      'apiVersion: v1\nkind: Pod\nmetadata: { name: web-0, namespace: shop }\nspec: { containers: [] }',
      'apiVersion: v1\nkind: PodList\nitems:\n  - metadata: { name: web-1 }\n    spec: { containers: [] }',
    ].join('\n---\n');
    const skipped = parseClusterState(text, 'pods.yaml');
    assert.deepEqual(skipped.pods, []);
    assert.deepEqual(skipped.warnings, [
      'pods.yaml: document 1: v1 Pod ignored (only v1 Namespace, Node, karpenter.sh/v1 NodePool, node.k8s.io/v1 RuntimeClass and lists of them are read)',
      'pods.yaml: document 2, items[0]: v1 Pod ignored (only v1 Namespace, Node, karpenter.sh/v1 NodePool, node.k8s.io/v1 RuntimeClass and lists of them are read)',
    ]);
    const read = parseClusterState(text, 'pods.yaml', { readPods: true });
    assert.deepEqual(
      read.pods.map((pod) => [pod.apiVersion, pod.kind, pod.metadata?.namespace, pod.metadata?.name]),
      [
        ['v1', 'Pod', 'shop', 'web-0'],
        // A PodList's items take its kind; a pod without a namespace is in default, as kubectl reads it.
        ['v1', 'Pod', 'default', 'web-1'],
      ],
    );
    assert.deepEqual(read.warnings, []);
  });

  it('with readPods, the same pod twice keeps the later one with a warning; a pod without a name is an error', () => {
    const twice =
      'kind: Pod\napiVersion: v1\nmetadata: { name: a, namespace: n, labels: { v: "1" } }\n---\nkind: Pod\napiVersion: v1\nmetadata: { name: a, namespace: n, labels: { v: "2" } }';
    const state = parseClusterState(twice, 's.yaml', { readPods: true });
    assert.deepEqual(
      state.pods.map((pod) => pod.metadata?.labels?.v),
      ['2'],
    );
    assert.deepEqual(state.warnings, ['s.yaml: document 2: Pod "n/a" appears again; the later one is used']);
    assert.throws(() => parseClusterState('kind: Pod\napiVersion: v1\nmetadata: {}', 's.yaml', { readPods: true }), {
      message: 's.yaml: document 1: Pod has no metadata.name',
    });
  });

  const errorRows: { name: string; text: string; source: string; message: string }[] = [
    {
      name: 'malformed YAML names the source, the document and the position',
      text: 'apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\nkey: [unclosed\n',
      source: 'state.yaml',
      message:
        'state.yaml: document 2: Flow sequence in block collection must be sufficiently indented and end with a ] at line 6, column 1',
    },
    {
      name: 'malformed JSON names the source and the position',
      text: '{"apiVersion": "v1", "kind": "Namespace"',
      source: 'state.json',
      message: 'state.json: document 1: Flow map must end with a } at line 1, column 41',
    },
    {
      name: 'a Namespace without metadata.name names its document',
      text: 'apiVersion: v1\nkind: Node\nmetadata: {name: n}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {labels: {a: b}}\n',
      source: 'state.yaml',
      message: 'state.yaml: document 2: Namespace has no metadata.name',
    },
    {
      name: 'a Node with an empty name inside a list names the item',
      text: JSON.stringify({ apiVersion: 'v1', kind: 'NodeList', items: [{ metadata: { name: 'n' } }, { metadata: { name: '' } }] }),
      source: 'nodes.json',
      message: 'nodes.json: document 1, items[1]: Node has no metadata.name',
    },
    {
      name: 'a document that is not an object is an error',
      text: '- apiVersion: v1\n  kind: Namespace\n',
      source: 'state.yaml',
      message: 'state.yaml: document 1: expected a Kubernetes object, got a list',
    },
    {
      name: 'a List whose items is not a list is an error',
      text: 'apiVersion: v1\nkind: List\nitems: {a: 1}\n',
      source: 'state.yaml',
      message: 'state.yaml: document 1: List.items is not a list',
    },
  ];
  for (const row of errorRows) {
    it(row.name, () => {
      assert.throws(() => parseClusterState(row.text, row.source), { message: row.message });
    });
  }
});

describe('staticClusterFacts', () => {
  const facts = staticClusterFacts(parseFixture('cluster-state.yaml'));

  it('answers namespaces and nodes by name, and undefined for unknown names', async () => {
    assert.deepEqual((await facts.getNamespace('team-a'))?.metadata.labels, { dedicated: 'a' });
    assert.equal(await facts.getNamespace('team-z'), undefined);
    assert.equal(facts.getNode('node-2')?.metadata.name, 'node-2');
    assert.equal(facts.getNode('node-9'), undefined);
  });

  it('lists every node and is always synced', () => {
    assert.deepEqual(
      facts.listNodes().map((node) => node.metadata.name),
      ['node-1', 'node-2'],
    );
    assert.equal(facts.isSynced(), true);
  });
});

describe('loadClusterStateFile', () => {
  it('reads the file and logs each warning with the file as its source', async () => {
    const warnings: { obj: object; msg: string }[] = [];
    const path = fixturePath('cluster-state.yaml');
    const facts = loadClusterStateFile(path, { warn: (obj, msg) => warnings.push({ obj, msg }) });

    assert.equal((await facts.getNamespace('team-a'))?.metadata.name, 'team-a');
    assert.deepEqual(warnings, [
      {
        obj: { source: path },
        msg: `${path}: document 3: v1 ConfigMap ignored (only v1 Namespace, Node, karpenter.sh/v1 NodePool, node.k8s.io/v1 RuntimeClass and lists of them are read)`,
      },
    ]);
  });

  it('fails with the path when the file cannot be read', () => {
    const path = fixturePath('does-not-exist.yaml');
    assert.throws(
      () => loadClusterStateFile(path, { warn: () => undefined }),
      (error: Error) => error.message.includes(path),
    );
  });
});

describe('parseClusterState reads Karpenter NodePools', () => {
  it('a karpenter.sh/v1 NodePool, a v1 List of them (kubectl get nodepools -o yaml) and a NodePoolList whose items omit their kind', () => {
    const nodePool = (name: string): Record<string, unknown> => ({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name },
      spec: {},
    });
    const text = [
      JSON.stringify(nodePool('a')),
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [nodePool('b')] }),
      JSON.stringify({ apiVersion: 'karpenter.sh/v1', kind: 'NodePoolList', items: [{ metadata: { name: 'c' }, spec: {} }] }),
      JSON.stringify({ apiVersion: 'karpenter.sh/v1beta1', kind: 'NodePool', metadata: { name: 'old' } }),
    ].join('\n---\n');
    const state = parseClusterState(text, 'pools.yaml');
    assert.deepEqual(
      state.nodePools.map((pool) => [(pool as { apiVersion: string }).apiVersion, (pool as { metadata: { name: string } }).metadata.name]),
      [
        ['karpenter.sh/v1', 'a'],
        ['karpenter.sh/v1', 'b'],
        ['karpenter.sh/v1', 'c'],
      ],
    );
    assert.deepEqual(state.warnings, [
      'pools.yaml: document 4: karpenter.sh/v1beta1 NodePool ignored (only v1 Namespace, Node, karpenter.sh/v1 NodePool, node.k8s.io/v1 RuntimeClass and lists of them are read)',
    ]);
  });
});
