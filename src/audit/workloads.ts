/**
 * `tolerator audit --group-by workload`: the findings gathered by the workload that owns the pods,
 * through their controller owner references, as `kubectl` and the garbage collector read them
 * (metav1.GetControllerOf: the one ownerReference with `controller: true`).
 *
 * A pod's controller is its workload when it is a StatefulSet, a DaemonSet, a ReplicationController
 * or any kind but the two that are themselves owned: a ReplicaSet is followed to its Deployment,
 * and a Job to its CronJob, when they have one (one step each: a Deployment and a CronJob are not
 * owned by anything Kubernetes ships). A pod without a controller is its own workload (kind Pod).
 *
 * Pure: the owner of a ReplicaSet or Job is asked of `readController`, which the edge answers from
 * the cluster (one read per distinct ReplicaSet or Job, cached) or from the file. The grouping
 * is linear in the findings.
 */
import { workloadOfController } from '../api/resource-kinds.js';
import type { ObjectMeta, OwnerReference } from '../api/types.js';
import type { AuditRuleName, AuditViolation } from './audit-rules.js';

export interface WorkloadRef {
  readonly kind: string;
  readonly name: string;
}

/** The controller owner reference of an object's metadata, or undefined (GetControllerOf). */
export function controllerOf(metadata: ObjectMeta | undefined): WorkloadRef | undefined {
  const owners = metadata?.ownerReferences;
  if (!Array.isArray(owners)) return undefined;
  // A stored object's entries are objects; a file's may be anything.
  for (const owner of owners as readonly (OwnerReference | null)[]) {
    if (
      owner !== null &&
      typeof owner === 'object' &&
      owner.controller === true &&
      typeof owner.kind === 'string' &&
      typeof owner.name === 'string'
    ) {
      return { kind: owner.kind, name: owner.name };
    }
  }
  return undefined;
}

/**
 * A pod's workload from its controller: a ReplicaSet or Job is replaced by its own controller when
 * that is the kind expected (a Deployment, a CronJob); `readController` undefined means none, or
 * the owner is gone (then the ReplicaSet or Job is the workload).
 */
export async function workloadOf(
  namespace: string,
  pod: string,
  controller: WorkloadRef | undefined,
  readController: (namespace: string, owner: WorkloadRef) => Promise<WorkloadRef | undefined>,
): Promise<WorkloadRef> {
  if (controller === undefined) return { kind: 'Pod', name: pod };
  const expected = workloadOfController.get(controller.kind);
  if (expected === undefined) return controller;
  const parent = await readController(namespace, controller);
  return parent !== undefined && parent.kind === expected ? parent : controller;
}

/** One row of `--group-by workload`: the pods of one workload that break one rule (under one policy). */
export interface WorkloadFinding {
  readonly namespace: string;
  readonly kind: string;
  readonly name: string;
  readonly rule: AuditRuleName;
  readonly policy?: string;
  /** Pods of the workload with this finding. */
  readonly pods: number;
  /** The first pod's (in the findings' order), and its message: a workload's pods share a template. */
  readonly examplePod: string;
  readonly message: string;
}

/**
 * The findings by workload, in the findings' order of first appearance (they come sorted by
 * namespace, pod and rule). `workloadOfPod` holds every pod of the findings, keyed `namespace/name`.
 */
export function groupByWorkload(violations: readonly AuditViolation[], workloadOfPod: ReadonlyMap<string, WorkloadRef>): WorkloadFinding[] {
  const groups = new Map<string, { finding: WorkloadFinding; pods: Set<string> }>();
  for (const violation of violations) {
    const workload = workloadOfPod.get(`${violation.namespace}/${violation.name}`) ?? { kind: 'Pod', name: violation.name };
    // NUL separates the parts: no namespace, kind, name, rule or policy holds one.
    const key = [violation.namespace, workload.kind, workload.name, violation.rule, violation.policy ?? ''].join('\u0000');
    const group = groups.get(key);
    if (group === undefined) {
      groups.set(key, {
        finding: {
          namespace: violation.namespace,
          kind: workload.kind,
          name: workload.name,
          rule: violation.rule,
          ...(violation.policy === undefined ? {} : { policy: violation.policy }),
          pods: 1,
          examplePod: violation.name,
          message: violation.message,
        },
        pods: new Set([violation.name]),
      });
    } else {
      group.pods.add(violation.name);
    }
  }
  const order = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  // Stable: within one workload, its rules stay in the findings' order.
  return [...groups.values()]
    .map(({ finding, pods }) => ({ ...finding, pods: pods.size }))
    .sort((a, b) => order(a.namespace, b.namespace) || order(a.kind, b.kind) || order(a.name, b.name));
}
