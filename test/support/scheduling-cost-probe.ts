/**
 * Measures the growth scenarios of ./scheduling-cost-fixtures.ts and prints one JSON line per
 * scenario: `{ name, smallMs, largeMs, answer }`. Run by test/scheduling/scheduling-warnings-
 * cost.test.ts as its own process with `--single-threaded`, so that process.cpuUsage() is the
 * measured thread's time alone: otherwise V8's background compiler and garbage-collector threads
 * add their time at random, and two runs of the same work differed by 5× on a loaded machine.
 *
 * Per scenario: fifteen warm-up calls of each size; as many calls per run as make the small size
 * take 10 ms (shorter runs are mostly noise); then five runs of each size in turn, the least of
 * each: other work on the machine only ever adds to a run.
 *
 * The sizes are kept small enough (a few thousand entries per map) for V8's hash tables to stay
 * in the CPU's caches at both n and 4n. Past that, a bare Map of n strings grows 4.5–5.3× per 4×
 * on the machine these were tuned on (memory, not algorithm), which would leave no room for noise;
 * the large cases are test/scheduling/scheduling-warnings-cost.test.ts's own, timed and bounded.
 */
import { schedulingWarnings } from '../../src/scheduling/scheduling-warnings.js';
import { gates, growthScenarios } from './scheduling-cost-fixtures.js';

function cpuMs(work: () => void): number {
  const start = process.cpuUsage();
  work();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

const only = process.argv[2];
for (const scenario of growthScenarios) {
  if (only !== undefined && scenario.name !== only) continue;
  const small = scenario.build(scenario.n);
  const large = scenario.build(4 * scenario.n);
  const answer = schedulingWarnings(large.pod, large.nodes, gates);
  let calls = 1;
  const repeat = (input: typeof small) => (): void => {
    for (let i = 0; i < calls; i++) schedulingWarnings(input.pod, input.nodes, gates);
  };
  const runSmall = repeat(small);
  const runLarge = repeat(large);
  // Warm up until the compiler is done with the code: its first optimisations are revised a few
  // calls later (a deoptimisation or two), and those calls run several times slower.
  for (let i = 0; i < 15; i++) {
    runSmall();
    runLarge();
  }
  // The least of three, so that one slow run does not stop the doubling early.
  while (Math.min(cpuMs(runSmall), cpuMs(runSmall), cpuMs(runSmall)) < 10 && calls < 4096) calls *= 2;
  const smallMs: number[] = [];
  const largeMs: number[] = [];
  for (let i = 0; i < 5; i++) {
    smallMs.push(cpuMs(runSmall));
    largeMs.push(cpuMs(runLarge));
  }
  process.stdout.write(
    `${JSON.stringify({ name: scenario.name, smallMs: Math.min(...smallMs), largeMs: Math.min(...largeMs), answer })}\n`,
  );
}
