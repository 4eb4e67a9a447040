/**
 * `npm run karpenter:build`: builds Karpenter's KWOK cloud provider (`sigs.k8s.io/karpenter/kwok`,
 * the main package Karpenter's own end-to-end suites run) from the Go module tools/karpenter/,
 * whose go.mod pins sigs.k8s.io/karpenter and names that package as a tool, into its gitignored
 * bin/ folder, with the CustomResourceDefinitions it needs copied beside it from the same module
 * version (bin/crds/), so a launcher never installs CRDs of another release.
 *
 * Idempotent, with the flags and exit codes of every pinned tool (pinned-build.ts), except the
 * toolchain: this module's go commands run with GOTOOLCHAIN=KARPENTER_TOOLCHAIN, which the
 * installed Go fetches, where the control plane's and kwok's run the installed Go.
 */
import { chmodSync, copyFileSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildPinnedTool, goCannotBuild, goEnv, goJson, run } from './pinned-build.js';
import { KARPENTER_BINARY, KARPENTER_CRD_FOLDERS, KARPENTER_MODULE, karpenterBinDir, karpenterModuleDir } from './karpenter-binaries.js';

/**
 * The Go toolchain every `go` command in tools/karpenter runs (GOTOOLCHAIN): sigs.k8s.io/karpenter
 * v1.15.0's go.mod says `go 1.26.9`, newer than the Go 1.26.8 installed on this project's machines,
 * which refuses it with GOTOOLCHAIN=local. go1.27.3 is the one newer toolchain the Go module proxy
 * serves to this project (golang.org/toolchain@v0.0.1-go1.27.3.<os>-<arch>, about 76 MB, fetched
 * into the module cache by the installed go on first use, which Go 1.21 and later do). Named
 * exactly, never `auto` or `go1.26.9+auto`: a build never picks its own toolchain, and a go.mod
 * that needs a newer one than this fails instead of fetching it.
 */
export const KARPENTER_TOOLCHAIN = 'go1.27.3';

/** The version of sigs.k8s.io/karpenter the module pins. */
export function karpenterPin(goMod: string): string {
  const version = /^\s*(?:require\s+)?sigs\.k8s\.io\/karpenter\s+(v\d+\.\d+\.\d+)\b/m.exec(goMod)?.[1];
  if (version === undefined) throw new Error('go.mod pins no sigs.k8s.io/karpenter');
  return version;
}

/**
 * -X stamps operator.Version, which Karpenter logs at start and reports in its
 * karpenter_build_info metric (pkg/operator/operator.go), as its release images are stamped;
 * -s -w drop the symbol table and DWARF, as for the control plane.
 */
export function karpenterLdflags(version: string): string {
  return `-s -w -X sigs.k8s.io/karpenter/pkg/operator.Version=${version}`;
}

/** Copies every `*.yaml` of the module's CRD folders into `target`; the number copied. */
function copyCrds(moduleSource: string, target: string): number {
  mkdirSync(target, { recursive: true });
  let copied = 0;
  for (const folder of KARPENTER_CRD_FOLDERS) {
    for (const file of readdirSync(join(moduleSource, folder)).filter((name) => name.endsWith('.yaml'))) {
      copyFileSync(join(moduleSource, folder, file), join(target, file));
      // The module cache's files are read-only; the copy need not be.
      chmodSync(join(target, file), 0o644);
      copied++;
    }
  }
  return copied;
}

/** Why this machine's Go cannot build tools/karpenter, or undefined when it can. */
export function goCannotBuildKarpenter(): string | undefined {
  return goCannotBuild(karpenterModuleDir(), KARPENTER_TOOLCHAIN);
}

export function main(argv: readonly string[]): number {
  const { values } = parseArgs({
    args: [...argv],
    options: { force: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h' } },
    strict: true,
  });
  if (values.help === true) {
    console.log('usage: npm run karpenter:build -- [--force]');
    return 0;
  }
  const moduleDir = karpenterModuleDir();
  const version = karpenterPin(readFileSync(join(moduleDir, 'go.mod'), 'utf8'));
  const ldflags = karpenterLdflags(version);
  return buildPinnedTool(
    {
      script: 'karpenter:build',
      title: `Karpenter ${version} (KWOK provider)`,
      moduleDir,
      binDir: karpenterBinDir(),
      version,
      toolchain: KARPENTER_TOOLCHAIN,
      digestInputs: [ldflags, KARPENTER_CRD_FOLDERS.join(',')],
      outputs: [KARPENTER_BINARY, 'crds'],
      coldCost: 'about 5 minutes of CPU, and the first time a 73 MB download of the toolchain',
      build: (partial) => {
        const built = run(
          'go',
          ['build', '-trimpath', '-ldflags', ldflags, '-o', join(partial, KARPENTER_BINARY), `${KARPENTER_MODULE}/kwok`],
          moduleDir,
          goEnv(KARPENTER_TOOLCHAIN),
        );
        if (built !== 0) return { error: 'go build failed' };
        // The module as go.sum pins it, from the module cache (downloaded by the build above).
        const source = goJson(['mod', 'download', '-json', `${KARPENTER_MODULE}@${version}`], moduleDir, goEnv(KARPENTER_TOOLCHAIN))?.Dir;
        if (typeof source !== 'string') return { error: `go mod download found no source for ${KARPENTER_MODULE}@${version}` };
        return { detail: `${copyCrds(source, join(partial, 'crds'))} CRDs` };
      },
    },
    values.force,
  );
}

if (process.argv[1] === import.meta.filename) {
  process.exitCode = main(process.argv.slice(2));
}
