/**
 * What the transport may hold at once, derived from the memory the process has: request bodies in
 * flight, open connections, and the review workers (src/server) with the heap each may use. Pure:
 * src/main.ts reads the machine (the cgroup's memory limit through `process.constrainedMemory()`,
 * else the machine's memory; its CPUs) and passes it in.
 *
 * How the memory M is shared, and what that gives in the Deployment's 512 MiB:
 *
 * | share  | for                                                                    | at 512 MiB            |
 * |--------|------------------------------------------------------------------------|-----------------------|
 * | 5/16   | the process itself: Node.js, the informer caches, ordinary reviews     | 160 MiB               |
 * | 1/8    | request bodies in flight (`bodyBudgetBytes`)                           | 64 MiB                |
 * | 1/16   | open connections, at 34 KiB each (`maxConnections`)                    | 32 MiB: 963           |
 * | 7/16   | review workers, at least 208 MiB each (`reviewWorkers`)                | 224 MiB: 1 worker     |
 * | 1/16   | headroom: allocator fragmentation, a collection running late           | 32 MiB                |
 *
 * 160 MiB is what the process may use with a 5,000-node cluster's caches (Kubernetes' supported
 * maximum) and 10,000 namespaces. The body budget counts bytes as they arrive, until the review is
 * answered, so it bounds both the bodies being received and those being decided; what a review
 * builds from its body is on a worker's heap, which `workerHeapMib` bounds (or, for the small
 * reviews the main thread keeps, within its share).
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
 * 160 MiB of old generation per worker at least (more when the workers' share has room: see
 * transportLimits): in a worker, the worst reviews of bench/RESULTS.md ("The
 * worst review") peak at 84 MiB of heap above idle (the largest escaped UPDATE, 36 MiB of body,
 * whose text alone is 36 MiB of heap; the worst 3 MiB shapes 71 MiB), on top of the worker's own
 * ~20 MiB of code and compiled policies: about twice what they need, since V8 collects harder
 * as it nears the limit rather than fail.
 */
export const workerHeapMib = 160;

/**
 * 256 MiB: the most heap a worker is given when the workers' share has room beyond
 * `workerBytes` each. The worst review measured needs about 150 MiB (a DaemonSet UPDATE of two
 * templates of a million empty terms: two million parsed objects, 112 MiB, compared), and a review
 * that needs more than this is no review an API server can send: it should end its worker soon
 * rather than grow until the container is killed.
 */
export const maxWorkerHeapMib = 256;

/** A worker's young generation, code and isolate: what it costs beyond its old generation (see workerBytes). */
const workerOverheadMib = 16 + 32;

/**
 * 208 MiB a worker costs at most: its old generation (160 MiB), its young generation (V8's
 * default semi-spaces, 16 MiB) and 32 MiB of code, stacks and the isolate itself (measured: a
 * worker with the pipeline loaded adds ~15 MiB of RSS before it decides anything).
 */
export const workerBytes = (workerHeapMib + workerOverheadMib) * 1024 * 1024;

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
  const maxConnections = Math.max(64, Math.floor(memoryBytes / 16 / connectionBytes));
  // One core stays the main thread's (the accept loop, TLS, the ordinary reviews); at least one
  // worker however little memory there is, since without one a large review holds every other.
  const workersShareBytes = (memoryBytes / 16) * 7;
  const byMemory = Math.floor(workersShareBytes / workerBytes);
  const reviewWorkers = workers ?? Math.max(1, Math.min(resources.cpus - 1, byMemory));
  // What the share leaves beyond workerBytes each goes to the workers' heaps (at 512 MiB: one
  // worker, 224 MiB, so 176 MiB of heap), between workerHeapMib and maxWorkerHeapMib.
  const shareHeapMib = Math.floor(workersShareBytes / Math.max(1, reviewWorkers) / 1024 / 1024) - workerOverheadMib;
  const heapMib = Math.min(maxWorkerHeapMib, Math.max(workerHeapMib, shareHeapMib));
  return { memoryBytes, bodyBudgetBytes, smallReserveBytes, smallBodyBytes, maxConnections, reviewWorkers, workerHeapMib: heapMib };
}
