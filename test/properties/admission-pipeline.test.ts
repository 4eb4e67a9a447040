/**
 * Properties of the whole mutating pipeline over generated pods (test/support/pod-arbitraries.ts),
 * for CREATE and UPDATE, under three configurations: defaults, the Gt/Lt gate on, and a cluster
 * state whose namespace sets default tolerations. Each property is checked on a few hundred pods
 * with a fixed seed, so a failure prints a counterexample that reproduces.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import jsonpatch from 'fast-json-patch';
import { emptyClusterFacts, type ClusterFacts } from '../../src/admission/cluster-facts.js';
import type { JsonPatchOperation } from '../../src/admission/json-patch-diff.js';
import { createPipeline, type Pipeline } from '../../src/admission/pipeline.js';
import type { ParsedReview } from '../../src/admission/review.js';
import { MirrorPodAnnotation, TaintKey, type JsonObject, type Toleration } from '../../src/api/types.js';
import { parseFlags } from '../../src/cli/flags.js';
import type { AdmissionSettings } from '../../src/admission/pipeline-settings.js';
import { admissionFlags, readAdmissionSettings } from '../../src/cli/options.js';
import { loadClusterStateFile } from '../../src/kube/cluster-state-file.js';
import { createDaemonSetTolerations, daemonSetPodTolerations, isDaemonSetPod } from '../../src/plugins/daemonset-tolerations.js';
import { createDedicatedNodes } from '../../src/plugins/dedicated-nodes.js';
import type { AdmissionAttributes, MutatingPlugin, PluginContext } from '../../src/plugins/plugin.js';
import { buildPlugins } from '../../src/plugins/registry.js';
import { createTolerationValidation } from '../../src/plugins/toleration-validation.js';
import { matchToleration } from '../../src/tolerations/matching.js';
import { isSuperset } from '../../src/tolerations/merge.js';
import { emptyPolicySet } from '../../src/tenancy/policy-set.js';
import { parsedReview, requestArbitrary, type GeneratedRequest } from '../support/pod-arbitraries.js';
import { silentLogger } from '../support/harness.js';

const numRuns = 300;
const seed = 0x70_1e_7a;

interface Setup {
  readonly name: string;
  readonly namespaces: readonly string[];
  readonly settings: AdmissionSettings;
  readonly facts: ClusterFacts;
  readonly pipeline: Pipeline;
  readonly mutating: readonly MutatingPlugin[];
  readonly [fc.toStringMethod]: () => string;
}

function setup(name: string, args: readonly string[], namespaces: readonly string[]): Setup {
  const settings = readAdmissionSettings(parseFlags(args, admissionFlags));
  const facts = settings.clusterStateFile === undefined ? emptyClusterFacts : loadClusterStateFile(settings.clusterStateFile, silentLogger);
  const plugins = buildPlugins({
    enabled: settings.enabled,
    defaultTolerationSeconds: { notReadySeconds: settings.notReadySeconds, unreachableSeconds: settings.unreachableSeconds },
    podTolerationRestriction: settings.podTolerationRestriction,
    dedicatedNodes: createDedicatedNodes(() => emptyPolicySet),
  });
  const pipeline = createPipeline({ ...plugins, gates: settings.gates, clusterFacts: facts });
  // Counterexamples name the configuration instead of printing its functions.
  return { name, namespaces, settings, facts, pipeline, mutating: plugins.mutating, [fc.toStringMethod]: () => JSON.stringify(name) };
}

const setups: readonly Setup[] = [
  setup('the default flags', [], ['shop']),
  setup('the Gt/Lt gate on', ['--feature-gates=TaintTolerationComparisonOperators=true'], ['shop']),
  setup('a namespace with default tolerations', ['--cluster-state=test/fixtures/config/cluster-state.yaml'], ['shop', 'batch-jobs']),
];

const caseArbitrary = fc.tuple(fc.constantFrom(...setups), requestArbitrary, fc.nat());

function namespaceOf(s: Setup, pick: number): string {
  return s.namespaces[pick % s.namespaces.length] ?? 'shop';
}

async function contextFor(s: Setup, attributes: AdmissionAttributes): Promise<PluginContext> {
  return {
    gates: s.settings.gates,
    namespace: await s.facts.getNamespace(attributes.namespace),
    node: (name) => s.facts.getNode(name),
    nodesKnown: s.facts.knowsNodes,
    nodes: () => s.facts.listNodes(),
  };
}

/** What the mutating plugins produce, run one after another as the pipeline runs them; undefined on a denial. */
async function intendedObject(s: Setup, parsed: ParsedReview): Promise<JsonObject | undefined> {
  const attributes = parsed.attributes;
  let object = attributes.object as JsonObject;
  const annotations = (object.metadata as { annotations?: Record<string, string> } | undefined)?.annotations;
  if (annotations !== undefined && Object.hasOwn(annotations, MirrorPodAnnotation)) {
    return object;
  }
  const context = await contextFor(s, attributes);
  for (const plugin of s.mutating) {
    if (!plugin.handles(attributes)) continue;
    const outcome = plugin.admit(object, attributes, context);
    if (outcome.denial !== undefined) return undefined;
    object = outcome.object;
  }
  return object;
}

interface Mutated {
  readonly allowed: boolean;
  readonly patch: readonly JsonPatchOperation[];
  readonly patched: JsonObject;
}

/** One mutating review, with its patch applied to a copy of the object by fast-json-patch (validating every operation). */
async function mutate(s: Setup, request: GeneratedRequest, namespace: string): Promise<Mutated> {
  const parsed = parsedReview(request, namespace);
  const { decision } = await s.pipeline.review(parsed, ['mutate']);
  const patch = decision.patch ?? [];
  const original = structuredClone(parsed.attributes.object as JsonObject);
  const patched =
    patch.length === 0 ? original : jsonpatch.applyPatch(original, structuredClone(patch) as jsonpatch.Operation[], true, true).newDocument;
  return { allowed: decision.allowed, patch, patched };
}

function tolerationsOf(pod: JsonObject | undefined): Toleration[] {
  return (pod?.spec as { tolerations?: Toleration[] | null } | undefined)?.tolerations ?? [];
}

function withObject(request: GeneratedRequest, object: JsonObject): GeneratedRequest {
  return { ...request, object };
}

const options = { numRuns, seed };

describe('the mutating pipeline, over generated pods', () => {
  it('is idempotent: a second review of the mutated pod yields no patch', async () => {
    await fc.assert(
      fc.asyncProperty(caseArbitrary, async ([s, request, pick]) => {
        const namespace = namespaceOf(s, pick);
        const first = await mutate(s, request, namespace);
        fc.pre(first.allowed);
        const second = await mutate(s, withObject(request, first.patched), namespace);
        assert.equal(second.allowed, true, `${s.name}: the mutated pod is allowed`);
        assert.deepEqual(second.patch, [], `${s.name}: no second patch`);
      }),
      options,
    );
  });

  it('sends patches that fast-json-patch applies cleanly, giving exactly the object the plugins produced', async () => {
    await fc.assert(
      fc.asyncProperty(caseArbitrary, async ([s, request, pick]) => {
        const namespace = namespaceOf(s, pick);
        const { allowed, patched } = await mutate(s, request, namespace);
        fc.pre(allowed);
        const intended = await intendedObject(s, parsedReview(request, namespace));
        assert.ok(intended !== undefined, `${s.name}: the plugins allow what the pipeline allowed`);
        assert.deepEqual(patched, JSON.parse(JSON.stringify(intended)) as JsonObject);
      }),
      options,
    );
  });

  it('never removes, reorders or rewrites an existing toleration on UPDATE: the old list is a prefix of the new one', async () => {
    await fc.assert(
      fc.asyncProperty(caseArbitrary, async ([s, request, pick]) => {
        fc.pre(request.operation === 'UPDATE');
        const { allowed, patched } = await mutate(s, request, namespaceOf(s, pick));
        fc.pre(allowed);
        const before = tolerationsOf(request.object);
        const after = tolerationsOf(patched);
        assert.ok(after.length >= before.length, 'no toleration removed');
        assert.deepEqual(after.slice(0, before.length), before);
      }),
      options,
    );
  });

  it('leaves a pod that passed TolerationValidation still passing it after mutation', async () => {
    const validation = createTolerationValidation();
    await fc.assert(
      fc.asyncProperty(caseArbitrary, async ([s, request, pick]) => {
        const namespace = namespaceOf(s, pick);
        const parsed = parsedReview(request, namespace);
        const context = await contextFor(s, parsed.attributes);
        const attributes = parsed.attributes;
        fc.pre(validation.validate(attributes.object as JsonObject, attributes, context).denial === undefined);
        const { allowed, patched } = await mutate(s, request, namespace);
        fc.pre(allowed);
        const outcome = validation.validate(patched, { ...attributes, object: patched }, context);
        assert.equal(outcome.denial, undefined, JSON.stringify(outcome.denial));
      }),
      options,
    );
  });

  it('always leaves the not-ready and unreachable NoExecute taints tolerated (DefaultTolerationSeconds)', async () => {
    const covers = (t: Toleration, key: string): boolean => (t.key === key || !t.key) && (t.effect === 'NoExecute' || !t.effect);
    await fc.assert(
      fc.asyncProperty(caseArbitrary, async ([s, request, pick]) => {
        const { allowed, patched } = await mutate(s, request, namespaceOf(s, pick));
        fc.pre(allowed);
        const tolerations = tolerationsOf(patched);
        assert.ok(
          tolerations.some((t) => covers(t, TaintKey.NodeNotReady)),
          'not-ready covered',
        );
        assert.ok(
          tolerations.some((t) => covers(t, TaintKey.NodeUnreachable)),
          'unreachable covered',
        );
      }),
      options,
    );
  });

  it('leaves every DaemonSet-controlled pod tolerating the 6 daemon tolerations, and the 7th with hostNetwork', async () => {
    await fc.assert(
      fc.asyncProperty(caseArbitrary, async ([s, request, pick]) => {
        fc.pre(isDaemonSetPod(request.object));
        const { allowed, patched } = await mutate(s, request, namespaceOf(s, pick));
        fc.pre(allowed);
        const hostNetwork = (request.object.spec as { hostNetwork?: boolean }).hostNetwork === true;
        const wanted = daemonSetPodTolerations(hostNetwork);
        assert.equal(wanted.length, hostNetwork ? 7 : 6);
        const tolerations = tolerationsOf(patched);
        for (const daemon of wanted) {
          // Present, or (on CREATE) merged away by PodTolerationRestriction into a toleration that
          // covers it, as upstream's MergeTolerations does to a pod that also tolerates everything.
          assert.ok(
            tolerations.some((t) => matchToleration(t, daemon) || isSuperset(t, daemon)),
            `${daemon.key ?? ''}:${daemon.effect ?? ''} present or covered`,
          );
        }
      }),
      options,
    );
  });

  it('DaemonSetTolerations alone adds the daemon set to a DaemonSet pod and leaves other pods alone', () => {
    const plugin = createDaemonSetTolerations();
    const context: PluginContext = {
      gates: setups[0]!.settings.gates,
      namespace: undefined,
      node: () => undefined,
      nodesKnown: false,
      nodes: () => [],
    };
    fc.assert(
      fc.property(requestArbitrary, (request) => {
        const attributes = parsedReview(request).attributes;
        const outcome = plugin.admit(attributes.object as JsonObject, attributes, context);
        assert.ok(outcome.object !== undefined);
        if (!isDaemonSetPod(request.object)) {
          assert.equal(outcome.object, attributes.object, 'not a daemon pod: the same object back');
          return;
        }
        const hostNetwork = (request.object.spec as { hostNetwork?: boolean }).hostNetwork === true;
        const tolerations = tolerationsOf(outcome.object);
        for (const daemon of daemonSetPodTolerations(hostNetwork)) {
          assert.ok(
            tolerations.some((t) => matchToleration(t, daemon)),
            `${daemon.key ?? ''} present`,
          );
        }
      }),
      options,
    );
  });
});
