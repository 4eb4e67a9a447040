/**
 * ExtendedResourceToleration, measured: tolerator against kube-apiserver's in-tree plugin on
 * generated cases (extended-resource-cases.ts). Three API servers, each on its own etcd:
 *
 * - reference: the in-tree plugin (`--enable-admission-plugins ExtendedResourceToleration`),
 *   with PodTolerationRestriction (no configuration: memory-pressure for pods that are not
 *   BestEffort, and the namespace whitelist) and DefaultTolerationSeconds (on by default), the
 *   plugins that run before it and write tolerations too — the order of the stored list is the
 *   admission order;
 * - subject: the three disabled in-tree, tolerator's shipped webhooks, `tolerator serve
 *   --enable-plugins ExtendedResourceToleration`;
 * - both: the three in-tree and tolerator together: tolerator after them must change nothing.
 *
 * Each case is a fresh Namespace (a tolerationsWhitelist now and then) and a Pod created on all
 * three (for real, so that it can be updated), then an UPDATE of the stored pod sent to all three
 * as a `?dryRun=All` replace. The answers compared, for the create and for the update: the stored
 * `spec.tolerations` in order (and `nodeSelector`), or the refusal (code, reason, message,
 * details; a 422's field errors sorted, since Go's map order lists them at random). The only
 * differences allowed are deliberate ones (compare.ts): a refusal behind the webhook's prefix and
 * a whitelist violation as 403 where in-tree it is a plain-error 500 (the admission suite's), and,
 * for the in-tree plugins and tolerator together, the whitelist refused at tolerator's mutating
 * webhook before the API server's validation (`whitelist-refused-before-validation`).
 *
 * Runs: TOLERATOR_ERT_CASES (default 300) cases from the fixed seed, then TOLERATOR_ERT_RANDOM_CASES
 * (default 60) from a seed drawn now and printed; TOLERATOR_DIFFERENTIAL_SEED=N replays seed N in
 * place of the drawn one. A failing case is printed with the answers side by side.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import fc from 'fast-check';
import * as k8s from '@kubernetes/client-node';
import { skipWithoutControlPlane } from '../cluster/binaries.js';
import { startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
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
  compareAnswers,
  deniedByMutate,
  pooled,
  sideBySide,
  withFieldErrorsSorted,
  type Answer,
  type DeliberateDifference,
} from './compare.js';
import {
  extendedResourceCase,
  extendedResourceNamespace,
  extendedResourcePod,
  updatedPod,
  type ExtendedResourceCase,
} from './extended-resource-cases.js';

const skip = skipWithoutControlPlane();

/** The fixed seed: the number. */
const FIXED_SEED = 31;

function countFromEnv(name: string, fallback: number): number {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  if (!/^[0-9]+$/.test(value)) throw new Error(`${name} must be a number, not ${JSON.stringify(value)}`);
  return Number(value);
}

/** 300: every resource name of the pool drawn in every way a few dozen times, in about two minutes on two cores. */
const FIXED_CASES = countFromEnv('TOLERATOR_ERT_CASES', 300);
/** 60 more from a fresh seed each run. */
const RANDOM_CASES = countFromEnv('TOLERATOR_ERT_RANDOM_CASES', 60);
const randomSeed =
  process.env.TOLERATOR_DIFFERENTIAL_SEED === undefined ? Date.now() % 2 ** 31 : countFromEnv('TOLERATOR_DIFFERENTIAL_SEED', 0);

/** As admission.differential.ts: 8 cases in flight keep two cores busy, far from the webhooks' 5 s timeout. */
const CONCURRENCY = 8;

const SUBJECT_ALLOWED: readonly DeliberateDifference[] = ['refused-through-the-webhook', 'plain-error-as-403'];
const BOTH_ALLOWED: readonly DeliberateDifference[] = [
  'plain-error-as-403',
  'whitelist-refused-before-validation',
  'second-merge-drops-a-covered-toleration',
];
/** An UPDATE's answers may differ also as PodTolerationRestriction's UPDATE does. */
const UPDATE_ALLOWED: readonly DeliberateDifference[] = ['update-appends-only'];

/** The pod as stored, or the refusal; `manifest` is the stored object when there is one. */
interface Outcome {
  readonly answer: Answer;
  readonly manifest?: Manifest;
}

async function outcomeOf(write: () => Promise<unknown>): Promise<Outcome> {
  try {
    const manifest = plain(await write()) as Manifest;
    const spec = manifest.spec as { tolerations?: unknown; nodeSelector?: unknown };
    return { answer: { stored: { tolerations: spec.tolerations, nodeSelector: spec.nodeSelector } }, manifest };
  } catch (error) {
    if (!(error instanceof k8s.ApiException)) throw error;
    const { code, status } = apiError(error);
    // Field errors in a fixed order: Go's map order lists them at random (compare.ts).
    return {
      answer: withFieldErrorsSorted({ refused: { code, reason: status.reason, message: status.message, details: status.details } }),
    };
  }
}

interface Answers {
  readonly reference: Answer;
  readonly subject: Answer;
  readonly both: Answer;
}

interface CaseAnswers {
  readonly namespace: string;
  readonly create: Answers;
  /** Absent when the create was refused on every API server. */
  readonly update?: Answers;
}

describe('tolerator against the in-tree ExtendedResourceToleration, on generated cases', { skip }, () => {
  let dir: string;
  let reference: ControlPlane;
  let subject: ToleratorOnCluster;
  let both: ToleratorOnCluster;
  let planes: { name: string; objects: k8s.KubernetesObjectApi }[];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-differential-ert-'));
    const inTree = ['PodTolerationRestriction', 'ExtendedResourceToleration'];
    const serveArgs = ['--enable-plugins', 'ExtendedResourceToleration'];
    [reference, subject] = await Promise.all([
      startControlPlane({ dir: join(dir, 'reference'), temporaryDir: true, enableAdmissionPlugins: inTree }),
      startToleratorOnCluster({
        dir: join(dir, 'subject'),
        plane: { disableAdmissionPlugins: ['DefaultTolerationSeconds', ...inTree] },
        serveArgs,
      }),
    ]);
    both = await startToleratorOnCluster({ dir: join(dir, 'both'), plane: { enableAdmissionPlugins: inTree }, serveArgs });
    planes = [
      { name: 'reference', objects: clientsFor(reference.kubeconfig).objects },
      { name: 'subject', objects: subject.objects },
      { name: 'both', objects: both.objects },
    ];
  });
  after(async () => {
    await Promise.all([
      (reference as ControlPlane | undefined)?.stop(),
      (subject as ToleratorOnCluster | undefined)?.stop(),
      (both as ToleratorOnCluster | undefined)?.stop(),
    ]);
    rmSync(dir, { recursive: true, force: true });
  });

  let namespaces = 0;

  async function answersFor(generated: ExtendedResourceCase): Promise<CaseAnswers> {
    const namespace = `ert-${namespaces++}`;
    await Promise.all(planes.map((plane) => createObject(plane.objects, extendedResourceNamespace(namespace, generated))));
    const pod = extendedResourcePod(namespace, generated);
    const created = await Promise.all(planes.map((plane) => outcomeOf(() => plane.objects.create(asKubernetesObject(pod)))));
    const create = { reference: created[0]!.answer, subject: created[1]!.answer, both: created[2]!.answer };
    if (created.every((outcome) => outcome.manifest === undefined)) return { namespace, create };
    const updated = await Promise.all(
      planes.map((plane, i) => {
        const stored = created[i]!.manifest;
        // A create refused on one API server only is a difference already; its update is not sent.
        if (stored === undefined) return Promise.resolve({ answer: create.reference });
        return outcomeOf(() => plane.objects.replace(asKubernetesObject(updatedPod(stored, generated)), undefined, 'All'));
      }),
    );
    return { namespace, create, update: { reference: updated[0]!.answer, subject: updated[1]!.answer, both: updated[2]!.answer } };
  }

  type Verdict = ReturnType<typeof compareAnswers>;
  function verdicts(answers: CaseAnswers): Record<'subject' | 'both', Verdict> {
    const judge = (which: 'subject' | 'both', allowed: readonly DeliberateDifference[]): Verdict => {
      const create = compareAnswers(answers.create.reference, answers.create[which], allowed);
      // Updates of two different stored pods are not compared: the create's verdict decides.
      if (create !== 'equal' || answers.update === undefined) return create;
      return compareAnswers(answers.update.reference, answers.update[which], [...allowed, ...UPDATE_ALLOWED]);
    };
    return { subject: judge('subject', SUBJECT_ALLOWED), both: judge('both', BOTH_ALLOWED) };
  }

  function report(generated: ExtendedResourceCase, answers: CaseAnswers, which: 'subject' | 'both'): string {
    const label = which === 'subject' ? 'tolerator' : 'in-tree plugins and tolerator';
    return [
      `case: ${JSON.stringify(generated)}`,
      `pod: ${JSON.stringify(extendedResourcePod(answers.namespace, generated))}`,
      'create:',
      sideBySide('reference (in-tree plugins)', answers.create.reference, label, answers.create[which]),
      ...(answers.update === undefined
        ? []
        : ['update:', sideBySide('reference (in-tree plugins)', answers.update.reference, label, answers.update[which])]),
    ].join('\n');
  }

  async function runSeed(t: TestContext, seed: number, runs: number): Promise<void> {
    const cases = fc.sample(extendedResourceCase, { seed, numRuns: runs });
    const started = Date.now();
    const answers = await pooled(cases, CONCURRENCY, (generated) => answersFor(generated));
    const seconds = (Date.now() - started) / 1000;
    const tally = { subject: new Map<string, number>(), both: new Map<string, number>() };
    const outcomes = new Map<string, number>();
    const failures: string[] = [];
    answers.forEach((answer, index) => {
      const verdict = verdicts(answer);
      for (const which of ['subject', 'both'] as const) {
        tally[which].set(verdict[which], (tally[which].get(verdict[which]) ?? 0) + 1);
        if (verdict[which] === 'different' && failures.length < 3)
          failures.push(`${which}, case ${index} of seed ${seed}:\n${report(cases[index]!, answer, which)}`);
      }
      const describe = (a: Answer): string =>
        'stored' in a
          ? `stored with ${Array.isArray(a.stored.tolerations) ? a.stored.tolerations.length : 0} tolerations`
          : `${a.refused.code} ${(a.refused.message ?? '').replace(/^pods? "pod" is (forbidden|invalid): /i, '').slice(0, 40)}`;
      const outcome = `create ${describe(answer.create.reference)}; update ${answer.update === undefined ? '-' : describe(answer.update.reference)}`;
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    });
    t.diagnostic(`seed ${seed}: ${runs} cases in ${seconds.toFixed(1)} s (${CONCURRENCY} at once)`);
    t.diagnostic(`the reference's answers: ${JSON.stringify(Object.fromEntries([...outcomes].sort((a, b) => b[1] - a[1])))}`);
    t.diagnostic(`tolerator against it: ${JSON.stringify(Object.fromEntries(tally.subject))}`);
    t.diagnostic(`in-tree and tolerator against it: ${JSON.stringify(Object.fromEntries(tally.both))}`);
    if (failures.length > 0) assert.fail(failures.join('\n\n'));
  }

  it(`${FIXED_CASES} cases from the fixed seed ${FIXED_SEED}: tolerator answers as the in-tree ExtendedResourceToleration, create and update; after it, tolerator changes nothing`, async (t) => {
    await runSeed(t, FIXED_SEED, FIXED_CASES);
  });

  it(`${RANDOM_CASES} cases from the seed ${randomSeed} (TOLERATOR_DIFFERENTIAL_SEED=${randomSeed} replays it)`, async (t) => {
    await runSeed(t, randomSeed, RANDOM_CASES);
  });

  // The deliberate differences this suite adds, each held by a case that shows it.

  const plainCase: ExtendedResourceCase = {
    containers: [[{ name: 'a.b/c', ask: 'limits', variant: 0 }]],
    initContainers: [],
    initSidecar: false,
    ephemeral: undefined,
    podLevel: undefined,
    tolerations: undefined,
    whitelist: undefined,
    update: { kind: 'relabel', appended: {} },
  };
  const notReady = { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 };
  const unreachable = { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 };
  const memoryPressure = { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' };
  const added = { key: 'a.b/c', operator: 'Exists', effect: 'NoSchedule' };

  it('the equal toleration carrying tolerationSeconds is replaced in place, the pod stored, in-tree and by tolerator; native names (a kubernetes.io domain, the DRA device class name) get nothing', async () => {
    const withSeconds = { ...added, tolerationSeconds: 30 };
    const other = { key: 'example.com/other', operator: 'Exists', effect: 'NoSchedule' };
    const answers = await answersFor({
      ...plainCase,
      containers: [
        [
          { name: 'a.b/c', ask: 'limits', variant: 0 },
          { name: 'example.kubernetes.io/foo', ask: 'limits', variant: 0 },
          { name: 'deviceclass.resource.kubernetes.io/gpu-class', ask: 'limits', variant: 0 },
        ],
      ],
      tolerations: [withSeconds, other, withSeconds],
    });
    const stored = { stored: { tolerations: [added, other, added, notReady, unreachable], nodeSelector: undefined } };
    assert.deepEqual(answers.create.reference, stored);
    assert.deepEqual(answers.create.subject, stored);
    assert.deepEqual(answers.create.both, stored);
  });

  it('deliberate difference whitelist-refused-before-validation: in-tree and tolerator together refuse a toleration the in-tree plugin added outside the whitelist at the mutating webhook, before validation', async () => {
    const answers = await answersFor({ ...plainCase, whitelist: 'gpu-only', ephemeral: [] });
    assert.ok('refused' in answers.create.reference && answers.create.reference.refused.code === 422);
    assert.match(answers.create.reference.refused.message ?? '', /spec\.ephemeralContainers: Forbidden: cannot be set on create/);
    assert.deepEqual(answers.create.subject, answers.create.reference);
    assert.deepEqual(answers.create.both, {
      refused: {
        code: 403,
        reason: 'Forbidden',
        message: `${deniedByMutate}pod tolerations (possibly merged with namespace default tolerations) conflict with its namespace whitelist`,
        details: undefined,
      },
    });
  });

  it('deliberate difference second-merge-drops-a-covered-toleration: in-tree and tolerator together, a pod toleration the added one covers is dropped by the second merge', async () => {
    // Not BestEffort (memory), so that PodTolerationRestriction merges (memory-pressure).
    const own = { key: 'a.b/c', effect: 'NoSchedule' };
    const answers = await answersFor({
      ...plainCase,
      containers: [
        [
          { name: 'a.b/c', ask: 'limits', variant: 0 },
          { name: 'memory', ask: 'both', variant: 0 },
        ],
      ],
      tolerations: [own],
    });
    assert.deepEqual(answers.create.reference, {
      stored: { tolerations: [own, notReady, unreachable, memoryPressure, added], nodeSelector: undefined },
    });
    assert.deepEqual(answers.create.subject, answers.create.reference);
    assert.deepEqual(answers.create.both, {
      stored: { tolerations: [notReady, unreachable, memoryPressure, added], nodeSelector: undefined },
    });
  });

  it('deliberate difference update-appends-only: a relabel of a pod whose toleration the added one covers is refused in-tree (the merge on UPDATE drops it), stored by tolerator', async () => {
    const own = { key: 'a.b/c', effect: 'NoSchedule' };
    const answers = await answersFor({
      ...plainCase,
      containers: [
        [
          { name: 'a.b/c', ask: 'limits', variant: 0 },
          { name: 'memory', ask: 'both', variant: 0 },
        ],
      ],
      tolerations: [own],
    });
    const stored = [own, notReady, unreachable, memoryPressure, added];
    assert.deepEqual(answers.create.reference, { stored: { tolerations: stored, nodeSelector: undefined } });
    assert.deepEqual(answers.create.subject, answers.create.reference);
    const update = answers.update;
    assert.ok(update !== undefined, 'the pod was stored, so it was updated');
    assert.deepEqual(update.reference, {
      refused: {
        code: 422,
        reason: 'Invalid',
        message: 'Pod "pod" is invalid: spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds',
        details: {
          name: 'pod',
          kind: 'Pod',
          causes: [
            {
              reason: 'FieldValueForbidden',
              message: 'Forbidden: existing toleration can not be modified except its tolerationSeconds',
              field: 'spec.tolerations',
            },
          ],
        },
      },
    });
    assert.deepEqual(update.subject, { stored: { tolerations: stored, nodeSelector: undefined } });
  });

  // The UPDATE shapes the random seeds found (stop 34): plainCase not BestEffort (cpu), so that
  // PodTolerationRestriction merges on CREATE and UPDATE alike.
  const notBestEffort = (fields: Partial<ExtendedResourceCase>): ExtendedResourceCase => ({
    ...plainCase,
    containers: [
      [
        { name: 'a.b/c', ask: 'limits', variant: 0 },
        { name: 'cpu', ask: 'both', variant: 0 },
      ],
    ],
    ...fields,
  });
  /** The field error of a toleration at `index` with tolerationSeconds on a NoSchedule effect. */
  const secondsOnNoSchedule = (index: number) => ({
    reason: 'FieldValueInvalid',
    message: 'Invalid value: "NoSchedule": effect must be \'NoExecute\' when `tolerationSeconds` is set',
    field: `spec.tolerations[${index}].effect`,
  });
  /** The update's answers of a case both created alike with `stored`, after asserting that much. */
  async function updateAfterCreate(generated: ExtendedResourceCase, stored: readonly object[]): Promise<Answers> {
    const answers = await answersFor(generated);
    assert.deepEqual(answers.create.reference, { stored: { tolerations: stored, nodeSelector: undefined } });
    assert.deepEqual(answers.create.subject, answers.create.reference);
    assert.ok(answers.update !== undefined, 'the pod was stored, so it was updated');
    return answers.update;
  }
  const refusedFor = (
    index: number,
    causes: readonly object[],
    listed = `spec.tolerations[${index}].effect: ${secondsOnNoSchedule(index).message}`,
  ) => ({
    refused: { code: 422, reason: 'Invalid', message: `Pod "pod" is invalid: ${listed}`, details: { name: 'pod', kind: 'Pod', causes } },
  });

  it('deliberate difference update-appends-only: an appended invalid toleration that covers others is refused both ways, in-tree with `existing toleration can not be modified` beside it and the toleration errors once, tolerator with them twice (seed 994683752, case 56)', async () => {
    // The appended `Exists`/NoSchedule covers memory-pressure and a.b/c; its tolerationSeconds is invalid.
    const update = await updateAfterCreate(
      notBestEffort({ update: { kind: 'append', appended: { operator: 'Exists', effect: 'NoSchedule', tolerationSeconds: 30 } } }),
      [notReady, unreachable, memoryPressure, added],
    );
    const modified = 'Forbidden: existing toleration can not be modified except its tolerationSeconds';
    // In-tree: the merge kept [not-ready, unreachable, appended], then a.b/c appended again.
    assert.deepEqual(
      update.reference,
      refusedFor(
        2,
        [{ reason: 'FieldValueForbidden', message: modified, field: 'spec.tolerations' }, secondsOnNoSchedule(2)],
        `[spec.tolerations: ${modified}, spec.tolerations[2].effect: ${secondsOnNoSchedule(2).message}]`,
      ),
    );
    assert.deepEqual(update.subject, refusedFor(4, [secondsOnNoSchedule(4), secondsOnNoSchedule(4)]));
    assert.equal(compareAnswers(update.reference, update.subject, UPDATE_ALLOWED), 'update-appends-only');
  });

  it('deliberate difference update-appends-only: an appended invalid toleration that an `Exists` of the pod covers is dropped in-tree (the pod stored), refused by the API server for tolerator (seed 996843257, case 2167)', async () => {
    const coverAll = { operator: 'Exists', effect: 'NoSchedule' };
    const appended = { key: 'example.com/other', operator: 'Exists', effect: 'NoSchedule', tolerationSeconds: 30 };
    // memory-pressure and a.b/c are covered by the pod's own `Exists`: the create's merge keeps only it.
    const stored = [coverAll, notReady, unreachable, added];
    const update = await updateAfterCreate(notBestEffort({ tolerations: [coverAll], update: { kind: 'append', appended } }), stored);
    assert.deepEqual(update.reference, { stored: { tolerations: stored, nodeSelector: undefined } });
    assert.deepEqual(update.subject, refusedFor(4, [secondsOnNoSchedule(4), secondsOnNoSchedule(4)]));
    assert.equal(compareAnswers(update.reference, update.subject, UPDATE_ALLOWED), 'update-appends-only');
  });

  it('deliberate difference update-appends-only: an appended NoExecute toleration that an `Exists` with a longer bound covers is dropped in-tree, kept by tolerator (seed 995855335, case 1894)', async () => {
    const everyNoExecute = { operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 60 };
    const appended = { key: 'example.com/other', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 60 };
    // The pod's `Exists` NoExecute tolerates not-ready and unreachable: no default is added.
    const stored = [everyNoExecute, memoryPressure, added];
    const update = await updateAfterCreate(notBestEffort({ tolerations: [everyNoExecute], update: { kind: 'append', appended } }), stored);
    assert.deepEqual(update.reference, { stored: { tolerations: stored, nodeSelector: undefined } });
    assert.deepEqual(update.subject, { stored: { tolerations: [...stored, appended], nodeSelector: undefined } });
    assert.equal(compareAnswers(update.reference, update.subject, UPDATE_ALLOWED), 'update-appends-only');
  });
});
