/**
 * `npm run karpenter:build`: builds Karpenter's KWOK cloud provider (`sigs.k8s.io/karpenter/kwok`,
 * the main package Karpenter's own end-to-end suites run) from the Go module tools/karpenter/,
 * whose go.mod pins sigs.k8s.io/karpenter and names that package as a tool, into its gitignored
 * bin/ folder, with the CustomResourceDefinitions it needs copied beside it from the same module
 * version (bin/crds/), so a launcher never installs CRDs of another release.
 *
 * Idempotent, with the flags and exit codes of every pinned tool (pinned-build.ts).
 */
import { chmodSync, copyFileSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildPinnedTool, goCannotBuild, goJson, run } from './pinned-build.js';
import { KARPENTER_BINARY, KARPENTER_CRD_FOLDERS, KARPENTER_MODULE, karpenterBinDir, karpenterModuleDir } from './karpenter-binaries.js';

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
  return goCannotBuild(karpenterModuleDir());
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
      digestInputs: [ldflags, KARPENTER_CRD_FOLDERS.join(',')],
      outputs: [KARPENTER_BINARY, 'crds'],
      coldCost: 'about 4 minutes of CPU: 2-3 minutes on two idle cores',
      build: (partial) => {
        const built = run(
          'go',
          ['build', '-trimpath', '-ldflags', ldflags, '-o', join(partial, KARPENTER_BINARY), `${KARPENTER_MODULE}/kwok`],
          moduleDir,
        );
        if (built !== 0) return { error: 'go build failed' };
        // The module as go.sum pins it, from the module cache (downloaded by the build above).
        const source = goJson(['mod', 'download', '-json', `${KARPENTER_MODULE}@${version}`], moduleDir)?.Dir;
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
