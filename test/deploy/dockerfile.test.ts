// The Dockerfile's promises, read from the file itself (no Docker daemon needed): a build stage with
// dev dependencies, a runtime stage with production dependencies and compiled output only, a
// numeric non-root user, and the Node.js regexp flag (a second line: CEL's regexes run on RE2 and
// test/tenancy/cel-regex.test.ts proves them safe without it).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const REGEXP_FLAG = '--enable-experimental-regexp-engine-on-excessive-backtracks';
// Node.js 20, the last line below 22, reached end of life in April 2026; 22 is the oldest LTS line
// still supported.
const OLDEST_SUPPORTED_NODE_MAJOR = 22;

interface Instruction {
  keyword: string;
  args: string;
}
interface Stage {
  from: string;
  name: string | undefined;
  instructions: Instruction[];
}

/** Instructions grouped by stage: comments dropped, `\` continuations joined. */
function parseDockerfile(text: string): Stage[] {
  const logical = text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const stages: Stage[] = [];
  for (const line of logical) {
    const match = /^(\S+)\s+(.*)$/.exec(line);
    assert.ok(match?.[1] !== undefined && match[2] !== undefined, `not an instruction: ${line}`);
    const instruction = { keyword: match[1].toUpperCase(), args: match[2].trim() };
    if (instruction.keyword === 'FROM') {
      const [from = '', as, name] = instruction.args.split(/\s+/);
      stages.push({ from, name: as?.toUpperCase() === 'AS' ? name : undefined, instructions: [] });
    } else {
      const stage = stages.at(-1);
      assert.ok(stage, `${instruction.keyword} before the first FROM`);
      stage.instructions.push(instruction);
    }
  }
  return stages;
}

function argsOf(stage: Stage, keyword: string): string[] {
  return stage.instructions.filter((i) => i.keyword === keyword).map((i) => i.args);
}

/** COPY's options and paths: `--from=build /app/dist/ ./dist/` → from build, sources [/app/dist/]. */
function parseCopy(args: string): { from: string | undefined; sources: string[] } {
  const words = args.split(/\s+/);
  const from = words.find((w) => w.startsWith('--from='))?.slice('--from='.length);
  const paths = words.filter((w) => !w.startsWith('--'));
  return { from, sources: paths.slice(0, -1) };
}

const dockerfile = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
const build = dockerfile[0]!;
const runtime = dockerfile.at(-1)!;
const packageJson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  bin: Record<string, string>;
  scripts: Record<string, string>;
};

describe('Dockerfile', () => {
  it('is multi-stage: a build stage and a separate runtime stage', () => {
    assert.ok(dockerfile.length >= 2, `${dockerfile.length} stage(s)`);
    assert.ok(build.name, 'the build stage is named, so COPY --from can refer to it');
    assert.notEqual(runtime, build);
  });

  it('runs on an exact, supported LTS Node.js tag at least as new as package.json engines', () => {
    const tag = /^node:(\d+)\.(\d+)\.(\d+)-[a-z0-9-]+(@sha256:[0-9a-f]{64})?$/.exec(runtime.from);
    assert.ok(tag, `runtime base ${runtime.from} is not node:<major>.<minor>.<patch>-<variant>`);
    const major = Number(tag[1]);
    // Even-numbered release lines are the ones that become LTS.
    assert.equal(major % 2, 0, `Node ${major} is not an LTS line`);
    assert.ok(major >= OLDEST_SUPPORTED_NODE_MAJOR, `Node ${major} is end of life`);
    const enginesMajor = Number(/(\d+)/.exec(packageJson.engines.node)?.[1]);
    assert.ok(major >= enginesMajor, `engines asks for ${packageJson.engines.node}`);
  });

  it('builds on the same Node.js it runs on', () => {
    assert.equal(build.from, runtime.from);
  });

  it('installs all dependencies and compiles in the build stage', () => {
    const runs = argsOf(build, 'RUN');
    assert.ok(
      runs.some((r) => /\bnpm ci\b/.test(r) && !r.includes('--omit=dev')),
      'npm ci with dev dependencies (tsc)',
    );
    assert.ok(runs.some((r) => r.includes('npm run build')));
  });

  it('installs production dependencies only in the runtime stage, from the lock file', () => {
    const runs = argsOf(runtime, 'RUN');
    assert.ok(
      runs.some((r) => /\bnpm ci\b.*--omit=dev/.test(r)),
      runs.join(' | '),
    );
    assert.ok(!runs.some((r) => /\bnpm (install|i)\b/.test(r)), 'npm install ignores the lock file');
    assert.ok(argsOf(runtime, 'ENV').some((e) => /^NODE_ENV[= ]production$/.test(e)));
  });

  it('copies only dist/ from the build stage, and only package*.json and policies/ from the context', () => {
    const copies = argsOf(runtime, 'COPY').map(parseCopy);
    assert.equal(argsOf(runtime, 'ADD').length, 0);
    const fromBuild = copies.filter((c) => c.from !== undefined);
    assert.ok(fromBuild.length > 0, 'nothing copied from the build stage');
    for (const copy of fromBuild) {
      assert.equal(copy.from, build.name);
      for (const source of copy.sources) assert.match(source, /^(\/app\/)?dist\/?$/);
    }
    const allowed = new Set(['package.json', 'package-lock.json', 'package*.json', 'policies/', 'policies']);
    for (const copy of copies.filter((c) => c.from === undefined)) {
      for (const source of copy.sources) assert.ok(allowed.has(source), `runtime copies ${source} from the build context`);
    }
    const everySource = copies.flatMap((c) => c.sources);
    assert.ok(!everySource.some((s) => /(^|\/)src\b/.test(s)), 'no sources in the runtime image');
  });

  it('runs as a numeric non-root user', () => {
    const user = argsOf(runtime, 'USER').at(-1);
    const ids = /^(\d+)(?::(\d+))?$/.exec(user ?? '');
    assert.ok(ids, `USER ${String(user)} is not numeric (the kubelet can only check runAsNonRoot for a number)`);
    assert.notEqual(Number(ids[1]), 0);
    assert.notEqual(Number(ids[2] ?? 1), 0);
  });

  it('starts dist/main.js serve under node with the regexp-engine flag, on port 8443', () => {
    const entrypoint = argsOf(runtime, 'ENTRYPOINT').at(-1);
    assert.ok(entrypoint !== undefined && entrypoint.startsWith('['), 'ENTRYPOINT in exec form, so node is PID 1 and receives SIGTERM');
    assert.deepEqual(JSON.parse(entrypoint), ['node', REGEXP_FLAG, 'dist/main.js']);
    assert.deepEqual(JSON.parse(argsOf(runtime, 'CMD').at(-1) ?? 'null'), ['serve']);
    assert.deepEqual(argsOf(runtime, 'EXPOSE'), ['8443']);
  });

  it('uses the same node flag and entry point as package.json', () => {
    assert.ok(packageJson.scripts.start?.includes(REGEXP_FLAG), 'npm start passes the flag');
    // The bins run the sources in a checkout and dist/main.js (the image's entry point) elsewhere.
    assert.equal(packageJson.bin.tolerator, 'bin/tolerator.js');
    assert.equal(packageJson.bin['kubectl-tolerator'], 'bin/tolerator.js');
    assert.match(readFileSync(join(ROOT, 'bin', 'tolerator.js'), 'utf8'), /new URL\('\.\.\/dist\/main\.js', import\.meta\.url\)/);
  });
});

describe('.dockerignore', () => {
  const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));

  it('keeps host build output, dependencies, tests and git history out of the build context', () => {
    for (const entry of ['node_modules', '.git', 'dist', 'test', 'bench', 'coverage']) {
      assert.ok(ignored.includes(entry), `${entry} is not ignored`);
    }
  });

  it('does not ignore what the Dockerfile copies', () => {
    for (const entry of ['src', 'policies', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json']) {
      assert.ok(!ignored.includes(entry), `${entry} is ignored but needed`);
    }
  });
});
