/**
 * The real DaemonSet controller as the oracle for the DaemonSet toleration set. 30 generated
 * DaemonSet templates (hostNetwork on, off and absent; BestEffort, Burstable and Guaranteed;
 * templates already holding some of the controller's tolerations, with and without
 * tolerationSeconds, in any order, and other tolerations beside them: the empty key, the Equal
 * spelling of a DaemonSet key, duplicates) are created twice on one control plane running
 * kube-controller-manager and tolerator's shipped webhooks: in a namespace tolerator does not
 * review (`tolerator.dev/ignore=true`) and in one it reviews. The controller makes one pod per
 * fake Node in each; the pod of the reviewed namespace, after tolerator's mutating webhook, must
 * equal its twin of the other namespace (the controller's pod, after the API server's own
 * admission) field for field in `spec`, or differ only as explained:
 *
 * - **PodTolerationRestriction's memory-pressure merge.** tolerator runs PodTolerationRestriction
 *   by default, which gives a pod that is not BestEffort the memory-pressure toleration through
 *   MergeTolerations, and MergeTolerations drops every toleration another one covers (a template
 *   holding `{operator: Exists}` keeps that one alone). The in-tree plugin does exactly that where
 *   a cluster enables it: each pod tolerator changed is sent, as the controller made it, to a
 *   second API server with the in-tree PodTolerationRestriction enabled (a dry-run create), and
 *   tolerator's result must be what that server stores. A BestEffort pod is never changed.
 *
 * And offline: tolerator's DaemonSetTolerations plugin (what `tolerator simulate` applies to a
 * DaemonSet's pod, and the webhook to a pod it owns) gives each template the tolerations the
 * controller gave its pod.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { defaultFeatureGates } from '../../src/api/feature-gates.js';
import type { JsonObject, Toleration } from '../../src/api/types.js';
import { createDaemonSetTolerations } from '../../src/plugins/daemonset-tolerations.js';
import { isBestEffortPod } from '../../src/tolerations/qos.js';
import { skipWithoutControlPlane } from '../cluster/binaries.js';
import { startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import { createFakeNodes } from '../cluster/fake-node.js';
import { pollUntil } from '../cluster/poll.js';
import {
  clientsFor,
  createObject,
  startToleratorOnCluster,
  type Manifest,
  type ToleratorOnCluster,
} from '../cluster/tolerator-on-cluster.js';
import { differentialSeed, sampled } from './placement-cases.js';
import { listPods, type StoredPod } from './placement-oracle.js';

const skip = skipWithoutControlPlane();
const seed = differentialSeed();

const daemonSetCount = 30;
const nodeNames = ['daemon-1', 'daemon-2'];
const reference = 'ds-unreviewed';
const reviewed = 'ds-reviewed';

/** The controller's set (pkg/controller/daemon/util AddOrUpdateDaemonPodTolerations), as a template may already hold it. */
const daemonSetKeys = [
  ['node.kubernetes.io/not-ready', 'NoExecute'],
  ['node.kubernetes.io/unreachable', 'NoExecute'],
  ['node.kubernetes.io/disk-pressure', 'NoSchedule'],
  ['node.kubernetes.io/memory-pressure', 'NoSchedule'],
  ['node.kubernetes.io/pid-pressure', 'NoSchedule'],
  ['node.kubernetes.io/unschedulable', 'NoSchedule'],
  ['node.kubernetes.io/network-unavailable', 'NoSchedule'],
] as const;

/** One of the controller's tolerations as a template writes it: Exists (the controller's own spelling), or Equal; NoExecute ones maybe with tolerationSeconds. */
const heldTolerationArbitrary: fc.Arbitrary<Toleration> = fc
  .record({
    entry: fc.constantFrom(...daemonSetKeys),
    spelling: fc.constantFrom('Exists', 'Exists', 'Equal', 'omitted'),
    seconds: fc.option(fc.constantFrom(0, 30, 300), { nil: undefined, freq: 2 }),
  })
  .map(({ entry, spelling, seconds }) => {
    const key = entry[0];
    const effect = entry[1];
    return {
      key,
      ...(spelling === 'omitted' ? {} : { operator: spelling }),
      effect,
      ...(effect === 'NoExecute' && seconds !== undefined ? { tolerationSeconds: seconds } : {}),
    };
  });

/** Tolerations of the template's own that are none of the controller's. */
const otherTolerationArbitrary: fc.Arbitrary<Toleration> = fc.constantFrom<Toleration>(
  { key: 'example.com/agent', operator: 'Exists' },
  { key: 'example.com/agent', operator: 'Equal', value: 'true', effect: 'NoSchedule' },
  { operator: 'Exists', effect: 'NoSchedule' },
  // Tolerates every taint: covers each of the controller's.
  { operator: 'Exists' },
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists' },
);

const resourcesArbitrary = fc.constantFrom(
  undefined,
  { requests: { cpu: '10m' } },
  { requests: { cpu: '10m', memory: '16Mi' }, limits: { cpu: '10m', memory: '16Mi' } },
);

interface GeneratedTemplate {
  readonly hostNetwork: boolean | undefined;
  readonly resources: Record<string, unknown> | undefined;
  readonly tolerations: readonly Toleration[];
}

const templateArbitrary: fc.Arbitrary<GeneratedTemplate> = fc
  .record({
    hostNetwork: fc.constantFrom(true, false, undefined),
    resources: resourcesArbitrary,
    held: fc.array(heldTolerationArbitrary, { maxLength: 5 }),
    others: fc.oneof(
      { weight: 3, arbitrary: fc.constant([]) },
      { weight: 1, arbitrary: fc.array(otherTolerationArbitrary, { minLength: 1, maxLength: 2 }) },
    ),
    order: fc.array(fc.nat(), { minLength: 7, maxLength: 7 }),
  })
  .map(({ hostNetwork, resources, held, others, order }) => {
    // Shuffled by the drawn numbers, so the controller's keys come in any order among the others.
    const all = [...held, ...others].map((toleration, i) => ({ toleration, rank: order[i % order.length]! + i / 100 }));
    return { hostNetwork, resources, tolerations: all.sort((a, b) => a.rank - b.rank).map(({ toleration }) => toleration) };
  });

const templates: readonly GeneratedTemplate[] = sampled(templateArbitrary, daemonSetCount, seed + 4);
const daemonSetName = (i: number): string => `agent-${String(i).padStart(2, '0')}`;

function daemonSet(i: number, namespace: string): Manifest {
  const template = templates[i]!;
  const labels = { app: daemonSetName(i) };
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: daemonSetName(i), namespace },
    spec: {
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [
            {
              name: 'agent',
              image: 'registry.example/agent:1',
              ...(template.resources === undefined ? {} : { resources: template.resources }),
            },
          ],
          ...(template.hostNetwork === undefined ? {} : { hostNetwork: template.hostNetwork }),
          ...(template.tolerations.length === 0 ? {} : { tolerations: template.tolerations }),
        },
      },
    },
  };
}

/** The DaemonSet and node a daemon pod belongs to: its owner's name and the node its affinity names. */
function pairKey(pod: StoredPod): string {
  const owner = (pod.metadata.ownerReferences as { name: string }[] | undefined)?.[0]?.name ?? '';
  const affinity = pod.spec.affinity as
    | { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: { matchFields: { values: string[] }[] }[] } } }
    | undefined;
  const node = affinity?.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]?.matchFields[0]?.values[0];
  return `${owner}@${String(node)}`;
}

/** Every daemon pod of `namespace` once the controller has made all of them, by pairKey. */
async function daemonPods(cluster: ToleratorOnCluster, namespace: string): Promise<Map<string, StoredPod>> {
  const expected = daemonSetCount * nodeNames.length;
  let seen = 0;
  const pods = await pollUntil(
    `the DaemonSet controller's ${expected} pods in ${namespace}`,
    async () => {
      const listed = await listPods(cluster.objects, namespace);
      seen = listed.length;
      return listed.length === expected ? listed : undefined;
    },
    { timeoutMs: 180_000, intervalMs: 1_000, describe: () => `${seen} pods` },
  );
  return new Map(pods.map((pod) => [pairKey(pod), pod]));
}

interface Pair {
  readonly key: string;
  readonly template: GeneratedTemplate;
  readonly controllers: StoredPod;
  readonly afterTolerator: StoredPod;
}

describe(
  `tolerator's mutating webhook leaves the DaemonSet controller's pods of ${daemonSetCount} generated templates as they are, but for PodTolerationRestriction's merge (seed ${seed})`,
  { skip },
  () => {
    let dir: string;
    let cluster: ToleratorOnCluster | undefined;
    let inTree: ControlPlane | undefined;
    const pairs: Pair[] = [];
    /** For each pair tolerator changed: what the in-tree PodTolerationRestriction stores for the controller's pod. */
    const inTreeTolerations = new Map<string, unknown>();
    let storedDaemonSets: Map<string, unknown>[] = [];
    let reviewedPods = 0;

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'tolerator-differential-daemonset-'));
      console.log(`daemonset.differential: seed ${seed} (TOLERATOR_DIFFERENTIAL_SEED=${seed} replays this run)`);
      cluster = await startToleratorOnCluster({ dir: join(dir, 'plane'), plane: { controllerManager: true } });
      await createFakeNodes(cluster.objects, Object.fromEntries(nodeNames.map((name) => [name, {}])));
      await createObject(cluster.objects, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: reference, labels: { 'tolerator.dev/ignore': 'true' } },
      });
      await createObject(cluster.objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: reviewed } });
      const stored = [new Map<string, unknown>(), new Map<string, unknown>()];
      for (let i = 0; i < daemonSetCount; i++) {
        for (const [side, namespace] of [reference, reviewed].entries()) {
          const made = await createObject(cluster.objects, daemonSet(i, namespace));
          stored[side]!.set(daemonSetName(i), (made.spec as { template: unknown }).template);
        }
      }
      storedDaemonSets = stored;
      const controllers = await daemonPods(cluster, reference);
      const afterTolerator = await daemonPods(cluster, reviewed);
      for (const [key, pod] of controllers) {
        const twin = afterTolerator.get(key);
        assert.ok(twin !== undefined, `no pod ${key} in ${reviewed}`);
        pairs.push({
          key,
          template: templates[Number(key.slice('agent-'.length, 'agent-'.length + 2))]!,
          controllers: pod,
          afterTolerator: twin,
        });
      }
      // tolerator's log lines reach this process through a pipe, after its answers: waited for (10 s at most).
      const countReviews = (): number =>
        (cluster?.tolerator()?.logs ?? []).filter(
          (entry) => entry.msg === 'admission review' && entry.webhook === 'mutate' && entry.kind === 'Pod' && entry.namespace === reviewed,
        ).length;
      reviewedPods = await pollUntil(
        `tolerator's log of a mutating review of each pod in ${reviewed}`,
        () => {
          const count = countReviews();
          return count >= pairs.length ? count : undefined;
        },
        { timeoutMs: 10_000, describe: () => `${countReviews()} reviews` },
      ).catch(() => countReviews());

      // The pods tolerator changed, as the controller made them, through the in-tree plugin.
      const changed = pairs.filter(({ controllers: a, afterTolerator: b }) => !equalJson(a.spec, b.spec));
      if (changed.length > 0) {
        inTree = await startControlPlane({
          dir: join(dir, 'in-tree'),
          temporaryDir: true,
          enableAdmissionPlugins: ['PodTolerationRestriction'],
        });
        const { objects } = clientsFor(inTree.kubeconfig);
        await createObject(objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: reference } });
        for (const { key, controllers: pod } of changed) {
          // The controller's pod as it sent it: what the API server added on the way in is added again.
          const sent: Manifest = {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { generateName: `${key.split('@')[0]}-`, namespace: reference, labels: pod.metadata.labels },
            spec: pod.spec,
          };
          const answer = await createObject(objects, sent, 'All');
          inTreeTolerations.set(key, (answer.spec as { tolerations?: unknown }).tolerations);
        }
      }
    });
    after(async () => {
      await inTree?.stop();
      await cluster?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it(`the controller made ${daemonSetCount * nodeNames.length} pods in each namespace, and tolerator reviewed each in ${reviewed}`, () => {
      assert.equal(pairs.length, daemonSetCount * nodeNames.length);
      assert.ok(reviewedPods >= pairs.length, `${reviewedPods} mutating reviews of pods in ${reviewed}`);
    });

    it("tolerator stores each DaemonSet's template as it was sent (no policy, PodNodeSelector off)", () => {
      for (let i = 0; i < daemonSetCount; i++) {
        assert.deepEqual(storedDaemonSets[1]!.get(daemonSetName(i)), storedDaemonSets[0]!.get(daemonSetName(i)), daemonSetName(i));
      }
    });

    it("each pod passes tolerator's mutating webhook with its spec unchanged, or changed exactly as the in-tree PodTolerationRestriction changes it", () => {
      const unexplained: string[] = [];
      for (const { key, controllers, afterTolerator } of pairs) {
        if (equalJson(controllers.spec, afterTolerator.spec)) continue;
        const { tolerations: _a, ...restA } = controllers.spec;
        const { tolerations: _b, ...restB } = afterTolerator.spec;
        if (!equalJson(restA, restB)) unexplained.push(`${key}: a field besides tolerations changed`);
        else if (isBestEffortPod(controllers as unknown as JsonObject, defaultFeatureGates))
          unexplained.push(`${key}: BestEffort, and its tolerations changed`);
        else if (!equalJson(afterTolerator.spec.tolerations, inTreeTolerations.get(key)))
          unexplained.push(
            `${key}: controller's ${JSON.stringify(controllers.spec.tolerations)}; tolerator's ${JSON.stringify(afterTolerator.spec.tolerations)}; in-tree PodTolerationRestriction's ${JSON.stringify(inTreeTolerations.get(key))}`,
          );
      }
      assert.deepEqual(unexplained, []);
      const changedPairs = pairs.filter(({ controllers, afterTolerator }) => !equalJson(controllers.spec, afterTolerator.spec));
      const changed = changedPairs.length;
      // What the merge did: entries dropped (covered by another), or only the order changed.
      const dropped = changedPairs.filter(
        ({ controllers, afterTolerator }) => (afterTolerator.spec.tolerations ?? []).length < (controllers.spec.tolerations ?? []).length,
      ).length;
      console.log(
        `daemonset.differential: ${pairs.length - changed} pods unchanged, ${changed} changed as the in-tree PodTolerationRestriction changes them (${dropped} lost tolerations another covers, ${changed - dropped} otherwise)`,
      );
      assert.ok(pairs.length - changed > 0, 'no pod passed unchanged');
    });

    it("tolerator's DaemonSetTolerations gives each template the controller's tolerations, as simulate applies it", () => {
      const plugin = createDaemonSetTolerations();
      const wrong: string[] = [];
      for (const { key, template, controllers } of pairs) {
        const pod: JsonObject = {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: {
            ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: key.split('@')[0]!, uid: 'u', controller: true }],
          },
          spec: {
            ...(template.hostNetwork === undefined ? {} : { hostNetwork: template.hostNetwork }),
            ...(template.tolerations.length === 0 ? {} : { tolerations: template.tolerations }),
          },
        };
        const outcome = plugin.admit(pod, createAttributes(pod), pluginContext);
        assert.ok('object' in outcome && outcome.object !== undefined);
        const predicted = (outcome.object.spec as { tolerations?: unknown }).tolerations;
        // The API server's DefaultTolerationSeconds adds nothing to a daemon pod: the controller's
        // not-ready and unreachable tolerations are already there, forever.
        if (!equalJson(predicted, controllers.spec.tolerations)) {
          wrong.push(
            `${key}: template ${JSON.stringify(template.tolerations)}; controller ${JSON.stringify(controllers.spec.tolerations)}; tolerator ${JSON.stringify(predicted)}`,
          );
        }
      }
      assert.deepEqual(wrong, []);
    });
  },
);

function equalJson(a: unknown, b: unknown): boolean {
  try {
    assert.deepStrictEqual(a, b);
    return true;
  } catch {
    return false;
  }
}

const pluginContext = {
  gates: defaultFeatureGates,
  namespace: undefined,
  node: () => undefined,
  nodesKnown: false,
  nodes: () => [],
};

function createAttributes(pod: JsonObject) {
  return {
    operation: 'CREATE' as const,
    kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    subResource: '',
    namespace: reviewed,
    name: '',
    object: pod,
    oldObject: undefined,
    dryRun: false,
  };
}
