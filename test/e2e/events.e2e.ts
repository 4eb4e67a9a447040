/**
 * `serve --emit-events` on a real kube-apiserver and kube-controller-manager, installed as
 * deploy/overlays/events installs it (its RBAC, and the pod webhooks declared sideEffects
 * NoneOnDryRun): the Events the API server stores for a denied Deployment, for the pod a
 * ReplicaSet's controller could not create (where the user would otherwise see only the
 * controller's FailedCreate), for an audit finding, none for a dry run, and none with the option off.
 *
 * What the real API server showed: a Deployment denied by the validating webhook is refused at the
 * client, never stored, so no controller ever sees it; the controller's FailedCreate case is the
 * object a controller creates from a template admitted earlier (here: while its namespace opted out
 * of review), a Pod of the ReplicaSet, whose Event therefore regards the ReplicaSet.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT, skipWithoutControlPlane } from '../cluster/binaries.js';
import { pollUntil } from '../cluster/poll.js';
import {
  createObject,
  plain,
  refusal,
  startToleratorOnCluster,
  type Manifest,
  type ToleratorOnCluster,
} from '../cluster/tolerator-on-cluster.js';

const skip = skipWithoutControlPlane();

const container = { name: 'app', image: 'registry.example/app:1' };
const pciToleration = { key: 'dedicated', operator: 'Equal', value: 'pci', effect: 'NoSchedule' };

function deployment(name: string, namespace: string, replicas: number): Manifest {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [container], tolerations: [pciToleration] } },
    },
  };
}

interface StoredEvent {
  metadata: { name: string; namespace: string };
  regarding?: { apiVersion?: string; kind?: string; namespace?: string; name?: string; uid?: string };
  reason?: string;
  type?: string;
  action?: string;
  note?: string;
  reportingController?: string;
  reportingInstance?: string;
  series?: { count: number };
  deprecatedSource?: { component?: string };
}

const webhookPrefix = 'admission webhook "validate.tolerator.dev" denied the request: ';

describe('Kubernetes Events of serve --emit-events, on the API server', { skip }, () => {
  let cluster: ToleratorOnCluster;
  let dir: string;

  const events = async (namespace: string): Promise<StoredEvent[]> =>
    (plain(await cluster.objects.list('events.k8s.io/v1', 'Event', namespace)) as { items: StoredEvent[] }).items;
  const eventsAbout = async (namespace: string, kind: string, name: string): Promise<StoredEvent[]> =>
    (await events(namespace)).filter((event) => event.regarding?.kind === kind && event.regarding.name === name);
  const tolerators = (list: readonly StoredEvent[]): StoredEvent[] =>
    list.filter((e) => e.reportingController?.startsWith('tolerator.dev/'));
  const merge = async (object: Record<string, unknown>): Promise<void> => {
    await cluster.objects.patch(object, undefined, undefined, undefined, undefined, k8s.PatchStrategy.MergePatch);
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-events-'));
    cluster = await startToleratorOnCluster({
      dir,
      plane: { controllerManager: true },
      overlay: 'events',
      serveArgs: ['--policies', join(REPO_ROOT, 'policies'), '--emit-events', '--audit-interval', '1s', '--audit-lease='],
    });
    // The audit's list of pods, as deploy/overlays/audit grants it (its ClusterRole and binding).
    const auditRbac = parseAllDocuments(readFileSync(join(REPO_ROOT, 'deploy', 'overlays', 'audit', 'rbac-audit.yaml'), 'utf8'))
      .map((doc) => doc.toJS() as Manifest)
      .filter((object) => object.kind.startsWith('Cluster'));
    for (const object of auditRbac) await createObject(cluster.objects, object);
    for (const [name, labels] of Object.entries({
      ml: { dedicated: 'gpu' },
      late: { dedicated: 'gpu', 'tolerator.dev/ignore': 'true' },
    })) {
      await createObject(cluster.objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } });
    }
  });
  after(async () => {
    await (cluster as ToleratorOnCluster | undefined)?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a denied Deployment: one Event regarding it, Warning PolicyViolation, the denial as its note, reported by tolerator.dev/admission', async () => {
    const answer = await refusal(createObject(cluster.objects, deployment('intruder', 'ml', 1)));
    assert.equal(answer.code, 403);
    assert.ok(answer.status.message?.startsWith(webhookPrefix), answer.status.message);
    const [event, ...more] = await pollUntil('the Event of the denied Deployment', async () => {
      const found = tolerators(await eventsAbout('ml', 'Deployment', 'intruder'));
      return found.length > 0 ? found : undefined;
    });
    assert.equal(more.length, 0);
    assert.ok(event !== undefined);
    const { uid, ...regarding } = event.regarding ?? {};
    assert.deepEqual(regarding, { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'ml', name: 'intruder' });
    // The API server gives the object its uid before the validating webhooks (BeforeCreate), and
    // the review carries it; the object itself was never stored.
    assert.match(uid ?? '', /^[0-9a-f-]{36}$/);
    assert.deepEqual(
      { reason: event.reason, type: event.type, action: event.action, reportingController: event.reportingController },
      { reason: 'PolicyViolation', type: 'Warning', action: 'Denied', reportingController: 'tolerator.dev/admission' },
    );
    assert.equal(event.note, answer.status.message?.slice(webhookPrefix.length));
    assert.match(event.reportingInstance ?? '', /^tolerator-/);
  });

  it('a dry run that is denied writes no Event (the webhook is called for it: sideEffects NoneOnDryRun)', async () => {
    const dry = await refusal(createObject(cluster.objects, deployment('dry-intruder', 'ml', 1), 'All'));
    assert.equal(dry.code, 403, 'the dry run is reviewed and denied');
    // A denial after it, written through the same queue: once its Event is stored, the dry run's
    // would have been too.
    await refusal(createObject(cluster.objects, deployment('after-dry', 'ml', 1)));
    await pollUntil('the Event of the denial after the dry run', async () =>
      tolerators(await eventsAbout('ml', 'Deployment', 'after-dry')).length > 0 ? true : undefined,
    );
    assert.deepEqual(await eventsAbout('ml', 'Deployment', 'dry-intruder'), []);
  });

  it("a pod its ReplicaSet cannot create (the controller's FailedCreate): an Event regarding the ReplicaSet; the audit reports the pod admitted before", async () => {
    // Admitted while `late` opted out of review: one pod, tolerating another group's taint.
    await createObject(cluster.objects, deployment('legacy', 'late', 1));
    const replicaSet = await pollUntil('the ReplicaSet of legacy and its pod', async () => {
      const sets = (plain(await cluster.objects.list('apps/v1', 'ReplicaSet', 'late')) as { items: Manifest[] }).items;
      const pods = (plain(await cluster.objects.list('v1', 'Pod', 'late')) as { items: Manifest[] }).items;
      return sets.length === 1 && pods.length === 1 ? sets[0] : undefined;
    });
    // The namespace opts in; scaling leaves the template alone (an UPDATE tolerator lets through).
    await merge({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'late', labels: { 'tolerator.dev/ignore': null } } });
    await sleep(1000); // the API server's and tolerator's namespace caches
    await merge({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'legacy', namespace: 'late' }, spec: { replicas: 2 } });

    const rsName = String(replicaSet.metadata.name);
    const ours = await pollUntil('the Event regarding the ReplicaSet', async () => {
      const found = tolerators(await eventsAbout('late', 'ReplicaSet', rsName));
      return found.length > 0 ? found : undefined;
    });
    assert.equal(ours.length, 1, 'the controller retries: one Event, its repeats a series');
    const event = ours[0];
    assert.deepEqual(event?.regarding, {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      namespace: 'late',
      name: rsName,
      uid: replicaSet.metadata.uid,
    });
    assert.equal(event.reason, 'PolicyViolation');
    assert.equal(event.type, 'Warning');
    assert.equal(event.reportingController, 'tolerator.dev/admission');
    assert.match(event.note ?? '', /^a Pod created by this ReplicaSet was denied: .*tolerates the dedicated taint of group "pci"/);
    // What the user saw before: the controller's own FailedCreate on the same ReplicaSet.
    const controllers = (await eventsAbout('late', 'ReplicaSet', rsName)).filter((e) => e.reason === 'FailedCreate');
    assert.ok(controllers.length > 0, 'the replicaset-controller reports FailedCreate too');

    // The audit (every second) finds the pod admitted before the namespace opted in: one Event, however many runs.
    const [pod] = (plain(await cluster.objects.list('v1', 'Pod', 'late')) as { items: Manifest[] }).items;
    const podName = String(pod?.metadata.name);
    const audited = await pollUntil('the audit Event regarding the pod', async () => {
      const found = tolerators(await eventsAbout('late', 'Pod', podName));
      return found.length > 0 ? found : undefined;
    });
    await sleep(3000); // three more audit runs
    // One Event per rule the pod breaks, each once: no series, however many runs found it again.
    const findings = tolerators(await eventsAbout('late', 'Pod', podName));
    assert.deepEqual(
      findings.map((e) => [e.reportingController, e.reason, e.series]),
      findings.map(() => ['tolerator.dev/audit', 'PolicyViolation', undefined]),
    );
    const rules = findings.map((e) => e.action);
    assert.ok(rules.includes('foreign-toleration'), rules.join());
    assert.equal(new Set(rules).size, rules.length, `one Event per rule: ${rules.join()}`);
    for (const finding of findings) assert.ok(finding.note?.startsWith(`${finding.action}: `), finding.note);
    assert.deepEqual(audited[0]?.regarding, { apiVersion: 'v1', kind: 'Pod', namespace: 'late', name: podName });
  });

  it('with the option off, a denial writes no Event', async () => {
    await cluster.stopTolerator();
    await cluster.startTolerator(['--policies', join(REPO_ROOT, 'policies')]);
    await refusal(createObject(cluster.objects, deployment('quiet', 'ml', 1)));
    assert.deepEqual(await cluster.reviewedSides('quiet', 'CREATE'), ['validate']);
    // Nothing is queued to wait for: give a writer, were there one, far longer than one write takes.
    await sleep(2000);
    assert.deepEqual(await eventsAbout('ml', 'Deployment', 'quiet'), []);
  });
});
