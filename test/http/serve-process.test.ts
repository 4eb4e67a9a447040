/**
 * `tolerator serve` as a process, the way `npm start` and the container run it: it starts on a
 * generated development certificate, answers a review, and on SIGTERM turns unready, finishes
 * what is in flight and exits 0 without dropping a request.
 */
import assert from 'node:assert/strict';
import { Agent } from 'node:https';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadReviewFixture } from '../support/harness.js';
import { callServe, serveStartDeadlineMs, spawnServe, startServe, type ServedProcess } from '../support/serve-process.js';
import { availableParallelism } from 'node:os';

// The development certificate is self-signed for localhost: trust it for these calls only.
const agent = new Agent({ keepAlive: true, maxSockets: 8, rejectUnauthorized: false });

function call(port: number, path: string, body?: string): Promise<{ status: number; body: string }> {
  return callServe(agent, port, path, body);
}

describe('tolerator serve', () => {
  let served: ServedProcess;
  const review = JSON.stringify(loadReviewFixture('burstable-create-no-tolerations').review);

  before(async () => {
    served = await startServe(['--shutdown-delay', '1', '--shutdown-grace', '5']);
  });
  after(() => {
    served.child.kill('SIGKILL');
    agent.destroy();
  });

  it('derives its bounds from --memory-limit: 1/8 of 512Mi for bodies in flight, 963 connections, two review workers (one per CPU at most), and logs the decision', async () => {
    const bounded = await startServe(['--memory-limit', '512Mi', '--shutdown-delay', '0']);
    try {
      const serving = bounded.logs.find((entry) => entry.msg === 'tolerator serving');
      const workers = Math.min(2, availableParallelism());
      assert.deepEqual(
        [serving?.memoryBytes, serving?.bodyBudgetBytes, serving?.maxConnections, serving?.reviewWorkers],
        [512 * 1024 * 1024, 64 * 1024 * 1024, 963, workers],
      );
      const decision = bounded.logs.find((entry) => typeof entry.msg === 'string' && entry.msg.startsWith('review workers:'));
      assert.equal(
        decision?.msg,
        `review workers: ${workers} (memory limit 512 MiB from --memory-limit, per worker 96 MiB, heap 160 MiB each)`,
      );
    } finally {
      bounded.child.kill('SIGKILL');
    }
  });

  for (const [flag, value, message] of [
    ['--memory-limit', '10Mi', '--memory-limit must be a quantity from 64Mi to 8Pi, got "10Mi"'],
    ['--memory-limit', 'lots', '--memory-limit must be a quantity from 64Mi to 8Pi, got "lots"'],
    ['--review-workers', '65', '--review-workers must be 0 to 64'],
  ] as const) {
    it(`refuses ${flag} ${value}: exit code 2 and the reason`, async () => {
      const child = spawnServe([flag, value]);
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      child.stdout.resume();
      const [code] = (await once(child, 'exit')) as [number | null];
      assert.equal(code, 2);
      assert.equal(stderr, `tolerator serve: ${message}\n`);
    });
  }

  it('serve on a port in use prints EADDRINUSE and exits 2 instead of hanging: what it had started (the review workers) is stopped', async () => {
    const occupant = createServer();
    occupant.listen(0, '127.0.0.1');
    await once(occupant, 'listening');
    try {
      const { port } = occupant.address() as AddressInfo;
      // A review worker is started before the listener: it is what kept the process alive.
      const child = spawnServe(['--port', String(port), '--review-workers', '1']);
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      child.stdout.resume();
      // A hang detector, not a speed test: the start's own deadline (serveStartDeadlineMs says why).
      const hung = setTimeout(() => child.kill('SIGKILL'), serveStartDeadlineMs);
      const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
      clearTimeout(hung);
      assert.equal(signal, null, `still running ${serveStartDeadlineMs / 1000} s after it failed to listen: ${stderr}`);
      assert.equal(code, 2);
      assert.equal(stderr, `tolerator serve: listen EADDRINUSE: address already in use 127.0.0.1:${port}\n`);
    } finally {
      occupant.close();
    }
  });

  it('a second SIGINT during the drain (a Ctrl-C under npm start arrives twice) does not cut the drain short: it exits 0 after stopping', async () => {
    const draining = await startServe(['--shutdown-delay', '1', '--review-workers', '0']);
    const exited = once(draining.child, 'exit');
    draining.child.kill('SIGINT');
    await new Promise((resolve) => setTimeout(resolve, 200));
    draining.child.kill('SIGINT');
    const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null];
    assert.deepEqual([code, signal], [0, null]);
    assert.ok(draining.logs.some((entry) => entry.msg === 'stopped'));
  });

  it('warns that it serves a development certificate when none is given', () => {
    assert.ok(served.logs.some((entry) => entry.level === 'warn' && /development certificate/.test(String(entry.msg))));
  });

  it('answers a review with a patch adding the tolerations, and logs one line for it without the object', async () => {
    const answer = await call(served.port, '/mutate', review);
    assert.equal(answer.status, 200);
    const response = (JSON.parse(answer.body) as { response: { patch: string } }).response;
    const patch = JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8')) as {
      op: string;
      path: string;
      value: { key: string }[];
    }[];
    assert.deepEqual(
      patch.map((op) => [op.op, op.path, op.value.map((toleration) => toleration.key)]),
      [
        [
          'add',
          '/spec/tolerations',
          ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable', 'node.kubernetes.io/memory-pressure'],
        ],
      ],
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    const line = served.logs.find((entry) => entry.msg === 'admission review');
    assert.ok(line !== undefined, 'a review log line');
    assert.equal(line.uid, '7c9e6679-7425-40de-944b-e07fc1f90002');
    assert.equal(line.decision, 'patched');
    assert.equal(line.operation, 'CREATE');
    assert.equal(typeof line.durationMs, 'number');
    assert.equal(line.object, undefined, 'the object is never logged');
  });

  it('serves /metrics with the review counted', async () => {
    const metrics = await call(served.port, '/metrics');
    assert.match(
      metrics.body,
      /tolerator_admission_reviews_total\{webhook="mutate",operation="CREATE",plugin="PodTolerationRestriction",decision="patched"\} 1/,
    );
  });

  it('on SIGTERM turns unready, answers every request sent meanwhile, and exits 0', async () => {
    assert.equal((await call(served.port, '/readyz')).status, 200);
    const answers: number[] = [];
    const exited = once(served.child, 'exit');
    // Eight clients stream reviews from before the signal until well into the drain period
    // (--shutdown-delay 1 s), as the API server does until the endpoints drop this replica.
    const streamUntil = Date.now() + 600;
    let signalled = false;
    const clients = Array.from({ length: 8 }, async () => {
      while (Date.now() < streamUntil) {
        answers.push((await call(served.port, '/mutate', review)).status);
        if (!signalled) {
          signalled = true;
          served.child.kill('SIGTERM');
        }
      }
    });
    await Promise.all(clients);
    assert.equal((await call(served.port, '/readyz')).status, 503, 'unready while draining');
    assert.ok(answers.length >= 8);
    assert.ok(
      answers.every((status) => status === 200),
      `every review answered: ${answers.join(',')}`,
    );
    agent.destroy();
    const [code] = (await exited) as [number | null];
    assert.equal(code, 0);
    assert.ok(served.logs.some((entry) => entry.msg === 'stopped'));
  });
});

/** Every process below `pid`, from /proc (Linux): what a failed test must not leave running. */
function descendantsOf(pid: number): number[] {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
    return children.flatMap((child) => [child, ...descendantsOf(child)]);
  } catch {
    return [];
  }
}

describe('npm start', () => {
  it('killing the PID of a backgrounded npm start stops the server: npm forwards the signal to the server it execs, which drains and exits', async () => {
    const npm = spawn(
      'npm',
      ['start', '--', '--port', '0', '--bind-address', '127.0.0.1', '--review-workers', '0', '--shutdown-delay', '0'],
      {
        cwd: join(import.meta.dirname, '..', '..'),
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    // The server inherits npm's stdout: the pipe ends only when both have exited.
    const ended = once(npm.stdout, 'end');
    npm.stderr.resume();
    let output = '';
    const serving = new Promise<void>((resolve) => {
      npm.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString('utf8');
        if (output.includes('"msg":"tolerator serving"')) resolve();
      });
    });
    const started = await Promise.race([
      serving.then(() => true),
      new Promise((resolve) => setTimeout(resolve, serveStartDeadlineMs, false)),
    ]);
    const spawned = descendantsOf(npm.pid ?? 0);
    try {
      assert.ok(started, `npm start did not serve within ${serveStartDeadlineMs / 1000} s: ${output}`);
      npm.kill('SIGTERM');
      // A hang detector: the drain is 0 s (--shutdown-delay 0) and nothing is in flight.
      const gone = await Promise.race([ended.then(() => true), new Promise((resolve) => setTimeout(resolve, 30_000, false))]);
      assert.ok(gone, `the server still runs 30 s after npm was killed: ${spawned.join(', ')}`);
      assert.match(output, /"msg":"stopped"/, output.slice(-600));
    } finally {
      for (const pid of spawned) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Gone already.
        }
      }
      npm.kill('SIGKILL');
    }
  });
});
