/**
 * listInPages against an API server that does not end its list: the same continue token again
 * and again, or a new one forever. A real API server does neither; one that does must fail the
 * list (the run fails, the next interval retries) rather than keep the audit listing forever
 * while its findings grow in the server's memory.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ResponseTooLarge, responseHeadBytes, type ApiRequest } from '../../src/kube/api-requests.js';
import { listInPages, readListHead, type SkippedItem } from '../../src/kube/paged-list.js';

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
  function sizedServer(huge: ReadonlySet<number>): { request: ApiRequest; limits: number[]; bounds: (number | undefined)[] } {
    const limits: number[] = [];
    const bounds: (number | undefined)[] = [];
    const pods = Array.from({ length: 30 }, (_, i) => ({
      metadata: { name: `p${i}`, namespace: 'ns' },
      pad: 'x'.repeat(huge.has(i) ? 1_000 : 100),
    }));
    const request: ApiRequest = (_method, path, _body, options) => {
      const query = new URLSearchParams(path.slice(path.indexOf('?') + 1));
      const limit = Number(query.get('limit'));
      const from = Number(query.get('continue') ?? 0);
      limits.push(limit);
      bounds.push(options?.maxBodyBytes);
      const items = pods.slice(from, from + limit);
      const next = from + limit < pods.length ? String(from + limit) : undefined;
      const body = { kind: 'PodList', metadata: next === undefined ? {} : { continue: next }, items };
      const text = JSON.stringify(body);
      if (options?.maxBodyBytes !== undefined && text.length > options.maxBodyBytes) {
        const head = Buffer.from(text).subarray(0, Math.min(responseHeadBytes, options.maxBodyBytes));
        return Promise.reject(new ResponseTooLarge(`GET ${path}`, options.maxBodyBytes, head));
      }
      return Promise.resolve({ status: 200, body });
    };
    return { request, limits, bounds };
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

  it('a pod that blinds the audit: one pod over maxPageBytes is read alone with maxItemBytes, and the list goes on', async () => {
    const server = sizedServer(new Set([3]));
    const names: string[] = [];
    await listInPages(
      server.request,
      '/api/v1/pods',
      { pageSize: 8, maxRestarts: 3, maxPageBytes: 900, maxItemBytes: 2_000, pause: noPause },
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
    // p0-p7 and p0-p3 do not fit, p0-p1 does; p2-p5 and p2-p3 do not, p2 does; p3-p4 and p3 do
    // not: p3 alone with 2,000 bytes, once; then pages of 900 bytes again.
    assert.deepEqual(server.limits.slice(0, 10), [8, 4, 2, 4, 2, 1, 2, 1, 1, 2]);
    assert.deepEqual(server.bounds.slice(0, 10), [900, 900, 900, 900, 900, 900, 900, 900, 2_000, 900]);
    assert.equal(server.bounds.filter((bound) => bound === 2_000).length, 1);
  });

  it('a pod that blinds the audit: one pod over even maxItemBytes is stepped over by its continue token and handed to onSkipped', async () => {
    const server = sizedServer(new Set([3]));
    const names: string[] = [];
    const skipped: SkippedItem[] = [];
    await listInPages(
      server.request,
      '/api/v1/pods',
      { pageSize: 8, maxRestarts: 3, maxPageBytes: 900, maxItemBytes: 950, pause: noPause },
      {
        onPage: (items) => {
          for (const item of items) names.push((item as { metadata: { name: string } }).metadata.name);
        },
        onRestart: () => undefined,
        onSkipped: (item) => skipped.push(item),
      },
    );
    assert.deepEqual(skipped, [{ namespace: 'ns', name: 'p3', maxBytes: 950 }]);
    assert.deepEqual(
      names,
      Array.from({ length: 30 }, (_, i) => `p${i}`).filter((name) => name !== 'p3'),
    );
  });

  it('one pod over maxItemBytes fails the list when the caller takes no skipped items (an informer must see every object)', async () => {
    const server = sizedServer(new Set([3]));
    await assert.rejects(
      listInPages(
        server.request,
        '/api/v1/pods',
        { pageSize: 8, maxRestarts: 3, maxPageBytes: 900, maxItemBytes: 900, pause: noPause },
        {
          onPage: () => undefined,
          onRestart: () => undefined,
        },
      ),
      /one item is more than 900 bytes/,
    );
  });
});

describe('readListHead', () => {
  const list = {
    kind: 'PodList',
    apiVersion: 'v1',
    metadata: { resourceVersion: '42', continue: 'eyJydiI6NDJ9' },
    items: [{ metadata: { name: 'web-0', generateName: 'web-', namespace: 'shop', uid: 'u' }, spec: { notes: '\u003c'.repeat(50) } }],
  };
  const text = JSON.stringify(list);

  it("reads the metadata and the first item's namespace and name from a body cut off after them, inside a string", () => {
    const cut = text.slice(0, text.indexOf('"uid"') + 3);
    assert.deepEqual(readListHead(cut), { metadata: list.metadata, namespace: 'shop', name: 'web-0' });
  });

  it("reads the metadata alone when the body is cut before the first item's name", () => {
    assert.deepEqual(readListHead(text.slice(0, text.indexOf('"items"') + 12)), { metadata: list.metadata });
  });

  it('reads nothing from a body cut inside its metadata: no continue token to step over the item with', () => {
    assert.deepEqual(readListHead(text.slice(0, text.indexOf('continue') + 12)), {});
  });

  it('skips values of every kind before the metadata, strings with escaped quotes and brackets included', () => {
    const odd = `{"kind":"PodList","x":{"a":["]\\"}",1,true,null,{"b":-2.5e3}]},"metadata":{"continue":"c"},"items":[]}`;
    assert.deepEqual(readListHead(odd), { metadata: { continue: 'c' } });
  });
});
