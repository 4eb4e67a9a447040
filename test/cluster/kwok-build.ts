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
 * Idempotent, with the exit codes of every pinned tool (pinned-build.ts); the digest also covers
 * the stages copied.
 */
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { REPO_ROOT } from './binaries.js';
import { buildPinnedTool, goCannotBuild, goOutput, run } from './pinned-build.js';

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
  return goCannotBuild(KWOK_MODULE_DIR);
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
  const version = kwokPin(readFileSync(join(KWOK_MODULE_DIR, 'go.mod'), 'utf8'));
  return buildPinnedTool(
    {
      script: 'kwok:build',
      title: `kwok ${version}`,
      moduleDir: KWOK_MODULE_DIR,
      binDir: KWOK_BIN_DIR,
      version,
      digestInputs: [LDFLAGS, ...KWOK_UPSTREAM_STAGES],
      outputs: ['kwok', ...KWOK_UPSTREAM_STAGES.map((stage) => join('stages', stageFileName(stage)))],
      coldCost: 'about 3 minutes of CPU',
      build: (partial) => {
        const built = run('go', ['build', '-trimpath', '-ldflags', LDFLAGS, '-o', join(partial, 'kwok'), KWOK_PACKAGE], KWOK_MODULE_DIR);
        // The module is in the module cache now (the build read it): its folder, as go.sum pins it.
        const moduleDir = built === 0 ? goOutput(['list', '-m', '-f', '{{.Dir}}', 'sigs.k8s.io/kwok'], KWOK_MODULE_DIR) : undefined;
        if (moduleDir === undefined || moduleDir === '') return { error: 'go build failed' };
        mkdirSync(join(partial, 'stages'));
        for (const stage of KWOK_UPSTREAM_STAGES) copyFileSync(join(moduleDir, stage), join(partial, 'stages', stageFileName(stage)));
        return {};
      },
    },
    values.force,
  );
}

/** `kustomize/stage/node/fast/node-initialize.yaml` → `node-initialize.yaml`: every upstream stage file name is unique. */
export function stageFileName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

if (process.argv[1] === import.meta.filename) {
  process.exitCode = main(process.argv.slice(2));
}
