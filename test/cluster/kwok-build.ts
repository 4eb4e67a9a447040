/**
 * `npm run kwok:build`: builds the KWOK controller (`kwok`, sigs.k8s.io/kwok/cmd/kwok, the
 * simulated kubelets of test/cluster/kwok.ts) from the Go module tools/kwok/ (its go.mod pins
 * sigs.k8s.io/kwok and names the command as a tool) into its gitignored bin/, and copies beside
 * it the upstream Stage manifests the launcher runs, from the same pinned module (so the stages
 * are kwok's own at that version, never a copy kept here by hand).
 *
 * A sibling of `npm run control-plane:build` (build.ts) rather than a flag of it: kwok is one
 * module for every Kubernetes minor (its client talks to 1.35 through 1.37 alike), and its go.mod
 * needs a newer Go than the control plane's (1.26 against 1.25), so a machine may build one and
 * not the other and the suite runner must tell the two apart. The flags are the control plane's:
 * CGO off, GOTOOLCHAIN=local, -mod=readonly, -trimpath, -s -w.
 *
 * Idempotent as build.ts is: bin/BUILD holds a digest of go.mod, go.sum, the Go version and the
 * flags; when it matches and the binary and stages are there, nothing is built. Exit codes: 0 built
 * or up to date, 2 usage, no Go or a Go older than the module's `go` line, 1 the build failed.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { REPO_ROOT } from './binaries.js';
import { goOutput, goToolchainProblem, installedGoVersion, run, sizeOf } from './build.js';

export const KWOK_MODULE_DIR = join(REPO_ROOT, 'tools', 'kwok');
export const KWOK_BIN_DIR = join(KWOK_MODULE_DIR, 'bin');
const KWOK_PACKAGE = 'sigs.k8s.io/kwok/cmd/kwok';

/**
 * The upstream Stages the launcher loads, as paths inside the sigs.k8s.io/kwok module: what
 * kwokctl loads by default for a cluster with node leases (pkg/kwokctl/runtime/cluster.go:
 * node-initialize, node-heartbeat-with-lease, and the pod stages of kustomize/stage/pod/fast), and
 * the chaos stage node-not-ready that test/cluster/kwok.ts uses to make a node NotReady.
 */
export const KWOK_UPSTREAM_STAGES = [
  'kustomize/stage/node/fast/node-initialize.yaml',
  'kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml',
  'kustomize/stage/node/chaos/node-not-ready.yaml',
  'kustomize/stage/pod/fast/pod-ready.yaml',
  'kustomize/stage/pod/fast/pod-complete.yaml',
  'kustomize/stage/pod/fast/pod-delete.yaml',
] as const;

/** The sigs.k8s.io/kwok version tools/kwok/go.mod pins. */
export function kwokPin(goMod: string): string {
  const version = /^\s*(?:require\s+)?sigs\.k8s\.io\/kwok\s+(v\d+\.\d+\.\d+)\b/m.exec(goMod)?.[1];
  if (version === undefined) throw new Error('tools/kwok/go.mod pins no sigs.k8s.io/kwok');
  return version;
}

/** Why this machine's Go cannot build kwok, or undefined when it can. */
export function goCannotBuildKwok(): string | undefined {
  return goToolchainProblem(readFileSync(join(KWOK_MODULE_DIR, 'go.mod'), 'utf8'), installedGoVersion(KWOK_MODULE_DIR));
}

/** -s -w as the control plane: kwok's own release script stamps only the version, which v0.8.0's source already says. */
const LDFLAGS = '-s -w';

export function main(argv: readonly string[]): number {
  const { values } = parseArgs({
    args: [...argv],
    options: { force: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h' } },
    strict: true,
  });
  if (values.help === true) {
    console.log('usage: npm run kwok:build -- [--force]');
    return 0;
  }
  const goMod = readFileSync(join(KWOK_MODULE_DIR, 'go.mod'), 'utf8');
  const goVersion = installedGoVersion(KWOK_MODULE_DIR);
  const goProblem = goToolchainProblem(goMod, goVersion);
  if (goProblem !== undefined || goVersion === undefined) {
    console.error(`kwok:build: ${goProblem ?? 'Go is not installed'}`);
    return 2;
  }
  const version = kwokPin(goMod);
  const digest = createHash('sha256')
    .update([goMod, readFileSync(join(KWOK_MODULE_DIR, 'go.sum'), 'utf8'), goVersion, LDFLAGS, ...KWOK_UPSTREAM_STAGES].join('\0'))
    .digest('hex');
  const buildFile = join(KWOK_BIN_DIR, 'BUILD');
  const complete =
    existsSync(join(KWOK_BIN_DIR, 'kwok')) &&
    existsSync(join(KWOK_BIN_DIR, 'VERSION')) &&
    KWOK_UPSTREAM_STAGES.every((stage) => existsSync(join(KWOK_BIN_DIR, 'stages', stageFileName(stage))));
  if (!values.force && complete && existsSync(buildFile) && readFileSync(buildFile, 'utf8').trim() === digest) {
    console.log(`kwok:build: kwok ${version} already built in tools/kwok/bin (0 s)`);
    return 0;
  }

  const started = Date.now();
  const partial = `${KWOK_BIN_DIR}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(join(partial, 'stages'), { recursive: true });
  const env = { ...process.env, CGO_ENABLED: '0', GOTOOLCHAIN: 'local', GOFLAGS: '-mod=readonly' };
  console.log(`kwok:build: building kwok ${version} with ${goVersion} (cold, about 3 minutes of CPU)`);
  const built = run('go', ['build', '-trimpath', '-ldflags', LDFLAGS, '-o', join(partial, 'kwok'), KWOK_PACKAGE], KWOK_MODULE_DIR, env);
  // The module is in the module cache now (the build read it): its folder, as go.sum pins it.
  const moduleDir =
    built === 0 ? goOutput(['list', '-mod=readonly', '-m', '-f', '{{.Dir}}', 'sigs.k8s.io/kwok'], KWOK_MODULE_DIR) : undefined;
  if (built !== 0 || moduleDir === undefined || moduleDir === '') {
    console.error(`kwok:build: go build failed after ${Math.round((Date.now() - started) / 1000)} s`);
    return 1;
  }
  for (const stage of KWOK_UPSTREAM_STAGES) copyFileSync(join(moduleDir, stage), join(partial, 'stages', stageFileName(stage)));
  writeFileSync(join(partial, 'VERSION'), `${version}\n`);
  writeFileSync(join(partial, 'BUILD'), `${digest}\n`);
  rmSync(KWOK_BIN_DIR, { recursive: true, force: true });
  renameSync(partial, KWOK_BIN_DIR);
  const seconds = Math.round((Date.now() - started) / 1000);
  const modCache = goOutput(['env', 'GOMODCACHE'], KWOK_MODULE_DIR);
  const buildCache = goOutput(['env', 'GOCACHE'], KWOK_MODULE_DIR);
  console.log(
    `kwok:build: built kwok ${version} in ${seconds} s` +
      ` (bin ${sizeOf(KWOK_BIN_DIR)}, module cache ${modCache === undefined ? '?' : sizeOf(modCache)}, build cache ${buildCache === undefined ? '?' : sizeOf(buildCache)})`,
  );
  return 0;
}

/** `kustomize/stage/node/fast/node-initialize.yaml` → `node-initialize.yaml`: every upstream stage file name is unique. */
export function stageFileName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

if (process.argv[1] === import.meta.filename) {
  process.exitCode = main(process.argv.slice(2));
}
