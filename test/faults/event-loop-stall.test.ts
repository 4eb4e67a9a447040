/**
 * Work that cannot stall the event loop. One Node process answers every review; a synchronous
 * computation that runs for seconds stalls every other review (and /healthz) with it, so kube-
 * apiserver times them all out and applies the failurePolicy cluster-wide.
 *
 * src/tenancy/cel.ts bounds policy cost statically (the evaluator cannot be interrupted): at most
 * 1,000 AST nodes, depth 50, 100-element literal lists and maps, 8 call arguments, and
 * comprehensions nested at most two deep. The first tests check each bound refuses at load. The
 * last ones run the costliest accepted work on a request well inside the 7 MiB body limit, in a
 * worker thread with a deadline, so a stall fails the test in seconds instead of hanging it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { compileExpression } from '../../src/tenancy/cel.js';
import { parsePolicyFile } from '../../src/tenancy/policy-directory.js';
import { formatPolicyLoadError } from '../../src/tenancy/policy.js';

/**
 * Generous: the linear work these scenarios should cost takes well under 100 ms on a loaded
 * 2-core machine; 5 s is 50 times that, while a quadratic blow-up takes minutes.
 */
const deadlineMs = 5_000;
const workerUrl = new URL('../support/stall-worker.ts', import.meta.url);

interface Outcome {
  readonly ms?: number;
  readonly timedOut: boolean;
}

function runWithDeadline(scenario: 'policy' | 'review', n: number): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    // The worker loads TypeScript through tsx's loader, registered in the worker itself.
    const bootstrap = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((tsx) => { tsx.register(); return import(${JSON.stringify(workerUrl.href)}); })`;
    const worker = new Worker(bootstrap, { eval: true, workerData: { scenario, n } });
    let timer: NodeJS.Timeout | undefined;
    const giveUp = (): void => {
      void worker.terminate();
      resolve({ timedOut: true });
    };
    // Starting a thread and loading the modules through tsx is not what is measured: the deadline
    // starts when the worker says it is ready (30 s at most for start-up on a loaded machine).
    timer = setTimeout(giveUp, 30_000);
    worker.on('message', (message: { ready?: boolean; ms?: number }) => {
      clearTimeout(timer);
      if (message.ready === true) {
        timer = setTimeout(giveUp, deadlineMs);
        return;
      }
      void worker.terminate();
      resolve({ ms: message.ms ?? Infinity, timedOut: false });
    });
    worker.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

describe('a slow policy expression is refused at load', () => {
  const rows: { name: string; source: string; message: RegExp }[] = [
    {
      name: 'two nested comprehensions (quadratic in a list the request controls)',
      source: "object.spec.tolerations.all(a, object.spec.tolerations.all(b, a.key != 'x' || b.key != 'y'))",
      message: /comprehensions nest 2 deep; at most 1 is allowed/,
    },
    {
      name: 'comprehensions nested through map and filter',
      source: 'object.spec.containers.map(a, object.spec.containers.filter(b, b.name == a.name).size()).size() > 0',
      message: /comprehensions nest 2 deep/,
    },
    {
      name: 'a literal list of 101 elements',
      source: `[${Array.from({ length: 101 }, (_, i) => i).join(', ')}].size() > 0`,
      message: /maxListElements \(100\)/,
    },
    {
      name: 'an expression of over 1,000 AST nodes',
      source: `${Array.from({ length: 600 }, () => '1').join(' + ')} > 0`,
      message: /maxAstNodes \(1000\)/,
    },
    { name: 'nesting deeper than 50', source: `${'('.repeat(60)}true${')'.repeat(60)}`, message: /maxDepth|depth/i },
  ];
  for (const row of rows) {
    it(`${row.name} does not compile`, () => {
      const result = compileExpression(row.source, 'bool');
      assert.ok(result.error !== undefined, 'refused');
      assert.match(result.error.message, row.message);
    });
  }

  it('a policy file holding such an expression fails to load, naming the field', () => {
    const yaml = [
      'apiVersion: tolerator.dev/v1alpha1',
      'kind: TenancyPolicy',
      'metadata: {name: cubic}',
      'spec:',
      "  group: \"namespaceObject.metadata.?labels['dedicated'].orValue('')\"",
      '  taint: {key: dedicated, effect: NoSchedule}',
      '  nodeLabel: dedicated',
      '  exempt: "object.spec.tolerations.all(a, object.spec.tolerations.all(b, object.spec.tolerations.all(c, true)))"',
    ].join('\n');
    const loaded = parsePolicyFile('cubic.yaml', yaml);
    assert.equal(loaded.policies.length, 0);
    assert.match(loaded.errors.map(formatPolicyLoadError).join('\n'), /spec\.exempt: .*comprehensions nest 3 deep/);
  });

  it('a catastrophic regular expression in matches() is answered at once (RE2, whatever the process flags)', () => {
    const compiled = compileExpression("namespaceObject.metadata.name.matches('^(a+)+$')", 'bool');
    assert.ok(compiled.expression !== undefined);
    const started = performance.now();
    const variables = {
      converted: { object: null, oldObject: null, request: null, namespaceObject: { metadata: { name: `${'a'.repeat(40)}!` } } },
    };
    assert.equal(compiled.expression.evaluate(variables), false);
    assert.ok(performance.now() - started < deadlineMs, 'no catastrophic backtracking');
  });
});

describe('the costliest accepted work on a request within the body limit finishes within 5 s', () => {
  it('a comprehension in a policy over a pod with 150,000 tolerations (about 1.8 MB)', async () => {
    const outcome = await runWithDeadline('policy', 150_000);
    assert.equal(outcome.timedOut, false, `evaluation ran past ${deadlineMs} ms: a policy stalls the event loop`);
  });

  it('a Burstable pod with 40,000 tolerations (about 1.5 MB) through the mutating pipeline', async () => {
    const outcome = await runWithDeadline('review', 40_000);
    assert.equal(outcome.timedOut, false, `the review ran past ${deadlineMs} ms: mergeTolerations is quadratic in the pod's tolerations`);
  });

  it('a pod with 1,000 tolerations, the sane end of the range, is reviewed well within the deadline', async () => {
    const outcome = await runWithDeadline('review', 1_000);
    assert.equal(outcome.timedOut, false);
    assert.ok((outcome.ms ?? Infinity) < deadlineMs);
  });
});
