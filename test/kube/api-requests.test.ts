/**
 * createApiRequest against an API server that answers too slowly: a body that trickles in, a
 * byte at a time, never finishing. The socket's idle timeout never fires on such a body; the
 * request's own deadline does, so a run of the audit cannot hang on one page for ever. And an
 * abort signal ends such a request at once (the periodic audit's stop()).
 */
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { createApiRequest, ResponseTooLarge } from '../../src/kube/api-requests.js';

describe('createApiRequest against a slow API server', () => {
  const open = new Set<ServerResponse>();
  const timers = new Set<NodeJS.Timeout>();
  const server = createServer((req, res) => {
    open.add(res);
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.write('{"kind":"PodList","items":[');
    if (req.url?.startsWith('/flood') === true) {
      // A body without end, as fast as the socket takes it.
      const flood = (): void => {
        while (res.write(`{"metadata":{"name":"${'x'.repeat(1_000)}"}},`));
        res.once('drain', flood);
      };
      flood();
      res.on('close', () => open.delete(res));
      return;
    }
    // A byte every 10 ms: the connection is never idle for long, and the body never ends.
    const timer = setInterval(() => res.write(' '), 10);
    timers.add(timer);
    res.on('close', () => {
      clearInterval(timer);
      open.delete(res);
    });
  });
  let kubeConfig: KubeConfig;

  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'slow', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: 'none' }],
      contexts: [{ name: 'slow', cluster: 'slow', user: 'none' }],
      currentContext: 'slow',
    });
  });
  after(async () => {
    for (const timer of timers) clearInterval(timer);
    for (const res of open) res.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  it('a body that keeps trickling fails at the deadline, though the socket is never idle that long', { timeout: 20_000 }, async () => {
    const request = createApiRequest(kubeConfig, { timeoutMs: 200 });
    await assert.rejects(request('GET', '/api/v1/pods?limit=100'), /GET \/api\/v1\/pods\?limit=100: no complete response within 0\.2 s/);
  });

  it(
    'a body over maxBodyBytes fails with ResponseTooLarge once that many bytes arrived, without reading the rest',
    { timeout: 20_000 },
    async () => {
      const request = createApiRequest(kubeConfig);
      await assert.rejects(request('GET', '/flood?limit=100', undefined, { maxBodyBytes: 100_000 }), (error: unknown) => {
        assert.ok(error instanceof ResponseTooLarge);
        assert.equal(error.message, 'GET /flood?limit=100: the response is more than 100000 bytes');
        return true;
      });
    },
  );

  it(
    "an abort mid-body rejects with the signal's reason and closes the connection, long before the deadline",
    { timeout: 20_000 },
    async () => {
      // The deadline is the default 60 s; the abort comes once the body has started to trickle.
      const request = createApiRequest(kubeConfig);
      const controller = new AbortController();
      const earlier = new Set(open);
      const pending = request('GET', '/api/v1/pods?limit=100', undefined, { signal: controller.signal });
      let response: ServerResponse | undefined;
      while (response === undefined) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        response = [...open].find((candidate) => !earlier.has(candidate));
      }
      const closed = new Promise((resolve) => response.once('close', resolve));
      const reason = new Error('stopping');
      controller.abort(reason);
      await assert.rejects(pending, (error: unknown) => error === reason);
      await closed;
    },
  );

  it('an abort before the request is sent rejects without a request; a reason that is no Error is wrapped in one', async () => {
    const request = createApiRequest(kubeConfig);
    const before = open.size;
    await assert.rejects(
      request('GET', '/api/v1/pods', undefined, { signal: AbortSignal.abort(new Error('already')) }),
      /^Error: already$/,
    );
    const controller = new AbortController();
    const pending = request('GET', '/api/v1/pods', undefined, { signal: controller.signal });
    // Aborted while the credentials are applied (an await before the request is sent).
    controller.abort('not an error');
    await assert.rejects(pending, (error: unknown) => {
      assert.ok(error instanceof Error);
      assert.equal(error.message, 'GET /api/v1/pods: aborted');
      assert.equal(error.cause, 'not an error');
      return true;
    });
    assert.equal(open.size, before);
  });
});
