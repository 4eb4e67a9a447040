import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AuditCollector } from '../../src/audit/audit-summary.js';
import { buildPolicyReports, reportApis } from '../../src/audit/policy-reports.js';
import type { ApiRequest, ApiResponse } from '../../src/kube/api-requests.js';
import { discoverReportApi, writePolicyReports } from '../../src/kube/policy-report-writer.js';

const [wgpolicy] = reportApis;
if (wgpolicy === undefined) throw new Error('no report API');
const noPause = (): Promise<void> => Promise.resolve();
const collector = new AuditCollector();
collector.add({ violations: [{ namespace: 'shop', name: 'web-0', node: 'n1', rule: 'missing-memory-pressure', message: 'm' }] });
const reports = buildPolicyReports(wgpolicy, collector.result(), () => undefined, new Date(0));

/** An API server that answers each request from `answer` and records it. */
function stub(answer: (method: string, path: string) => ApiResponse): { request: ApiRequest; seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    request: (method, path) => {
      seen.push(`${method} ${path}`);
      return Promise.resolve(answer(method, path));
    },
  };
}

describe('writePolicyReports', () => {
  it('a create answered 409 (another replica wrote it first) is no failure', async () => {
    const { request } = stub((method) =>
      method === 'GET' ? { status: 200, body: { items: [] } } : { status: 409, body: { message: 'exists' } },
    );
    const writes = await writePolicyReports(request, wgpolicy, reports, noPause);
    assert.deepEqual(writes, { written: 1, deleted: 0, failures: [] });
  });

  it('any other refusal is a failure naming the report and the answer; the other writes go on', async () => {
    const { request, seen } = stub((method) => {
      if (method === 'GET') {
        return { status: 200, body: { items: [{ metadata: { name: 'tolerator-audit', namespace: 'old', resourceVersion: '7' } }] } };
      }
      return method === 'POST' ? { status: 500, body: { message: 'etcd is down' } } : { status: 200, body: {} };
    });
    const writes = await writePolicyReports(request, wgpolicy, reports, noPause);
    assert.deepEqual(writes, { written: 0, deleted: 1, failures: ['creating PolicyReport shop/tolerator-audit: HTTP 500: etcd is down'] });
    assert.deepEqual(seen, [
      'GET /apis/wgpolicyk8s.io/v1alpha2/policyreports?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dtolerator%2Capp.kubernetes.io%2Fcomponent%3Daudit',
      'POST /apis/wgpolicyk8s.io/v1alpha2/namespaces/shop/policyreports',
      'DELETE /apis/wgpolicyk8s.io/v1alpha2/namespaces/old/policyreports/tolerator-audit',
    ]);
  });
});

describe('discoverReportApi', () => {
  it('prefers wgpolicyk8s.io, falls back to openreports.io, and finds none without either CRD', async () => {
    const served = (groups: readonly string[]) =>
      stub((_, path) => {
        const api = reportApis.find((candidate) => path === `/apis/${candidate.group}/${candidate.version}`);
        return api !== undefined && groups.includes(api.group)
          ? { status: 200, body: { resources: [{ name: api.resource }] } }
          : { status: 404, body: undefined };
      }).request;
    assert.equal((await discoverReportApi(served(['wgpolicyk8s.io', 'openreports.io'])))?.kind, 'PolicyReport');
    assert.equal((await discoverReportApi(served(['openreports.io'])))?.kind, 'Report');
    assert.equal(await discoverReportApi(served([])), undefined);
  });

  it('a discovery the API server refuses (not 404) is an error for the caller to log', async () => {
    const { request } = stub(() => ({ status: 403, body: { message: 'forbidden' } }));
    await assert.rejects(discoverReportApi(request), /discovering wgpolicyk8s.io\/v1alpha2: HTTP 403: forbidden/);
  });
});
