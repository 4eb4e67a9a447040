/**
 * The program as a kubectl user meets it (src/cli/program.ts): help on every command without side
 * effects, --version, suggestions, the one exit-code table per command, -o on every command with
 * output, standard input, and the completion scripts made from the same list of commands.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import type { CommandIo } from '../../src/cli/command.js';
import { completionScript } from '../../src/cli/completion.js';
import { commands, runCli } from '../../src/cli/program.js';
import { junitXml, xmlText } from '../../src/cli/policy-test.js';
import { runProgram } from '../support/command-io.js';
import { loadReviewFixture } from '../support/harness.js';

const root = join(import.meta.dirname, '..', '..');
const example = (name: string): string => join(root, 'examples', name);
const missing = join(root, 'no-such-file.yaml');

/** An io that fails the test if the command reads anything or starts a server. */
function untouchable(): { io: CommandIo; out: () => string; err: () => string } {
  let out = '';
  let err = '';
  const refuse = (): never => {
    throw new Error('a --help must not read input');
  };
  return {
    io: {
      stdout: (text) => (out += text),
      stderr: (text) => (err += text),
      readFile: refuse,
      readBytes: refuse,
      readStdin: refuse,
      log: refuse,
      untilShutdown: refuse,
      constrainedMemory: refuse,
    },
    out: () => out,
    err: () => err,
  };
}

describe('help on every command, without side effects', () => {
  for (const command of commands) {
    for (const flag of ['-h', '--help']) {
      it(`${command.name} ${flag}: exit 0, usage and exit codes on stdout, nothing read or started`, async () => {
        const { io, out, err } = untouchable();
        const code = await runCli([command.name, flag], io);
        assert.equal(code, 0, err());
        assert.match(out(), new RegExp(`^Usage: tolerator ${command.name} `));
        assert.match(out(), /\nExit codes:\n {2}0 {2}.+\n(?: {2}1 {2}.+\n)? {2}2 {2}a usage error/);
        assert.equal(err(), '');
      });
    }
  }

  it('help COMMAND is the same text as COMMAND --help', async () => {
    assert.equal((await runProgram(['help', 'review'])).stdout, (await runProgram(['review', '--help'])).stdout);
  });

  it('no command: the program help on stderr, exit 2', async () => {
    const result = await runProgram([]);
    assert.equal(result.code, 2);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /^Usage: tolerator <command> \[flags\]/);
  });
});

describe('--version', () => {
  it('prints the version, the commit and the Node.js version, exit 0', async () => {
    const result = await runProgram(['--version']);
    assert.deepEqual(result, { code: 0, stdout: 'tolerator 0.0.0-test\ncommit: test-revision\nnode: v0-test\n', stderr: '' });
  });

  it('from the process: the version of package.json and the Node.js running it', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts', '--version'], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(run.status, 0, run.stderr);
    const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
    assert.match(run.stdout, new RegExp(`^tolerator ${version.replaceAll('.', '\\.')}\ncommit: \\S+.*\nnode: ${process.version}\n$`));
  });
});

describe('unknown commands and flags: the closest valid one, exit 2', () => {
  it('a misspelt command', async () => {
    const result = await runProgram(['revew']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^error: unknown command 'revew'\n\(Did you mean review\?\)\n/);
  });
  it('a misspelt flag', async () => {
    const result = await runProgram(['review', '--webhok', 'mutate']);
    assert.equal(result.code, 2);
    assert.match(
      result.stderr,
      /^error: unknown option '--webhok'\n\(Did you mean --webhook\?\)\n\(run "tolerator review --help" for usage\)\n$/,
    );
  });
  it('a value not among the choices names the choices', async () => {
    const result = await runProgram(['audit', '-o', 'xml']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /Allowed choices are table, json, yaml\./);
  });
  it('kubectl spellings of -o: -o json, -ojson and -o=json', async () => {
    for (const argv of [['-o', 'json'], ['-ojson'], ['-o=json']]) {
      const result = await runProgram(['audit', '--cluster-state', example('audit-cluster.yaml'), ...argv]);
      assert.equal(result.code, 1, result.stderr);
      assert.ok(Array.isArray((JSON.parse(result.stdout) as { violations: unknown[] }).violations));
    }
  });
});

/** Per command: what gives 0, what gives 1, and that a missing file is 2 (not 1, which means denied). */
describe('exit codes, per command', () => {
  const failingCase = mkdtempSync(join(tmpdir(), 'tolerator-program-'));
  writeFileSync(
    join(failingCase, 'fail.test.yaml'),
    'name: expects a denial it does not get\nresource: { apiVersion: v1, kind: Pod, metadata: { name: p }, spec: { containers: [{ name: a, image: x }] } }\nexpect: { allowed: false }\n',
  );
  const deniedPod = JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'default' },
    spec: { containers: [{ name: 'a', image: 'x' }], tolerations: [{ key: 'k', operator: 'Gt', value: '5', effect: 'NoSchedule' }] },
  });
  const rows: { command: string; argv: string[]; stdin?: string; code: number }[] = [
    { command: 'review', argv: [example('review-burstable-pod.json')], code: 0 },
    {
      command: 'review',
      argv: ['-', '--webhook', 'validate'],
      stdin: JSON.stringify(loadReviewFixture('gt-gate-off-create').review),
      code: 1,
    },
    { command: 'review', argv: [missing], code: 2 },
    { command: 'explain', argv: [example('tenant-deployment.yaml'), '--policies', join(root, 'policies')], code: 0 },
    { command: 'explain', argv: ['-'], stdin: deniedPod, code: 1 },
    { command: 'explain', argv: [missing], code: 2 },
    {
      command: 'simulate',
      argv: ['--nodes', example('cluster-nodes.yaml'), '-'],
      stdin: 'apiVersion: v1\nkind: Pod\nmetadata: { name: p }\nspec: { containers: [{ name: a, image: x }] }\n',
      code: 0,
    },
    { command: 'simulate', argv: ['--nodes', example('cluster-nodes.yaml'), example('tenant-deployment.yaml')], code: 1 },
    { command: 'simulate', argv: ['--nodes', example('cluster-nodes.yaml'), missing], code: 2 },
    { command: 'test', argv: [join(root, 'policies', 'tests')], code: 0 },
    { command: 'test', argv: [failingCase], code: 1 },
    { command: 'test', argv: [missing], code: 2 },
    { command: 'audit', argv: ['--cluster-state', example('audit-cluster.yaml')], code: 1 },
    { command: 'audit', argv: ['--cluster-state', missing], code: 2 },
    { command: 'completion', argv: ['bash'], code: 0 },
    { command: 'completion', argv: ['tcsh'], code: 2 },
    { command: 'serve', argv: ['--port', 'eighty'], code: 2 },
  ];
  for (const row of rows) {
    it(`${row.command} ${row.argv.map((arg) => arg.replace(root, '.')).join(' ')}: ${row.code}`, async () => {
      const result = await runProgram([row.command, ...row.argv], {}, row.stdin === undefined ? {} : { stdin: row.stdin });
      assert.equal(result.code, row.code, result.stderr);
      if (row.code === 2) {
        assert.match(result.stderr, /\S/);
        assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
      }
      if (row.argv[0] === missing || row.argv.at(-1) === missing) {
        assert.match(result.stderr, /no-such-file\.yaml: no such file or directory\n$/);
      }
    });
  }
});

describe('review -o', () => {
  const file = example('review-burstable-pod.json');
  it('patch: the JSON Patch, decoded', async () => {
    const result = await runProgram(['review', file, '-o', 'patch']);
    assert.equal(result.code, 0, result.stderr);
    const patch = JSON.parse(result.stdout) as { op: string; path: string }[];
    assert.deepEqual(
      patch.map((operation) => `${operation.op} ${operation.path}`),
      ['add /spec/tolerations'],
    );
  });
  it('object: the object after the patch, as YAML', async () => {
    const result = await runProgram(['review', file, '-o', 'object']);
    const object = parseYaml(result.stdout) as { kind: string; spec: { tolerations: { key: string }[] } };
    assert.equal(object.kind, 'Pod');
    assert.ok(object.spec.tolerations.some((toleration) => toleration.key === 'node.kubernetes.io/memory-pressure'));
  });
  it('review, json and yaml: the AdmissionReview the server answers', async () => {
    const review = JSON.parse((await runProgram(['review', file, '-o', 'review'])).stdout) as unknown;
    assert.deepEqual(JSON.parse((await runProgram(['review', file, '-o', 'json'])).stdout), review);
    assert.deepEqual(parseYaml((await runProgram(['review', file, '-o', 'yaml'])).stdout), review);
    assert.deepEqual(JSON.parse((await runProgram(['review', file])).stdout), review);
  });
  it('patch of a denied review: nothing on stdout, the message on stderr, exit 1', async () => {
    const result = await runProgram(
      ['review', '-', '-o', 'patch'],
      {},
      { stdin: JSON.stringify(loadReviewFixture('gt-gate-off-create').review) },
    );
    assert.equal(result.code, 1);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /^tolerator review: denied: .*Unsupported value: "Gt"/);
  });
});

describe('explain on a multi-document stream', () => {
  const stream = [
    'apiVersion: v1\nkind: Namespace\nmetadata: { name: shop }',
    'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: a, namespace: shop }',
    'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: b, namespace: shop }',
    'apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: web, namespace: shop }\nspec:\n  template:\n    spec: { containers: [{ name: a, image: x, resources: { requests: { memory: 1Gi } } }] }',
  ].join('\n---\n');
  it('skips what is not a workload with one note, and explains the rest', async () => {
    const result = await runProgram(['explain', '-'], {}, { stdin: stream });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(
      result.stderr,
      'tolerator explain: note: skipped 3 documents that are neither Pods nor workloads: v1 Namespace, v1 ConfigMap ×2\n',
    );
    assert.match(result.stdout, /^Deployment shop\/web: the pods it creates\n/);
  });
  it('-o json: each explanation with its changes as JSON Patch operations', async () => {
    const result = await runProgram(['explain', '-', '-o', 'json'], {}, { stdin: stream });
    const [explanation, ...rest] = JSON.parse(result.stdout) as {
      kind: string;
      name: string;
      allowed: boolean;
      steps: { plugin: string; changes: unknown[] }[];
    }[];
    assert.equal(rest.length, 0);
    assert.deepEqual([explanation?.kind, explanation?.name, explanation?.allowed], ['Deployment', 'web', true]);
    assert.ok(explanation?.steps.some((step) => step.changes.length > 0));
  });
  it('a stream with no workload at all: exit 2', async () => {
    const result = await runProgram(['explain', '-'], {}, { stdin: 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: a }\n' });
    assert.equal(result.code, 2);
    assert.match(result.stderr, /no Pod or workload with a pod template in the input/);
  });
});

describe('test -o json and --junit', () => {
  const dir = join(root, 'policies', 'tests');
  it('-o json: every case and the counts', async () => {
    const result = await runProgram(['test', dir, '-o', 'json']);
    const report = JSON.parse(result.stdout) as { cases: { passed: boolean }[]; passed: number; failed: number; total: number };
    assert.equal(report.total, report.cases.length);
    assert.deepEqual([report.passed, report.failed], [report.total, 0]);
  });
  it('--junit FILE: one testsuite per case file, one testcase per case', async () => {
    const result = await runProgram(['test', dir, '--junit', 'out.xml']);
    const xml = result.written?.['out.xml'] ?? '';
    assert.match(xml, /^<\?xml version="1\.0" encoding="UTF-8"\?>\n<testsuites name="tolerator test" tests="18" failures="0">/);
    assert.equal(xml.match(/<testcase /g)?.length, 18);
  });
  it('a failure carries its message; names are escaped, characters XML cannot hold replaced', () => {
    const xml = junitXml([{ name: 'a <b> & "c"\u0001', file: 'f.test.yaml', passed: false, failure: 'first line\nsecond' }]);
    assert.match(xml, /<testcase name="a &lt;b&gt; &amp; &quot;c&quot;\uFFFD" classname="f\.test\.yaml">/);
    assert.match(xml, /<failure message="first line">first line&#10;second<\/failure>/);
    assert.equal(xmlText('\uD800x'), '\uFFFDx');
  });
});

describe('completion', () => {
  for (const shell of ['bash', 'zsh', 'fish'] as const) {
    it(`${shell}: names every command and every flag of each`, () => {
      const script = completionScript(shell, 'tolerator', commands);
      for (const command of commands) {
        assert.ok(script.includes(command.name), command.name);
        for (const flag of Object.keys(command.flags))
          assert.ok(script.includes(shell === 'fish' ? `-l ${flag}` : `--${flag}`), `${command.name} --${flag}`);
      }
    });
  }
  const bash = spawnSync('bash', ['--version'], { encoding: 'utf8' });
  it('bash: the script parses, and completes commands, flags and choices', { skip: bash.status === 0 ? false : 'needs bash' }, () => {
    const script = completionScript('bash', 'tolerator', commands);
    const complete = (words: string[]): string =>
      spawnSync(
        'bash',
        [
          '-c',
          `${script}\nCOMP_WORDS=(${words.map((word) => `'${word}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _tolerator_completion; echo "\${COMPREPLY[*]}"`,
        ],
        {
          encoding: 'utf8',
        },
      ).stdout.trim();
    assert.equal(complete(['tolerator', 're']), 'review');
    assert.equal(complete(['tolerator', 'review', '--web']), '--webhook');
    assert.equal(complete(['tolerator', 'review', '--webhook', '']), 'mutate validate');
    assert.equal(complete(['tolerator', 'audit', '-o', 'j']), 'json');
  });
});
