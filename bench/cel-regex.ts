/**
 * The CEL regular-expression section of bench/RESULTS.md (`npm run bench -- --only regex`, and
 * part of the full run): what RE2 (re2js, src/tenancy/cel.ts) costs against the JavaScript RegExp
 * the CEL library used before, on the shipped prefix policy's pattern and on the catastrophic
 * `'^(a+)+$'` against a tenant's annotation.
 *
 * Everything runs in this process but the V8 rows of the catastrophic pattern: the bench runs
 * without `--enable-experimental-regexp-engine-on-excessive-backtracks` (as the installed bin
 * does), where that pattern never returns, so those rows run in a child process with the flag (as
 * `npm start` and the image had it), on a smaller text. Each figure is the median of 5 rounds;
 * the machine is shared, so the ratios matter more than the numbers.
 */
import { spawnSync } from 'node:child_process';
import { cpuUsage } from 'node:process';
import { Environment } from '@marcbachmann/cel-js';
import { RE2JS } from 're2js';
import { compileExpression, toCelVariables } from '../src/tenancy/cel.js';

export const regexBegin = '<!-- cel-regex: written by `npm run bench -- --only regex` -->';
export const regexEnd = '<!-- /cel-regex -->';

/** The shipped prefix policy's pattern (policies/dedicated-by-namespace-prefix.yaml). */
const prefixPattern = '^team-[a-z0-9]+(-.*)?$';
const prefixGroup =
  "namespaceObject.metadata.name.matches('^team-[a-z0-9]+(-.*)?$') ? 'team-' + namespaceObject.metadata.name.split('-')[1] : ''";
/** Names as a cluster has them: members of groups, and others. */
const names = ['team-a-prod', 'logging', 'team-b', 'teams-x', 'kube-system', 'team-payments-eu-west-1'];
/** 60,000 and 240,000 characters: the larger within the API server's 256 KiB of annotations (as in test/tenancy/cel-regex.test.ts). */
const catastrophicSizes = [60_000, 240_000];
/** With the V8 flag the fallback needs 50,000 backtracks first and then about 2 µs a character (src/validation/name-validation.ts): a smaller text keeps the row short. */
const v8FlagSizes = [1_000, 4_000];
const rounds = 5;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** Nanoseconds of CPU per call of `fn`, the median of `rounds` rounds of `calls` calls. */
function nsPerCall(calls: number, fn: (i: number) => unknown): number {
  const samples: number[] = [];
  for (let round = 0; round < rounds + 1; round++) {
    const before = cpuUsage();
    for (let i = 0; i < calls; i++) fn(i);
    const used = cpuUsage(before);
    // The first round warms the code up and is not counted.
    if (round > 0) samples.push(((used.user + used.system) * 1000) / calls);
  }
  return median(samples);
}

function format(ns: number): string {
  if (ns >= 1e6) return `${(ns / 1e6).toFixed(2)} ms`;
  if (ns >= 1e3) return `${(ns / 1e3).toFixed(1)} µs`;
  return `${ns.toFixed(0)} ns`;
}

/** The V8 rows of the catastrophic pattern, in a child with the flag: nanoseconds per test at each size. */
function v8WithFlag(): number[] {
  const script = `
    const { cpuUsage } = require('node:process');
    const re = new RegExp('^(a+)+$');
    const out = [];
    for (const n of ${JSON.stringify(v8FlagSizes)}) {
      const text = 'a'.repeat(n) + '!';
      re.test(text);
      const samples = [];
      for (let r = 0; r < ${rounds}; r++) { const b = cpuUsage(); re.test(text); const u = cpuUsage(b); samples.push((u.user + u.system) * 1000); }
      samples.sort((a, b) => a - b);
      out.push(samples[Math.floor(samples.length / 2)]);
    }
    process.stdout.write(JSON.stringify(out));`;
  const child = spawnSync(process.execPath, ['--enable-experimental-regexp-engine-on-excessive-backtracks', '-e', script], {
    encoding: 'utf8',
    timeout: 120_000,
    killSignal: 'SIGKILL',
  });
  if (child.status !== 0) throw new Error(`the V8 child failed: ${child.stderr}`);
  return JSON.parse(child.stdout) as number[];
}

export function measureCelRegex(note: (text: string) => void): string[] {
  note('CEL regular expressions: RE2 (re2js) against V8 RegExp');
  const v8 = new RegExp(prefixPattern);
  const re2 = RE2JS.compile(prefixPattern);
  const compiled = compileExpression(prefixGroup, 'string');
  if (compiled.expression === undefined) throw new Error(`the prefix policy's group does not compile: ${compiled.error.message}`);
  const group = compiled.expression;
  // The same expression on the CEL library as it comes (its matches() builds a RegExp per call): the "before".
  const plain = ['object', 'oldObject', 'namespaceObject', 'request'].reduce(
    (env, name) => env.registerVariable(name, 'dyn'),
    new Environment({ enableOptionalTypes: true }),
  );
  const plainGroup = plain.parse(prefixGroup);
  const variables = names.map((name) =>
    toCelVariables({ object: {}, oldObject: undefined, namespaceObject: { metadata: { name } }, request: {} }),
  );
  const fallback = toCelVariables({ object: {}, oldObject: undefined, namespaceObject: undefined, request: {} });
  const rows: string[][] = [
    [
      `compile \`${prefixPattern}\``,
      format(nsPerCall(2_000, () => new RegExp(prefixPattern))),
      format(nsPerCall(2_000, () => RE2JS.compile(prefixPattern))),
      'once per policy load',
    ],
    [
      'test it against a namespace name',
      format(nsPerCall(200_000, (i) => v8.test(names[i % names.length] ?? ''))),
      format(nsPerCall(200_000, (i) => re2.test(names[i % names.length] ?? ''))),
      'once per Namespace object (the group is cached by object)',
    ],
    [
      "the prefix policy's whole `group` expression",
      format(nsPerCall(50_000, (i) => plainGroup((variables[i % variables.length] ?? fallback).converted))),
      format(nsPerCall(50_000, (i) => group.evaluate(variables[i % variables.length] ?? fallback))),
      'per evaluation: the library\u2019s matches() compiled a RegExp each time',
    ],
  ];
  const v8Flagged = v8WithFlag();
  const catastrophic = RE2JS.compile('^(a+)+$');
  const re2Times = catastrophicSizes.map((n) => {
    const text = `${'a'.repeat(n)}!`;
    return nsPerCall(5, () => catastrophic.test(text));
  });
  for (const [i, n] of catastrophicSizes.entries()) {
    const v8Size = v8FlagSizes[i] ?? 0;
    const ratio = (re2Times[i] ?? Number.NaN) / (re2Times[0] ?? Number.NaN);
    rows.push([
      `\`'^(a+)+$'\` against ${n.toLocaleString('en-US')} × \`a\` and \`!\``,
      `never returns without the flag; with it ${format(v8Flagged[i] ?? Number.NaN)} for ${v8Size.toLocaleString('en-US')} characters`,
      format(re2Times[i] ?? Number.NaN),
      i === 0 ? 'linear in the text' : `×${ratio.toFixed(1)} for ×4 the text`,
    ]);
  }
  return [
    regexBegin,
    '## CEL regular expressions',
    '',
    'CPU time per call, the median of 5 rounds after a warm-up round, in the bench process (no V8 regexp flag, as the installed bin runs). "V8 RegExp" is what the CEL library\u2019s `matches()` did before (`new RegExp(pattern).test(text)`); "re2js" is what `src/tenancy/cel.ts` does now, with each literal pattern compiled once, at load.',
    '',
    "The other engines, measured by hand once on this machine (re2-wasm 1.0.2 installed for the purpose, not a dependency): re2-wasm, RE2 in C++ compiled to WebAssembly, took 1.3–1.6 µs to test the prefix pattern against a name (re2js 0.19–0.22 µs; every call crosses into WebAssembly and converts the string to UTF-8), 200–250 µs to compile it (re2js 24–54 µs), and 0.79 ms for `'^(a+)+$'` against 64,000 characters (re2js 0.35 ms); its messages are C++ RE2\u2019s, not Go\u2019s. `re2`, the native binding, needs its install script to build or download a binary, which `npm ci --ignore-scripts` (the Dockerfile) skips. re2js is a port of RE2/J, itself a port of Go\u2019s `regexp`, so its syntax, limits and messages are those Kubernetes CEL has.",
    '',
    '| what | V8 RegExp | re2js (RE2) | note |',
    '| --- | ---: | ---: | --- |',
    ...rows.map((row) => `| ${row.join(' | ')} |`),
    '',
    regexEnd,
  ];
}

/** Replaces the section between its markers, or puts it before "## Targets" the first time. */
export function spliceRegexSection(text: string, section: readonly string[]): string {
  const joined = section.join('\n');
  const begin = text.indexOf(regexBegin);
  const end = text.indexOf(regexEnd);
  if (begin !== -1 && end > begin) return `${text.slice(0, begin)}${joined}${text.slice(end + regexEnd.length)}`;
  const targets = text.indexOf('\n## Targets');
  if (targets !== -1) return `${text.slice(0, targets + 1)}${joined}\n\n${text.slice(targets + 1)}`;
  return `${text.trimEnd()}\n\n${joined}\n`;
}
