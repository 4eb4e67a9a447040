/**
 * `tolerator test DIR`: admission cases for a platform team's CI. Every `*.test.yaml` (or
 * `.test.yml`) file under DIR, recursively, holds one or more cases (YAML documents); other files
 * (cluster state, policies) are support files the cases point at. A case:
 *
 * ```yaml
 * name: a pod in a tenant namespace gets the group's toleration      # required
 * args: [--feature-gates=TaintTolerationComparisonOperators=true]    # optional: tolerator's admission flags
 * policies: ..                      # optional: --policies, relative to the case file
 * clusterState: cluster.yaml        # optional: --cluster-state, relative to the case file
 * webhook: both                     # both (default: mutate, then validate) | mutate | validate
 * operation: CREATE                 # CREATE (default) | UPDATE
 * namespace: ml                     # optional: else resource.metadata.namespace, else "default"
 * resource: { apiVersion: v1, kind: Pod, ... }
 * oldResource: { ... }              # required for UPDATE
 * userInfo: { username: alice, groups: [platform-admins] }   # optional: who sends the request (request.userInfo)
 * expect:
 *   allowed: true
 *   patched: { ... }                # optional: the whole resource after tolerator's patch
 *   warnings: [ ... ]               # optional: exactly these warnings
 * # or
 * expect:
 *   allowed: false
 *   message: ...                    # optional: the exact status message
 *   messageContains: ...            # optional: a part of it
 * ```
 *
 * Paths in `args` (`--policies`, `--cluster-state`, `--admission-config`) are relative to the
 * case file too, so a test directory can be run from anywhere. The request goes through the same
 * pipeline as the server (`pipelineFor`), built from the same flags. Exit code: 0 when every case
 * passes, 1 when one fails, 2 when the directory or a case cannot be read.
 */
import { terminalLines, terminalSafe } from '../audit/audit-summary.js';
import { readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { diffArrays } from 'diff';
import { parseAllDocuments, stringify } from 'yaml';
import type { JsonObject } from '../api/types.js';
import { AdmissionError } from '../admission/errors.js';
import { admitObject, type AdmissionRun } from '../admission/admit-object.js';
import { jsonEqual } from '../admission/json-patch-diff.js';
import type { WebhookSide } from '../admission/pipeline.js';
import { emptyPolicySet, type PolicySet } from '../tenancy/policy-set.js';
import type { CommandDefinition, CommandIo } from './command.js';
import { parseFlags, UsageError, type FlagSpec, type ParsedFlags } from './flags.js';
import { admissionFlags, readAdmissionSettings } from './options.js';
import { pipelineFor } from '../admission/pipeline-settings.js';
import { loadPolicies } from '../server/tenancy-policies.js';
import { offlineClusterFacts } from './runtime.js';
import { isJsonObject } from '../api/types.js';

// ---------------------------------------------------------------------------------------------
// Cases

type Expectation =
  | { readonly allowed: true; readonly patched?: JsonObject; readonly warnings?: readonly string[] }
  | { readonly allowed: false; readonly message?: string; readonly messageContains?: string };

export interface TestCase {
  readonly name: string;
  readonly file: string;
  readonly args: readonly string[];
  readonly sides: readonly WebhookSide[];
  readonly operation: 'CREATE' | 'UPDATE';
  readonly namespace: string;
  readonly resource: JsonObject;
  readonly oldResource: JsonObject | undefined;
  readonly userInfo: JsonObject | undefined;
  readonly expect: Expectation;
}

class CaseError extends Error {}

const caseFields = new Set([
  'name',
  'args',
  'policies',
  'clusterState',
  'webhook',
  'operation',
  'namespace',
  'resource',
  'oldResource',
  'userInfo',
  'expect',
]);
const pathFlags = ['policies', 'cluster-state', 'admission-config'] as const;

/** Reads one case document; every problem is an error naming the file and the case. */
export function parseTestCase(document: unknown, file: string, index: number): TestCase {
  const where = `${file}: document ${index + 1}`;
  if (!isJsonObject(document)) throw new CaseError(`${where}: a test case must be a mapping`);
  for (const field of Object.keys(document)) {
    if (!caseFields.has(field))
      throw new CaseError(`${where}: unknown field ${JSON.stringify(field)}; known fields are ${[...caseFields].join(', ')}`);
  }
  const name = document.name;
  if (typeof name !== 'string' || name === '') throw new CaseError(`${where}: name is required`);
  const at = `${where} (${name})`;
  const args = document.args ?? [];
  if (!Array.isArray(args) || !args.every((arg) => typeof arg === 'string')) throw new CaseError(`${at}: args must be a list of strings`);
  const allArgs = [...args];
  for (const [field, flag] of [
    ['policies', 'policies'],
    ['clusterState', 'cluster-state'],
  ] as const) {
    const value = document[field];
    if (value === undefined) continue;
    if (typeof value !== 'string') throw new CaseError(`${at}: ${field} must be a path`);
    allArgs.push(`--${flag}=${value}`);
  }
  const webhook = document.webhook ?? 'both';
  const sides: readonly WebhookSide[] | undefined =
    webhook === 'both' ? ['mutate', 'validate'] : webhook === 'mutate' || webhook === 'validate' ? [webhook] : undefined;
  if (sides === undefined) throw new CaseError(`${at}: webhook must be both, mutate or validate`);
  const operation = document.operation ?? 'CREATE';
  if (operation !== 'CREATE' && operation !== 'UPDATE') throw new CaseError(`${at}: operation must be CREATE or UPDATE`);
  const resource = document.resource;
  if (!isJsonObject(resource)) throw new CaseError(`${at}: resource must be a Kubernetes object`);
  const oldResource = document.oldResource;
  if (oldResource !== undefined && !isJsonObject(oldResource)) throw new CaseError(`${at}: oldResource must be a Kubernetes object`);
  if (operation === 'UPDATE' && oldResource === undefined) throw new CaseError(`${at}: an UPDATE needs oldResource`);
  const metadataNamespace = (resource.metadata as { namespace?: unknown } | undefined)?.namespace;
  const namespace = document.namespace ?? (typeof metadataNamespace === 'string' ? metadataNamespace : 'default');
  if (typeof namespace !== 'string') throw new CaseError(`${at}: namespace must be a string`);
  const userInfo = document.userInfo;
  if (userInfo !== undefined && !isJsonObject(userInfo))
    throw new CaseError(`${at}: userInfo must be a mapping (username, uid, groups, extra)`);
  return {
    name,
    file,
    args: allArgs,
    sides,
    operation,
    namespace,
    resource,
    oldResource,
    userInfo,
    expect: parseExpectation(document.expect, at),
  };
}

function parseExpectation(expect: unknown, at: string): Expectation {
  if (!isJsonObject(expect) || typeof expect.allowed !== 'boolean')
    throw new CaseError(`${at}: expect.allowed (true or false) is required`);
  const known = expect.allowed ? ['allowed', 'patched', 'warnings'] : ['allowed', 'message', 'messageContains'];
  for (const field of Object.keys(expect)) {
    if (!known.includes(field))
      throw new CaseError(`${at}: expect.${field} does not go with allowed: ${String(expect.allowed)}; use ${known.join(', ')}`);
  }
  if (expect.allowed) {
    if (expect.patched !== undefined && !isJsonObject(expect.patched))
      throw new CaseError(`${at}: expect.patched must be the resource after the patch`);
    const warnings = expect.warnings;
    if (warnings !== undefined && !(Array.isArray(warnings) && warnings.every((w) => typeof w === 'string')))
      throw new CaseError(`${at}: expect.warnings must be a list of strings`);
    return {
      allowed: true,
      ...(expect.patched === undefined ? {} : { patched: expect.patched }),
      ...(warnings === undefined ? {} : { warnings: warnings }),
    };
  }
  for (const field of ['message', 'messageContains'] as const) {
    if (expect[field] !== undefined && typeof expect[field] !== 'string') throw new CaseError(`${at}: expect.${field} must be a string`);
  }
  return {
    allowed: false,
    ...(expect.message === undefined ? {} : { message: expect.message as string }),
    ...(expect.messageContains === undefined ? {} : { messageContains: expect.messageContains as string }),
  };
}

/** Every `*.test.yaml`/`*.test.yml` under `dir`, recursively, in name order. */
export function findCaseFiles(dir: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) found.push(...findCaseFiles(path));
    else if (/\.test\.ya?ml$/.test(name)) found.push(path);
  }
  return found;
}

/** The case's flags with their file paths resolved against the case file's directory. */
function caseFlags(testCase: TestCase): ParsedFlags {
  const flags = parseFlags(testCase.args, admissionFlags);
  const values = new Map(flags.values);
  for (const flag of pathFlags) {
    const value = values.get(flag);
    if (typeof value === 'string') values.set(flag, resolve(dirname(testCase.file), value));
  }
  return { values, positionals: flags.positionals };
}

export interface CaseResult {
  readonly passed: boolean;
  /** For a failure: what differs, for a person. */
  readonly failure?: string;
}

/** Runs one case. `policies` caches loaded policy directories across cases. */
export async function runTestCase(
  testCase: TestCase,
  io: Pick<CommandIo, 'readFile' | 'stderr'>,
  policies: Map<string, PolicySet> = new Map(),
): Promise<CaseResult> {
  const flags = caseFlags(testCase);
  if (flags.positionals.length > 0)
    throw new CaseError(`${testCase.file} (${testCase.name}): args must be flags, got ${flags.positionals.join(' ')}`);
  const settings = readAdmissionSettings(flags);
  // A case reports PASS or FAIL; skipped cluster-state documents are not part of that.
  const facts = offlineClusterFacts(settings.clusterStateFile, io.readFile, () => undefined);
  let set = emptyPolicySet;
  if (settings.policiesDir !== undefined) {
    const dir = settings.policiesDir;
    let cached = policies.get(dir);
    if (cached === undefined) {
      cached = loadPolicies(dir, '; ');
      for (const caution of cached.policies.flatMap((policy) => policy.cautions))
        io.stderr(`tolerator test: caution: --policies ${terminalSafe(`${dir}: ${caution}`)}\n`);
      policies.set(dir, cached);
    }
    set = cached;
  }
  const pipeline = pipelineFor(settings, facts, () => set);
  const run = await admitObject(pipeline, {
    object: testCase.resource,
    oldObject: testCase.oldResource,
    userInfo: testCase.userInfo,
    operation: testCase.operation,
    namespace: testCase.namespace,
    sides: testCase.sides,
  });
  return judge(testCase.expect, run);
}

function judge(expect: Expectation, run: AdmissionRun): CaseResult {
  if (expect.allowed !== run.allowed) {
    const got = run.allowed ? 'allowed' : `denied: ${run.message ?? '(no message)'}`;
    return { passed: false, failure: `expected ${expect.allowed ? 'allowed' : 'denied'}, got ${got}` };
  }
  const problems: string[] = [];
  if (expect.allowed) {
    if (expect.patched !== undefined && !jsonEqual(expect.patched, run.object)) {
      problems.push(
        `the resource after the patch differs (- expected, + actual):\n${lineDiff(stringify(expect.patched), stringify(run.object))}`,
      );
    }
    if (expect.warnings !== undefined && !jsonEqual(expect.warnings, run.warnings)) {
      problems.push(`the warnings differ (- expected, + actual):\n${lineDiff(stringify(expect.warnings), stringify(run.warnings))}`);
    }
  } else {
    const message = run.message ?? '';
    if (expect.message !== undefined && expect.message !== message) {
      problems.push(`the message differs (- expected, + actual):\n${lineDiff(expect.message, message)}`);
    }
    if (expect.messageContains !== undefined && !message.includes(expect.messageContains)) {
      problems.push(`the message does not contain ${JSON.stringify(expect.messageContains)}:\n  ${message}`);
    }
  }
  return problems.length === 0 ? { passed: true } : { passed: false, failure: problems.join('\n') };
}

/**
 * A unified-style line diff with two lines of context around each change: enough to see which
 * field differs in a resource of a few hundred lines. The diff is jsdiff's (`diff` on npm, pinned):
 * Myers' O(ND) algorithm, linear for the few differences a failing case has, where the table of
 * a longest common subsequence written here before cost time and memory in the product of the
 * two lengths.
 */
export function lineDiff(expected: string, actual: string): string {
  const a = expected.replace(/\n$/, '').split('\n');
  const b = actual.replace(/\n$/, '').split('\n');
  const lines: { mark: ' ' | '-' | '+'; text: string }[] = [];
  for (const change of diffArrays(a, b)) {
    const mark = change.removed ? '-' : change.added ? '+' : ' ';
    for (const text of change.value) lines.push({ mark, text });
  }
  const context = 2;
  // Whether each line is within `context` lines of a change: one pass each way, linear.
  const near = new Array<boolean>(lines.length).fill(false);
  let sinceChange = Infinity;
  for (let index = 0; index < lines.length; index++) {
    sinceChange = lines[index]?.mark === ' ' ? sinceChange + 1 : 0;
    near[index] = sinceChange <= context;
  }
  sinceChange = Infinity;
  for (let index = lines.length - 1; index >= 0; index--) {
    sinceChange = lines[index]?.mark === ' ' ? sinceChange + 1 : 0;
    near[index] = (near[index] ?? false) || sinceChange <= context;
  }
  const out: string[] = [];
  let skipped = false;
  for (const [index, line] of lines.entries()) {
    if (near[index] === true) {
      if (skipped) out.push('  ...');
      skipped = false;
      out.push(`  ${line.mark} ${line.text}`);
    } else {
      skipped = true;
    }
  }
  if (skipped) out.push('  ...');
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------------
// The command

const testFlags = {
  output: {
    kind: 'string',
    placeholder: 'FORMAT',
    short: 'o',
    help: 'text (default): PASS/FAIL lines; json or yaml: every case with its result, and the counts',
    choices: ['text', 'json', 'yaml'],
  },
  junit: {
    kind: 'string',
    placeholder: 'FILE',
    help: 'also write the results as JUnit XML to FILE, for CI systems that show test reports',
  },
} as const satisfies Record<string, FlagSpec>;

/** One case's outcome, as `-o json` and `--junit` report it. */
export interface CaseReport {
  readonly name: string;
  readonly file: string;
  readonly passed: boolean;
  readonly failure?: string;
}

export const testCommand: CommandDefinition = {
  name: 'test',
  summary: 'run a directory of *.test.yaml admission cases, as a CI step',
  arguments: [['<dir>', 'the directory whose *.test.yaml and *.test.yml files (recursively) hold the cases']],
  flags: testFlags,
  outcomes: { ok: 'every case passed', found: 'a case failed' },
  run: runTests,
};

async function runTests(flags: ParsedFlags, io: CommandIo): Promise<number> {
  const dir = flags.positionals[0] ?? '';
  const files = findCaseFiles(dir);
  if (files.length === 0) throw new UsageError(`no *.test.yaml or *.test.yml files under ${dir}`);
  const cases = files.flatMap((file) => {
    const documents = parseAllDocuments(io.readFile(file));
    return documents.flatMap((document, index) => {
      const [error] = document.errors;
      if (error !== undefined) throw new CaseError(`${file}: document ${index + 1}: ${error.message.split('\n', 1)[0] ?? ''}`);
      const value: unknown = document.toJS();
      return value === null || value === undefined ? [] : [parseTestCase(value, file, index)];
    });
  });

  const output = (flags.values.get('output') as 'text' | 'json' | 'yaml' | undefined) ?? 'text';
  const text = output === 'text';
  const policies = new Map<string, PolicySet>();
  const reports: CaseReport[] = [];
  let failed = 0;
  for (const testCase of cases) {
    const label = `${testCase.name} (${testCase.file})`;
    let result: CaseResult;
    try {
      result = await runTestCase(testCase, io, policies);
    } catch (error) {
      // A case that cannot run (bad flags, unreadable files, a review the webhook would refuse to read) fails, and says why.
      const known = error instanceof CaseError || error instanceof UsageError || error instanceof AdmissionError;
      result = {
        passed: false,
        failure: known ? error.message : `could not run: ${error instanceof Error ? error.message : String(error)}`,
      };
    }
    reports.push({
      name: testCase.name,
      file: testCase.file,
      passed: result.passed,
      ...(result.passed ? {} : { failure: result.failure ?? '' }),
    });
    if (result.passed) {
      if (text) io.stdout(`PASS ${terminalSafe(label)}\n`);
    } else {
      failed++;
      // The case's name and its failure quote the case file and the object: escaped for the terminal.
      if (text) io.stdout(`FAIL ${terminalSafe(label)}\n${terminalLines(indent(result.failure ?? ''))}\n`);
    }
  }
  const summary = { passed: cases.length - failed, failed, total: cases.length };
  if (text) io.stdout(`\n${summary.passed} passed, ${failed} failed, ${cases.length} cases\n`);
  if (output === 'json') io.stdout(`${JSON.stringify({ cases: reports, ...summary }, null, 2)}\n`);
  if (output === 'yaml') io.stdout(stringify({ cases: reports, ...summary }));
  const junit = flags.values.get('junit') as string | undefined;
  if (junit !== undefined) {
    if (io.writeFile === undefined) throw new UsageError('--junit: this way of running tolerator cannot write files');
    io.writeFile(junit, junitXml(reports));
  }
  return failed === 0 ? 0 : 1;
}

/**
 * The results as JUnit XML (the testsuites/testsuite/testcase/failure shape Jenkins, GitLab and
 * GitHub's test reporters read): one testsuite per case file. Written by hand: the format is
 * five elements, and only XML's escaping needs care, which `xmlText` does.
 */
export function junitXml(reports: readonly CaseReport[]): string {
  const files = new Map<string, CaseReport[]>();
  for (const report of reports) files.set(report.file, [...(files.get(report.file) ?? []), report]);
  const failures = reports.filter((report) => !report.passed).length;
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="tolerator test" tests="${reports.length}" failures="${failures}">`,
  ];
  for (const [file, cases] of files) {
    const failed = cases.filter((report) => !report.passed).length;
    lines.push(`  <testsuite name="${xmlText(file)}" tests="${cases.length}" failures="${failed}">`);
    for (const report of cases) {
      const open = `    <testcase name="${xmlText(report.name)}" classname="${xmlText(file)}"`;
      if (report.passed) {
        lines.push(`${open}/>`);
      } else {
        const failure = report.failure ?? '';
        lines.push(`${open}>`);
        lines.push(`      <failure message="${xmlText(failure.split('\n', 1)[0] ?? '')}">${xmlText(failure)}</failure>`);
        lines.push('    </testcase>');
      }
    }
    lines.push('  </testsuite>');
  }
  lines.push('</testsuites>');
  return `${lines.join('\n')}\n`;
}

/**
 * Text for an XML attribute or element: the five markup characters escaped, and the characters
 * XML 1.0 cannot hold at all (the C0 controls but tab, newline and return, lone surrogates,
 * U+FFFE and U+FFFF) written as U+FFFD, so a case name a tenant's manifest carries cannot break the file.
 */
export function xmlText(text: string): string {
  return text
    .replace(
      // The control characters are what the expression is for.
      // eslint-disable-next-line no-control-regex
      /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g,
      '\uFFFD',
    )
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;')
    .replace(/\n/g, '&#10;');
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
}
