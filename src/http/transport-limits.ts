/**
 * What the transport may hold at once, derived from the memory the process has: request bodies in
 * flight, open connections, and the review workers (src/server) with the heap each may use. Pure:
 * src/main.ts reads the machine (the cgroup's memory limit, src/server/cgroup-memory.ts, else the
 * machine's memory; its CPUs) and passes it in.
 *
 * How the memory M is shared, and what that gives in the Deployment's 512 MiB:
 *
 * | part      | for                                                                 | at 512 MiB                 |
 * |-----------|---------------------------------------------------------------------|----------------------------|
 * | 160 MiB   | the process itself: Node.js, the informer caches, ordinary reviews  | 160 MiB                    |
 * | M/8       | request bodies in flight (`bodyBudgetBytes`)                        | 64 MiB                     |
 * | M/16      | open connections, at 34 KiB each (`maxConnections`)                 | 32 MiB: 963                |
 * | M/16      | headroom: allocator fragmentation, a collection running late        | 32 MiB                     |
 * | the rest  | review workers, 96 MiB of measured peak each (`reviewWorkerCount`)  | 224 MiB: 2 workers         |
 *
 * 160 MiB is what the process may use with a 5,000-node cluster's caches (Kubernetes' supported
 * maximum) and 10,000 namespaces. The body budget counts bytes as they arrive, until the review is
 * answered, so it bounds both the bodies being received and those being decided; what a review
 * builds from its body is on a worker's heap; the pool starts a review beside others only when
 * its estimate (`reviewPeakEstimate`) fits beside theirs in `reviewMemoryBytes`, the workers'
 * share less their idle cost (at 512 MiB: 142 MiB). The small reviews the main thread keeps are
 * within its share.
 */
import { maxBodyBytes } from '../admission/body-limits.js';

/** What src/main.ts reads of the machine. */
export interface MachineResources {
  /** `--memory-limit`: the memory to derive from, when the operator says so. */
  readonly configuredMemoryBytes?: number;
  /** `process.constrainedMemory()`: the cgroup's limit; 0, undefined or 2^64 − 1 when there is none. */
  readonly constrainedMemoryBytes: number | undefined;
  /** `os.totalmem()`. */
  readonly totalMemoryBytes: number;
  /** `os.availableParallelism()`. */
  readonly cpus: number;
}

export interface TransportLimits {
  /** The memory the shares above are taken from. */
  readonly memoryBytes: number;
  /** Request bytes received and not yet answered, over all connections (src/http/body-budget.ts). */
  readonly bodyBudgetBytes: number;
  /** Of the budget, what only small bodies may use, so that large ones cannot crowd out every ordinary review. */
  readonly smallReserveBytes: number;
  /** A body up to this size is small: decided on the main thread, in the reserve's lane. */
  readonly smallBodyBytes: number;
  /** Connections open at once (TCP, before TLS); more are closed as they arrive. */
  readonly maxConnections: number;
  /** Review workers for large bodies (0: every review on the main thread). */
  readonly reviewWorkers: number;
  /** Each worker's old-generation heap limit (its `resourceLimits`), MiB. */
  readonly workerHeapMib: number;
  /** The measured peak of one worker the count was derived from (`workerPeakBytes`). */
  readonly workerPeakBytes: number;
  /** What the reviews being decided at once may build, by `reviewPeakEstimate` (src/server/review-pool.ts). */
  readonly reviewMemoryBytes: number;
}

/**
 * 64 KiB: the largest body decided on the main thread. The costliest shapes of bench/RESULTS.md
 * ("The worst review") cost up to about 200 ns a byte (3 MiB in ~600 ms), so a small body holds
 * the main thread for at most ~13 ms, and some seventy of them back to back still answer an
 * ordinary review within a second. Ordinary pods are far below it (the bench's pod of 100
 * containers is 37 KiB), so they never pay the hand-over to a worker.
 */
export const smallBodyBytes = 64 * 1024;

/** 34 KiB: the resident memory one TLS connection with a request in progress costs (measured, Node.js 20, 500 connections). */
export const connectionBytes = 34 * 1024;

/**
 * 160 MiB of old generation per worker at least: about what the worst review needs. Parsed into
 * millions of empty objects, a review builds far more than its bytes (bench/worker-peak.ts, a
 * worker of the built code with the bench's 5,000 nodes mirrored: a million `{}` tolerations in
 * 3 MiB peak at 92 to 130 MiB of RSS above the idle worker; a DaemonSet UPDATE of two templates of
 * a million empty terms at 170 to 174 MiB, about 131 MiB of it heap). The heap limit is no bound
 * to undercut: a worker whose limit such a review outgrows inside one `JSON.parse` is not ended
 * (Node.js ends a worker at its next interrupt check, which one call that allocates a million
 * objects never reaches) but aborts the whole process (measured: the DaemonSet UPDATE in a worker
 * of 64 MiB, "FATAL ERROR: Reached heap limit", SIGABRT). What keeps the workers inside the
 * memory limit is what is started at once (`reviewMemoryBytes`), not a smaller heap.
 */
export const workerHeapMib = 160;

/**
 * 256 MiB: the most heap a worker is given when the workers' share has room beyond
 * `workerPeakBytes` each. A review that needs more than this is no review an API server can send
 * (the bytes outside strings are bounded, src/admission/body-limits.ts).
 */
export const maxWorkerHeapMib = 256;

/**
 * 48 MiB: what a worker costs beyond its old generation: its young generation (V8 sizes it from
 * the old generation's limit: up to 16 MiB of semi-spaces) and 32 MiB of code, stacks, the
 * isolate and the node mirror.
 */
const workerOverheadMib = 16 + 32;

/**
 * 41 MiB: the resident memory an idle worker adds to the process, at most (bench/worker-peak.ts:
 * 14 to 41 MiB over 76 runs, its heap, code and isolate, 5,000 nodes mirrored).
 */
export const workerIdleBytes = 41 * 1024 * 1024;

/**
 * 96 MiB: one worker's peak while it answers the largest review the body limit admits, measured
 * (bench/worker-peak.ts, the built code, 5,000 nodes and 10,000 namespaces, the shipped policies,
 * one review at a time on an otherwise idle process, load average 6 to 19 on 2 cores): an idle
 * worker (`workerIdleBytes`, 41 MiB) and the 35 MiB escaped UPDATE's 36 to 38 MiB above it: 79
 * MiB, and 96 with a fifth for what one run cannot see (allocator fragmentation, a collection
 * late). What the number of workers is derived from; `reviewMemoryBytes` and
 * `reviewPeakEstimate` are what hold the shapes that build more.
 */
export const workerPeakBytes = 96 * 1024 * 1024;

/**
 * 44 bytes of memory for each byte of body: the most a review built above its idle worker for
 * each byte it was sent (bench/worker-peak.ts: a million `{}` tolerations, 3 MiB, 125.4 and 130.4
 * MiB above idle in two runs: 43.5; the DaemonSet UPDATE of two million empty terms, 6 MiB, 29; a 3 MiB pod of ordinary
 * containers, under 3; the 35 MiB escaped UPDATE, 1.1).
 */
const peakPerBodyByte = 44;

/**
 * 176 MiB: the most any review built above its idle worker (the DaemonSet UPDATE of two
 * templates of a million empty terms, 170 to 174 MiB): bodies are bounded in what parses into
 * objects (src/admission/body-limits.ts, `maxStructureBytes`), so no larger body builds more.
 */
const worstReviewPeakBytes = 176 * 1024 * 1024;

/**
 * What a review's worker may build while it decides it, from its body's size alone (reading the
 * body to know better is what the worker is for): 44 times it, at most the worst measured. A
 * 120 KB pod: 5.0 MiB; a 3 MiB one: 132 MiB.
 */
export function reviewPeakEstimate(bodyBytes: number): number {
  return Math.min(worstReviewPeakBytes, bodyBytes * peakPerBodyByte);
}

/**
 * 160 MiB: what the process needs besides the workers and the bodies in flight (Node.js, the
 * informer caches, the ordinary reviews): measured at 124 to 128 MiB peak with `--review-workers 0`
 * and 5,000 realistic Nodes and 10,000 Namespaces in a 512 MiB cgroup (bench/RESULTS.md, "Memory
 * against the size of the cluster" and issue 28's figures), with a quarter to spare.
 */
export const processBytes = 160 * 1024 * 1024;

export interface WorkerCountInput {
  /** The memory the process may use (the cgroup's limit, `--memory-limit`, else the machine's). */
  readonly memoryBytes: number;
  /** What stays the main thread's: the process itself, the bodies in flight, connections, headroom. */
  readonly reserveBytes: number;
  /** One worker's measured peak (`workerPeakBytes`). */
  readonly workerPeakBytes: number;
  /** `os.availableParallelism()`. */
  readonly cpus: number;
}

/**
 * How many review workers the memory allows: as many measured peaks as fit beside the reserve,
 * at most one per CPU and at least one. At least one because without a worker a large review
 * holds every other one on the main thread; at most one per CPU because a worker beyond that only
 * takes turns on a core with the others (more memory, no more reviews decided per second). The
 * main thread gets no core of its own: what it does per review is small (TLS, a body read, the
 * small reviews of ≤ 64 KiB), and the kernel shares the cores between it and busy workers (bench
 * "Starvation": ordinary reviews while large ones are in flight). In the Deployment's 512 MiB:
 * (512 − 288) / 96 = 2.3, so two workers where there are two CPUs or more.
 */
export function reviewWorkerCount(input: WorkerCountInput): number {
  const byMemory = Math.floor(Math.max(0, input.memoryBytes - input.reserveBytes) / input.workerPeakBytes);
  return Math.max(1, Math.min(byMemory, input.cpus));
}

/** The memory the process has: `--memory-limit`, else the cgroup's limit when there is one below the machine's memory. */
export function availableMemory(resources: MachineResources): number {
  if (resources.configuredMemoryBytes !== undefined) return resources.configuredMemoryBytes;
  const constrained = resources.constrainedMemoryBytes ?? 0;
  return constrained > 0 && constrained < resources.totalMemoryBytes ? constrained : resources.totalMemoryBytes;
}

export function transportLimits(resources: MachineResources, workers?: number): TransportLimits {
  const memoryBytes = availableMemory(resources);
  // 8 MiB: 128 small bodies at once, beyond the most an API server sends a replica in a burst.
  const smallReserveBytes = 128 * smallBodyBytes;
  // At least the largest review and the small lane, or that review could never be read at all:
  // below 8 × 45 MiB = 360 MiB of memory, bodies take a larger share than 1/8.
  const bodyBudgetBytes = Math.max(Math.floor(memoryBytes / 8), maxBodyBytes + smallReserveBytes);
  // At least 64: every API server keeps a few connections per replica, and a few kube-apiservers
  // in a burst open more; below that even a quiet cluster would find connections closed.
  const connectionsBytes = memoryBytes / 16;
  const maxConnections = Math.max(64, Math.floor(connectionsBytes / connectionBytes));
  // The main thread's reserve: the process, the bodies, the connections and 1/16 of headroom; the
  // workers have the rest (at 512 MiB: 160 + 64 + 32 + 32 = 288 MiB, leaving 224).
  const reserveBytes = processBytes + bodyBudgetBytes + connectionsBytes + memoryBytes / 16;
  const workersShareBytes = Math.max(0, memoryBytes - reserveBytes);
  const reviewWorkers = workers ?? reviewWorkerCount({ memoryBytes, reserveBytes, workerPeakBytes, cpus: resources.cpus });
  // Each worker's heap is its part of the share less what is not heap, between workerHeapMib and
  // maxWorkerHeapMib (at 512 MiB, two workers: 112 − 48 = 64 MiB, so workerHeapMib, 160).
  const shareHeapMib = Math.floor(workersShareBytes / Math.max(1, reviewWorkers) / 1024 / 1024) - workerOverheadMib;
  const heapMib = Math.min(maxWorkerHeapMib, Math.max(workerHeapMib, shareHeapMib));
  // What the reviews being decided at once may build: the share less the idle workers (at 512 MiB:
  // 224 − 2 × 41 = 142 MiB: a 3 MiB pod's 132 and a 120 KB pod's 5.0 fit together, two 3 MiB pods
  // do not). One review alone may build more (the worst, 176 MiB: 2 × 41 + 176 = 258 MiB, 34 over
  // the share, inside the headroom and the process's unused part of its 160 MiB).
  const reviewMemoryBytes = Math.max(0, workersShareBytes - reviewWorkers * workerIdleBytes);
  return {
    memoryBytes,
    bodyBudgetBytes,
    smallReserveBytes,
    smallBodyBytes,
    maxConnections,
    reviewWorkers,
    workerHeapMib: heapMib,
    workerPeakBytes,
    reviewMemoryBytes,
  };
}
