/**
 * A body over the 7 MiB limit is answered 413 once it has arrived, so that a client still writing
 * it (kube-apiserver writes a review whole before it reads the answer) reads the 413 and its
 * message instead of a reset connection: answered early, the connection closed with bytes unread
 * and kube-apiserver reported `write: broken pipe` for three calls in six
 * (test/e2e/apiserver-side.e2e.ts measures it through a real one). Bounded: the rest is dropped
 * as it arrives, and past maxDrainedBytes the answer goes out at once.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { maxBodyBytes, maxDrainedBytes } from '../../src/http/app.js';
import { appFromArgs } from '../support/harness.js';

/** A raw client: what it has received so far, and how the connection ended. */
interface RawClient {
  readonly socket: Socket;
  received(): string;
  ended(): Promise<'end' | `error ${string}`>;
}

function rawClient(port: number): RawClient {
  const socket = connect({ host: '127.0.0.1', port });
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  const ended = new Promise<'end' | `error ${string}`>((resolve) => {
    socket.once('end', () => {
      resolve('end');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      resolve(`error ${error.code ?? error.message}`);
    });
  });
  return { socket, received: () => Buffer.concat(chunks).toString('latin1'), ended: () => ended };
}

function headers(length: number | 'chunked'): string {
  return [
    'POST /mutate HTTP/1.1',
    'Host: 127.0.0.1',
    'Content-Type: application/json',
    length === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${length}`,
    '',
    '',
  ].join('\r\n');
}

/** Writes, waiting for the buffer to drain; a closed connection ends the wait (the assertions then say why). */
async function write(socket: Socket, data: string | Buffer): Promise<void> {
  if (socket.destroyed) return;
  if (!socket.write(data)) {
    await new Promise<void>((resolve) => {
      const done = (): void => {
        socket.off('drain', done);
        socket.off('close', done);
        resolve();
      };
      socket.once('drain', done);
      socket.once('close', done);
    });
  }
}

describe('a body over the limit', () => {
  let server: Server;
  let port: number;
  before(async () => {
    server = createServer(appFromArgs([]));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  after(() => {
    server.close();
  });

  const size = maxBodyBytes + 1024 * 1024;

  it('is answered 413 only once it has all arrived: a client still sending it reads the answer, not a reset', async () => {
    const client = rawClient(port);
    await write(client.socket, headers(size));
    await write(client.socket, Buffer.alloc(1024 * 1024, 0x20));
    // The client pauses mid-body, as a writer does between its buffers: no answer yet, since an
    // answer now would close the connection with the rest of the body still to come.
    await sleep(300);
    assert.equal(client.received(), '', 'nothing answered before the body arrived');
    await write(client.socket, Buffer.alloc(size - 1024 * 1024, 0x20));
    assert.equal(await client.ended(), 'end', 'a clean close, not a reset');
    const answer = client.received();
    assert.match(answer, /^HTTP\/1\.1 413 /);
    assert.match(answer, /\r\nconnection: close\r\n/i);
    assert.match(answer.slice(answer.indexOf('\r\n\r\n')), /"message":"request body is larger than the limit of 7 MiB"/);
  });

  it('is answered 413 once it ends when sent chunked, without a length', async () => {
    const client = rawClient(port);
    await write(client.socket, headers('chunked'));
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    for (let sent = 0; sent < size; sent += chunk.length) {
      await write(client.socket, `${chunk.length.toString(16)}\r\n`);
      await write(client.socket, chunk);
      await write(client.socket, '\r\n');
    }
    // Past the limit by 1 MiB, all but the last chunk sent: still no answer.
    await sleep(300);
    assert.equal(client.received(), '', 'nothing answered before the last chunk');
    await write(client.socket, '0\r\n\r\n');
    assert.equal(await client.ended(), 'end');
    assert.match(client.received(), /^HTTP\/1\.1 413 /);
  });

  it(`declared larger than ${maxDrainedBytes / 1024 / 1024} MiB, which no review is: answered at once, the body never awaited`, async () => {
    const client = rawClient(port);
    await write(client.socket, headers(maxDrainedBytes + 1));
    // Nothing of the body is ever sent: the answer must not wait for it.
    const deadline = Date.now() + 10_000;
    while (!client.received().includes('\r\n\r\n') && Date.now() < deadline) await sleep(20);
    assert.match(client.received(), /^HTTP\/1\.1 413 /);
    client.socket.destroy();
  });

  it('the server answers the next request afterwards', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`);
    assert.equal(res.status, 200);
  });
});
