/**
 * Work counted in bytes: what a piece of code allocates on V8's heap, and the most of the heap it
 * holds at once, read from the heap statistics V8 records at every collection (v8.GCProfiler).
 * Counted, not timed: the same code on the same input allocates the same bytes on a busy machine as
 * on an idle one, so tests compare sizes n and 4n, or code against a floor, by these numbers.
 *
 * Allocated = the heap's growth between collections, summed: (used before each collection − used
 * after the previous one) + (used at the end − used after the last one). Peak = the most used at
 * any collection's start or at the end, above the start. A full collection comes first, so the
 * start is the live set. V8 sweeps concurrently after a collection, which can blur a reading by
 * a few pages: the tests leave room for that in their bounds.
 */
import { setFlagsFromString, GCProfiler, getHeapStatistics } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** A full garbage collection; `--expose-gc` set at run time gives a new context a `gc` function. */
export const collectGarbage: () => void = (() => {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
})();

export interface HeapWork<T> {
  readonly result: T;
  /** Bytes allocated on the heap while `run` ran. */
  readonly allocatedBytes: number;
  /** The most bytes in use at once while `run` ran, above the live set before it. */
  readonly peakBytes: number;
}

export async function heapWork<T>(run: () => T | Promise<T>): Promise<HeapWork<T>> {
  collectGarbage();
  const profiler = new GCProfiler();
  profiler.start();
  const start = getHeapStatistics().used_heap_size;
  const result = await run();
  const end = getHeapStatistics().used_heap_size;
  const { statistics } = profiler.stop();
  let allocatedBytes = 0;
  let peak = end;
  let previousAfter = start;
  for (const collection of statistics) {
    const before = collection.beforeGC.heapStatistics.usedHeapSize;
    allocatedBytes += Math.max(0, before - previousAfter);
    peak = Math.max(peak, before);
    previousAfter = collection.afterGC.heapStatistics.usedHeapSize;
  }
  allocatedBytes += Math.max(0, end - previousAfter);
  return { result, allocatedBytes, peakBytes: peak - start };
}

export function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
