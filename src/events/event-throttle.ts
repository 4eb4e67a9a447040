/**
 * How many Events tolerator writes, and which: the book-keeping of the Event writer
 * (src/kube/event-recorder.ts), pure and counted, with the time passed in, so that a test asks
 * "after 26 denials of one Deployment, how many writes?" without waiting five minutes.
 *
 * It follows client-go v0.35.8 (the client of the Kubernetes release tolerator's control plane is
 * pinned to), which has two recorders:
 * - tools/record (core/v1 Events) guards the API server with a spam filter, a token bucket per
 *   source and object (`getSpamKey`: source, involvedObject and type): 25 Events at once
 *   (defaultSpamBurst), then one every 5 minutes (defaultSpamQPS 1/300), its buckets held in an
 *   LRU cache of 4,096 keys (maxLruCacheEntries).
 * - tools/events (events.k8s.io/v1, what tolerator writes) folds repeats into a series: an Event
 *   isomorphic to one written less than 6 minutes (finishTime) ago (the same type, action,
 *   reason, reportingController, reportingInstance, regarding and related; not the note) is not
 *   written again: its `series.count` grows in memory, the first repeat is written at once
 *   (count 2), later ones when the series is refreshed (every 30 minutes, refreshTime) or has
 *   finished (no repeat for 6 minutes). Its cache has no bound, and it has no spam filter.
 *
 * tolerator takes both: series as tools/events (what `kubectl events` shows as `(x12 over 3m)`),
 * and the spam filter of tools/record, with its defaults, in front of every new Event, because a
 * denial is caused by whoever writes the object: 25 for one object and then one per 5 minutes is
 * what every controller in the cluster is held to. Both maps are bounded at 4,096 keys (least
 * recently used dropped), which tools/events' is not: a tenant chooses how many objects it has
 * denied. What bounds the total, whatever the number of objects, is the writer's queue and pace.
 */
import type { EventIntent } from './event-intents.js';

export interface EventLimits {
  /** Token bucket per object: Events at once… */
  readonly burst: number;
  /** …then one more per this many milliseconds. */
  readonly refillMs: number;
  /** The most objects (buckets) and series remembered; the least recently used go first. */
  readonly keys: number;
  /** A repeat within this long of the last one joins its series (tools/events' finishTime). */
  readonly seriesWindowMs: number;
  /** A series still growing is written at least this often (tools/events' refreshTime). */
  readonly seriesRefreshMs: number;
}

export const eventLimits: EventLimits = {
  burst: 25,
  refillMs: 300_000,
  keys: 4096,
  seriesWindowMs: 6 * 60_000,
  seriesRefreshMs: 30 * 60_000,
};

/** One Event written (or being written), and the series of its repeats. */
export interface SeriesEntry {
  readonly key: string;
  readonly namespace: string;
  readonly name: string;
  readonly source: EventSource;
  count: number;
  lastObservedMs: number;
  /** The count last written (1: the Event alone). */
  writtenCount: number;
  writtenMs: number;
}

export type EventSource = 'admission' | 'audit';

export type Offer =
  /** A new Event: create it. */
  | { readonly kind: 'create'; readonly entry: SeriesEntry }
  /** The first repeat: write the series now (count 2). */
  | { readonly kind: 'series'; readonly entry: SeriesEntry }
  /** A later repeat: counted, written when the series is refreshed or finishes. */
  | { readonly kind: 'counted' }
  /** The object's bucket is empty: dropped. */
  | { readonly kind: 'throttled' };

interface Bucket {
  tokens: number;
  updatedMs: number;
}

export class EventThrottle {
  private readonly buckets = new Map<string, Bucket>();
  private readonly series = new Map<string, SeriesEntry>();
  /** Series replaced by a new Event of the same key before due() wrote their last count (at most `keys`). */
  private finished: SeriesEntry[] = [];

  constructor(
    private readonly limits: EventLimits,
    /** The Event's object name for a regarding object's name (client-go's GenerateEventName: name.<hex time>). */
    private readonly nameFor: (regardingName: string) => string,
  ) {}

  /** What to do with `intent` at `nowMs`. */
  offer(intent: EventIntent, source: EventSource, namespace: string, nowMs: number): Offer {
    const key = seriesKey(intent);
    const existing = this.series.get(key);
    if (existing !== undefined && nowMs - existing.lastObservedMs < this.limits.seriesWindowMs) {
      touch(this.series, key, existing);
      existing.count += 1;
      existing.lastObservedMs = nowMs;
      return existing.count === 2 ? { kind: 'series', entry: existing } : { kind: 'counted' };
    }
    if (existing !== undefined && existing.count > existing.writtenCount && this.finished.length < this.limits.keys) {
      this.finished.push(existing);
    }
    if (!this.take(spamKey(intent), nowMs)) return { kind: 'throttled' };
    const entry: SeriesEntry = {
      key,
      namespace,
      name: this.nameFor(intent.regarding.name),
      source,
      count: 1,
      lastObservedMs: nowMs,
      writtenCount: 1,
      writtenMs: nowMs,
    };
    touch(this.series, key, entry);
    evictOldest(this.series, this.limits.keys);
    return { kind: 'create', entry };
  }

  /** The Event of `entry` could not be written: its next occurrence is a new Event, not a repeat. */
  forget(entry: SeriesEntry): void {
    if (this.series.get(entry.key) === entry) this.series.delete(entry.key);
  }

  /**
   * The series to write at `nowMs`: those that finished (no repeat within the window) with repeats
   * not yet written, and those still growing whose last write is older than the refresh period.
   * A finished series, and an Event that had no repeat, is forgotten.
   */
  due(nowMs: number): SeriesEntry[] {
    const writes: SeriesEntry[] = this.finished;
    this.finished = [];
    for (const [key, entry] of this.series) {
      const finished = nowMs - entry.lastObservedMs >= this.limits.seriesWindowMs;
      if (finished) this.series.delete(key);
      if (entry.count > entry.writtenCount && (finished || nowMs - entry.writtenMs >= this.limits.seriesRefreshMs)) writes.push(entry);
    }
    return writes;
  }

  /** How many objects and series are remembered (the memory bound's test reads it). */
  get size(): { readonly buckets: number; readonly series: number } {
    return { buckets: this.buckets.size, series: this.series.size };
  }

  private take(key: string, nowMs: number): boolean {
    const bucket = this.buckets.get(key) ?? { tokens: this.limits.burst, updatedMs: nowMs };
    bucket.tokens = Math.min(this.limits.burst, bucket.tokens + Math.max(0, nowMs - bucket.updatedMs) / this.limits.refillMs);
    bucket.updatedMs = nowMs;
    touch(this.buckets, key, bucket);
    evictOldest(this.buckets, this.limits.keys);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }
}

/**
 * A queue of at most `capacity` items, and at most `perNamespace` of one namespace, so that one
 * namespace's denials never fill it for the others. `push` refuses rather than waits.
 */
export class BoundedQueue<T> {
  private readonly items: { readonly namespace: string; readonly item: T }[] = [];
  private head = 0;
  private readonly counts = new Map<string, number>();

  constructor(
    readonly capacity: number,
    readonly perNamespace: number,
  ) {}

  get size(): number {
    return this.items.length - this.head;
  }

  push(namespace: string, item: T): boolean {
    const count = this.counts.get(namespace) ?? 0;
    if (this.size >= this.capacity || count >= this.perNamespace) return false;
    this.counts.set(namespace, count + 1);
    this.items.push({ namespace, item });
    return true;
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const next = this.items[this.head];
    this.head += 1;
    // Compacted once half is spent: each item is moved at most once more, so shifting stays O(1) amortised.
    if (this.head * 2 >= this.items.length) {
      this.items.splice(0, this.head);
      this.head = 0;
    }
    if (next === undefined) return undefined;
    const count = (this.counts.get(next.namespace) ?? 1) - 1;
    if (count === 0) this.counts.delete(next.namespace);
    else this.counts.set(next.namespace, count);
    return next.item;
  }
}

/** tools/events' isomorphic key (getKey), but reportingInstance, which is this process's alone. */
export function seriesKey(intent: EventIntent): string {
  const r = intent.regarding;
  return [
    intent.type,
    intent.action,
    intent.reason,
    intent.reportingController,
    r.apiVersion,
    r.kind,
    r.namespace ?? '',
    r.name,
    r.uid ?? '',
  ].join('\u0000');
}

/** tools/record's getSpamKey: the source, the object and the type. */
export function spamKey(intent: EventIntent): string {
  const r = intent.regarding;
  return [intent.reportingController, r.apiVersion, r.kind, r.namespace ?? '', r.name, r.uid ?? '', intent.type].join('\u0000');
}

/** Makes `key` the most recently used of `map`. */
function touch<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
}

function evictOldest<V>(map: Map<string, V>, keys: number): void {
  while (map.size > keys) {
    const oldest = map.keys().next();
    if (oldest.done === true) return;
    map.delete(oldest.value);
  }
}

/**
 * The periodic audit's findings already reported as Events, so that a finding is reported once
 * and not again every interval while it stands (an hour's interval is past any series window). A
 * run keeps the keys it found again and adds those it reported; a finding that disappears is
 * forgotten, and reported anew if it comes back. At most `capacity` keys (each under 600 bytes:
 * a rule, a policy and object names of at most 253 characters): past it, the rest of a run's
 * findings are neither reported nor remembered, and wait for a later run.
 */
export class ReportedFindings {
  private reported = new Set<string>();

  constructor(readonly capacity: number) {}

  get size(): number {
    return this.reported.size;
  }

  /** Runs `report` on each finding of this run not yet reported (true: it was taken); returns how many were. */
  run<T>(findings: readonly T[], keyOf: (finding: T) => string, report: (finding: T) => boolean): number {
    const next = new Set<string>();
    let reported = 0;
    for (const finding of findings) {
      if (next.size >= this.capacity) break;
      const key = keyOf(finding);
      if (this.reported.has(key)) {
        next.add(key);
      } else if (report(finding)) {
        next.add(key);
        reported += 1;
      }
    }
    this.reported = next;
    return reported;
  }
}
