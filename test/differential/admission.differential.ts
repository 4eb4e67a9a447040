/**
 * The drop-in, measured: tolerator against kube-apiserver's in-tree DefaultTolerationSeconds,
 * PodTolerationRestriction and PodNodeSelector, on generated cases (cases.ts). Three API servers,
 * each on its own etcd, started once for the file:
 *
 * - reference: the three plugins in-tree (`--enable-admission-plugins PodTolerationRestriction,
 *   PodNodeSelector`, DefaultTolerationSeconds being on by default) with
 *   `--admission-control-config-file`, no webhook;
 * - subject: the three disabled, tolerator's shipped webhooks (as the e2e suites register them),
 *   `tolerator serve --admission-config` on the same configuration and `--enable-plugins
 *   PodNodeSelector`;
 * - both: the in-tree plugins and tolerator together, as on a control plane that enables them
 *   and lets nobody configure them (AKS): its answers must be the reference's, exactly, since
 *   tolerator after the in-tree plugins must change nothing (no duplicate, no reordering, no
 *   second merge, no conflict of its own).
 *
 * Each case is one fresh Namespace, annotated at creation, on all three, and one Pod sent to all
 * three as a `?dryRun=All` create. The answers compared are the stored `spec.tolerations` (in
 * order) and `spec.nodeSelector`, or the refusal: HTTP code, reason, message, details (causes).
 * Each configuration may differ from the reference only by the deliberate differences compare.ts
 * names for it (and the tests below hold one by one): the subject by the webhook's wording of a
 * refusal, 403 for upstream's plain-error 500, and a default beyond 2^53 refused; `both` only by
 * the index in the refusal of a pod upstream's own non-idempotent merge leaves invalid.
 *
 * Runs: TOLERATOR_DIFFERENTIAL_CASES (default 500) cases from the fixed seed, then
 * TOLERATOR_DIFFERENTIAL_RANDOM_CASES (default 100) from a seed drawn now and printed;
 * TOLERATOR_DIFFERENTIAL_SEED=N replays seed N in place of the drawn one (docs/testing.md). A
 * failing case is shrunk by fast-check (replaying the same seed at the failing run's path) and
 * printed with the answers side by side.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import fc from 'fast-check';
import type * as k8s from '@kubernetes/client-node';
import { AdmissionConfigError, parseAdmissionConfig } from '../../src/plugins/admission-config.js';
import { skipWithoutControlPlane } from '../cluster/binaries.js';
import { createFakeNodes } from '../cluster/fake-node.js';
import { pollUntil } from '../cluster/poll.js';
import { startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import {
  clientsFor,
  createObject,
  startToleratorOnCluster,
  type Manifest,
  type ToleratorOnCluster,
} from '../cluster/tolerator-on-cluster.js';
import {
  admissionCase,
  CLUSTER_DEFAULT_NODE_SELECTOR,
  CLUSTER_DEFAULT_TOLERATIONS,
  CLUSTER_WHITELIST,
  NAMESPACE_WHITELISTS,
  namespaceManifest,
  podManifest,
  type AdmissionCase,
} from './cases.js';
import { answerOf, compareAnswers, deniedByMutate, pooled, sideBySide, type Answer, type DeliberateDifference } from './compare.js';

const skip = skipWithoutControlPlane();

/** The fixed seed: the number, so a run of the suite is the same run everywhere. */
const FIXED_SEED = 19;

function countFromEnv(name: string, fallback: number): number {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  if (!/^[0-9]+$/.test(value)) throw new Error(`${name} must be a number of cases, not ${JSON.stringify(value)}`);
  return Number(value);
}

/** 500: the floor per configuration per run. */
const FIXED_CASES = countFromEnv('TOLERATOR_DIFFERENTIAL_CASES', 500);
/** 100 more from a fresh seed each run, so CI explores beyond the fixed 500 without doubling the time. */
const RANDOM_CASES = countFromEnv('TOLERATOR_DIFFERENTIAL_RANDOM_CASES', 100);
const randomSeed =
  process.env.TOLERATOR_DIFFERENTIAL_SEED === undefined ? Date.now() % 2 ** 31 : countFromEnv('TOLERATOR_DIFFERENTIAL_SEED', 0);

/**
 * Requests in flight at once, per API server. Each case is a namespace create and a dry-run pod
 * create on each of three API servers; 8 cases at once keep two cores busy without bringing the
 * mutating webhook near its 5 s timeout (a timed-out call is admitted unmutated: failurePolicy Ignore).
 */
const CONCURRENCY = 8;

/**
 * Per-namespace whitelist names written into the configuration: a pool per whitelist, one name per
 * case (namespaces are fresh, and the file names them exactly). A case draws a whitelist one time
 * in five, one of three, so the default 600 cases take about 40 names of each pool; 400 leaves
 * room for shrinking and for runs of 5,000 cases.
 */
const WHITELIST_POOL = 400;
const whitelistedName = (slot: number, index: number): string => `wl${slot}-${index}`;

/** A namespace the reference's configuration gives a whitelist tolerator refuses at start (the deliberate difference). */
const BROKEN_WHITELIST_NAMESPACE = 'broken-whitelist';

function tolerationYaml(list: readonly object[]): string {
  return list.map((toleration) => `        - ${JSON.stringify(toleration)}`).join('\n');
}

function admissionConfiguration(extraWhitelists: Record<string, string>): string {
  const whitelists: string[] = [];
  NAMESPACE_WHITELISTS.forEach((selector, slot) => {
    for (let i = 0; i < WHITELIST_POOL; i++) whitelists.push(`        ${whitelistedName(slot, i)}: ${JSON.stringify(selector)}`);
  });
  for (const [name, selector] of Object.entries(extraWhitelists)) whitelists.push(`        ${name}: ${JSON.stringify(selector)}`);
  return `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
  - name: PodTolerationRestriction
    configuration:
      apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1
      kind: Configuration
      default:
${tolerationYaml(CLUSTER_DEFAULT_TOLERATIONS)}
      whitelist:
${tolerationYaml(CLUSTER_WHITELIST)}
  - name: PodNodeSelector
    configuration:
      podNodeSelectorPluginConfig:
        clusterDefaultNodeSelector: ${JSON.stringify(CLUSTER_DEFAULT_NODE_SELECTOR)}
${whitelists.join('\n')}
`;
}

interface CaseAnswers {
  readonly namespace: string;
  readonly reference: Answer;
  readonly subject: Answer;
  readonly both: Answer;
}

const SUBJECT_ALLOWED: readonly DeliberateDifference[] = [
  'refused-through-the-webhook',
  'plain-error-as-403',
  'default-seconds-beyond-2^53',
];
const BOTH_ALLOWED: readonly DeliberateDifference[] = ['second-merge-moves-an-invalid-toleration'];

describe(
  'tolerator against the in-tree DefaultTolerationSeconds, PodTolerationRestriction and PodNodeSelector, on generated cases',
  { skip },
  () => {
    let dir: string;
    let referenceFile: string;
    let reference: ControlPlane;
    let subject: ToleratorOnCluster;
    let both: ToleratorOnCluster;
    let planes: { name: string; objects: k8s.KubernetesObjectApi }[];

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'tolerator-differential-'));
      referenceFile = join(dir, 'reference-admission.yaml');
      const toleratorFile = join(dir, 'tolerator-admission.yaml');
      // The reference's file has one entry more, a whitelist that does not parse: kube-apiserver
      // starts with it and fails that namespace's pods, tolerator refuses the whole file at start.
      writeFileSync(referenceFile, admissionConfiguration({ [BROKEN_WHITELIST_NAMESPACE]: 'edge' }));
      writeFileSync(toleratorFile, admissionConfiguration({}));
      const serveArgs = ['--admission-config', toleratorFile, '--enable-plugins', 'PodNodeSelector'];
      const inTree = ['PodTolerationRestriction', 'PodNodeSelector'];
      // Two at once, then the third: three kube-apiservers starting together on two busy cores
      // come near the launcher's 90 s readiness deadline.
      [reference, subject] = await Promise.all([
        startControlPlane({
          dir: join(dir, 'reference'),
          temporaryDir: true,
          enableAdmissionPlugins: inTree,
          admissionControlConfigFile: referenceFile,
        }),
        startToleratorOnCluster({
          dir: join(dir, 'subject'),
          plane: { disableAdmissionPlugins: ['DefaultTolerationSeconds', ...inTree] },
          serveArgs,
        }),
      ]);
      both = await startToleratorOnCluster({
        dir: join(dir, 'both'),
        plane: { enableAdmissionPlugins: inTree, admissionControlConfigFile: toleratorFile },
        serveArgs,
      });
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

    let plainNamespaces = 0;
    const whitelisted = NAMESPACE_WHITELISTS.map(() => 0);
    /** A fresh namespace name for a case: one of its whitelist's pool, or a plain one. */
    function namespaceFor(generated: AdmissionCase): string {
      const slot = generated.namespace.whitelist;
      if (slot === undefined) return `ns-${plainNamespaces++}`;
      const index = whitelisted[slot]!++;
      if (index >= WHITELIST_POOL)
        throw new Error(`the pool of namespaces with whitelist ${slot} (${WHITELIST_POOL}) is used up: raise WHITELIST_POOL`);
      return whitelistedName(slot, index);
    }

    /** The namespace created on all three API servers, then the pod sent to all three. */
    async function answersFor(generated: AdmissionCase): Promise<CaseAnswers> {
      const namespace = namespaceFor(generated);
      await Promise.all(planes.map((plane) => createObject(plane.objects, namespaceManifest(namespace, generated.namespace))));
      const pod = podManifest(namespace, generated.pod);
      const [r, s, b] = await Promise.all(planes.map((plane) => answerOf(plane.objects, pod)));
      return { namespace, reference: r!, subject: s!, both: b! };
    }

    function verdicts(answers: CaseAnswers): { subject: ReturnType<typeof compareAnswers>; both: ReturnType<typeof compareAnswers> } {
      return {
        subject: compareAnswers(answers.reference, answers.subject, SUBJECT_ALLOWED),
        both: compareAnswers(answers.reference, answers.both, BOTH_ALLOWED),
      };
    }

    /** fast-check's shrink of the run at `index` of `seed`, printed with the two answers side by side. */
    async function shrunk(seed: number, index: number, which: 'subject' | 'both'): Promise<string> {
      let last: { generated: AdmissionCase; answers: CaseAnswers } | undefined;
      const result = await fc.check(
        fc.asyncProperty(admissionCase, async (generated) => {
          const answers = await answersFor(generated);
          const failed = verdicts(answers)[which] === 'different';
          if (failed) last = { generated, answers };
          return !failed;
        }),
        { seed, path: String(index), numRuns: 1 },
      );
      if (!result.failed || last === undefined) return `run ${index} of seed ${seed} did not fail again when replayed`;
      return [
        `seed ${seed}, run ${index}, shrunk ${result.numShrinks} times; replay: TOLERATOR_DIFFERENTIAL_SEED=${seed} (docs/testing.md)`,
        `case: ${JSON.stringify(last.generated)}`,
        `namespace: ${JSON.stringify(namespaceManifest(last.answers.namespace, last.generated.namespace))}`,
        sideBySide(
          'reference (in-tree plugins)',
          last.answers.reference,
          which === 'subject' ? 'tolerator' : 'in-tree plugins and tolerator',
          last.answers[which],
        ),
      ].join('\n');
    }

    async function runSeed(t: TestContext, seed: number, runs: number): Promise<void> {
      const cases = fc.sample(admissionCase, { seed, numRuns: runs });
      const started = Date.now();
      const answers = await pooled(cases, CONCURRENCY, (generated) => answersFor(generated));
      const seconds = (Date.now() - started) / 1000;
      const tally = { subject: new Map<string, number>(), both: new Map<string, number>() };
      const outcomes = new Map<string, number>();
      const failures: { index: number; which: 'subject' | 'both' }[] = [];
      answers.forEach((answer, index) => {
        const verdict = verdicts(answer);
        for (const which of ['subject', 'both'] as const) {
          tally[which].set(verdict[which], (tally[which].get(verdict[which]) ?? 0) + 1);
          if (verdict[which] === 'different') failures.push({ index, which });
        }
        // The refusal's first words: which rule decided (whitelist, conflict, validation, parse error).
        const outcome =
          'stored' in answer.reference
            ? 'stored'
            : `${answer.reference.refused.code} ${(answer.reference.refused.message ?? '').replace(/^pods? "pod" is (forbidden|invalid): /, '').slice(0, 48)}`;
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
      });
      t.diagnostic(
        `seed ${seed}: ${runs} cases in ${seconds.toFixed(1)} s (${((seconds * 1000) / Math.max(runs, 1)).toFixed(0)} ms a case, ${CONCURRENCY} at once)`,
      );
      t.diagnostic(`the reference's answers: ${JSON.stringify(Object.fromEntries(outcomes))}`);
      t.diagnostic(`tolerator against it: ${JSON.stringify(Object.fromEntries(tally.subject))}`);
      t.diagnostic(`in-tree and tolerator against it: ${JSON.stringify(Object.fromEntries(tally.both))}`);
      if (failures.length === 0) return;
      const reports: string[] = [];
      for (const which of ['subject', 'both'] as const) {
        const first = failures.find((failure) => failure.which === which);
        if (first !== undefined)
          reports.push(
            `${which}: ${failures.filter((f) => f.which === which).length} of ${runs} cases differ; the first, shrunk:\n${await shrunk(seed, first.index, which)}`,
          );
      }
      assert.fail(reports.join('\n\n'));
    }

    it(`${FIXED_CASES} cases from the fixed seed ${FIXED_SEED}: tolerator answers as the in-tree plugins, but for the deliberate differences; tolerator after them changes nothing`, async (t) => {
      await runSeed(t, FIXED_SEED, FIXED_CASES);
    });

    it(`${RANDOM_CASES} cases from the seed ${randomSeed} (TOLERATOR_DIFFERENTIAL_SEED=${randomSeed} replays it)`, async (t) => {
      await runSeed(t, randomSeed, RANDOM_CASES);
    });

    // The deliberate differences, each held by a case that shows it.

    it('deliberate difference refused-through-the-webhook: a nodeSelector conflict is the in-tree 403, behind the webhook prefix', async () => {
      const answers = await answersFor({
        namespace: { defaultTolerations: undefined, tolerationsWhitelist: undefined, nodeSelector: 'env=prod', whitelist: undefined },
        pod: { tolerations: undefined, nodeSelector: { env: 'dev' }, containers: [undefined], initContainers: [], resources: undefined },
      });
      const inTree = {
        code: 403,
        reason: 'Forbidden',
        message: 'pods "pod" is forbidden: pod node label selector conflicts with its namespace node label selector',
        details: { name: 'pod', kind: 'pods' },
      };
      assert.deepEqual(answers.reference, { refused: inTree });
      assert.deepEqual(answers.subject, { refused: { ...inTree, message: `${deniedByMutate}${inTree.message}` } });
      assert.deepEqual(answers.both, answers.reference);
    });

    it('deliberate difference plain-error-as-403: a whitelist violation and a namespace annotation that does not parse are 500 in-tree, 403 from tolerator', async () => {
      const violation = await answersFor({
        namespace: { defaultTolerations: undefined, tolerationsWhitelist: undefined, nodeSelector: undefined, whitelist: undefined },
        pod: {
          tolerations: [{ key: 'example.com/other', operator: 'Exists' }],
          nodeSelector: undefined,
          containers: [undefined],
          initContainers: [],
          resources: undefined,
        },
      });
      const message = 'pod tolerations (possibly merged with namespace default tolerations) conflict with its cluster whitelist';
      assert.deepEqual(violation.reference, { refused: { code: 500, reason: undefined, message, details: undefined } });
      assert.deepEqual(violation.subject, {
        refused: { code: 403, reason: 'Forbidden', message: `${deniedByMutate}${message}`, details: undefined },
      });
      assert.deepEqual(violation.both, violation.reference);

      const broken = await answersFor({
        namespace: { defaultTolerations: undefined, tolerationsWhitelist: undefined, nodeSelector: 'edge', whitelist: undefined },
        pod: { tolerations: undefined, nodeSelector: undefined, containers: [undefined], initContainers: [], resources: undefined },
      });
      assert.deepEqual(broken.reference, {
        refused: { code: 500, reason: undefined, message: 'invalid selector: [edge]', details: undefined },
      });
      assert.deepEqual(broken.subject, {
        refused: {
          code: 403,
          reason: 'Forbidden',
          message: `${deniedByMutate}namespace "${broken.namespace}" annotation "scheduler.alpha.kubernetes.io/node-selector": invalid selector: [edge]`,
          details: undefined,
        },
      });
    });

    it("deliberate difference configuration-refused-at-start: a namespace whitelist that does not parse fails that namespace's pods in-tree, and stops tolerator at start", async () => {
      const namespace: Manifest = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: BROKEN_WHITELIST_NAMESPACE } };
      await createObject(planes[0]!.objects, namespace);
      const answer = await answerOf(
        planes[0]!.objects,
        podManifest(BROKEN_WHITELIST_NAMESPACE, {
          tolerations: undefined,
          nodeSelector: undefined,
          containers: [undefined],
          initContainers: [],
          resources: undefined,
        }),
      );
      assert.deepEqual(answer, { refused: { code: 500, reason: undefined, message: 'invalid selector: [edge]', details: undefined } });
      assert.throws(
        () =>
          parseAdmissionConfig(readFileSync(referenceFile, 'utf8'), referenceFile, { allowComparisonOperators: false, readFile: () => '' }),
        (error: unknown) =>
          error instanceof AdmissionConfigError && error.message.includes(BROKEN_WHITELIST_NAMESPACE) && error.message.includes('edge'),
      );
    });

    it("deliberate difference mirror-pods-left-alone: a kubelet's mirror pod gets the in-tree plugins' changes, and none from tolerator", async () => {
      const annotated = { defaultTolerations: undefined, tolerationsWhitelist: undefined, nodeSelector: 'env=prod', whitelist: undefined };
      const namespace = namespaceFor({ namespace: annotated } as AdmissionCase);
      const answers = await Promise.all(
        planes.map(async (plane, i) => {
          const [node] = await createFakeNodes(plane.objects, { 'node-1': {} });
          await createObject(plane.objects, namespaceManifest(namespace, annotated));
          const kubelet = clientsFor(
            await [reference, subject.plane, both.plane][i]!.kubeconfigFor('system:node:node-1', ['system:nodes']),
          ).objects;
          const mirror: Manifest = {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: {
              name: 'pod',
              namespace,
              annotations: { 'kubernetes.io/config.mirror': 'f3a9c0de5b7e4d21' },
              ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'node-1', uid: node!.metadata.uid, controller: true }],
            },
            spec: {
              nodeName: 'node-1',
              containers: [{ name: 'app', image: 'registry.example/app:1', resources: { requests: { cpu: '10m' } } }],
            },
          };
          // The Node authorizer learns of the new Node through an informer: a 403 of its own until it has.
          return pollUntil(`a dry-run mirror pod on the ${plane.name} API server`, async () => {
            const answer = await answerOf(kubelet, mirror);
            return 'refused' in answer && answer.refused.code === 403 && !(answer.refused.message ?? '').includes('webhook')
              ? undefined
              : answer;
          });
        }),
      );
      const [inTree, tolerator, together] = answers;
      const notReady = { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 };
      const unreachable = { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 };
      const memoryPressure = { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' };
      const spot = { key: 'example.com/spot', operator: 'Exists', effect: 'NoSchedule' };
      assert.deepEqual(inTree, { stored: { tolerations: [notReady, unreachable, spot, memoryPressure], nodeSelector: { env: 'prod' } } });
      assert.deepEqual(tolerator, { stored: { tolerations: undefined, nodeSelector: undefined } });
      assert.deepEqual(together, inTree);
    });

    const plainNamespace = { defaultTolerations: undefined, tolerationsWhitelist: '', nodeSelector: undefined, whitelist: undefined };
    const bestEffortPod = {
      tolerations: undefined,
      nodeSelector: undefined,
      containers: [undefined],
      initContainers: [],
      resources: undefined,
    };

    it('deliberate difference default-seconds-beyond-2^53: a namespace default of tolerationSeconds 2^53 + 1 is stored exactly in-tree, refused by tolerator', async () => {
      const answers = await answersFor({
        namespace: {
          ...plainNamespace,
          defaultTolerations: '[{"key":"k","operator":"Exists","effect":"NoExecute","tolerationSeconds":9007199254740993}]',
        },
        pod: bestEffortPod,
      });
      // Read back through JSON.parse, 9007199254740993 is 9007199254740992 here; the API server's
      // etcd holds ...993 (a rounded default would be stored as ...992, and 2^63 - 1 would fail).
      assert.ok('stored' in answers.reference);
      assert.deepEqual((answers.reference.stored.tolerations as unknown[])[2], {
        key: 'k',
        operator: 'Exists',
        effect: 'NoExecute',
        // 9007199254740993 as JSON.parse reads it: the same double as 2^53.
        tolerationSeconds: 2 ** 53,
      });
      assert.deepEqual(answers.subject, {
        refused: {
          code: 403,
          reason: 'Forbidden',
          message: `${deniedByMutate}namespace "${answers.namespace}" annotation "scheduler.alpha.kubernetes.io/defaultTolerations": toleration 0: tolerationSeconds beyond 9007199254740991 (2^53 - 1) cannot be added exactly`,
          details: undefined,
        },
      });
      // After the in-tree plugin the pod carries it already: tolerator adds nothing and refuses nothing.
      assert.deepEqual(answers.both, answers.reference);
    });

    it('deliberate difference second-merge-moves-an-invalid-toleration: upstream merging its own result again moves a toleration the API server refuses', async () => {
      // Two defaults that each cover the other (tolerationSeconds counts only with NoExecute): the
      // in-tree merge keeps the second; merging [..., second, memory-pressure] with them again
      // drops it for the first's copy and appends it after memory-pressure.
      const pair =
        '[{"key":"example.com/gpu","operator":"Equal","value":"a"},{"key":"example.com/gpu","operator":"Equal","value":"a","tolerationSeconds":0}]';
      const answers = await answersFor({
        namespace: { ...plainNamespace, defaultTolerations: pair },
        pod: { ...bestEffortPod, containers: [{ requests: { cpu: '100m' } }] },
      });
      const cause = (index: number) => ({
        reason: 'FieldValueInvalid',
        message: 'Invalid value: "": effect must be \'NoExecute\' when `tolerationSeconds` is set',
        field: `spec.tolerations[${index}].effect`,
      });
      const invalid = (index: number) => ({
        refused: {
          code: 422,
          reason: 'Invalid',
          message: `Pod "pod" is invalid: spec.tolerations[${index}].effect: Invalid value: "": effect must be 'NoExecute' when \`tolerationSeconds\` is set`,
          details: { name: 'pod', kind: 'Pod', causes: [cause(index)] },
        },
      });
      assert.deepEqual(answers.reference, invalid(2));
      assert.deepEqual(answers.subject, invalid(2));
      assert.deepEqual(answers.both, invalid(3));
    });
  },
);
