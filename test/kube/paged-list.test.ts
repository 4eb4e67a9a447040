/**
 * listInPages against an API server that does not end its list: the same continue token again
 * and again, or a new one forever. A real API server does neither; one that does must fail the
 * list (the run fails, the next interval retries) rather than keep the audit listing forever
 * while its findings grow in the server's memory.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApiRequest } from '../../src/kube/api-requests.js';
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
