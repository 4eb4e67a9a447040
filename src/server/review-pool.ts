/**
 * The review pool: large reviews are decided in worker threads, so that the main thread (which
 * accepts connections, does TLS, and decides every ordinary review) is never held up by one.
 * Review work is linear in the body but a 3 MiB body still costs up to half a second, and on one
 * thread ten of them in flight made an ordinary review wait for seconds, past the webhooks'
 * timeoutSeconds (bench/RESULTS.md, "Starvation").
 *
 * - A bounded number of workers (src/http/transport-limits.ts derives it from memory and CPUs),
 *   each deciding one review at a time, each with a heap limit of its own: a review that needs
 *   more ends its worker (ERR_WORKER_OUT_OF_MEMORY), not the process, and is answered 500.
 * - Reviews wait in a fair queue, one lane per namespace (`fairnessKey`): the next review a worker
 *   takes is the one whose namespace has had the fewest bytes decided since it last had none
 *   waiting (start-time fair queueing, with a review's body size as its cost; between equals, the
 *   smaller body first). So one tenant's many 3 MiB reviews delay another namespace's review by at
 *   most the reviews already being decided, never by the ones queued before it; what waits is
 *   bounded by the budget of bodies in flight (src/http/body-budget.ts), which holds a body until
 *   its review is answered (and refuses one that does not fit with 503).
 * - With several workers, no namespace is given more than half of them (rounded up) while another
 *   namespace's review waits (`fairShare`): a worker that comes free goes to the other namespace
 *   even when the fair queue's order would give it to the first (its lane, emptied by the workers
 *   it took, starts again at the virtual time). With nobody else waiting a namespace may use them
 *   all; the next review of another namespace then waits for the first of them to finish.
 * - With several workers, a review is started beside the others only when the memory its worker
 *   may build (estimated from its body, `reviewPeakEstimate`) fits beside theirs in the workers'
 *   share (`reviewMemoryBytes`): in the Deployment's 512 MiB, another team's 120 KB pod is
 *   decided beside a tenant's 3 MiB one, two 3 MiB pods one after the other. Alone, any review is
 *   started: its worker's heap limit, sized for the worst review, holds it.
 * - Each worker is on its own: one that dies (out of heap, a crash) or is ended (below) is
 *   replaced alone, and the reviews the others are deciding go on.
 * - Each review has a deadline (the API server's own timeout, src/http/app.ts): one still queued
 *   then is answered 500 without being decided; one still being decided is answered 500 and its
 *   answer dropped when it comes: the worker finishes it (review work is linear in the body, a
 *   second or two at the largest) and goes on, since a caller that sends short timeouts must not
 *   end workers. Only a review still running `stuckMs` past its deadline ends its worker
 *   (JavaScript cannot be interrupted otherwise), which is then replaced.
 * - The context a worker decides with is data (src/server/protocol.ts): a thread cannot call the
 *   closures over the informer caches, so the settings, the policy files' texts, the nodes (by
 *   delta, src/server/node-mirror.ts) and each review's gates are sent; the Namespace and named
 *   Node, which may need a live read of the API server, are asked of this thread.
 */
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { ClusterFacts } from '../admission/cluster-facts.js';
import { AdmissionError } from '../admission/errors.js';
import type { WebhookSide } from '../admission/pipeline.js';
import type { KubernetesVersion } from '../api/feature-gate-history.js';
import type { FeatureGates } from '../api/feature-gates.js';
import type { AdmissionSettings } from '../admission/pipeline-settings.js';
import type { ReviewAnswer, ReviewRunner } from '../admission/run-review.js';
import type { PolicySet } from '../tenancy/policy-set.js';
import { reviewPeakEstimate } from '../http/transport-limits.js';
import { emptySentNodes, nodeDelta, type SentNodes } from './node-mirror.js';
import type { FromWorker, ToWorker, WorkerSetup } from './protocol.js';

export interface ReviewPoolOptions {
  readonly workers: number;
  /** Each worker's old-generation heap limit, MiB. */
  readonly heapMib: number;
  readonly settings: AdmissionSettings;
  readonly clusterFacts: ClusterFacts;
  readonly policies: () => PolicySet;
  readonly gates: () => FeatureGates;
  /** The version the API server reports (PluginContext.serverVersion); absent: none known. */
  readonly serverVersion?: () => KubernetesVersion | undefined;
  readonly logger: Logger;
  /** Monotonic milliseconds: the clock deadlines are given in. */
  readonly now: () => number;
  /** The worker's entry; tests pass a stand-in. Default: src/server/review-worker. */
  readonly workerUrl?: URL;
  /** How long past its deadline a review may still run before its worker is ended (default `stuckMs`). */
  readonly stuckMs?: number;
  /**
   * The memory the reviews being decided at once may build, by their estimates
   * (src/http/transport-limits.ts, `reviewPeakEstimate` and `reviewMemoryBytes`); absent: no bound.
   */
  readonly reviewMemoryBytes?: number;
}

export interface PoolStats {
  /** Workers running and ready. */
  readonly ready: number;
  /** Workers deciding a review now. */
  readonly busy: number;
  /** Reviews waiting for a worker. */
  readonly queued: number;
  /** Workers started so far, replacements included. */
  readonly started: number;
  /** Reviews answered 500 because their deadline passed. */
  readonly expired: number;
  /** Workers ended because a review ran `stuckMs` past its deadline. */
  readonly ended: number;
}

export interface ReviewPool extends ReviewRunner {
  stats(): PoolStats;
  /** Answers what still waits with 500 and ends the workers. */
  close(): Promise<void>;
}

interface Job {
  readonly id: number;
  readonly side: WebhookSide;
  body: Uint8Array | undefined;
  /** The body's bytes: the review's cost in the fair queue. */
  readonly bytes: number;
  /** The memory its worker may build while deciding it (`reviewPeakEstimate`). */
  readonly cost: number;
  /** Its lane (`fairnessKey`) and its start tag in it (`FairQueue`). */
  readonly lane: string;
  start: number;
  readonly deadline: number;
  readonly resolve: (answer: ReviewAnswer) => void;
  readonly reject: (error: unknown) => void;
  timer: NodeJS.Timeout | undefined;
  settled: boolean;
}

interface Slot {
  readonly worker: Worker;
  /** Ready and not being ended: may be given a review. */
  ready: boolean;
  /** Was ready once: an exit after that is replaced at once, one before it after a backoff. */
  wasReady: boolean;
  exited: boolean;
  job: Job | undefined;
  sentPolicies: PolicySet | undefined;
  readonly sentNodes: SentNodes;
  /** Why it ended, when it did not end because it was told to. */
  failure: Error | undefined;
}

/** src/server/review-worker, as .ts from the sources and .js once built. */
const defaultWorkerUrl = new URL(`./review-worker${extname(fileURLToPath(import.meta.url))}`, import.meta.url);

/**
 * The release's single executable carries one file, its bundle: the worker's entry is not a file
 * beside it. Its bundler (tools/release/release.ts) bundles the worker too and puts that code
 * here, which the executable's workers run as an eval'd script (it needs only node's built-in
 * modules). Undefined everywhere else.
 */
declare const TOLERATOR_REVIEW_WORKER_SOURCE: string | undefined;

/**
 * A worker that will not start (its code fails to load) is restarted after 1 s, doubling to 30 s:
 * meanwhile the large reviews wait in the queue until their deadline (500), and the log says why.
 */
const restartBackoff = { initialMs: 1_000, maxMs: 30_000 };

/**
 * 30 s past its deadline: a review still running then is not a review's linear work (the largest,
 * 36 MiB escaped UPDATEs, take a few seconds: bench/RESULTS.md, "The worst review") but a worker
 * that will not finish, and ending it is the only way to get the thread back. 30 s is also the
 * longest timeout an API server gives a webhook, so no caller's deadline can make it shorter.
 */
export const stuckMs = 30_000;

/**
 * How far into a body `fairnessKey` looks: 64 KiB. kube-apiserver writes the request's fields in
 * the Go struct's order (uid, kind, resource, subResource, requestKind, requestResource,
 * requestSubResource, name, namespace, operation, userInfo, object…), so `namespace` comes after
 * a few hundred bytes unless the name is built to be long; a body that hides it further (or a
 * client that writes JSON otherwise) only puts its reviews in the lane of those without one.
 */
const fairnessScanBytes = 64 * 1024;
const namespaceField = Buffer.from('"namespace":"');

/**
 * The fair queue's lane of a review: its request's namespace, read from the raw body without
 * parsing it (parsing 3 MiB is what the worker is for). Per namespace rather than per user: most
 * pods are created by controllers (the ReplicaSet controller creates every Deployment's pods as
 * one service account), so per user every tenant's workloads would share one lane, while the
 * namespace is the unit the tenancy policies give a team. The key only orders reviews; it never
 * decides one, so a wrong one (a body that is not the API server's) costs its sender only its place.
 * The first `"namespace":"` of the body is the request's: the same bytes inside a JSON string would
 * have their quotes escaped, and no field before it holds an object with that key.
 */
export function fairnessKey(body: Uint8Array): string {
  const buffer = Buffer.from(body.buffer, body.byteOffset, Math.min(body.byteLength, fairnessScanBytes));
  const at = buffer.indexOf(namespaceField);
  if (at === -1) return '';
  const from = at + namespaceField.length;
  // A namespace is a DNS label: 63 characters, none of them a quote or a backslash.
  const end = buffer.indexOf(0x22, from);
  if (end === -1 || end - from > 63) return '';
  return buffer.toString('latin1', from, end);
}

/**
 * Start-time fair queueing over lanes (Goyal, Vin and Cheng, 1996), a review's cost its body
 * bytes: each review gets a start tag, the later of the virtual time (the start tag of the review
 * last taken) and the finish tag of its lane's previous review; the review with the smallest start
 * tag is taken next, the smaller body first between equals. A lane that had nothing waiting starts
 * at the virtual time, not at zero, so a namespace quiet for an hour cannot then take every worker.
 * At most one lane per body in flight waits, so a linear scan is cheap.
 */
class FairQueue {
  private readonly lanes = new Map<string, { jobs: Job[]; finish: number }>();
  private virtualTime = 0;
  size = 0;

  push(job: Job): void {
    let lane = this.lanes.get(job.lane);
    if (lane === undefined) {
      lane = { jobs: [], finish: this.virtualTime };
      this.lanes.set(job.lane, lane);
    }
    job.start = Math.max(this.virtualTime, lane.finish);
    lane.finish = job.start + job.bytes;
    lane.jobs.push(job);
    this.size++;
  }

  /**
   * The review to take next (`take` takes it). A lane for which `atShare` holds is passed over
   * while another lane has a review waiting (the pool's fair share of workers, `fairShare`); when
   * every waiting lane is at its share, or only one waits, the best of them is next all the same.
   */
  next(atShare: (lane: string) => boolean = () => false): Job | undefined {
    let best: Job | undefined;
    let bestOverall: Job | undefined;
    const better = (head: Job, than: Job | undefined): boolean =>
      than === undefined || head.start < than.start || (head.start === than.start && head.bytes < than.bytes);
    for (const [name, { jobs }] of this.lanes) {
      const head = jobs[0];
      if (head === undefined) continue;
      if (better(head, bestOverall)) bestOverall = head;
      if (!atShare(name) && better(head, best)) best = head;
    }
    return best ?? bestOverall;
  }

  take(job: Job): void {
    this.virtualTime = job.start;
    this.remove(job);
  }

  /** Takes `job` out; false when it was not waiting. */
  remove(job: Job): boolean {
    const lane = this.lanes.get(job.lane);
    const at = lane?.jobs.indexOf(job) ?? -1;
    if (lane === undefined || at === -1) return false;
    lane.jobs.splice(at, 1);
    this.size--;
    // An empty lane is forgotten: it starts again at the virtual time.
    if (lane.jobs.length === 0) this.lanes.delete(job.lane);
    return true;
  }

  drain(): Job[] {
    const all = [...this.lanes.values()].flatMap((lane) => lane.jobs);
    this.lanes.clear();
    this.size = 0;
    return all;
  }
}

export async function startReviewPool(options: ReviewPoolOptions): Promise<ReviewPool> {
  const { logger } = options;
  const setup: WorkerSetup = { settings: options.settings, knowsNodes: options.clusterFacts.knowsNodes };
  const url = options.workerUrl ?? defaultWorkerUrl;
  const slots = new Set<Slot>();
  const queue = new FairQueue();
  let nextJob = 0;
  let started = 0;
  let expired = 0;
  let ended = 0;
  const stuckAfterMs = options.stuckMs ?? stuckMs;
  let closing = false;
  let failedStarts = 0;

  const settle = (job: Job, outcome: { answer: ReviewAnswer } | { error: unknown }): void => {
    if (job.settled) return;
    job.settled = true;
    clearTimeout(job.timer);
    job.body = undefined;
    if ('answer' in outcome) job.resolve(outcome.answer);
    else job.reject(outcome.error);
  };

  const post = (slot: Slot, message: ToWorker, transfer?: ArrayBuffer[]): void => {
    if (!slot.exited) slot.worker.postMessage(message, transfer);
  };

  const run = (slot: Slot, job: Job): void => {
    const body = job.body;
    if (body === undefined) return;
    const set = options.policies();
    if (slot.sentPolicies !== set) {
      if (set.sources === undefined && set.policies.length > 0) {
        settle(job, { error: new Error('internal error: a policy set without its sources cannot be sent to a review worker') });
        return;
      }
      post(slot, { type: 'policies', sources: set.sources });
      slot.sentPolicies = set;
    }
    const delta = nodeDelta(slot.sentNodes, options.clusterFacts.listNodes());
    if (delta !== undefined) post(slot, { type: 'nodes', ...delta });
    slot.job = job;
    // The body moves to the worker instead of being copied; only a buffer of its own can move.
    const own = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength ? body : new Uint8Array(body);
    job.body = undefined;
    try {
      post(
        slot,
        { type: 'review', id: job.id, side: job.side, body: own, gates: options.gates(), serverVersion: options.serverVersion?.() },
        [own.buffer as ArrayBuffer],
      );
    } catch (error) {
      slot.job = undefined;
      settle(job, { error });
    }
  };

  // The most workers one namespace may hold while another namespace's review waits: half of them,
  // rounded up (one of two, two of three or four). So a tenant that keeps many large reviews in
  // flight leaves at least half the workers to the others whenever they have work, and with one
  // worker nothing changes (the fair queue alone orders it).
  const fairShare = Math.ceil(options.workers / 2);
  const held = (lane: string): number => {
    let count = 0;
    for (const slot of slots) if (slot.job?.lane === lane) count++;
    return count;
  };
  // The memory the reviews being decided may build (`reviewMemoryBytes`): a review is started
  // beside others only if its estimate fits beside theirs; alone, any review is started (its
  // worker's heap limit holds it). The next review in the fair queue's order waits for the memory
  // rather than letting a later one pass it: a stream of small reviews cannot starve a large one.
  const budget = options.reviewMemoryBytes ?? Number.POSITIVE_INFINITY;
  const fits = (job: Job): boolean => {
    let inFlight = 0;
    let count = 0;
    for (const slot of slots) {
      if (slot.job === undefined) continue;
      inFlight += slot.job.cost;
      count++;
    }
    return count === 0 || inFlight + job.cost <= budget;
  };
  const dispatch = (): void => {
    for (const slot of slots) {
      if (queue.size === 0) return;
      if (!slot.ready || slot.job !== undefined) continue;
      const job = queue.next((lane) => held(lane) >= fairShare);
      if (job === undefined || !fits(job)) return;
      queue.take(job);
      run(slot, job);
    }
  };

  const expire = (job: Job): void => {
    const waiting = queue.remove(job);
    for (const slot of slots) {
      if (slot.job === job) {
        // Still deciding: the answer is abandoned (settled below, so the worker's is dropped when
        // it comes), not the worker, unless it never comes.
        const stuck = setTimeout(() => {
          if (slot.job !== job) return;
          // JavaScript cannot be interrupted: the worker goes and another comes.
          ended++;
          slot.ready = false;
          logger.error({ reviewId: job.id, stuckMs: stuckAfterMs }, 'a review worker ran one review far past its deadline; ending it');
          void slot.worker.terminate();
        }, stuckAfterMs);
        stuck.unref();
      }
    }
    expired++;
    settle(job, {
      error: new AdmissionError(
        'CouldNotDecide',
        `the review was not decided within its deadline (the API server's timeout)${waiting ? ': it was still waiting for a review worker' : ''}`,
      ),
    });
  };

  const onMessage = (slot: Slot, message: FromWorker): void => {
    switch (message.type) {
      case 'ready':
        slot.ready = true;
        slot.wasReady = true;
        failedStarts = 0;
        dispatch();
        return;
      case 'policies-failed':
        logger.error({ error: message.message }, 'a review worker could not build the policy set; its reviews are undecided');
        return;
      case 'facts': {
        const facts = options.clusterFacts;
        const read: Promise<Extract<ToWorker, { type: 'facts' }>['value']> =
          message.query === 'namespace'
            ? facts.getNamespace(message.name)
            : message.query === 'node'
              ? facts.readNode(message.name)
              : facts.readRuntimeClass(message.name);
        read.then(
          (value) => {
            post(slot, { type: 'facts', id: message.id, value });
          },
          (error: unknown) => {
            post(slot, { type: 'facts', id: message.id, value: undefined, error: error instanceof Error ? error.message : String(error) });
          },
        );
        return;
      }
      case 'answer':
      case 'refused':
      case 'failed': {
        const job = slot.job;
        if (job === undefined || job.id !== message.id) return;
        slot.job = undefined;
        if (message.type === 'answer') settle(job, { answer: { payload: message.payload, summary: message.summary } });
        else if (message.type === 'refused') settle(job, { error: new AdmissionError(message.code, message.message) });
        else settle(job, { error: new Error(`review worker: ${message.error}`) });
        dispatch();
        return;
      }
    }
  };

  const spawn = (): Promise<void> => {
    started++;
    const worker = createWorker(url, {
      workerData: setup,
      resourceLimits: { maxOldGenerationSizeMb: options.heapMib },
    });
    const slot: Slot = {
      worker,
      ready: false,
      wasReady: false,
      exited: false,
      job: undefined,
      sentPolicies: undefined,
      sentNodes: emptySentNodes(),
      failure: undefined,
    };
    slots.add(slot);
    worker.on('message', (message: FromWorker) => {
      onMessage(slot, message);
    });
    worker.on('error', (error) => {
      slot.failure = error;
    });
    return new Promise<void>((resolve, reject) => {
      worker.once('message', () => {
        resolve();
      });
      worker.once('exit', (code) => {
        slot.exited = true;
        slot.ready = false;
        slots.delete(slot);
        const wasReady = slot.wasReady;
        const failure = slot.failure;
        const job = slot.job;
        slot.job = undefined;
        if (job !== undefined) {
          const outOfMemory = (failure as { code?: string } | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY';
          settle(job, {
            error: new AdmissionError(
              'CouldNotDecide',
              outOfMemory
                ? `the review needed more than the ${options.heapMib} MiB heap a review worker has`
                : 'the review worker deciding it stopped',
            ),
          });
        }
        if (!wasReady) reject(failure ?? new Error(`a review worker exited with code ${code} before it was ready`));
        if (closing) return;
        // The memory its review held is free: a review waiting for it may go to another worker.
        dispatch();
        if (failure !== undefined || !wasReady) {
          logger.error({ err: failure, code, wasReady }, 'review worker stopped; starting another');
        }
        const delayMs = wasReady ? 0 : Math.min(restartBackoff.maxMs, restartBackoff.initialMs * 2 ** failedStarts++);
        const restart = setTimeout(() => {
          if (!closing) spawn().catch(() => undefined);
        }, delayMs);
        restart.unref();
      });
    });
  };

  await Promise.all(Array.from({ length: options.workers }, spawn));

  return {
    review(side, body, deadline) {
      return new Promise<ReviewAnswer>((resolve, reject) => {
        if (closing) {
          reject(new AdmissionError('CouldNotDecide', 'the webhook is shutting down'));
          return;
        }
        const job: Job = {
          id: nextJob++,
          side,
          body,
          bytes: body.byteLength,
          cost: reviewPeakEstimate(body.byteLength),
          lane: fairnessKey(body),
          start: 0,
          deadline,
          resolve,
          reject,
          timer: undefined,
          settled: false,
        };
        job.timer = setTimeout(
          () => {
            expire(job);
          },
          Math.max(0, deadline - options.now()),
        );
        queue.push(job);
        dispatch();
      });
    },
    stats: () => ({
      ready: [...slots].filter((slot) => slot.ready).length,
      busy: [...slots].filter((slot) => slot.job !== undefined).length,
      queued: queue.size,
      started,
      expired,
      ended,
    }),
    async close() {
      closing = true;
      for (const job of queue.drain()) {
        settle(job, { error: new AdmissionError('CouldNotDecide', 'the webhook is shutting down') });
      }
      await Promise.all([...slots].map((slot) => slot.worker.terminate()));
    },
  };
}

/**
 * From the sources (the tests, `npm start`), Node.js 20 does not carry the main thread's
 * `--import tsx` into a worker, so the worker registers tsx itself before it loads its entry;
 * once built (dist/, the image), the entry is plain JavaScript.
 */
function createWorker(url: URL, options: WorkerOptions): Worker {
  if (url === defaultWorkerUrl && typeof TOLERATOR_REVIEW_WORKER_SOURCE === 'string') {
    return new Worker(TOLERATOR_REVIEW_WORKER_SOURCE, { ...options, eval: true });
  }
  if (url.pathname.endsWith('.ts')) {
    const tsx = import.meta.resolve('tsx/esm/api');
    const code = `import(${JSON.stringify(tsx)}).then((api) => { api.register(); return import(${JSON.stringify(url.href)}); });`;
    return new Worker(code, { ...options, eval: true });
  }
  return new Worker(url, options);
}
