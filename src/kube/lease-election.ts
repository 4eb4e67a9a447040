/**
 * Leader election on a coordination.k8s.io/v1 Lease, for the periodic audit of `serve`: of all
 * replicas, only the one holding the Lease audits, so three replicas list the cluster's pods once
 * an interval, not three times. The decision is src/api/lease-election.ts (client-go's); this is
 * the loop that reads and writes the Lease and keeps time, with client-go's timing:
 *
 * - leaseDuration 15 s: how long a replica waits, after it last saw the Lease change, before it
 *   takes it from a holder that stopped renewing (a crashed or partitioned replica): the audit
 *   resumes on another replica within that plus one retry;
 * - renewDeadline 10 s: how long the holder keeps trying to renew before it stops acting as
 *   leader. Shorter than leaseDuration by 5 s, so the holder stops before anyone else may start:
 *   both measure from the last successful write, each on its own clock, and 5 s in 15 s leaves a
 *   third of the lease for the two clocks' rates to differ and for the last write's latency;
 * - retryPeriod 2 s: the wait between tries, holder or not, stretched at random as client-go's
 *   wait.Jitter(retryPeriod, JitterFactor 1.2) stretches it (retry + rand × 1.2 × retry: 2 to
 *   4.4 s), so replicas started together spread out.
 *   A try is one GET and at most one PUT or POST: three replicas cost the API server about 1.5
 *   small requests a second, against the hundreds of pod-page requests an audit is.
 *
 * These are client-go's leaderelection defaults (LeaseDuration 15 s, RenewDeadline 10 s,
 * RetryPeriod 2 s, as kube-controller-manager and kube-scheduler use them).
 *
 * On stop() the Lease is given up (holder cleared, as client-go's ReleaseOnCancel), so a rolling
 * update hands the audit over within one retry instead of leaseDuration.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { decideLease, releasedLease, type LeaseSpec, type Observation } from '../api/lease-election.js';
import { describeFailure, type ApiRequest } from './api-requests.js';

export interface LeaseTiming {
  readonly leaseDurationSeconds: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  /** A wait is retryPeriodMs plus up to this many times it, at random (client-go's JitterFactor). */
  readonly jitterFactor: number;
}

export const defaultLeaseTiming: LeaseTiming = {
  leaseDurationSeconds: 15,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
  jitterFactor: 1.2,
};

export interface LeaseElectionOptions {
  readonly request: ApiRequest;
  readonly namespace: string;
  readonly name: string;
  /** Unique among the replicas: the pod's name and a random suffix (client-go: hostname + "_" + UUID). */
  readonly identity?: string;
  readonly timing?: Partial<LeaseTiming>;
  readonly onStartedLeading: () => void;
  readonly onStoppedLeading: () => void;
  readonly logger: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  /** Monotonic milliseconds (tests). */
  readonly clock?: () => number;
  readonly random?: () => number;
}

export interface LeaseElection {
  readonly identity: string;
  isLeader(): boolean;
  start(): void;
  /** Stops trying; gives the Lease up if held. Resolves once the release was attempted. */
  stop(): Promise<void>;
}

interface LeaseObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; [key: string]: unknown };
  spec?: LeaseSpec;
}

/** The identity client-go's callers use: the host name (a pod's name) and a UUID. */
export function defaultIdentity(): string {
  return `${hostname()}_${randomUUID()}`;
}

export function createLeaseElection(options: LeaseElectionOptions): LeaseElection {
  const timing = { ...defaultLeaseTiming, ...options.timing };
  const clock = options.clock ?? (() => performance.now());
  const random = options.random ?? Math.random;
  const identity = options.identity ?? defaultIdentity();
  const path = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(options.namespace)}/leases`;
  const stopping = new AbortController();
  let observation: Observation | undefined;
  let leader = false;
  let timer: NodeJS.Timeout | undefined;
  /** While leading: fires renewDeadline after the last successful write, and ends the leadership. */
  let deadline: NodeJS.Timeout | undefined;
  let trying: Promise<void> | undefined;
  let lastObject: LeaseObject | undefined;

  /** One try: read, decide, write. True when this replica holds the Lease after it. */
  async function tryAcquireOrRenew(): Promise<boolean> {
    // A try never outlives the renew deadline: a request hung on a dead connection must not keep
    // a holder believing it leads (each request's own 60 s deadline would).
    const signal = AbortSignal.any([stopping.signal, AbortSignal.timeout(timing.renewDeadlineMs)]);
    const read = await options.request('GET', `${path}/${encodeURIComponent(options.name)}`, undefined, { signal });
    if (read.status !== 200 && read.status !== 404)
      throw new Error(`reading Lease ${options.namespace}/${options.name}: ${describeFailure(read)}`);
    const current = read.status === 404 ? undefined : (read.body as LeaseObject);
    const decision = decideLease(current?.spec, observation, identity, timing.leaseDurationSeconds, clock(), new Date());
    observation = decision.observation;
    if (!decision.write) return false;
    const object: LeaseObject = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { ...(current?.metadata ?? {}), name: options.name, namespace: options.namespace },
      spec: decision.spec,
    };
    const written =
      current === undefined
        ? await options.request('POST', path, object, { signal })
        : await options.request('PUT', `${path}/${encodeURIComponent(options.name)}`, object, { signal });
    // 409: another replica wrote first (AlreadyExists, or Conflict on the resourceVersion): it won this round.
    if (written.status === 409) return false;
    if (written.status !== 200 && written.status !== 201) {
      throw new Error(`writing Lease ${options.namespace}/${options.name}: ${describeFailure(written)}`);
    }
    lastObject = written.body as LeaseObject;
    observation = { record: JSON.stringify(lastObject.spec ?? null), atMs: clock() };
    return true;
  }

  async function tick(): Promise<void> {
    let held = false;
    try {
      held = await tryAcquireOrRenew();
    } catch (error) {
      if (stopping.signal.aborted) return;
      options.logger.warn(
        { error: error instanceof Error ? error.message : String(error), lease: options.name },
        'audit lease: try failed',
      );
    }
    if (stopping.signal.aborted || !held) return;
    // A timer, not a check at the next try: a try may take up to renewDeadline itself, and the
    // holder must stop leading renewDeadline after its last write, whatever its tries are doing.
    clearTimeout(deadline);
    deadline = setTimeout(lose, timing.renewDeadlineMs);
    deadline.unref();
    if (!leader) {
      leader = true;
      options.logger.info({ identity, lease: `${options.namespace}/${options.name}` }, 'audit lease acquired: this replica audits');
      options.onStartedLeading();
    }
  }

  function lose(): void {
    if (!leader) return;
    leader = false;
    options.logger.warn(
      { identity, lease: `${options.namespace}/${options.name}` },
      'audit lease not renewed in time: this replica stops auditing',
    );
    options.onStoppedLeading();
  }

  const schedule = (): void => {
    if (stopping.signal.aborted) return;
    const wait = timing.retryPeriodMs + random() * timing.jitterFactor * timing.retryPeriodMs;
    timer = setTimeout(() => {
      trying = tick().finally(() => {
        trying = undefined;
        schedule();
      });
    }, wait);
    timer.unref();
  };

  return {
    identity,
    isLeader: () => leader,
    start: () => {
      trying = tick().finally(() => {
        trying = undefined;
        schedule();
      });
    },
    stop: async () => {
      stopping.abort(new Error('the lease election was stopped'));
      clearTimeout(timer);
      clearTimeout(deadline);
      await trying;
      if (!leader || lastObject?.spec === undefined) return;
      leader = false;
      options.onStoppedLeading();
      try {
        const released = { ...lastObject, spec: releasedLease(lastObject.spec, new Date()) };
        await options.request('PUT', `${path}/${encodeURIComponent(options.name)}`, released, {
          signal: AbortSignal.timeout(timing.retryPeriodMs),
        });
      } catch {
        // The Lease expires on its own within leaseDuration.
      }
    },
  };
}
