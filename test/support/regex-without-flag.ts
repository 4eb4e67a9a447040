/**
 * Run by test/tenancy/cel-regex.test.ts in a child process started WITHOUT V8's
 * `--enable-experimental-regexp-engine-on-excessive-backtracks`, as the installed `tolerator` bin
 * runs. A TenancyPolicy whose `exempt` matches `'^(a+)+$'` against a tenant's annotation, loaded
 * from YAML as `--policies` loads it, is evaluated on pods whose annotation is `n` and `4n`
 * characters of `a` and a `!` (the input a backtracking engine needs 2^n steps for). Prints
 * `{"flagged": …, "exempt": …, "micros": [n, 4n]}`: the least CPU time of five evaluations at each
 * size, each on a fresh evaluator (no cached answer).
 */
import { cpuUsage } from 'node:process';
import { parsePolicyFile } from '../../src/tenancy/policy-directory.js';
import { createPolicyEvaluator } from '../../src/tenancy/policy-set.js';
import { namespace, pod } from '../tenancy/tenancy-fixtures.js';

const n = Number(process.argv[2] ?? '20000');
const yaml = [
  'apiVersion: tolerator.dev/v1alpha1',
  'kind: TenancyPolicy',
  'metadata: { name: catastrophic }',
  'spec:',
  `  group: "namespaceObject.metadata.?labels['dedicated'].orValue('')"`,
  '  taint: { key: dedicated, effect: NoSchedule }',
  '  nodeLabel: dedicated',
  `  exempt: "object.metadata.?annotations['note'].orValue('').matches('^(a+)+$')"`,
].join('\n');
const loaded = parsePolicyFile('catastrophic.yaml', yaml);
const policy = loaded.policies[0];
if (policy === undefined) {
  throw new Error(`the policy did not load: ${JSON.stringify(loaded.errors)}`);
}
const loadedPolicy = policy;

function exemptAt(size: number): { exempt: boolean; micros: number } {
  const object = pod({}, { annotations: { note: `${'a'.repeat(size)}!` } });
  let least = Infinity;
  let exempt = true;
  for (let run = 0; run < 5; run++) {
    const evaluator = createPolicyEvaluator({
      object,
      oldObject: undefined,
      namespace: namespace('ml', { dedicated: 'gpu' }),
      request: {},
    });
    const before = cpuUsage();
    exempt = evaluator.exempt(loadedPolicy);
    const used = cpuUsage(before);
    least = Math.min(least, used.user + used.system);
  }
  return { exempt, micros: least };
}

// Warm-up at both sizes: the first run compiles what the evaluation reaches.
exemptAt(n);
exemptAt(4 * n);
const small = exemptAt(n);
const large = exemptAt(4 * n);
process.stdout.write(
  JSON.stringify({
    flagged: process.execArgv.some((arg) => arg.includes('regexp-engine')),
    exempt: small.exempt || large.exempt,
    micros: [small.micros, large.micros],
  }),
);
