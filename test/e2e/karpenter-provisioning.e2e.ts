/**
 * Karpenter's own scheduler against tolerator's tenancy: kube-apiserver with tolerator's webhooks
 * and the shipped label policy (namespaces labelled `dedicated=<group>`), kube-scheduler, and
 * Karpenter's KWOK provider (test/cluster/karpenter.ts) with three NodePools: `gpu` and `pci`, each
 * labelling AND tainting its nodes for its group (`dedicated=<group>` and
 * `dedicated=<group>:NoSchedule`, as docs/tenancy.md describes the node half), and `general`, with
 * neither. Karpenter sees a pod only once kube-scheduler has marked it Unschedulable, decides from
 * the pod as tolerator mutated it, and tells its decision in an Event on the pod (`Nominated`:
 * "Pod should schedule on: nodeclaim/NAME", or `FailedScheduling` from the component karpenter),
 * which is what these tests read to know it has decided, before asserting what it made.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { nodeClassLabelKey } from '../../src/tenancy/node-side.js';
import { REPO_ROOT, skipWithoutControlPlane } from '../cluster/binaries.js';
import { skipWithoutKarpenter } from '../cluster/karpenter-binaries.js';
import { KARPENTER_KWOK_NODE_SELECTOR, KWOK_NODE_CLASS_REF, startKarpenter, type Karpenter } from '../cluster/karpenter.js';
import { KWOK_LEASE_DURATION_SECONDS, skipWithoutKwok, startKwok, type Kwok } from '../cluster/kwok.js';
import { pollUntil } from '../cluster/poll.js';
import {
  apiError,
  asKubernetesObject,
  createObject,
  plain,
  refusal,
  startToleratorOnCluster,
  type Manifest,
  type ToleratorOnCluster,
} from '../cluster/tolerator-on-cluster.js';

const skip = skipWithoutControlPlane() || skipWithoutKwok() || skipWithoutKarpenter();

const NODEPOOL_LABEL = 'karpenter.sh/nodepool';
const zoneKey = 'topology.kubernetes.io/zone';

/** The namespaces: one per group (the shipped label policy), and one of no group. */
const namespaces: Record<string, Record<string, string>> = {
  ml: { dedicated: 'gpu' },
  payments: { dedicated: 'pci' },
  shop: {},
  // Not reviewed (the shipped webhooks' namespaceSelector): what Karpenter does with a pod
  // tolerator would have admitted before, shown on the real binary.
  unreviewed: { 'tolerator.dev/ignore': 'true' },
};

/**
 * A NodePool of the KWOK provider's `c` family, amd64 Linux, on-demand: small and cheap instance
 * types, so Karpenter's choice is quick and a pod of 500m CPU fits the smallest (1 CPU less the
 * provider's 100m kube-reserved). `group` labels and taints the nodes for that group.
 */
function nodePool(name: string, group: string | undefined): Manifest {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name },
    spec: {
      // The general pool first (Karpenter tries NodePools by weight, then by name from z to a):
      // a cluster that keeps its dedicated pools for their tenants prefers it for everything else.
      ...(group === undefined ? { weight: 10 } : {}),
      template: {
        ...(group === undefined ? {} : { metadata: { labels: { dedicated: group } } }),
        spec: {
          ...(group === undefined ? {} : { taints: [{ key: 'dedicated', value: group, effect: 'NoSchedule' }] }),
          requirements: [
            { key: 'karpenter.kwok.sh/instance-family', operator: 'In', values: ['c'] },
            { key: 'kubernetes.io/os', operator: 'In', values: ['linux'] },
            { key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] },
            { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
          ],
          nodeClassRef: KWOK_NODE_CLASS_REF,
          expireAfter: 'Never',
        },
      },
      disruption: { consolidationPolicy: 'WhenEmptyOrUnderutilized', consolidateAfter: '5s' },
      limits: { cpu: '100' },
    },
  };
}

const container = (cpu: string): Record<string, unknown> => ({
  name: 'app',
  image: 'registry.example/app:1',
  resources: { requests: { cpu, memory: '64Mi' } },
});

function pod(name: string, namespace: string, spec: Record<string, unknown> = {}, cpu = '500m'): Manifest {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace }, spec: { containers: [container(cpu)], ...spec } };
}

const required = (...terms: Record<string, unknown>[]): Record<string, unknown> => ({
  affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } },
});
const expression = (key: string, operator: string, values?: string[]): Record<string, unknown> => ({
  key,
  operator,
  ...(values === undefined ? {} : { values }),
});

/** A preferred term for group pci: Karpenter first takes the heaviest preference as required. */
const prefersPci = {
  affinity: {
    nodeAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [
        { weight: 100, preference: { matchExpressions: [expression('dedicated', 'In', ['pci'])] } },
      ],
    },
  },
};
/** An empty first required term (kube-scheduler: matches no node), then the pod's real choice. */
const emptyFirstTerm = required({}, { matchExpressions: [expression(zoneKey, 'In', ['test-zone-b'])] });

interface StoredPod extends Manifest {
  spec: { nodeName?: string };
}
interface StoredNode extends Manifest {
  metadata: { name: string; labels?: Record<string, string> };
  spec: { taints?: { key: string; value?: string; effect: string }[] };
}
interface KarpenterEvent {
  reason: string;
  message: string;
}

describe('Karpenter provisions for tenant pods only from their own group’s NodePools', { skip }, () => {
  let cluster: ToleratorOnCluster;
  let karpenter: Karpenter;
  let kwok: Kwok;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-karpenter-'));
    cluster = await startToleratorOnCluster({
      dir,
      plane: { scheduler: true, controllerManager: true },
      serveArgs: ['--policies', join(REPO_ROOT, 'policies')],
    });
    for (const [name, labels] of Object.entries(namespaces)) {
      await createObject(cluster.objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } });
    }
    // kwok makes Karpenter's Nodes Ready and runs their pods: Karpenter consolidates only nodes
    // whose NodeClaim is initialized (Ready), and drains them by evicting pods kwok then deletes.
    kwok = await startKwok(cluster.plane, KWOK_LEASE_DURATION_SECONDS, KARPENTER_KWOK_NODE_SELECTOR);
    karpenter = await startKarpenter({ plane: cluster.plane, objects: cluster.objects });
    for (const [name, group] of [
      ['gpu', 'gpu'],
      ['pci', 'pci'],
      ['general', undefined],
    ] as const) {
      await createObject(cluster.objects, nodePool(name, group));
    }
  });
  after(async () => {
    await (karpenter as Karpenter | undefined)?.stop();
    await (kwok as Kwok | undefined)?.stop();
    await (cluster as ToleratorOnCluster | undefined)?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const readPod = async (namespace: string, name: string): Promise<StoredPod> =>
    plain(await cluster.objects.read({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace } })) as StoredPod;
  const readNode = async (name: string): Promise<StoredNode> =>
    plain(await cluster.objects.read({ apiVersion: 'v1', kind: 'Node', metadata: { name } })) as StoredNode;
  /** Every NodeClaim, as name → its NodePool (the label Karpenter sets from the NodePool it was made from). */
  const nodeClaims = async (): Promise<Map<string, string>> => {
    const list = plain(await cluster.objects.list('karpenter.sh/v1', 'NodeClaim')) as {
      items: { metadata: { name: string; labels?: Record<string, string> } }[];
    };
    return new Map(list.items.map((claim) => [claim.metadata.name, claim.metadata.labels?.[NODEPOOL_LABEL] ?? '(none)']));
  };
  /** Karpenter's events on a pod (source component karpenter): its decisions. */
  const karpenterEvents = async (namespace: string, name: string): Promise<KarpenterEvent[]> => {
    const list = plain(
      await cluster.objects.list('v1', 'Event', namespace, undefined, undefined, undefined, `involvedObject.name=${name}`),
    ) as { items: { reason: string; message: string; source?: { component?: string } }[] };
    return list.items.filter((event) => event.source?.component === 'karpenter').map(({ reason, message }) => ({ reason, message }));
  };
  /** The NodePool of each NodeClaim or Node Karpenter nominated the pod for, once it has decided (empty: it failed it). */
  const nominatedPools = async (namespace: string, name: string): Promise<{ pools: string[]; events: KarpenterEvent[] }> => {
    let seen: KarpenterEvent[] = [];
    const events = await pollUntil(
      `Karpenter's decision on ${namespace}/${name}`,
      async () => {
        seen = await karpenterEvents(namespace, name);
        return seen.some((event) => event.reason === 'Nominated' || event.reason === 'FailedScheduling') ? seen : undefined;
      },
      { timeoutMs: 90_000, describe: () => `${JSON.stringify(seen)}; karpenter log:\n${karpenter.tail(15)}` },
    );
    const pools: string[] = [];
    const claims = await nodeClaims();
    for (const event of events.filter((each) => each.reason === 'Nominated')) {
      for (const [, kind, target] of event.message.matchAll(/(nodeclaim|node)\/([a-z0-9.-]+)/g)) {
        pools.push(
          kind === 'nodeclaim'
            ? (claims.get(target!) ?? '(gone)')
            : ((await readNode(target!)).metadata.labels?.[NODEPOOL_LABEL] ?? '(none)'),
        );
      }
    }
    return { pools, events };
  };
  /** Waits until kube-scheduler has bound the pod, and returns its node. */
  const boundNode = async (namespace: string, name: string): Promise<StoredNode> => {
    let last: StoredPod | undefined;
    const pod = await pollUntil(
      `${namespace}/${name} bound to a node Karpenter made`,
      async () => {
        last = await readPod(namespace, name);
        return last.spec.nodeName === undefined ? undefined : last;
      },
      { timeoutMs: 120_000, describe: () => `${JSON.stringify(last?.status)}; karpenter log:\n${karpenter.tail(15)}` },
    );
    return readNode(pod.spec.nodeName!);
  };

  it('pending pods of two groups and an outsider get nodes from their own NodePools only, and kube-scheduler binds them there', async () => {
    const placed: Record<string, [string, string, string | undefined]> = {
      trainer: ['ml', 'gpu', 'gpu'],
      ledger: ['payments', 'pci', 'pci'],
      web: ['shop', 'general', undefined],
    };
    for (const [name, [namespace]] of Object.entries(placed)) await createObject(cluster.objects, pod(name, namespace));
    for (const [name, [namespace, pool, group]] of Object.entries(placed)) {
      const node = await boundNode(namespace, name);
      assert.equal(node.metadata.labels?.[NODEPOOL_LABEL], pool, `${namespace}/${name} is on ${node.metadata.name}`);
      assert.equal(node.metadata.labels.dedicated, group);
      // Karpenter's second label of its own, its NodeClass's, which src/tenancy/node-side.ts reads
      // as a group label when a policy names that key: karpenter.kwok.sh/kwoknodeclass=default.
      assert.equal(node.metadata.labels[nodeClassLabelKey(KWOK_NODE_CLASS_REF)], KWOK_NODE_CLASS_REF.name);
      // Karpenter put the NodePool's taint on the node when it registered it (and lifted its own
      // karpenter.sh/unregistered): the group's taint and nothing of another group.
      const groupTaints = (node.spec.taints ?? []).filter((taint) => taint.key === 'dedicated');
      assert.deepEqual(groupTaints, group === undefined ? [] : [{ key: 'dedicated', value: group, effect: 'NoSchedule' }]);
      const { pools } = await nominatedPools(namespace, name);
      assert.deepEqual([...new Set(pools)], [pool]);
    }
    // One NodeClaim per NodePool: nothing was provisioned for a pod from another group's pool.
    assert.deepEqual([...(await nodeClaims()).values()].sort(), ['general', 'gpu', 'pci']);
  });

  it("a tenant pod that asks for another group's nodes in any of the shapes the tenancy suite knows is refused, so Karpenter never sees it", async () => {
    const pci = { key: 'dedicated', operator: 'Equal', value: 'pci', effect: 'NoSchedule' };
    const pciNode = (await nodesOf('pci'))[0];
    assert.ok(pciNode !== undefined, 'the first test made a pci node');
    const shapes: Record<string, Record<string, unknown>> = {
      'wildcard-toleration': { tolerations: [{ operator: 'Exists' }] },
      'exists-on-the-key': { tolerations: [{ key: 'dedicated', operator: 'Exists' }] },
      'other-groups-toleration': { tolerations: [pci] },
      'other-groups-node-selector': { nodeSelector: { dedicated: 'pci' } },
      'ored-term-for-the-other-group': required(
        { matchExpressions: [expression(zoneKey, 'In', ['test-zone-a'])] },
        { matchExpressions: [expression('dedicated', 'In', ['pci'])] },
      ),
      'not-in-own-group': required({ matchExpressions: [expression('dedicated', 'NotIn', ['gpu'])] }),
      'does-not-exist': required({ matchExpressions: [expression('dedicated', 'DoesNotExist')] }),
      'node-name-of-the-other-group': { nodeName: pciNode },
      'toleration-and-selector-together': { tolerations: [pci], nodeSelector: { dedicated: 'pci' } },
      // The two shapes Karpenter provisioned a general node for (the last test shows it).
      'prefers-the-other-group': prefersPci,
      'empty-first-term': emptyFirstTerm,
    };
    const claimsBefore = await nodeClaims();
    for (const [name, spec] of Object.entries(shapes)) {
      const answer = await refusal(createObject(cluster.objects, pod(name, 'ml', spec)));
      assert.equal(answer.code, 403, `${name}: ${JSON.stringify(answer.status)}`);
      assert.match(answer.status.message ?? '', /^admission webhook "(mutate|validate)\.tolerator\.dev" denied the request: /, name);
    }
    // An outsider may not tolerate a group's taint either.
    const outsider = await refusal(
      createObject(cluster.objects, pod('greedy', 'shop', { tolerations: [{ key: 'dedicated', operator: 'Exists' }] })),
    );
    assert.equal(outsider.code, 403);
    const stored = plain(await cluster.objects.list('v1', 'Pod', 'ml')) as { items: Manifest[] };
    assert.deepEqual(
      stored.items.map((item) => item.metadata.name).filter((name) => Object.hasOwn(shapes, String(name))),
      [],
    );
    assert.deepEqual(await nodeClaims(), claimsBefore);
  });

  it("admitted pods that name another group only where Karpenter intersects it with the group provision from their own group's NodePool, and an outsider selecting a group's nodes gets none", async () => {
    const claimsBefore = await nodeClaims();
    // 3 CPUs: no node made so far (the smallest types) has room, so each needs a new NodeClaim.
    const admitted: Record<string, Record<string, unknown>> = {
      // ORed terms of its own: tolerator ANDs the group into each; Karpenter tries them in turn.
      'ored-zones': required(
        { matchExpressions: [expression(zoneKey, 'In', ['test-zone-a'])] },
        { matchExpressions: [expression(zoneKey, 'In', ['test-zone-b'])] },
      ),
      // Admits gpu, so tolerator does not refuse it; ANDed with In [gpu] it is gpu only.
      'in-both-groups': required({ matchExpressions: [expression('dedicated', 'In', ['gpu', 'pci'])] }),
      'exists-on-the-label': required({ matchExpressions: [expression('dedicated', 'Exists')] }),
    };
    for (const [name, spec] of Object.entries(admitted)) await createObject(cluster.objects, pod(name, 'ml', spec, '3'));
    await createObject(cluster.objects, pod('shop-on-gpu', 'shop', { nodeSelector: { dedicated: 'gpu' } }, '3'));

    for (const name of Object.keys(admitted)) {
      const { pools, events } = await nominatedPools('ml', name);
      assert.ok(pools.length > 0, `${name}: Karpenter did not nominate it: ${JSON.stringify(events)}`);
      assert.deepEqual([...new Set(pools)], ['gpu'], `${name}: ${JSON.stringify(events)}`);
      const node = await boundNode('ml', name);
      assert.equal(node.metadata.labels?.[NODEPOOL_LABEL], 'gpu', name);
    }
    // The outsider tolerates no group's taint: Karpenter fails it and makes nothing.
    const outsider = await nominatedPools('shop', 'shop-on-gpu');
    assert.deepEqual(outsider.pools, [], JSON.stringify(outsider.events));
    assert.ok(outsider.events.some((event) => event.reason === 'FailedScheduling'));
    const made = [...(await nodeClaims())].filter(([name]) => !claimsBefore.has(name)).map(([, pool]) => pool);
    assert.ok(made.length > 0);
    assert.deepEqual([...new Set(made)], ['gpu'], `NodeClaims made: ${JSON.stringify(made)}`);
    assert.equal((await readPod('shop', 'shop-on-gpu')).spec.nodeName, undefined);
  });

  it('a NodePool that labels its nodes for a group but does not taint them is refused by kube-apiserver, and so is one that taints them for a group it does not label', async () => {
    const labelsOnly = nodePool('pci-untainted', 'pci');
    delete (labelsOnly.spec as { template: { spec: { taints?: unknown } } }).template.spec.taints;
    const labelled = await refusal(createObject(cluster.objects, labelsOnly));
    assert.equal(labelled.code, 403, JSON.stringify(labelled.status));
    assert.match(
      labelled.status.message ?? '',
      /^admission webhook "validate-nodepools\.tolerator\.dev" denied the request: .*NodePool "pci-untainted" spec\.template\.metadata\.labels\[dedicated\]: labels its nodes for group "pci" \(dedicated=pci\) without the group's taint dedicated=pci:NoSchedule/,
    );
    const taintsOnly = nodePool('pci-unlabelled', 'pci');
    delete (taintsOnly.spec as { template: { metadata?: unknown } }).template.metadata;
    const tainted = await refusal(createObject(cluster.objects, taintsOnly));
    assert.equal(tainted.code, 403, JSON.stringify(tainted.status));
    assert.match(
      tainted.status.message ?? '',
      /NodePool "pci-unlabelled" .*taints its nodes for group "pci" but does not label them for it/,
    );
    for (const name of ['pci-untainted', 'pci-unlabelled']) {
      const read = await refusal(cluster.objects.read({ apiVersion: 'karpenter.sh/v1', kind: 'NodePool', metadata: { name } }));
      assert.equal(read.code, 404);
    }
  });

  it('consolidation replaces underused nodes and moves each pod only onto a node of its own group’s NodePool', async () => {
    // The bare pods of the tests above go: their nodes empty, and Karpenter deletes them.
    for (const namespace of ['ml', 'payments']) {
      const list = plain(await cluster.objects.list('v1', 'Pod', namespace)) as { items: Manifest[] };
      for (const item of list.items) {
        // A listed item carries no kind of its own (the list has it).
        await cluster.objects.delete(
          asKubernetesObject({ apiVersion: 'v1', kind: 'Pod', metadata: { name: String(item.metadata.name), namespace } }),
        );
      }
    }
    const apps: Record<string, [string, string]> = { 'gpu-app': ['ml', 'gpu'], 'pci-app': ['payments', 'pci'] };
    const deployment = (name: string, namespace: string, replicas: number): Manifest => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace },
      spec: {
        replicas,
        selector: { matchLabels: { app: name } },
        template: { metadata: { labels: { app: name } }, spec: { containers: [container('500m')] } },
      },
    });
    // Every node each app's pods were ever bound to, with its NodePool, seen every 250 ms.
    const seen = new Map<string, Map<string, string>>(Object.keys(apps).map((app) => [app, new Map()]));
    const poolOfNode = new Map<string, string>();
    const observe = async (): Promise<Record<string, string[]>> => {
      const bound: Record<string, string[]> = {};
      for (const [app, [namespace]] of Object.entries(apps)) {
        const list = plain(
          await cluster.objects.list('v1', 'Pod', namespace, undefined, undefined, undefined, undefined, `app=${app}`),
        ) as { items: StoredPod[] };
        bound[app] = [];
        for (const item of list.items) {
          const nodeName = item.spec.nodeName;
          if (nodeName === undefined) continue;
          if (!poolOfNode.has(nodeName)) poolOfNode.set(nodeName, (await readNode(nodeName)).metadata.labels?.[NODEPOOL_LABEL] ?? '(none)');
          seen.get(app)!.set(nodeName, poolOfNode.get(nodeName)!);
          bound[app].push(nodeName);
        }
      }
      return bound;
    };
    // 6 × 500m: one 4-CPU node per app (3.9 CPUs allocatable after the provider's 100m).
    for (const [app, [namespace]] of Object.entries(apps)) await createObject(cluster.objects, deployment(app, namespace, 6));
    const first = await pollUntil(
      'every pod of both apps bound',
      async () => {
        const bound = await observe();
        return Object.values(bound).every((nodes) => nodes.length === 6) ? bound : undefined;
      },
      { timeoutMs: 120_000, describe: () => JSON.stringify([...seen].map(([app, nodes]) => [app, [...nodes]])) },
    );
    // Down to one pod each, the one on the node that held most of the app's pods: that node is
    // now mostly idle, and a smaller node (or another of the group's with room) is cheaper.
    // pod-deletion-cost picks the pod the ReplicaSet keeps (it ranks before co-location, which
    // would keep the pod on the node with fewest). Karpenter launches a replacement, waits for it
    // to be Ready, then drains the old node: the Deployment's new pod is the move.
    const kubectl = (...args: string[]): void => {
      const run = spawnSync(cluster.plane.binaries.path('kubectl'), ['--kubeconfig', cluster.plane.kubeconfig, ...args], {
        encoding: 'utf8',
      });
      assert.equal(run.status, 0, run.stderr);
    };
    const movedFrom = new Map<string, string>();
    for (const [app, [namespace]] of Object.entries(apps)) {
      const nodes = first[app]!;
      const busiest = nodes.reduce((best, node) =>
        nodes.filter((n) => n === node).length > nodes.filter((n) => n === best).length ? node : best,
      );
      movedFrom.set(app, busiest);
      const list = plain(
        await cluster.objects.list('v1', 'Pod', namespace, undefined, undefined, undefined, `spec.nodeName=${busiest}`, `app=${app}`),
      ) as { items: Manifest[] };
      kubectl('annotate', '-n', namespace, 'pod', String(list.items[0]?.metadata.name), 'controller.kubernetes.io/pod-deletion-cost=1000');
      kubectl('scale', '-n', namespace, `deployment/${app}`, '--replicas=1');
    }
    await pollUntil(
      "each app's remaining pod moved off its first node by consolidation",
      async () => {
        const bound = await observe();
        return Object.entries(bound).every(([app, nodes]) => nodes.length === 1 && nodes[0] !== movedFrom.get(app)) ? bound : undefined;
      },
      {
        timeoutMs: 240_000,
        intervalMs: 250,
        describe: () => `${JSON.stringify([...seen].map(([app, nodes]) => [app, [...nodes]]))}; karpenter log:\n${karpenter.tail(10)}`,
      },
    );
    for (const [app, [, pool]] of Object.entries(apps)) {
      const pools = [...seen.get(app)!.values()];
      assert.ok(seen.get(app)!.size >= 2, `${app} moved: ${JSON.stringify([...seen.get(app)!])}`);
      assert.deepEqual([...new Set(pools)], [pool], `${app} was bound to ${JSON.stringify([...seen.get(app)!])}`);
    }
  });

  it("Karpenter launches a general NodePool's node for a gpu pod that prefers pci, or whose first required term is empty, so tolerator refuses both shapes from a tenant", async () => {
    // The pods as tolerator admitted them before: the group's toleration and its requirement in
    // every non-empty term, in a namespace tolerator does not review.
    const gpuToleration = { key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' };
    const gpuTerm = (...more: Record<string, unknown>[]): Record<string, unknown> => ({
      matchExpressions: [...more, expression('dedicated', 'In', ['gpu'])],
    });
    const shapes: Record<string, Record<string, unknown>> = {
      'prefers-pci': {
        tolerations: [gpuToleration],
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [gpuTerm()] },
            ...prefersPci.affinity.nodeAffinity,
          },
        },
      },
      'empty-first-term': { tolerations: [gpuToleration], ...required({}, gpuTerm(expression(zoneKey, 'In', ['test-zone-b']))) },
    };
    // 20 CPUs: more than any node made so far has (the earlier tests' pods fit 4-CPU types), so
    // kube-scheduler binds neither and Karpenter must launch a node for each.
    for (const [name, spec] of Object.entries(shapes)) await createObject(cluster.objects, pod(name, 'unreviewed', spec, '20'));
    for (const name of Object.keys(shapes)) {
      const { pools, events } = await nominatedPools('unreviewed', name);
      // kube-scheduler will not bind it there (the node lacks dedicated=gpu): a node launched
      // outside the group for nothing, for as long as the pod waits.
      assert.deepEqual([...new Set(pools)], ['general'], `${name}: ${JSON.stringify(events)}`);
    }
    // Gone, or Karpenter would go on launching nodes for them.
    for (const name of Object.keys(shapes)) await cluster.objects.delete(pod(name, 'unreviewed'));
  });

  it('standalone NodeClaim: one written by hand that labels its node for a group without the taint (or with karpenter.sh/do-not-sync-taints) is refused by kube-apiserver; with the taint Karpenter launches it (IsManaged: any NodeClaim of its NodeClass), and the Node carries its label and taint', async () => {
    const pciTaint = { key: 'dedicated', value: 'pci', effect: 'NoSchedule' };
    const claim = (name: string, taints: unknown[], labels: Record<string, string> = { dedicated: 'pci' }): Manifest => ({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name, labels },
      spec: {
        nodeClassRef: KWOK_NODE_CLASS_REF,
        // The KWOK provider launches a NodeClaim only with an instance-type requirement ("instance
        // type requirement not found" otherwise); Karpenter writes it into the NodeClaims it makes.
        requirements: [
          { key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['c-1x-amd64-linux'] },
          { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
        ],
        taints,
      },
    });
    const refused = await refusal(createObject(cluster.objects, claim('pci-by-hand-untainted', [])));
    assert.equal(refused.code, 403, JSON.stringify(refused.status));
    assert.match(
      refused.status.message ?? '',
      /^admission webhook "validate-nodepools\.tolerator\.dev" denied the request: .*NodeClaim "pci-by-hand-untainted" metadata\.labels\[dedicated\]: labels its node for group "pci" \(dedicated=pci\) without the group's taint dedicated=pci:NoSchedule/,
    );
    // karpenter.sh/do-not-sync-taints: "true" keeps the NodeClaim's taints off the Node, so a group
    // taint beside it does not count.
    const unsynced = await refusal(
      createObject(
        cluster.objects,
        claim('pci-by-hand-unsynced', [pciTaint], { dedicated: 'pci', 'karpenter.sh/do-not-sync-taints': 'true' }),
      ),
    );
    assert.equal(unsynced.code, 403, JSON.stringify(unsynced.status));
    assert.match(unsynced.status.message ?? '', /NodeClaim "pci-by-hand-unsynced" .*karpenter\.sh\/do-not-sync-taints\] is "true"/);
    let seen: unknown;
    const registeredNode = (hostname: string): Promise<StoredNode> =>
      pollUntil(
        `the Node Karpenter launched for NodeClaim ${hostname}`,
        async () => {
          const list = plain(
            await cluster.objects.list(
              'v1',
              'Node',
              undefined,
              undefined,
              undefined,
              undefined,
              undefined,
              `kubernetes.io/hostname=${hostname}`,
            ),
          ) as { items: StoredNode[] };
          seen = list.items.map((item) => ({ labels: item.metadata.labels, taints: item.spec.taints }));
          // Registered: Karpenter has lifted karpenter.sh/unregistered and synced the NodeClaim's taints.
          return list.items.find((item) => item.metadata.labels?.['karpenter.sh/registered'] === 'true');
        },
        { timeoutMs: 90_000, describe: () => `${JSON.stringify(seen)}; karpenter log:\n${karpenter.tail(15)}` },
      );
    // The same label on a NodeClaim of no group (admitted): its taint never reaches the Node.
    const otherTaint = { key: 'example.com/maintenance', value: 'x', effect: 'NoSchedule' };
    const ungrouped = claim('ungrouped-unsynced', [otherTaint], { 'karpenter.sh/do-not-sync-taints': 'true' });
    await createObject(cluster.objects, ungrouped);
    const unsyncedNode = await registeredNode('ungrouped-unsynced');
    assert.deepEqual(
      (unsyncedNode.spec.taints ?? []).filter((taint) => taint.key === otherTaint.key),
      [],
      JSON.stringify(unsyncedNode.spec.taints),
    );
    await cluster.objects.delete(ungrouped);
    const paired = claim('pci-by-hand', [pciTaint]);
    await createObject(cluster.objects, paired);
    const node = await registeredNode('pci-by-hand');
    assert.equal(node.metadata.labels?.dedicated, 'pci');
    assert.deepEqual(
      (node.spec.taints ?? []).filter((taint) => taint.key === 'dedicated'),
      [pciTaint],
    );
    await cluster.objects.delete(paired);
  });

  it("a NodePool that got in while the NodePool webhook was out (failurePolicy Ignore) still scales: Karpenter's NodeClaims from it are admitted with a warning, not refused, and its pods are bound", async () => {
    type WebhookConfiguration = Manifest & { webhooks: { name: string; rules: { resources: string[] }[] }[] };
    const webhooksRef = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'tolerator' },
    };
    const shipped = plain(await cluster.objects.read(webhooksRef)) as WebhookConfiguration;
    const withNodePools = (judged: boolean): WebhookConfiguration => {
      const copy = structuredClone(shipped);
      for (const webhook of copy.webhooks.filter(({ name }) => name === 'validate-nodepools.tolerator.dev')) {
        for (const rule of webhook.rules) rule.resources = judged ? ['nodepools', 'nodeclaims'] : ['nodeclaims'];
      }
      return copy;
    };
    const outage = nodePool('outage', undefined);
    const template = (outage.spec as { template: { metadata?: { labels?: Record<string, string> } } }).template;
    // Labelled for pci, untainted: what the webhook refuses, here let in during its "outage".
    template.metadata = { labels: { dedicated: 'pci', 'example.com/outage': 'yes' } };
    delete (outage.spec as { weight?: number }).weight;
    // The outage: NodePools out of the webhook's rules (the API server's informer takes a moment).
    await cluster.objects.replace(asKubernetesObject(withNodePools(false)));
    await pollUntil(
      'the NodePool admitted while NodePools are out of the webhook',
      async () => {
        try {
          await createObject(cluster.objects, outage);
          return true;
        } catch (error) {
          if (apiError(error).code === 403) return undefined;
          throw error;
        }
      },
      { timeoutMs: 20_000 },
    );
    const current = plain(await cluster.objects.read(webhooksRef)) as WebhookConfiguration;
    await cluster.objects.replace(asKubernetesObject({ ...withNodePools(true), metadata: current.metadata }));
    try {
      const outsider = pod('on-outage-pool', 'shop', { nodeSelector: { 'example.com/outage': 'yes' } });
      await createObject(cluster.objects, outsider);
      const node = await boundNode('shop', 'on-outage-pool');
      assert.equal(node.metadata.labels?.[NODEPOOL_LABEL], 'outage');
      assert.equal(node.metadata.labels.dedicated, 'pci');
      await cluster.objects.delete(outsider);
    } finally {
      await cluster.objects.delete(outage);
    }
  });

  /** The names of the Nodes made from `pool`. */
  async function nodesOf(pool: string): Promise<string[]> {
    const list = plain(
      await cluster.objects.list('v1', 'Node', undefined, undefined, undefined, undefined, undefined, `${NODEPOOL_LABEL}=${pool}`),
    ) as { items: { metadata: { name: string } }[] };
    return list.items.map((node) => node.metadata.name);
  }
});
