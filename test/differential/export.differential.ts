/**
 * `tolerator export`'s policies against tolerator's webhook, on two real kube-apiservers of the
 * same build, on 600 generated pods (export-cases.ts) and 120 UPDATEs of stored ones: for
 * everything export claims to cover (DaemonSetTolerations, DefaultTolerationSeconds,
 * PodTolerationRestriction's memory-pressure toleration, with the default flags), the pod each
 * API server returns for a dry-run request (its spec, after admission, defaulting and validation)
 * or its refusal (code and message) must be the same.
 *
 * - webhook: tolerator serving with the default flags, its shipped webhooks registered;
 * - policies: no webhook, the manifests `tolerator export` writes for the binaries' minor.
 * The in-tree DefaultTolerationSeconds is off on both, so each side's own copy is what is compared.
 *
 * Then both at once (the exported policies installed beside the webhooks, the way a cluster
 * moves from one to the other): the first 200 cases must come out exactly as from the webhook
 * alone, nothing added twice.
 *
 * Run: TOLERATOR_CONTROL_PLANE_BIN=… node --import tsx --test test/differential/export.differential.ts
 * (or `npm run test:differential`, which runs every *.differential.ts).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { skipWithoutControlPlane } from '../cluster/binaries.js';
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
import { exportCases, podOf, type ExportCase, type GeneratedToleration } from './export-cases.js';

const skip = skipWithoutControlPlane();

const CREATES = 600;
const UPDATES = 120;
const BOTH_AT_ONCE = 200;
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
    assert.deepEqual(left, right);
    return undefined;
  } catch {
    return `case ${index}: ${JSON.stringify(item)}\n  webhook:  ${JSON.stringify(left)}\n  policies: ${JSON.stringify(right)}`;
  }
}

async function createNamespace(objects: k8s.KubernetesObjectApi): Promise<void> {
  await createObject(objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
}

describe('tolerator export: the exported policies against the webhook, on generated pods', { skip }, () => {
  let dir: string;
  let webhook: ToleratorOnCluster;
  let policyPlane: ControlPlane;
  let policies: k8s.KubernetesObjectApi;
  const version = skip === false ? controlPlaneMinor() : '1.35';
  const cases = exportCases(CREATES, SEED);
  const documents = exportedDocuments(defaultExportSettings(version));
  const fromWebhook: Answer[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-export-diff-'));
    const plane = { disableAdmissionPlugins: ['DefaultTolerationSeconds'], ...mutatingPolicyPlaneOptions(version) };
    webhook = await startToleratorOnCluster({ dir: join(dir, 'webhook'), plane });
    policyPlane = await startControlPlane({ dir: join(dir, 'policies'), temporaryDir: true, ...plane });
    policies = clientsFor(policyPlane.kubeconfig).objects;
    await createNamespace(webhook.objects);
    await createNamespace(policies);
    await installExportedPolicies(policyPlane.kubeconfig, documents, NAMESPACE);
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
  });
});
