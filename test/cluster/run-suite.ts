/**
 * `npm run test:e2e` and `npm run test:differential`: the suites that need a real control plane
 * (test/e2e/*.e2e.ts, test/differential/*.differential.ts), run as part of `npm test`. Builds the control plane first (`npm run control-plane:build`, a no-op when it
 * is built), then runs the suites with node's test runner. Where it cannot be built — no Go on
 * the machine, or a Go older than the module's `go` line, and no build in tools/controlplane/ — it
 * prints one line saying what it skipped and why, and passes; with TOLERATOR_REQUIRE_CONTROL_PLANE=1
 * (CI) that is a failure instead. With TOLERATOR_CONTROL_PLANE_BIN set, that build is used and
 * nothing is built. The suites on kwok's nodes get `npm run kwok:build`, and the Karpenter suites
 * `npm run karpenter:build`, the same way (withTools).
 *
 * The suites have the suffix .e2e.ts (.differential.ts), not .test.ts, so `npm run test:unit`
 * never picks them up. `npm run test:e2e -- FILE...` (and `test:differential -- FILE...`) runs only
 * those files, after the same build. `--version 1.37` (anywhere among the arguments) runs them
 * against that minor's control plane: it is TOLERATOR_CONTROL_PLANE_VERSION for the build and for
 * the suites (binaries.ts).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_MINOR, REPO_ROOT, REQUIRE_CONTROL_PLANE, findControlPlane } from './binaries.js';
import { main as build } from './build.js';
import { goToolchainProblem, installedGoVersion } from './pinned-build.js';
import { main as buildKwok, goCannotBuildKwok } from './kwok-build.js';
import { findKwok } from './kwok.js';
import { goCannotBuildKarpenter, main as buildKarpenter } from './karpenter-build.js';
import { findKarpenter } from './karpenter-binaries.js';

/**
 * The bound on every e2e test and hook (node's --test-timeout): 10 minutes. The longest hook
 * starts a control plane with kube-scheduler and kube-controller-manager and tolerator, whose own
 * deadlines add up to 420 s (etcd 30, kube-apiserver 90, kube-scheduler 60, kube-controller-manager
 * 60, tolerator 120 — serveStartDeadlineMs in test/support/serve-process.ts says why —, its webhooks
 * 60); the longest test waits on a few 60 s pollUntil deadlines.
 * Without a bound a request that never returns hangs CI until the job's own limit. A timed-out
 * file ends without its after() hook; its control plane goes with it all the same (reaper.ts).
 */
export const e2eTestTimeoutMs = 600_000;

// One file at a time (--test-concurrency=1): node's default is the number of cores less one, so a
// 4-core CI runner started three control planes at once (three kube-apiservers of about 500 MB
// each, and the 5 s webhook timeouts that failure-modes.e2e.ts measures shared with them).

/** The bound in force: TOLERATOR_E2E_TIMEOUT_MS (milliseconds, for a slower machine) or e2eTestTimeoutMs. */
function testTimeoutMs(): number {
  const value = process.env.TOLERATOR_E2E_TIMEOUT_MS;
  if (value === undefined || value === '') return e2eTestTimeoutMs;
  if (!/^[1-9][0-9]*$/.test(value))
    throw new Error(`TOLERATOR_E2E_TIMEOUT_MS must be a positive number of milliseconds, not ${JSON.stringify(value)}`);
  return Number(value);
}

/** The folders this runner runs, and the suffix of the suite files in each. */
const SUITE_SUFFIX = { e2e: '.e2e.ts', differential: '.differential.ts' } as const;
type SuiteFolder = keyof typeof SUITE_SUFFIX;

function isSuiteFolder(folder: string | undefined): folder is SuiteFolder {
  return folder !== undefined && Object.hasOwn(SUITE_SUFFIX, folder);
}

function suiteFiles(folder: SuiteFolder): string[] {
  const dir = join(REPO_ROOT, 'test', folder);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((file) => file.endsWith(SUITE_SUFFIX[folder]))
    .sort()
    .map((file) => join('test', folder, file));
}

/**
 * Why this machine's Go cannot build the control plane of `minor`, or undefined when it can. A
 * minor without a module is the build's to refuse (exit 2, a failure): a mistyped
 * TOLERATOR_CONTROL_PLANE_VERSION must not pass as a skip.
 */
function goCannotBuild(minor: string): string | undefined {
  const moduleDir = join(REPO_ROOT, 'tools', 'controlplane', minor);
  const goMod = join(moduleDir, 'go.mod');
  if (!existsSync(goMod)) return undefined;
  return goToolchainProblem(readFileSync(goMod, 'utf8'), installedGoVersion(moduleDir));
}

function run(folder: SuiteFolder, only: readonly string[]): number {
  const files = only.length > 0 ? [...only] : suiteFiles(folder);
  if (files.length === 0) {
    // node --test without files would search the whole tree for tests of its own choosing.
    console.error(`${folder}: no *${SUITE_SUFFIX[folder]} files in test/${folder}`);
    return 1;
  }
  const minor = process.env.TOLERATOR_CONTROL_PLANE_VERSION ?? DEFAULT_MINOR;
  // A build named by TOLERATOR_CONTROL_PLANE_BIN is what the suites use (binaries.ts): building
  // another one here would cost minutes and, without network or Go, fail the run for nothing.
  if (process.env.TOLERATOR_CONTROL_PLANE_BIN === undefined) {
    const problem = goCannotBuild(minor);
    if (problem === undefined) {
      const built = build(['--version', minor]);
      if (built !== 0) return built;
    } else if (typeof findControlPlane(minor) === 'string') {
      const line = `${folder}: ${files.length} suites skipped: ${problem}, so the Kubernetes ${minor} control plane cannot be built`;
      if (REQUIRE_CONTROL_PLANE) {
        console.error(`${line} (TOLERATOR_REQUIRE_CONTROL_PLANE=1: a failure)`);
        return 1;
      }
      console.log(`${line} (TOLERATOR_REQUIRE_CONTROL_PLANE=1 makes this a failure)`);
      return 0;
    }
  }
  const runnable = withTools(files);
  if (typeof runnable === 'number') return runnable;
  if (runnable.length === 0) return 0;
  const result = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=1', `--test-timeout=${testTimeoutMs()}`, ...runnable],
    {
      cwd: REPO_ROOT,
      stdio: 'inherit',
      // Built now: a suite that still finds no control plane is broken, not skipped.
      env: { ...process.env, TOLERATOR_REQUIRE_CONTROL_PLANE: '1' },
    },
  );
  return result.status ?? 1;
}

/** A tool some suites need besides the control plane, built by its own script from its own Go module. */
interface SuiteTool {
  readonly name: string;
  /** The import that marks a suite as needing it. */
  readonly importedAs: RegExp;
  /** The variable that names a build made elsewhere (then nothing is built). */
  readonly binVariable: string;
  goProblem(): string | undefined;
  build(): number;
  /** The build, or why there is none. */
  find(): unknown;
}

const SUITE_TOOLS: readonly SuiteTool[] = [
  {
    name: 'kwok',
    importedAs: /from '(?:\.\.\/)+cluster\/kwok\.js'/,
    binVariable: 'TOLERATOR_KWOK_BIN',
    goProblem: goCannotBuildKwok,
    build: () => buildKwok([]),
    find: findKwok,
  },
  {
    name: 'karpenter',
    importedAs: /from '(?:\.\.\/)+cluster\/karpenter\.js'/,
    binVariable: 'TOLERATOR_KARPENTER_BIN',
    goProblem: goCannotBuildKarpenter,
    build: () => buildKarpenter([]),
    find: findKarpenter,
  },
];

/**
 * The suites whose nodes are kwok's (they import test/cluster/kwok.ts) need `npm run kwok:build`
 * too, and those that run Karpenter (test/cluster/karpenter.ts) `npm run karpenter:build`: each
 * built here (a no-op when it is) unless its variable (TOLERATOR_KWOK_BIN, TOLERATOR_KARPENTER_BIN)
 * names a build made elsewhere. Where this machine's Go cannot build it (their go.mod needs a newer
 * Go than the control plane's) and there is no build, they are left out with one line saying so,
 * a failure with TOLERATOR_REQUIRE_CONTROL_PLANE=1. Returns the files to run, or an exit code.
 */
function withTools(files: readonly string[]): string[] | number {
  let runnable = [...files];
  for (const tool of SUITE_TOOLS) {
    const need = runnable.filter((file) => tool.importedAs.test(readFileSync(join(REPO_ROOT, file), 'utf8')));
    if (need.length === 0) continue;
    const goProblem = tool.goProblem();
    if (goProblem === undefined && process.env[tool.binVariable] === undefined) {
      const built = tool.build();
      if (built !== 0) return built;
      continue;
    }
    const found = tool.find();
    if (typeof found !== 'string') continue;
    const line = `${folderOf(need)}: ${need.length} ${tool.name} suites skipped (${need.join(', ')}): ${goProblem === undefined ? found : `${goProblem}, so ${tool.name} cannot be built`}`;
    if (REQUIRE_CONTROL_PLANE) {
      console.error(`${line} (TOLERATOR_REQUIRE_CONTROL_PLANE=1: a failure)`);
      return 1;
    }
    console.log(`${line} (TOLERATOR_REQUIRE_CONTROL_PLANE=1 makes this a failure)`);
    runnable = runnable.filter((file) => !need.includes(file));
  }
  return runnable;
}

function folderOf(files: readonly string[]): string {
  return files[0]?.includes('differential') === true ? 'differential' : 'e2e';
}

/** The arguments without `--version MINOR` / `--version=MINOR`, and that minor (undefined when not given). */
function splitVersionFlag(args: readonly string[]): { readonly rest: string[]; readonly minor: string | undefined } {
  const rest: string[] = [];
  let minor: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--version') {
      minor = args[++i];
      if (minor === undefined || minor.startsWith('-')) throw new Error('--version needs a Kubernetes minor, e.g. --version 1.37');
    } else if (arg.startsWith('--version=')) {
      minor = arg.slice('--version='.length);
    } else {
      rest.push(arg);
    }
  }
  return { rest, minor };
}

const { rest, minor: requestedMinor } = splitVersionFlag(process.argv.slice(2));
if (requestedMinor !== undefined) process.env.TOLERATOR_CONTROL_PLANE_VERSION = requestedMinor;
const [folder, ...only] = rest;
if (!isSuiteFolder(folder)) {
  console.error('usage: node --import tsx test/cluster/run-suite.ts e2e|differential [FILE...]');
  process.exitCode = 2;
} else {
  process.exitCode = run(folder, only);
}
