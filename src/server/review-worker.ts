/**
 * The entry point of a review worker thread: it composes this thread's pipeline as src/main.ts
 * composes the main thread's (through src/admission/pipeline-settings.ts, from the same settings, so it decides
 * with the same code), then answers one review at a time with src/admission/answer-review.ts.
 *
 * What it decides from is data the main thread sends (src/server/protocol.ts): the settings (at
 * start), the policy files' texts (whenever the main thread's set changed), the nodes (a delta
 * before each review), the gates (with each review). The two cluster reads that may go to the API
 * server (the request's Namespace, the Node a pod names) are asked of the main thread, whose
 * informers and client hold them; they are asynchronous in the pipeline anyway.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { ClusterFacts } from '../admission/cluster-facts.js';
import { AdmissionError } from '../admission/errors.js';
import type { KubernetesVersion } from '../api/feature-gate-history.js';
import type { FeatureGates } from '../api/feature-gates.js';
import type { Namespace, Node, RuntimeClass } from '../api/types.js';
import { pipelineFor } from '../admission/pipeline-settings.js';
import { answerReview } from '../admission/answer-review.js';
import { policySetFromSources } from '../tenancy/policy-directory.js';
import { emptyPolicySet, type PolicySet } from '../tenancy/policy-set.js';
import { NodeMirror } from './node-mirror.js';
import type { FromWorker, ToWorker, WorkerSetup } from './protocol.js';

const port = parentPort;
if (port === null) {
  throw new Error('src/server/review-worker.ts runs as a worker thread of the review pool');
}
const setup = workerData as WorkerSetup;

const send = (message: FromWorker): void => {
  port.postMessage(message);
};

const nodes = new NodeMirror();
// None until the pool sends the set: a review before that could not be decided, never decided without it.
let policies: PolicySet | undefined;
let gates: FeatureGates = setup.settings.gates;
let serverVersion: KubernetesVersion | undefined;

let nextQuestion = 0;
const questions = new Map<
  number,
  { resolve: (value: Namespace | Node | RuntimeClass | undefined) => void; reject: (error: Error) => void }
>();
function ask(query: 'namespace', name: string): Promise<Namespace | undefined>;
function ask(query: 'node', name: string): Promise<Node | undefined>;
function ask(query: 'runtimeclass', name: string): Promise<RuntimeClass | undefined>;
function ask(query: 'namespace' | 'node' | 'runtimeclass', name: string): Promise<Namespace | Node | RuntimeClass | undefined> {
  const id = nextQuestion++;
  return new Promise((resolve, reject) => {
    questions.set(id, { resolve, reject });
    send({ type: 'facts', id, query, name });
  });
}

const facts: ClusterFacts = {
  getNamespace: (name) => ask('namespace', name),
  readNode: (name) => ask('node', name),
  readRuntimeClass: (name) => ask('runtimeclass', name),
  // The audit's question, which only the main thread asks.
  listRuntimeClasses: () => [],
  getNode: (name) => nodes.get(name),
  listNodes: () => nodes.list(),
  knowsNodes: setup.knowsNodes,
  isSynced: () => true,
  stop: () => Promise.resolve(),
};

const pipeline = pipelineFor(
  setup.settings,
  facts,
  () => {
    if (policies === undefined) {
      // Never decide without the policies the main thread decides with: could not decide.
      throw new Error('the review worker has no valid policy set');
    }
    return policies;
  },
  () => gates,
  () => serverVersion,
);

port.on('message', (message: ToWorker) => {
  switch (message.type) {
    case 'policies': {
      if (message.sources === undefined) {
        policies = emptyPolicySet;
        break;
      }
      const loaded = policySetFromSources(message.sources);
      policies = loaded.errors.length === 0 ? loaded.set : undefined;
      if (policies === undefined) send({ type: 'policies-failed', message: loaded.errors.map((error) => error.message).join('; ') });
      break;
    }
    case 'nodes':
      nodes.apply(message);
      break;
    case 'facts': {
      const question = questions.get(message.id);
      questions.delete(message.id);
      if (message.error !== undefined) question?.reject(new Error(message.error));
      else question?.resolve(message.value);
      break;
    }
    case 'review': {
      gates = message.gates;
      serverVersion = message.serverVersion;
      answerReview(message.side, message.body, pipeline).then(
        ({ payload, summary }) => {
          send({ type: 'answer', id: message.id, payload, summary });
        },
        (error: unknown) => {
          if (error instanceof AdmissionError) {
            send({ type: 'refused', id: message.id, code: error.code, message: error.message });
          } else {
            send({ type: 'failed', id: message.id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
          }
        },
      );
      break;
    }
  }
});

send({ type: 'ready' });
