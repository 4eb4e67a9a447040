/**
 * The policy-report objects the periodic audit writes: one per namespace with violations, in the
 * format of the Kubernetes policy working group that Kyverno and Policy Reporter read.
 *
 * Two API groups carry the same report shape (results with source, policy, rule, result,
 * severity, timestamp, resources, message, properties; a pass/fail/warn/error/skip summary):
 * - `wgpolicyk8s.io/v1alpha2` `PolicyReport`: what Kyverno writes by default (1.15 included) and
 *   what Policy Reporter 2 and 3 read;
 * - `openreports.io/v1alpha1` `Report`: its successor (the working group's API moved to the
 *   OpenReports project), written by Kyverno 1.15+ only with `--openreportsEnabled` and read by
 *   Policy Reporter 3.
 * The edge (src/kube/policy-report-writer.ts) uses the first whose CRD the API server serves, so a
 * cluster that has only the new one gets it too. Pure: the findings and the time in, objects out.
 * The findings may be only each namespace's first maxResultsPerReport (what the periodic audit
 * keeps); the summaries come from the counts, which count them all.
 */
import type { AuditViolation } from './audit-rules.js';
import type { AuditResult } from './audit-summary.js';

export interface ReportApi {
  readonly group: 'wgpolicyk8s.io' | 'openreports.io';
  readonly version: string;
  readonly kind: 'PolicyReport' | 'Report';
  /** The plural resource name, for its URL. */
  readonly resource: 'policyreports' | 'reports';
}

/** In order of preference (see the file comment). */
export const reportApis: readonly ReportApi[] = [
  { group: 'wgpolicyk8s.io', version: 'v1alpha2', kind: 'PolicyReport', resource: 'policyreports' },
  { group: 'openreports.io', version: 'v1alpha1', kind: 'Report', resource: 'reports' },
];

/** Every report tolerator writes has this name in its namespace and these labels, so stale ones can be found and deleted. */
export const reportName = 'tolerator-audit';
export const reportLabels: Readonly<Record<string, string>> = {
  'app.kubernetes.io/managed-by': 'tolerator',
  'app.kubernetes.io/component': 'audit',
};
/** The label selector for listing them. */
export const reportLabelSelector = Object.entries(reportLabels)
  .map(([key, value]) => `${key}=${value}`)
  .join(',');

/**
 * Results one report holds at most; `summary` still counts them all. etcd refuses objects over
 * 1.5 MiB (the API server's default --max-request-bytes is 3 MiB, etcd's limit is lower); a
 * result is a message of at most ~1.5 KB (audit-rules.ts spells out at most 10 items) plus its
 * resource reference and properties, under 2 KB: 500 results stay below 1 MiB with room to spare.
 */
export const maxResultsPerReport = 500;

export interface ReportObject {
  readonly apiVersion: string;
  readonly kind: string;
  /** No namespace for the cluster-wide report of the Nodes' and NodePools' findings (key ''). */
  readonly metadata: { name: string; namespace?: string; labels: Record<string, string>; resourceVersion?: string };
  readonly [field: string]: unknown;
}

type Outcome = 'fail' | 'warn';

/**
 * The object a finding is about: a Pod, a Node, Karpenter NodePool or RuntimeClass for the
 * node-side rules, a ResourceClaim for the claim rule. A report's result names it, and so does the
 * audit's Event (src/events/event-intents.ts).
 */
export function violationObject(violation: AuditViolation): {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace?: string;
  readonly name: string;
} {
  if (violation.kind === 'Node') return { apiVersion: 'v1', kind: 'Node', name: violation.name };
  if (violation.kind === 'NodePool') return { apiVersion: 'karpenter.sh/v1', kind: 'NodePool', name: violation.name };
  if (violation.kind === 'RuntimeClass') return { apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', name: violation.name };
  if (violation.kind === 'ResourceClaim') {
    return { apiVersion: 'resource.k8s.io/v1', kind: 'ResourceClaim', namespace: violation.namespace, name: violation.name };
  }
  return { apiVersion: 'v1', kind: 'Pod', namespace: violation.namespace, name: violation.name };
}

/**
 * One report per namespace with violations, keyed by namespace; `now` is the audit's completion
 * time. A report's `pass` counts the namespace's pods that broke no rule (`passed`; one per pod,
 * as tolerator's results are one per finding, not one per rule checked). A namespace whose pods all
 * passed gets no report: the periodic audit deletes tolerator's report there, so that a report
 * always means there is something to look at, and a cluster of many namespaces is not written one
 * object per namespace every interval.
 */
export function buildPolicyReports(
  api: ReportApi,
  findings: Pick<AuditResult, 'violations' | 'counts'> & Partial<Pick<AuditResult, 'passed'>>,
  enforcementOf: (policy: string) => 'Deny' | 'Warn' | undefined,
  now: Date,
): Map<string, ReportObject> {
  // A Warn policy's violation is what its enforcement makes of it: a warning, not a refusal.
  // The format defines warn as "requirements not met, and the policy is not scored".
  const outcome = (policy: string | undefined): Outcome => (policy !== undefined && enforcementOf(policy) === 'Warn' ? 'warn' : 'fail');
  const summaries = new Map<string, { fail: number; warn: number }>();
  for (const { namespace, policy, count } of findings.counts) {
    let summary = summaries.get(namespace);
    if (summary === undefined) {
      summary = { fail: 0, warn: 0 };
      summaries.set(namespace, summary);
    }
    summary[outcome(policy)] += count;
  }
  const byNamespace = new Map<string, AuditViolation[]>();
  for (const violation of findings.violations) {
    const list = byNamespace.get(violation.namespace);
    if (list === undefined) byNamespace.set(violation.namespace, [violation]);
    else if (list.length < maxResultsPerReport) list.push(violation);
  }
  const passed = new Map((findings.passed ?? []).map(({ namespace, count }) => [namespace, count]));
  const seconds = Math.floor(now.getTime() / 1000);
  const reports = new Map<string, ReportObject>();
  for (const [namespace, { fail, warn }] of summaries) {
    const results = (byNamespace.get(namespace) ?? []).map((violation) => {
      const result = outcome(violation.policy);
      return {
        source: 'tolerator',
        policy: violation.policy ?? 'tolerator',
        rule: violation.rule,
        category:
          violation.policy === undefined ? 'Tolerations' : violation.kind === 'ResourceClaim' ? 'Dedicated devices' : 'Dedicated nodes',
        severity: 'medium',
        result,
        scored: result === 'fail',
        timestamp: { seconds, nanos: 0 },
        message: violation.message,
        resources: [violationObject(violation)],
        properties: { node: violation.node },
      };
    });
    // The findings on Nodes and NodePools (namespace ''), which `tolerator audit` makes, go to the
    // cluster-scoped twin of the report (ClusterPolicyReport, ClusterReport), as Kyverno writes
    // its findings on cluster-scoped objects.
    const clusterWide = namespace === '';
    reports.set(namespace, {
      apiVersion: `${api.group}/${api.version}`,
      kind: clusterWide ? `Cluster${api.kind}` : api.kind,
      metadata: { name: reportName, ...(clusterWide ? {} : { namespace }), labels: { ...reportLabels } },
      ...(api.group === 'openreports.io' ? { source: 'tolerator' } : {}),
      summary: { pass: passed.get(namespace) ?? 0, fail, warn, error: 0, skip: 0 },
      results,
    });
  }
  return reports;
}
