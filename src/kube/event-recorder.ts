/**
 * Writes the Events of `serve --emit-events` (`events.k8s.io/v1`): the webhooks' denials of
 * workload templates and the periodic audit's findings (which ones and what they say:
 * src/events/event-intents.ts), through the API server, in the background.
 *
 * Never in the way of a review: `record` is called after the answer is written, does a few map
 * look-ups and returns; the write happens later, from a bounded queue, or not at all. A tenant
 * decides how many objects get denied, so everything is bounded whatever it does
 * (src/events/event-throttle.ts says why each number):
 * - per object, client-go's spam filter (25 Events, then one per 5 minutes) and series (a repeat
 *   within 6 minutes is counted, not written again), over at most 4,096 objects remembered;
 * - in all, a queue of 1,000 writes (tools/events' maxQueuedEvents), at most 100 of one namespace,
 *   drained at 5 writes a second (client-go's default client rate, rest.Config QPS 5, which the
 *   periodic audit keeps to as well): a full queue drops, counted in tolerator_events_total
 *   {outcome="dropped"}, and never waits;
 * - a write that fails (RBAC not granted, the API server away) is counted
 *   ({outcome="failed"}) and logged at most once a minute, with how many failed meanwhile; it is
 *   not retried (tools/events retries 12 times, 10 s apart: an Event is a hint, and retries would
 *   hold the queue while the API server is least able to take them).
 */
import type { Logger } from 'pino';
import type { EventIntent } from '../events/event-intents.js';
import {
  BoundedQueue,
  EventThrottle,
  eventLimits,
  type EventLimits,
  type EventSource,
  type SeriesEntry,
} from '../events/event-throttle.js';
import { describeFailure, type ApiRequest } from './api-requests.js';

export interface EventPace {
  readonly queueCapacity: number;
  readonly queuePerNamespace: number;
  readonly writesPerSecond: number;
  /** How often finished and long series are looked for (their counts written). */
  readonly seriesCheckMs: number;
  /** At most one log line about failed writes per this long. */
  readonly failureLogMs: number;
}

export const eventPace: EventPace = {
  queueCapacity: 1000,
  queuePerNamespace: 100,
  writesPerSecond: 5,
  seriesCheckMs: 60_000,
  failureLogMs: 60_000,
};

export interface EventRecorderOptions {
  readonly request: ApiRequest;
  /** This replica (client-go: the controller's name and the host name), at most 128 characters. */
  readonly reportingInstance: string;
  /** tolerator_events_total (src/http/metrics.ts, which src/kube does not import: the composition root passes it). */
  readonly metrics: { readonly events: { inc(labels: { source: string; outcome: string }, value?: number): void } };
  readonly logger: Pick<Logger, 'warn'>;
  /** Milliseconds since the epoch: eventTime, series times and the token buckets. */
  readonly now?: () => number;
  readonly limits?: Partial<EventLimits>;
  readonly pace?: Partial<EventPace>;
}

export interface EventRecorder {
  /** Takes an Event to write; false when it is not going to be written (throttled, or the queue is full). */
  record(intent: EventIntent, source: EventSource): boolean;
  /** Resolves once nothing is queued or being written (tests). */
  idle(): Promise<void>;
  /** Drops what is queued, ends the write in flight, and resolves once it has unwound. */
  stop(): Promise<void>;
}

type Write =
  | { readonly op: 'create'; readonly entry: SeriesEntry; readonly intent: EventIntent; readonly eventTimeMs: number }
  | { readonly op: 'series'; readonly entry: SeriesEntry };

export const eventSources: readonly EventSource[] = ['admission', 'audit'];
export const eventOutcomes = ['written', 'series_written', 'repeated', 'throttled', 'dropped', 'failed'] as const;

export function createEventRecorder(options: EventRecorderOptions): EventRecorder {
  const now = options.now ?? Date.now;
  const pace = { ...eventPace, ...options.pace };
  const { metrics, logger, request } = options;
  const stopping = new AbortController();
  let sequence = 0;
  // client-go's GenerateEventName: <name>.<time in hex>; the sequence tells apart two Events of one
  // object in the same millisecond. A name too long for a DNS subdomain (a 253-character object's)
  // is cut: an Event's name is nobody's reference.
  const throttle = new EventThrottle({ ...eventLimits, ...options.limits }, (name) => {
    sequence = (sequence + 1) % 1_000_000;
    const suffix = `.${(BigInt(now()) * 1_000_000n + BigInt(sequence)).toString(16)}`;
    return `${name.slice(0, 253 - suffix.length).replace(/[.-]+$/, '')}${suffix}`;
  });
  const queue = new BoundedQueue<Write>(pace.queueCapacity, pace.queuePerNamespace);
  let pumping: Promise<void> | undefined;
  let failures = 0;
  let lastFailureLog = -Infinity;

  const count = (source: EventSource, outcome: (typeof eventOutcomes)[number]): void => {
    metrics.events.inc({ source, outcome });
  };
  const enqueue = (write: Write): boolean => {
    if (!queue.push(write.entry.namespace, write)) {
      count(write.entry.source, 'dropped');
      if (write.op === 'create') throttle.forget(write.entry);
      return false;
    }
    pumping ??= pump().finally(() => {
      pumping = undefined;
    });
    return true;
  };

  async function pump(): Promise<void> {
    // Begun on a later turn of the event loop: record() returns having done nothing but book-keeping.
    await new Promise((resolve) => setImmediate(resolve));
    for (let write = queue.shift(); write !== undefined && !stopping.signal.aborted; write = queue.shift()) {
      await send(write);
      if (queue.size > 0) await sleep(1000 / pace.writesPerSecond);
    }
  }

  async function send(write: Write): Promise<void> {
    const { entry } = write;
    const path = `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(entry.namespace)}/events`;
    const writtenCount = entry.count;
    try {
      const response =
        write.op === 'create'
          ? await request('POST', path, eventBody(write, options.reportingInstance), { signal: stopping.signal })
          : await request(
              'PATCH',
              `${path}/${encodeURIComponent(entry.name)}`,
              { series: { count: writtenCount, lastObservedTime: microTime(entry.lastObservedMs) } },
              { signal: stopping.signal },
            );
      if (response.status === 200 || response.status === 201) {
        entry.writtenCount = writtenCount;
        entry.writtenMs = now();
        count(entry.source, write.op === 'create' ? 'written' : 'series_written');
        return;
      }
      failed(write, describeFailure(response));
    } catch (error) {
      if (stopping.signal.aborted) return;
      failed(write, error instanceof Error ? error.message : String(error));
    }
  }

  function failed(write: Write, why: string): void {
    count(write.entry.source, 'failed');
    if (write.op === 'create') throttle.forget(write.entry);
    failures += 1;
    const at = now();
    if (at - lastFailureLog < pace.failureLogMs) return;
    logger.warn(
      { error: why, namespace: write.entry.namespace, failedSinceLastLog: failures },
      'an Event could not be written (tolerator_events_total{outcome="failed"} counts them); at most one such line a minute',
    );
    failures = 0;
    lastFailureLog = at;
  }

  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        stopping.signal.removeEventListener('abort', done);
        resolve();
      };
      // Not unref'd: at most 1/writesPerSecond, and stop() ends it.
      const timer = setTimeout(done, ms);
      stopping.signal.addEventListener('abort', done, { once: true });
    });

  const seriesTimer = setInterval(() => {
    for (const entry of throttle.due(now())) enqueue({ op: 'series', entry });
  }, pace.seriesCheckMs);
  seriesTimer.unref();

  return {
    record(intent, source) {
      if (stopping.signal.aborted) return false;
      const namespace = intent.regarding.namespace ?? 'default';
      const at = now();
      const offer = throttle.offer(intent, source, namespace, at);
      switch (offer.kind) {
        case 'throttled':
          count(source, 'throttled');
          return false;
        case 'counted':
          count(source, 'repeated');
          return true;
        case 'series':
          count(source, 'repeated');
          return enqueue({ op: 'series', entry: offer.entry });
        case 'create':
          return enqueue({ op: 'create', entry: offer.entry, intent, eventTimeMs: at });
      }
    },
    async idle() {
      while (pumping !== undefined) await pumping;
    },
    async stop() {
      stopping.abort();
      clearInterval(seriesTimer);
      await pumping;
    },
  };
}

/**
 * The Event as events.k8s.io/v1 takes it. Its namespace is the object's; a cluster-scoped
 * object's (a Node, a NodePool) Event goes to `default`, as client-go's makeEvent puts it (the
 * API server accepts only default or kube-system for an Event without a namespace of its own).
 */
function eventBody(write: Extract<Write, { op: 'create' }>, reportingInstance: string): Record<string, unknown> {
  const { entry, intent } = write;
  return {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name: entry.name, namespace: entry.namespace },
    eventTime: microTime(write.eventTimeMs),
    reportingController: intent.reportingController,
    reportingInstance,
    action: intent.action,
    reason: intent.reason,
    regarding: intent.regarding,
    note: intent.note,
    type: intent.type,
  };
}

/** metav1.MicroTime on the wire: RFC 3339 with six digits of fraction. */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** client-go's reportingInstance: `<controller>-<host name>`, within the API server's 128 characters. */
export function reportingInstanceFor(hostname: string): string {
  return `tolerator-${hostname}`.slice(0, 128);
}
