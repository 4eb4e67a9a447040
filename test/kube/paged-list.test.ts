/**
 * listInPages against an API server that does not end its list: the same continue token again
 * and again, or a new one forever. A real API server does neither; one that does must fail the
 * list (the run fails, the next interval retries) rather than keep the audit listing forever
 * while its findings grow in the server's memory.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ResponseTooLarge, type ApiRequest } from '../../src/kube/api-requests.js';
import { listInPages } from '../../src/kube/paged-list.js';

const noPause = (): Promise<void> => Promise.resolve();

/** An API server answering every list request with `pageSize` pods and the continue token `next(n)` for the n-th page. */
function endlessServer(pageSize: number, next: (page: number) => string): { request: ApiRequest; requests: () => number } {
  let requests = 0;
  const request: ApiRequest = (_method, _path) => {
    requests += 1;
    const items = Array.from({ length: pageSize }, (_, i) => ({ metadata: { name: `p${requests}-${i}`, namespace: 'ns' } }));
    return Promise.resolve({ status: 200, body: { kind: 'PodList', metadata: { continue: next(requests) }, items } });
  };
  return { request, requests: () => requests };
}

describe('listInPages against a list that never ends', () => {
  it('the same continue token as the one just sent fails the list at the second page', async () => {
    const server = endlessServer(4, () => 'same');
    let pages = 0;
    await assert.rejects(
      listInPages(
        server.request,
        '/api/v1/pods',
        { pageSize: 4, maxRestarts: 3, pause: noPause },
        {
          onPage: () => {
            pages += 1;
          },
          onRestart: () => undefined,
        },
      ),
      /listing \/api\/v1\/pods: the API server answered the continue token "same" with the same token/,
    );
    assert.equal(server.requests(), 2);
    assert.equal(pages, 2);
  });

  it('a new token forever fails the list once it has returned more than maxItems items, before handing them on', async () => {
    const server = endlessServer(4, (page) => `token-${page}`);
    let items = 0;
    await assert.rejects(
      listInPages(
        server.request,
        '/api/v1/pods',
        { pageSize: 4, maxRestarts: 3, maxItems: 10, pause: noPause },
        {
          onPage: (page) => {
            items += page.length;
          },
          onRestart: () => undefined,
        },
      ),
      /listing \/api\/v1\/pods: more than 10 items/,
    );
    assert.equal(items, 8);
    assert.equal(server.requests(), 3);
  });
});

describe('listInPages against pages too large to hold', () => {
  /**
   * 30 pods; those named in `huge` are 1,000 bytes of JSON, the others 100. The server honours
   * `limit` and `continue` (an offset) and refuses, as createApiRequest does, a body over the
   * caller's maxBodyBytes.
   */
  function sizedServer(huge: ReadonlySet<number>): { request: ApiRequest; limits: number[] } {
    const limits: number[] = [];
    const pods = Array.from({ length: 30 }, (_, i) => ({
      metadata: { name: `p${i}`, namespace: 'ns' },
      pad: 'x'.repeat(huge.has(i) ? 1_000 : 100),
    }));
    const request: ApiRequest = (_method, path, _body, options) => {
      const query = new URLSearchParams(path.slice(path.indexOf('?') + 1));
      const limit = Number(query.get('limit'));
      const from = Number(query.get('continue') ?? 0);
      limits.push(limit);
      const items = pods.slice(from, from + limit);
      const next = from + limit < pods.length ? String(from + limit) : undefined;
      const body = { kind: 'PodList', metadata: next === undefined ? {} : { continue: next }, items };
      const bytes = JSON.stringify(body).length;
      if (options?.maxBodyBytes !== undefined && bytes > options.maxBodyBytes) {
        return Promise.reject(new ResponseTooLarge(`GET ${path}`, options.maxBodyBytes));
      }
      return Promise.resolve({ status: 200, body });
    };
    return { request, limits };
  }

  it('a page over maxPageBytes is asked for again with half the limit, down to one pod, and the limit grows back after', async () => {
    const server = sizedServer(new Set([12, 13]));
    const names: string[] = [];
    await listInPages(
      server.request,
      '/api/v1/pods',
      { pageSize: 8, maxRestarts: 3, maxPageBytes: 1_500, pause: noPause },
      {
        onPage: (items) => {
          for (const item of items) names.push((item as { metadata: { name: string } }).metadata.name);
        },
        onRestart: () => undefined,
      },
    );
    assert.deepEqual(
      names,
      Array.from({ length: 30 }, (_, i) => `p${i}`),
    );
    // p0-p7 fit in 8; p8-p15 (with p12 and p13) does not, p8-p11 does; p12-p19, p12-p15 and p12-p13 do not,
    // p12 alone does; then the limit doubles back: p13-p14, p15-p18, p19-p26, p27-p29.
    assert.deepEqual(server.limits, [8, 8, 4, 8, 4, 2, 1, 2, 4, 8, 8]);
  });

  it('one pod over maxPageBytes fails the list: it cannot be split further', async () => {
    const server = sizedServer(new Set([3]));
    await assert.rejects(
      listInPages(
        server.request,
        '/api/v1/pods',
        { pageSize: 8, maxRestarts: 3, maxPageBytes: 900, pause: noPause },
        {
          onPage: () => undefined,
          onRestart: () => undefined,
        },
      ),
      /more than 900 bytes/,
    );
  });
});
