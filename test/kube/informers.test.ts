import { after, before, describe, it } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { FakeApiServer } from '../support/fake-api-server.js';
import { restartDelayMs, startInformers } from '../../src/kube/informers.js';
import type { InformerFacts, StartInformersOptions } from '../../src/kube/informers.js';
import type { KubeLogger } from '../../src/kube/kube-logger.js';

/**
 * Restarts in these tests wait 20–100 ms instead of 1–30 s; deadlines for "eventually" are 5 s,
 * about 50× the slowest restart, so only a broken informer (not a slow machine) misses them.
 */
const testBackoff = { initialMs: 20, maxMs: 100 };
const eventuallyMs = 5_000;

interface LogEntry {
  level: 'info' | 'warn' | 'error';
  obj: object;
  msg: string;
}

function recordingLogger(): { logger: KubeLogger; entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const record = (level: LogEntry['level']) => (obj: object, msg: string) => {
    entries.push({ level, obj, msg });
  };
  return { logger: { info: record('info'), warn: record('warn'), error: record('error') }, entries };
}

async function eventually(condition: () => boolean, what: string, timeoutMs = eventuallyMs): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await sleep(10);
  }
}

interface Setup {
  fake: FakeApiServer;
  facts: InformerFacts;
  entries: LogEntry[];
}

/** A fake API server holding namespace "team-a" and node "node-1", and informers against it. */
async function setup(
  t: TestContext,
  options: { beforeStart?: (fake: FakeApiServer) => void; informers?: Partial<StartInformersOptions> } = {},
): Promise<Setup> {
  const fake = await FakeApiServer.start();
  fake.put('namespaces', { metadata: { name: 'team-a', labels: { dedicated: 'a' } } });
  fake.put('nodes', {
    metadata: { name: 'node-1', labels: { dedicated: 'a' } },
    spec: { taints: [{ key: 'dedicated', value: 'a', effect: 'NoSchedule' }] },
  });
  options.beforeStart?.(fake);
  const { logger, entries } = recordingLogger();
  const facts = startInformers({ kubeConfig: fake.kubeConfig(), logger, backoff: testBackoff, ...options.informers });
  t.after(async () => {
    await facts.stop();
    await fake.close();
  });
  return { fake, facts, entries };
}

async function synced(facts: InformerFacts): Promise<void> {
  await eventually(() => facts.isSynced(), 'both caches have synced');
}

function taintValue(facts: InformerFacts, node: string): string | undefined {
  return facts.getNode(node)?.spec?.taints?.[0]?.value;
}

describe('startInformers', () => {
  it('answers getNode, listNodes and getNamespace from the cache after the initial list', async (t) => {
    const { fake, facts } = await setup(t);
    await synced(facts);
    await eventually(() => facts.syncState().runtimeclasses, 'the RuntimeClass cache has synced');

    assert.deepEqual(facts.syncState(), { namespaces: true, nodes: true, runtimeclasses: true });
    assert.deepEqual(facts.getNode('node-1')?.spec?.taints, [{ key: 'dedicated', value: 'a', effect: 'NoSchedule' }]);
    assert.deepEqual(
      facts.listNodes().map((node) => node.metadata.name),
      ['node-1'],
    );
    const namespace = await facts.getNamespace('team-a');
    assert.deepEqual(namespace?.metadata.labels, { dedicated: 'a' });
    assert.equal(fake.count({ verb: 'get' }), 0, 'a cached namespace is not read from the API');
  });

  it('keeps list items in wire form: timestamps stay the strings the API server wrote, as in watch events', async (t) => {
    const { facts } = await setup(t);
    await synced(facts);

    const namespace = await facts.getNamespace('team-a');
    assert.equal(namespace?.metadata.creationTimestamp, '2025-06-01T12:00:00Z');
  });

  it('is not synced before both first lists have completed', async (t) => {
    let releaseNodes = (): void => undefined;
    const { facts } = await setup(t, {
      beforeStart: (fake) => {
        releaseNodes = fake.holdLists('nodes');
      },
    });

    await eventually(
      () => facts.syncState().namespaces && facts.syncState().runtimeclasses,
      'the namespace and RuntimeClass caches have synced',
    );
    assert.equal(facts.isSynced(), false);
    assert.deepEqual(facts.syncState(), { namespaces: true, nodes: false, runtimeclasses: true });
    assert.equal(facts.getNode('node-1'), undefined);

    releaseNodes();
    await synced(facts);
    assert.equal(taintValue(facts, 'node-1'), 'a');
  });

  it('RuntimeClasses: read from their own cache, and a RuntimeClass list that cannot complete (no RBAC for it) does not hold readiness', async (t) => {
    let releaseRuntimeClasses = (): void => undefined;
    const { fake, facts } = await setup(t, {
      beforeStart: (fake) => {
        fake.put('runtimeclasses', {
          metadata: { name: 'kata-pci', managedFields: [{}] },
          handler: 'kata',
          scheduling: { tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'pci', effect: 'NoSchedule' }] },
        });
        releaseRuntimeClasses = fake.holdLists('runtimeclasses');
      },
    });
    await synced(facts);
    assert.deepEqual(facts.syncState(), { namespaces: true, nodes: true, runtimeclasses: false });
    assert.equal(await facts.readRuntimeClass('kata-pci'), undefined, 'not listed yet: unexplained, never a guess');

    releaseRuntimeClasses();
    await eventually(() => facts.syncState().runtimeclasses, 'the RuntimeClass cache has synced');
    const read = await facts.readRuntimeClass('kata-pci');
    // What is kept: the name and the scheduling (managedFields and handler are not).
    assert.deepEqual(Object.keys(read?.metadata ?? {}).sort(), ['name', 'resourceVersion']);
    assert.deepEqual(read?.scheduling, { tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'pci', effect: 'NoSchedule' }] });
    assert.equal(JSON.stringify(read).includes('handler'), false);
    assert.deepEqual(
      facts.listRuntimeClasses().map(({ metadata }) => metadata.name),
      ['kata-pci'],
    );
    assert.ok(fake.requests.some((request) => request.resource === 'runtimeclasses' && request.verb === 'list'));
  });

  it('applies watch ADDED, MODIFIED and DELETED events to the cache', async (t) => {
    const { fake, facts } = await setup(t);
    await synced(facts);

    fake.put('nodes', { metadata: { name: 'node-2' }, spec: { taints: [{ key: 'gpu', value: 'x', effect: 'NoSchedule' }] } });
    await eventually(() => facts.getNode('node-2') !== undefined, 'node-2 is added');

    fake.put('nodes', { metadata: { name: 'node-1' }, spec: { taints: [{ key: 'dedicated', value: 'b', effect: 'NoSchedule' }] } });
    await eventually(() => taintValue(facts, 'node-1') === 'b', 'node-1 is modified');

    fake.delete('nodes', 'node-2');
    await eventually(() => facts.getNode('node-2') === undefined, 'node-2 is deleted');

    fake.put('namespaces', { metadata: { name: 'team-a', labels: { dedicated: 'b' } } });
    await eventually(() => fake.count({ verb: 'watch', resource: 'namespaces' }) >= 1, 'the namespace watch is open');
    const relabelled = async (): Promise<string | undefined> => (await facts.getNamespace('team-a'))?.metadata.labels?.dedicated;
    const deadline = Date.now() + eventuallyMs;
    while ((await relabelled()) !== 'b' && Date.now() < deadline) await sleep(10);
    assert.equal(await relabelled(), 'b');

    assert.deepEqual(
      facts.listNodes().map((node) => node.metadata.name),
      ['node-1'],
    );
    assert.equal(fake.count({ verb: 'list' }), 3, 'one list per resource: events alone kept the caches current');
  });

  it('relists after a watch ERROR event carrying a 410 Status, reconciling deletions it missed', async (t) => {
    const { fake, facts } = await setup(t);
    fake.put('namespaces', { metadata: { name: 'team-b' } });
    await synced(facts);
    await eventually(() => fake.openWatchCount('namespaces') === 1, 'the namespace watch is open');

    // The relist waits while team-b is deleted and the event log compacted, so only a relist
    // (not a re-watch) can learn of the deletion.
    const releaseList = fake.holdLists('namespaces');
    fake.expireWatches('namespaces');
    await eventually(() => fake.count({ verb: 'list', resource: 'namespaces' }) === 2, 'the informer relists');
    fake.delete('namespaces', 'team-b');
    fake.compact('namespaces', 'watch-error-event');

    assert.ok(await facts.getNamespace('team-b'), 'the cache answers while the relist is pending');
    assert.equal(fake.count({ verb: 'get' }), 0);

    releaseList();
    await eventually(() => fake.openWatchCount('namespaces') === 1, 'the namespace watch is open again');
    assert.equal(await facts.getNamespace('team-b'), undefined);
    assert.equal(facts.restarts(), 0, 'client-node handled the 410 itself; no restart was needed');
    assert.equal(facts.isSynced(), true);
  });

  it('relists after an HTTP 410 on the watch request', async (t) => {
    const { fake, facts } = await setup(t);
    await synced(facts);
    await eventually(() => fake.openWatchCount('nodes') === 1, 'the node watch is open');

    // Take the watch down, change a node while it is down, and compact: the restarted watch
    // from the old resourceVersion gets 410 Gone.
    fake.refuseWatches('nodes', 500);
    fake.dropWatches('nodes');
    await eventually(() => facts.restarts() >= 1, 'the informer is restarted');
    fake.put('nodes', { metadata: { name: 'node-1' }, spec: { taints: [{ key: 'dedicated', value: 'c', effect: 'NoSchedule' }] } });
    fake.compact('nodes', 'http-410');
    fake.refuseWatches('nodes', undefined);

    await eventually(() => taintValue(facts, 'node-1') === 'c', 'the relist brings node-1 up to date');
    assert.equal(fake.count({ verb: 'list', resource: 'nodes' }), 2);
  });

  it('restarts after a dropped connection, answering from the cache meanwhile, then catches up', async (t) => {
    const { fake, facts, entries } = await setup(t);
    await synced(facts);
    await eventually(() => fake.openWatchCount('nodes') === 1, 'the node watch is open');

    fake.refuseWatches('nodes', 503);
    fake.dropWatches('nodes');
    fake.put('nodes', { metadata: { name: 'node-1' }, spec: { taints: [{ key: 'dedicated', value: 'd', effect: 'NoSchedule' }] } });
    await eventually(() => facts.restarts() >= 2, 'two restarts have failed against the refusing server');

    assert.equal(taintValue(facts, 'node-1'), 'a', 'the cache keeps the last known state');
    assert.equal(facts.isSynced(), true, 'readiness does not flap on a watch failure');
    const warning = entries.find((entry) => entry.level === 'warn');
    assert.match(warning?.msg ?? '', /^nodes watch failed; serving from the cache and restarting in \d+ ms$/);

    fake.refuseWatches('nodes', undefined);
    await eventually(() => taintValue(facts, 'node-1') === 'd', 'the restarted watch delivers the missed event');
    assert.equal(fake.count({ verb: 'list', resource: 'nodes' }), 1, 'it resumed from its resourceVersion, without a relist');
  });

  it('starts the backoff over when the last failure is older than resetAfterMs', async (t) => {
    let clock = 1_000_000;
    const { fake, facts, entries } = await setup(t, {
      informers: { backoff: { ...testBackoff, resetAfterMs: 60_000 }, now: () => clock },
    });
    await synced(facts);
    await eventually(() => fake.openWatchCount('nodes') === 1, 'the node watch is open');
    const attempts = (): number[] =>
      entries.filter((entry) => entry.level === 'warn').map((entry) => (entry.obj as { attempt: number }).attempt);

    fake.refuseWatches('nodes', 503);
    fake.dropWatches('nodes');
    await eventually(() => attempts().length >= 3, 'three failures in a row');
    assert.deepEqual(attempts().slice(0, 3), [1, 2, 3], 'failures close together keep backing off');

    // The fake clock moves past resetAfterMs since the last failure: the next one counts as new.
    clock += 60_001;
    const seen = attempts().length;
    await eventually(() => attempts().length > seen, 'one more failure');
    assert.equal(attempts()[seen], 1);
  });

  it('reads a namespace missing from the cache from the API, once for concurrent callers', async (t) => {
    const { fake, facts } = await setup(t);
    await synced(facts);

    fake.putUnwatched('namespaces', { metadata: { name: 'just-created', labels: { dedicated: 'z' } } });
    const [first, second] = await Promise.all([facts.getNamespace('just-created'), facts.getNamespace('just-created')]);

    assert.deepEqual(first?.metadata.labels, { dedicated: 'z' });
    assert.equal(second, first);
    assert.equal(fake.count({ verb: 'get', name: 'just-created' }), 1);
  });

  it('answers undefined for a namespace the API server does not know (404)', async (t) => {
    const { fake, facts } = await setup(t);
    await synced(facts);

    assert.equal(await facts.getNamespace('no-such-namespace'), undefined);
    assert.equal(fake.count({ verb: 'get', name: 'no-such-namespace' }), 1);
  });

  it('rejects when the API server fails to answer a read', async (t) => {
    const { fake, facts } = await setup(t);
    await synced(facts);

    fake.refuseGets('namespaces', 500);
    await assert.rejects(facts.getNamespace('unknown'), {
      message: 'reading Namespace "unknown" from the API server failed: HTTP 500: get refused by test',
    });
  });

  it('reads a node missing from the cache from the API (one that registered before its ADDED event), once for concurrent callers', async (t) => {
    const { fake, facts } = await setup(t);
    await synced(facts);

    fake.putUnwatched('nodes', { metadata: { name: 'node-joined', labels: { dedicated: 'b' } } });
    assert.equal(facts.getNode('node-joined'), undefined, 'not in the cache');
    const [first, second] = await Promise.all([facts.readNode('node-joined'), facts.readNode('node-joined')]);

    assert.deepEqual(first?.metadata.labels, { dedicated: 'b' });
    assert.equal(second, first);
    assert.equal(fake.count({ verb: 'get', name: 'node-joined' }), 1);
  });

  it('answers a cached node without asking the API server', async (t) => {
    const { fake, facts } = await setup(t);
    await synced(facts);

    assert.equal((await facts.readNode('node-1'))?.metadata.name, 'node-1');
    assert.equal(fake.count({ verb: 'get', name: 'node-1' }), 0);
  });

  it('answers undefined for a node the API server does not know (404)', async (t) => {
    const { fake, facts } = await setup(t);
    await synced(facts);

    assert.equal(await facts.readNode('ip-10-0-0-1.ec2.internal'), undefined);
    assert.equal(fake.count({ verb: 'get', name: 'ip-10-0-0-1.ec2.internal' }), 1);
  });

  it('rejects when the API server fails to answer a node read', async (t) => {
    const { fake, facts } = await setup(t);
    await synced(facts);

    fake.refuseGets('nodes', 503);
    await assert.rejects(facts.readNode('node-9'), {
      message: 'reading Node "node-9" from the API server failed: HTTP 503: get refused by test',
    });
  });

  it('asks the server to end each watch after 5 to 10 minutes', async (t) => {
    const { fake, facts } = await setup(t);
    await synced(facts);
    await eventually(() => fake.count({ verb: 'watch' }) === 3, 'the three watches (namespaces, nodes, runtimeclasses) are open');

    for (const request of fake.requests.filter((r) => r.verb === 'watch')) {
      const seconds = Number(request.timeoutSeconds);
      assert.ok(seconds >= 300 && seconds < 600, `timeoutSeconds ${String(request.timeoutSeconds)}`);
    }
  });

  it('aborts and restarts a watch the server keeps open past its timeout', async (t) => {
    // The fake server ignores timeoutSeconds, as a dead connection would: 1 s + 0 grace later the
    // informer gives up on the watch itself.
    const { fake, facts } = await setup(t, { informers: { watchTimeout: { minSeconds: 1, graceMs: 0 }, random: () => 0 } });
    await synced(facts);

    await eventually(() => facts.restarts() >= 1, 'a watch past its deadline was restarted');
    assert.equal(fake.requests.find((r) => r.verb === 'watch')?.timeoutSeconds, '1');
    fake.put('nodes', { metadata: { name: 'node-3' } });
    await eventually(() => facts.getNode('node-3') !== undefined, 'the restarted watch delivers events');
  });

  it('stop() closes both watches and schedules no restart', async (t) => {
    const { fake, facts } = await setup(t);
    await synced(facts);
    await eventually(() => fake.openWatchCount('namespaces') + fake.openWatchCount('nodes') === 2, 'both watches are open');

    await facts.stop();
    await eventually(() => fake.openWatchCount('namespaces') + fake.openWatchCount('nodes') === 0, 'the watches are closed');
    const requestsAtStop = fake.requests.length;
    // Five times the longest test backoff: a restart, had one been scheduled, would have run.
    await sleep(5 * testBackoff.maxMs);
    assert.equal(fake.requests.length, requestsAtStop);
    assert.equal(facts.restarts(), 0);
  });

  describe('with pino as the logger', () => {
    let fake: FakeApiServer;
    before(async () => {
      fake = await FakeApiServer.start();
    });
    after(async () => {
      await fake.close();
    });

    it('accepts a pino Logger where a KubeLogger is expected', async () => {
      const logger: KubeLogger = pino({ level: 'silent' });
      const facts = startInformers({ kubeConfig: fake.kubeConfig(), logger, backoff: testBackoff });
      try {
        await synced(facts);
        assert.deepEqual(facts.listNodes(), []);
      } finally {
        await facts.stop();
      }
    });
  });
});

describe('restartDelayMs', () => {
  const backoff = { initialMs: 1_000, maxMs: 30_000 };
  const rows: { name: string; attempt: number; random: number; want: number }[] = [
    { name: 'the first restart with the least jitter waits half the initial delay', attempt: 0, random: 0, want: 500 },
    { name: 'the first restart with the most jitter waits the whole initial delay', attempt: 0, random: 1, want: 1_000 },
    { name: 'the fifth restart has a ceiling of 16 s', attempt: 4, random: 0.5, want: 12_000 },
    { name: 'the sixth restart is capped at 30 s', attempt: 5, random: 1, want: 30_000 },
    { name: 'a very late restart stays within the cap', attempt: 2_000, random: 0, want: 15_000 },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(restartDelayMs(row.attempt, backoff, row.random), row.want);
    });
  }
});
