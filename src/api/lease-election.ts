/**
 * Leader election on a coordination.k8s.io/v1 Lease, decided as client-go's leaderelection
 * package decides it (tools/leaderelection/leaderelection.go, tryAcquireOrRenew), so that
 * tolerator's replicas and any Go controller read one Lease the same way:
 *
 * - a Lease held by another identity is taken only once its record has not changed for
 *   `leaseDurationSeconds`, measured on this replica's own clock from when it first saw that
 *   record (client-go's observedTime): the holder's clock is never compared with ours, so clock
 *   skew between nodes does not matter, only the rate at which the clocks run;
 * - a Lease with no holder (released) is taken at once;
 * - the holder renews by writing renewTime; taking over increments leaseTransitions and sets
 *   acquireTime; renewing keeps both.
 *
 * The Kubernetes client tolerator uses (@kubernetes/client-node 1.4.0) has no leader election, hence this
 * module. Pure: the Lease read, what was observed and the clocks in; the decision and the spec to
 * write out. src/kube/lease-election.ts does the requests and the timing.
 */

/** The fields of a Lease's spec this election reads and writes (coordination.k8s.io/v1 LeaseSpec). */
export interface LeaseSpec {
  readonly holderIdentity?: string;
  readonly leaseDurationSeconds?: number;
  /** MicroTime: RFC 3339 with microseconds. */
  readonly acquireTime?: string;
  readonly renewTime?: string;
  readonly leaseTransitions?: number;
}

/** What this replica last saw of the Lease, and when by its own monotonic clock. */
export interface Observation {
  /** The spec as read, compared whole to notice a change (client-go compares the record's bytes). */
  readonly record: string;
  readonly atMs: number;
}

export type LeaseDecision =
  /** Another identity holds it and its record changed less than leaseDurationSeconds ago. */
  | { readonly write: false; readonly observation: Observation }
  | { readonly write: true; readonly spec: LeaseSpec; readonly observation: Observation };

/**
 * What to do with the Lease as read (undefined: it does not exist yet, so it is created).
 * `monotonicMs` is this replica's monotonic clock, `now` the wall clock written into the record.
 */
export function decideLease(
  current: LeaseSpec | undefined,
  previous: Observation | undefined,
  identity: string,
  leaseDurationSeconds: number,
  monotonicMs: number,
  now: Date,
): LeaseDecision {
  const record = JSON.stringify(current ?? null);
  const observation = previous !== undefined && previous.record === record ? previous : { record, atMs: monotonicMs };
  const holder = current?.holderIdentity ?? '';
  const held = holder !== '' && holder !== identity;
  // The holder's own leaseDurationSeconds, as client-go reads it; ours when it wrote none.
  const duration = (current?.leaseDurationSeconds ?? leaseDurationSeconds) * 1000;
  if (held && observation.atMs + duration > monotonicMs) return { write: false, observation };
  const stamp = microTime(now);
  const renewing = current !== undefined && holder === identity;
  const spec: LeaseSpec = {
    holderIdentity: identity,
    leaseDurationSeconds,
    acquireTime: renewing && current.acquireTime !== undefined ? current.acquireTime : stamp,
    renewTime: stamp,
    leaseTransitions: current === undefined ? 0 : renewing ? (current.leaseTransitions ?? 0) : (current.leaseTransitions ?? 0) + 1,
  };
  return { write: true, spec, observation };
}

/**
 * The spec that gives the Lease up (client-go's ReleaseOnCancel): no holder, a duration of one
 * second, so the next replica takes it at its next try instead of waiting out the full duration.
 */
export function releasedLease(current: LeaseSpec, now: Date): LeaseSpec {
  const stamp = microTime(now);
  return { ...current, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: stamp, renewTime: stamp };
}

/** metav1.MicroTime as the API server writes it: `2006-01-02T15:04:05.000000Z`, always UTC. */
export function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
