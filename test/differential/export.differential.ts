/**
 * `tolerator export`'s policies against tolerator's webhook, on two real kube-apiservers of the
 * same build, on 600 generated pods (export-cases.ts) and 120 UPDATEs of stored ones, then 500
 * generated tenancy pods, 120 tenancy UPDATEs and 150 of the same as DaemonSet and as Deployment pod
 * templates: for everything export claims to cover
 * (DaemonSetTolerations, DefaultTolerationSeconds, PodTolerationRestriction's memory-pressure
 * toleration, with the default flags, and DedicatedNodes under the shipped namespace-label
 * TenancyPolicy), the pod each API server returns for a dry-run request (its spec, after
 * admission, defaulting and validation; a workload's pod template) or its refusal (code and
 * message) must be the same.
 *
 * - webhook: tolerator serving with the default flags and `--policies` holding the label policy,
 *   its shipped webhooks registered;
 * - policies: no webhook, the manifests `tolerator export` writes for the same settings and the
 *   binaries' minor.
 * The in-tree DefaultTolerationSeconds is off on both, so each side's own copy is what is compared.
 *
 * A tenancy refusal is compared as "refused by tenancy", not by its text: the webhook's and the
 * policy's messages are their own. Two differences are expected and held, each by its name:
 * - the stricter nodeName rule (docs/without-a-webhook.md): a pod the webhook stores with a
 *   spec.nodeName, which the policy refuses for naming a node at all;
 * - which refusal speaks first: the mutating webhook refuses a tenant's contradicting node choice
 *   before the API server validates the pod, a mutating policy cannot refuse, so the policy side
 *   answers with the validation error (422) when the pod is invalid too. Refused either way.
 *
 * Then both at once (the exported policies installed beside the webhooks, the way a cluster
 * moves from one to the other): the first 200 cases of each kind must come out exactly as from
 * the webhook alone, nothing added twice.
 *
 * Run: TOLERATOR_CONTROL_PLANE_BIN=… node --import tsx --test test/differential/export.differential.ts
 * (or `npm run test:differential`, which runs every *.differential.ts).
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type * as k8s from '@kubernetes/client-node';
import { loadPolicies } from '../../src/server/tenancy-policies.js';
import { REPO_ROOT, skipWithoutControlPlane } from '../cluster/binaries.js';
import { startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import {
  controlPlaneMinor,
  defaultExportSettings,
  exportedDocuments,
  installExportedPolicies,
  mutatingPolicyPlaneOptions,
} from '../cluster/exported-policies.js';
import {
  apiError,
  asKubernetesObject,
  clientsFor,
  createObject,
  plain,
  startToleratorOnCluster,
  type Manifest,
  type ToleratorOnCluster,
} from '../cluster/tolerator-on-cluster.js';
import {
  exportCases,
  podOf,
  tenancyCases,
  tenancyNamespaces,
  tenancyPodOf,
  type ExportCase,
  type GeneratedToleration,
  type TenancyCase,
} from './export-cases.js';

const skip = skipWithoutControlPlane();

const CREATES = 600;
const UPDATES = 120;
const BOTH_AT_ONCE = 200;
const TENANCY_CREATES = 500;
const TENANCY_UPDATES = 120;
/** Tenancy cases sent again as the pod template of a DaemonSet, and of a Deployment. */
const TEMPLATES = 150;
/** The seed of the cases: fixed, so that a difference found once is found again. */
const SEED = 22;
/** Requests in flight to each API server at once: enough to keep two cores busy, few enough not to time out under load. */
const PARALLEL = 6;
const NAMESPACE = 'cases';

/** What an API server answered: the pod's spec after admission, or the refusal. */
type Answer = { readonly spec: unknown } | { readonly code: number; readonly message: string };

async function answerOf(request: Promise<unknown>): Promise<Answer> {
  try {
    const pod = plain(await request) as { spec?: unknown };
    return { spec: pod.spec };
  } catch (error) {
    const { code, status } = apiError(error);
    return { code, message: canonicalMessage(status.message ?? '') };
  }
}

/**
 * A 422's field errors in a fixed order. The API server validates a resource list by ranging over
 * a Go map, so one pod's errors about pod-level resources come in a different order from one
 * request to the next (seen on v1.35.8: the same pod, the same server, two orders); the order says
 * nothing about admission.
 */
function canonicalMessage(message: string): string {
  const list = /^(.* is invalid: )\[(.*)\]$/s.exec(message);
  if (list === null) return message;
  const errors = (list[2] ?? '').split(/, (?=(?:spec|metadata|status)\.)/).sort();
  return `${list[1]}[${errors.join(', ')}]`;
}

async function inBatches<T, R>(items: readonly T[], work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let start = 0; start < items.length; start += PARALLEL) {
    results.push(...(await Promise.all(items.slice(start, start + PARALLEL).map((item, offset) => work(item, start + offset)))));
  }
  return results;
}

function difference(index: number, item: unknown, left: Answer, right: Answer): string | undefined {
  try {
    // The tenancy policy is installed on both sides: a pod tolerating every group's taint is
    // refused by it, each side in its own words.
    assert.deepEqual(tenancyAnswer(left), tenancyAnswer(right));
    return undefined;
  } catch {
    return `case ${index}: ${JSON.stringify(item)}\n  webhook:  ${JSON.stringify(left)}\n  policies: ${JSON.stringify(right)}`;
  }
}

async function createNamespaces(objects: k8s.KubernetesObjectApi): Promise<void> {
  for (const [name, labels] of Object.entries(tenancyNamespaces)) {
    await createObject(objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } });
  }
}

/** Waits until a pod in the gpu namespace gets the group toleration: the namespace's labels are seen. */
async function waitForTenancy(objects: k8s.KubernetesObjectApi): Promise<void> {
  const probe: Manifest = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'tenancy-probe', namespace: 'gpu' },
    spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
  };
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const answer = plain(await createObject(objects, probe, 'All')) as { spec?: { tolerations?: { key?: string }[] } };
    if ((answer.spec?.tolerations ?? []).some((toleration) => toleration.key === 'dedicated')) return;
    await sleep(250);
  }
  throw new Error('the gpu namespace did not give its pods the group toleration within 60 s');
}

/** The label policy alone: export translates one policy, and this is its shape. */
const POLICY = 'dedicated-by-namespace-label';

/** What is compared for a tenancy case: a tenancy refusal as a class, the rest as answered. */
type TenancyAnswer = Answer | { readonly refused: 'tenancy'; readonly by: 'mutating webhook' | 'validating' };

function tenancyAnswer(answer: Answer): TenancyAnswer {
  if (!('code' in answer) || answer.code !== 403) return answer;
  // tolerator.dev-tenancy (pods) or tolerator.dev-tenancy-<site> (templates).
  if (/ValidatingAdmissionPolicy 'tolerator\.dev-tenancy(-[a-z]+)?'/.test(answer.message)) return { refused: 'tenancy', by: 'validating' };
  if (answer.message.includes(`policy "${POLICY}"`)) {
    return {
      refused: 'tenancy',
      by: answer.message.includes('admission webhook "mutate.tolerator.dev"') ? 'mutating webhook' : 'validating',
    };
  }
  return answer;
}

/** The two expected differences (see the file comment), by name, or undefined. */
function expectedDifference(item: TenancyCase, webhook: TenancyAnswer, policies: TenancyAnswer): string | undefined {
  if ('spec' in webhook && 'refused' in policies && item.nodeName !== undefined) return 'the stricter nodeName rule';
  if ('refused' in webhook && webhook.by === 'mutating webhook' && 'code' in policies && policies.code === 422) {
    return 'which refusal speaks first';
  }
  return undefined;
}

function sameTenancy(webhook: TenancyAnswer, policies: TenancyAnswer): boolean {
  if ('refused' in webhook && 'refused' in policies) return true;
  try {
    assert.deepEqual(webhook, policies);
    return true;
  } catch {
    return false;
  }
}

describe('tolerator export: the exported policies against the webhook, on generated pods', { skip }, () => {
  let dir: string;
  let webhook: ToleratorOnCluster;
  let policyPlane: ControlPlane;
  let policies: k8s.KubernetesObjectApi;
  const version = skip === false ? controlPlaneMinor() : '1.35';
  const cases = exportCases(CREATES, SEED);
  const tenancy = tenancyCases(TENANCY_CREATES, SEED);
  let documents: Manifest[] = [];
  const fromWebhook: Answer[] = [];
  const tenancyFromWebhook: TenancyAnswer[] = [];
  /** Per tenancy case: stored by both sides (the UPDATEs start from those). */
  const storedOnBoth: boolean[] = [];
  /** The expected differences seen, by name: reported, and each held by the test that names it. */
  const expected = new Map<string, number>();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-export-diff-'));
    const policyDir = join(dir, 'tenancy-policies');
    mkdirSync(policyDir);
    copyFileSync(join(REPO_ROOT, 'policies', `${POLICY}.yaml`), join(policyDir, `${POLICY}.yaml`));
    documents = exportedDocuments({ ...defaultExportSettings(version), tenancyPolicies: loadPolicies(policyDir).policies });
    const plane = { disableAdmissionPlugins: ['DefaultTolerationSeconds'], ...mutatingPolicyPlaneOptions(version) };
    webhook = await startToleratorOnCluster({ dir: join(dir, 'webhook'), plane, serveArgs: ['--policies', policyDir] });
    policyPlane = await startControlPlane({ dir: join(dir, 'policies'), temporaryDir: true, ...plane });
    policies = clientsFor(policyPlane.kubeconfig).objects;
    await createNamespaces(webhook.objects);
    await createNamespaces(policies);
    await installExportedPolicies(policyPlane.kubeconfig, documents, NAMESPACE);
    await waitForTenancy(webhook.objects);
    await waitForTenancy(policies);
  });

  after(async () => {
    await (webhook as ToleratorOnCluster | undefined)?.stop();
    await (policyPlane as ControlPlane | undefined)?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`gives the same pod or the same refusal on ${CREATES} generated CREATEs`, async () => {
    const differences: string[] = [];
    const answers = await inBatches(cases, async (item, index) => {
      const pod = podOf(item, `case-${index}`, NAMESPACE);
      return Promise.all([answerOf(createObject(webhook.objects, pod, 'All')), answerOf(createObject(policies, pod, 'All'))]);
    });
    answers.forEach(([left, right], index) => {
      fromWebhook.push(left);
      const found = difference(index, cases[index], left, right);
      if (found !== undefined) differences.push(found);
    });
    const refused = answers.filter(([left]) => 'code' in left).length;
    // Both outcomes must be drawn often enough to say something: at least a tenth of each.
    assert.ok(refused >= CREATES / 10 && refused <= CREATES - CREATES / 10, `${refused} of ${CREATES} refused`);
    assert.deepEqual(differences.slice(0, 10), [], `${differences.length} of ${CREATES} cases differ`);
  });

  it(`gives the same pod or the same refusal on ${UPDATES} UPDATEs that add a toleration`, async () => {
    // Pods the API server stores on both sides, then sent back with one toleration more (the only
    // change the API server lets an UPDATE make to the list).
    const stored = cases
      .map((item, index) => ({ item, index }))
      .filter(({ index }) => 'spec' in (fromWebhook[index] ?? { code: 0 }))
      .slice(0, UPDATES);
    assert.equal(stored.length, UPDATES);
    const extras: GeneratedToleration[] = [
      { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
      { operator: 'Exists' },
      { key: 'example.com/a', operator: 'Equal', value: 'a', effect: 'NoSchedule' },
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 60 },
    ];
    const differences: string[] = [];
    const results = await inBatches(stored, async ({ item, index }) => {
      const name = `update-${index}`;
      const send = async (objects: k8s.KubernetesObjectApi): Promise<Answer> => {
        const created = plain(await createObject(objects, podOf(item, name, NAMESPACE))) as Manifest & {
          spec: { tolerations?: unknown[] };
        };
        const changed = {
          ...created,
          spec: { ...created.spec, tolerations: [...(created.spec.tolerations ?? []), extras[index % extras.length]] },
        };
        return answerOf(objects.replace(asKubernetesObject(changed as Manifest), undefined, 'All'));
      };
      return { item, index, answers: await Promise.all([send(webhook.objects), send(policies)]) };
    });
    for (const { item, index, answers } of results) {
      const found = difference(index, item satisfies ExportCase, answers[0], answers[1]);
      if (found !== undefined) differences.push(found);
    }
    assert.deepEqual(differences.slice(0, 10), [], `${differences.length} of ${UPDATES} updates differ`);
  });

  it(`gives the same pod or a refusal on both sides on ${TENANCY_CREATES} generated tenancy CREATEs`, async () => {
    const differences: string[] = [];
    const answers = await inBatches(tenancy, async (item, index) => {
      const pod = tenancyPodOf(item, `tenancy-${index}`);
      return Promise.all([answerOf(createObject(webhook.objects, pod, 'All')), answerOf(createObject(policies, pod, 'All'))]);
    });
    answers.forEach(([rawLeft, rawRight], index) => {
      const left = tenancyAnswer(rawLeft);
      const right = tenancyAnswer(rawRight);
      tenancyFromWebhook.push(left);
      storedOnBoth.push('spec' in left && 'spec' in right);
      const item = tenancy[index] as TenancyCase;
      if (sameTenancy(left, right)) return;
      const name = expectedDifference(item, left, right);
      if (name !== undefined) {
        const seen = expected.get(name) ?? 0;
        expected.set(name, seen + 1);
        // The first of each kind is shown, for a reader to judge that it is what its name says.
        if (seen === 0)
          console.log(
            `${name}: case ${index}: ${JSON.stringify(item)}\n  webhook:  ${JSON.stringify(rawLeft)}\n  policies: ${JSON.stringify(rawRight)}`,
          );
      } else
        differences.push(
          `case ${index}: ${JSON.stringify(item)}\n  webhook:  ${JSON.stringify(left)}\n  policies: ${JSON.stringify(right)}`,
        );
    });
    const stored = answers.filter(([left]) => 'spec' in left).length;
    const refusedByTenancy = tenancyFromWebhook.filter((answer) => 'refused' in answer).length;
    // Each outcome drawn often enough to say something: stored and refused by tenancy, each a tenth.
    assert.ok(stored >= TENANCY_CREATES / 10, `${stored} of ${TENANCY_CREATES} stored`);
    assert.ok(refusedByTenancy >= TENANCY_CREATES / 10, `${refusedByTenancy} of ${TENANCY_CREATES} refused by tenancy`);
    assert.deepEqual(differences.slice(0, 10), [], `${differences.length} of ${TENANCY_CREATES} tenancy cases differ`);
    console.log(
      `tenancy CREATEs: ${stored} stored, ${refusedByTenancy} refused by tenancy; expected differences: ${JSON.stringify([...expected])}`,
    );
  });

  it(`gives the same pod or a refusal on both sides on ${TENANCY_UPDATES} tenancy UPDATEs that add a toleration`, async () => {
    const stored = tenancy
      .map((item, index) => ({ item, index }))
      .filter(({ index }) => storedOnBoth[index] === true)
      .slice(0, TENANCY_UPDATES);
    assert.equal(stored.length, TENANCY_UPDATES);
    // Another group's toleration, every group's, the own group's, a numeric range, and one unrelated.
    const extras: GeneratedToleration[] = [
      { key: 'dedicated', operator: 'Equal', value: 'pci', effect: 'NoSchedule' },
      { key: 'dedicated', operator: 'Exists' },
      { key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' },
      { key: 'dedicated', operator: 'Lt', value: '3000', effect: 'NoSchedule' },
      { key: 'example.com/a', operator: 'Exists' },
    ];
    const differences: string[] = [];
    let refused = 0;
    const results = await inBatches(stored, async ({ item, index }) => {
      const name = `tenancy-update-${index}`;
      const send = async (objects: k8s.KubernetesObjectApi): Promise<TenancyAnswer> => {
        const created = plain(await createObject(objects, tenancyPodOf(item, name))) as Manifest & { spec: { tolerations?: unknown[] } };
        const changed = {
          ...created,
          spec: { ...created.spec, tolerations: [...(created.spec.tolerations ?? []), extras[index % extras.length]] },
        };
        return tenancyAnswer(await answerOf(objects.replace(asKubernetesObject(changed as Manifest), undefined, 'All')));
      };
      return { item, index, answers: await Promise.all([send(webhook.objects), send(policies)]) };
    });
    for (const { item, index, answers } of results) {
      if ('refused' in answers[0]) refused++;
      if (!sameTenancy(answers[0], answers[1])) {
        differences.push(
          `case ${index}: ${JSON.stringify(item)}\n  webhook:  ${JSON.stringify(answers[0])}\n  policies: ${JSON.stringify(answers[1])}`,
        );
      }
    }
    assert.ok(refused >= TENANCY_UPDATES / 10, `${refused} of ${TENANCY_UPDATES} updates refused by tenancy`);
    assert.deepEqual(differences.slice(0, 10), [], `${differences.length} of ${TENANCY_UPDATES} tenancy updates differ`);
  });

  for (const kind of ['DaemonSet', 'Deployment'] as const) {
    it(`gives the same pod template or a refusal on both sides on ${TEMPLATES} generated ${kind}s`, async () => {
      const workload = (item: TenancyCase, name: string): Manifest => {
        const template = tenancyPodOf(item, name) as Manifest & { spec: unknown };
        return {
          apiVersion: 'apps/v1',
          kind,
          metadata: { name, namespace: item.namespace },
          spec: { selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: template.spec } },
        };
      };
      const templateOf = async (request: Promise<unknown>): Promise<TenancyAnswer> => {
        const answer = await answerOf(request);
        return tenancyAnswer('spec' in answer ? { spec: (answer.spec as { template?: { spec?: unknown } }).template?.spec } : answer);
      };
      const differences: string[] = [];
      const seen = new Map<string, number>();
      let stored = 0;
      const answers = await inBatches(tenancy.slice(0, TEMPLATES), (item, index) => {
        const object = workload(item, `${kind.toLowerCase()}-${index}`);
        return Promise.all([templateOf(createObject(webhook.objects, object, 'All')), templateOf(createObject(policies, object, 'All'))]);
      });
      answers.forEach(([left, right], index) => {
        const item = tenancy[index] as TenancyCase;
        if ('spec' in left) stored++;
        if (sameTenancy(left, right)) return;
        const name = expectedDifference(item, left, right);
        if (name !== undefined) seen.set(name, (seen.get(name) ?? 0) + 1);
        else
          differences.push(
            `case ${index}: ${JSON.stringify(item)}\n  webhook:  ${JSON.stringify(left)}\n  policies: ${JSON.stringify(right)}`,
          );
      });
      assert.ok(stored >= TEMPLATES / 10 && stored <= TEMPLATES - TEMPLATES / 10, `${stored} of ${TEMPLATES} ${kind}s stored`);
      assert.deepEqual(differences.slice(0, 10), [], `${differences.length} of ${TEMPLATES} ${kind}s differ`);
      console.log(`${kind}s: ${stored} stored; expected differences: ${JSON.stringify([...seen])}`);
    });
  }

  it('the stricter nodeName rule: a pod naming an existing node of no group is stored by the webhook and refused by the policy, but for an infrastructure namespace', async () => {
    const node: Manifest = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'plain-node' } };
    await createObject(webhook.objects, node);
    await createObject(policies, node);
    // The webhook reads Nodes from its cluster state: wait until it knows this one (a pod naming it in 'cases' is stored).
    const pinned = (namespace: string, name: string): Manifest =>
      tenancyPodOf(
        { namespace, tolerations: undefined, nodeSelector: undefined, terms: undefined, nodeName: 'plain-node', burstable: false },
        name,
      );
    const deadline = Date.now() + 30_000;
    let fromWebhookSide = tenancyAnswer(await answerOf(createObject(webhook.objects, pinned('cases', 'pinned'), 'All')));
    while ('refused' in fromWebhookSide && Date.now() < deadline) {
      await sleep(250);
      fromWebhookSide = tenancyAnswer(await answerOf(createObject(webhook.objects, pinned('cases', 'pinned'), 'All')));
    }
    assert.ok('spec' in fromWebhookSide, JSON.stringify(fromWebhookSide));
    const fromPolicy = await answerOf(createObject(policies, pinned('cases', 'pinned'), 'All'));
    assert.ok('code' in fromPolicy && fromPolicy.code === 403, JSON.stringify(fromPolicy));
    assert.match(fromPolicy.message, /spec\.nodeName is set: without a webhook the named node's dedicated-node group cannot be read/);
    // An infrastructure namespace's pods (not tenants) may name any node on both sides.
    const infra = await Promise.all([
      answerOf(createObject(webhook.objects, pinned('infra', 'pinned'), 'All')),
      answerOf(createObject(policies, pinned('infra', 'pinned'), 'All')),
    ]);
    assert.ok('spec' in infra[0] && 'spec' in infra[1], JSON.stringify(infra));
    assert.deepEqual(infra[0], infra[1]);
    // A tenant's pod naming a node outside its group is refused on both sides.
    const tenant = await Promise.all([
      answerOf(createObject(webhook.objects, pinned('gpu', 'pinned'), 'All')),
      answerOf(createObject(policies, pinned('gpu', 'pinned'), 'All')),
    ]);
    assert.deepEqual(
      tenant.map(tenancyAnswer).map((answer) => 'refused' in answer),
      [true, true],
      JSON.stringify(tenant),
    );
  });

  it(`adds nothing twice with the webhook and the policies at once (${BOTH_AT_ONCE} cases)`, async () => {
    await installExportedPolicies(webhook.plane.kubeconfig, documents, NAMESPACE);
    const differences: string[] = [];
    const answers = await inBatches(cases.slice(0, BOTH_AT_ONCE), (item, index) =>
      answerOf(createObject(webhook.objects, podOf(item, `both-${index}`, NAMESPACE), 'All')),
    );
    answers.forEach((answer, index) => {
      const alone = fromWebhook[index];
      assert.ok(alone !== undefined);
      // The pod's name is in a refusal's message: the webhook-alone answer named case-N.
      const renamed = 'message' in alone ? { ...alone, message: alone.message.replaceAll(`case-${index}`, `both-${index}`) } : alone;
      const found = difference(index, cases[index], renamed, answer);
      if (found !== undefined) differences.push(found);
    });
    assert.deepEqual(differences.slice(0, 10), [], `${differences.length} of ${BOTH_AT_ONCE} cases differ with both installed`);

    // The tenancy pair is not added twice either: the same tenancy cases, as from the webhook alone.
    const tenancyDifferences: string[] = [];
    const tenancyAnswers = await inBatches(tenancy.slice(0, BOTH_AT_ONCE), (item, index) =>
      answerOf(createObject(webhook.objects, tenancyPodOf(item, `tenancy-${index}`), 'All')),
    );
    tenancyAnswers.forEach((answer, index) => {
      const alone = tenancyFromWebhook[index];
      assert.ok(alone !== undefined);
      const both = tenancyAnswer(answer);
      // With both installed a pod the webhook stores may meet the policy's stricter nodeName rule.
      const nodeNameRule = 'spec' in alone && 'refused' in both && tenancy[index]?.nodeName !== undefined;
      if (!nodeNameRule && !sameTenancy(alone, both)) {
        tenancyDifferences.push(
          `case ${index}: ${JSON.stringify(tenancy[index])}\n  webhook alone: ${JSON.stringify(alone)}\n  both: ${JSON.stringify(both)}`,
        );
      }
    });
    assert.deepEqual(
      tenancyDifferences.slice(0, 10),
      [],
      `${tenancyDifferences.length} of ${BOTH_AT_ONCE} tenancy cases differ with both installed`,
    );
  });
});
