/**
 * Writes the periodic audit's policy reports (src/audit/policy-reports.ts) when their CRD is
 * installed: discovery first (`GET /apis/<group>/<version>`, which lists the served resources),
 * nothing written and nothing failed when neither report API is served.
 *
 * Each report is `tolerator-audit` in its namespace with tolerator's labels; after an audit, every
 * namespace with violations gets its report created or replaced, and every report of tolerator's
 * in a namespace without violations any more is deleted (found by its labels), so no stale report
 * outlives what it reported. A write that fails is counted and logged; the rest go on.
 *
 * One replica audits and writes at a time (the audit Lease, src/kube/lease-election.ts; or every
 * replica, with --audit-lease=''). A create answered 409 AlreadyExists, or a replace answered 409
 * Conflict, means another replica wrote the report between this one's list and its write (during
 * a hand-over of the Lease, or without one), from an audit of the same cluster; it is left as it is.
 */
import { reportLabelSelector, reportApis, reportName, type ReportApi, type ReportObject } from '../audit/policy-reports.js';
import { describeFailure, type ApiRequest } from './api-requests.js';

/** The first report API (in order of preference) whose resource the API server serves, or undefined. */
export async function discoverReportApi(request: ApiRequest): Promise<ReportApi | undefined> {
  for (const api of reportApis) {
    const response = await request('GET', `/apis/${api.group}/${api.version}`);
    if (response.status === 404) continue;
    if (response.status !== 200) throw new Error(`discovering ${api.group}/${api.version}: ${describeFailure(response)}`);
    const resources = (response.body as { resources?: unknown } | undefined)?.resources;
    if (Array.isArray(resources) && resources.some((resource) => (resource as { name?: unknown } | null)?.name === api.resource)) {
      return api;
    }
  }
  return undefined;
}

export interface ReportWrites {
  readonly written: number;
  readonly deleted: number;
  /** One line per failed write. */
  readonly failures: readonly string[];
}

export async function writePolicyReports(
  request: ApiRequest,
  api: ReportApi,
  desired: ReadonlyMap<string, ReportObject>,
  pause: () => Promise<void>,
): Promise<ReportWrites> {
  const base = `/apis/${api.group}/${api.version}`;
  const listed = await request('GET', `${base}/${api.resource}?labelSelector=${encodeURIComponent(reportLabelSelector)}`);
  if (listed.status !== 200) throw new Error(`listing ${api.resource}: ${describeFailure(listed)}`);
  const existing = new Map<string, string>();
  const items = (listed.body as { items?: unknown } | undefined)?.items;
  for (const item of Array.isArray(items) ? items : []) {
    const metadata = (item as { metadata?: { name?: unknown; namespace?: unknown; resourceVersion?: unknown } } | null)?.metadata;
    if (metadata?.name === reportName && typeof metadata.namespace === 'string') {
      existing.set(metadata.namespace, typeof metadata.resourceVersion === 'string' ? metadata.resourceVersion : '');
    }
  }
  let written = 0;
  let deleted = 0;
  const failures: string[] = [];
  const attempt = async (what: string, send: () => ReturnType<ApiRequest>, ok: (status: number) => boolean): Promise<boolean> => {
    await pause();
    try {
      const response = await send();
      if (ok(response.status)) return true;
      failures.push(`${what}: ${describeFailure(response)}`);
    } catch (error) {
      failures.push(`${what}: ${error instanceof Error ? error.message : String(error)}`);
    }
    return false;
  };
  for (const [namespace, report] of desired) {
    const collection = `${base}/namespaces/${encodeURIComponent(namespace)}/${api.resource}`;
    const resourceVersion = existing.get(namespace);
    const done =
      resourceVersion === undefined
        ? await attempt(
            `creating ${api.kind} ${namespace}/${reportName}`,
            () => request('POST', collection, report),
            (s) => s === 201 || s === 200 || s === 409,
          )
        : await attempt(
            `replacing ${api.kind} ${namespace}/${reportName}`,
            () => request('PUT', `${collection}/${reportName}`, { ...report, metadata: { ...report.metadata, resourceVersion } }),
            (s) => s === 200 || s === 409,
          );
    if (done) written += 1;
  }
  for (const namespace of existing.keys()) {
    if (desired.has(namespace)) continue;
    const path = `${base}/namespaces/${encodeURIComponent(namespace)}/${api.resource}/${reportName}`;
    // 404: already gone (its namespace was deleted, or another replica deleted it).
    if (
      await attempt(
        `deleting ${api.kind} ${namespace}/${reportName}`,
        () => request('DELETE', path),
        (s) => s === 200 || s === 202 || s === 404,
      )
    ) {
      deleted += 1;
    }
  }
  return { written, deleted, failures };
}
