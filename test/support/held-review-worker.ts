/**
 * A stand-in review worker for the pool's tests (src/server/review-pool.ts `workerUrl`): it speaks
 * the pool's protocol (src/server/protocol.ts) but decides nothing. Each review's body is a JSON
 * command saying what to do, so that a test controls how long a review takes and how it ends:
 *
 * - `{ "holdMs": n }`: block the thread for n ms (Atomics.wait: like a review's synchronous work,
 *   nothing else runs on the worker meanwhile), then answer;
 * - `{ "hold": "path" }`: create `path.started`, then block until the test creates `path.release`:
 *   which reviews are being decided at once is then a matter of files, not of time;
 * - `{ "allocate": true }`: allocate until the worker's heap limit ends it;
 * - `{ "throw": "text" }`: fail as a plugin that throws would.
 *
 * Every answer's payload says how many reviews this worker has received, and its thread id.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { parentPort, threadId } from 'node:worker_threads';
import type { FromWorker, ToWorker } from '../../src/server/protocol.js';

const port = parentPort;
if (port === null) throw new Error('a worker thread');
let received = 0;
const send = (message: FromWorker): void => {
  port.postMessage(message);
};

port.on('message', (message: ToWorker) => {
  if (message.type !== 'review') return;
  received++;
  const command = JSON.parse(new TextDecoder().decode(message.body)) as {
    holdMs?: number;
    hold?: string;
    allocate?: boolean;
    throw?: string;
  };
  if (command.hold !== undefined) {
    writeFileSync(`${command.hold}.started`, String(threadId));
    while (!existsSync(`${command.hold}.release`)) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
  }
  if (command.holdMs !== undefined) {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, command.holdMs);
  }
  if (command.allocate === true) {
    const kept: unknown[] = [];
    for (;;) kept.push({ filler: 'x'.repeat(64) + String(kept.length) });
  }
  if (command.throw !== undefined) {
    send({ type: 'failed', id: message.id, error: command.throw });
    return;
  }
  send({
    type: 'answer',
    id: message.id,
    payload: JSON.stringify({ received, threadId }),
    summary: {
      uid: 'held',
      kind: 'Pod',
      namespace: 'default',
      name: 'held',
      operation: 'CREATE',
      dryRun: false,
      decision: 'allowed',
      plugins: [],
      deniedBy: undefined,
      patchOperations: 0,
    },
  });
});

send({ type: 'ready' });
