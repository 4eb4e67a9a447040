/**
 * A stand-in `go` for the tests of the control plane's build and suite runner
 * (test/cluster/build.test.ts, run-suite.test.ts): a shell script in a temporary folder, first on
 * the PATH, that answers `go env GOVERSION` with the version a test chooses, fails every `go build`
 * as a Go too old for the module does, and logs each call (its GOTOOLCHAIN, then its arguments),
 * so a test sees what was asked of Go without building anything.
 *
 * GOTOOLCHAIN as Go 1.21 and later read it: unset, `local` or `auto` run the fake itself; a
 * toolchain in `fetchable` answers as that version; any other is refused as the real go refuses a
 * toolchain the module proxy does not serve (`go: download go1.27.3 for linux/amd64: toolchain not
 * available`, exit 1). A fake older than Go 1.21 ignores GOTOOLCHAIN, as those releases do.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

export interface FakeGo {
  /** The environment that puts it first on the PATH. */
  readonly env: NodeJS.ProcessEnv;
  /** Each call so far, `GOTOOLCHAIN args…`. */
  calls(): string[];
  remove(): void;
}

export interface FakeGoOptions {
  /** The toolchains (`go1.27.3`) that GOTOOLCHAIN may name and get; none by default. */
  readonly fetchable?: readonly string[];
}

export function fakeGo(version: string, options: FakeGoOptions = {}): FakeGo {
  const dir = mkdtempSync(join(tmpdir(), 'tolerator-fake-go-'));
  const log = join(dir, 'calls.log');
  const minor = /^go1\.(\d+)/.exec(version);
  const switches = minor === null || Number(minor[1]) >= 21;
  const fetchable = (options.fetchable ?? []).map((toolchain) => `    ${toolchain}) running='${toolchain}' ;;`);
  const script = [
    '#!/bin/sh',
    `echo "\${GOTOOLCHAIN:-unset} $*" >> '${log}'`,
    `running='${version}'`,
    ...(switches
      ? [
          'case "${GOTOOLCHAIN:-local}" in',
          '  local|auto) ;;',
          ...fetchable,
          '  *) echo "go: downloading $GOTOOLCHAIN (linux/amd64)" >&2',
          '     echo "go: download $GOTOOLCHAIN for linux/amd64: toolchain not available" >&2; exit 1 ;;',
          'esac',
        ]
      : []),
    'case "$1" in',
    '  env) echo "$running" ;;',
    "  build) echo 'go: go.mod requires go >= 1.25.0 (GOTOOLCHAIN=local)' >&2; exit 1 ;;",
    'esac',
    '',
  ].join('\n');
  writeFileSync(join(dir, 'go'), script);
  chmodSync(join(dir, 'go'), 0o755);
  return {
    env: { ...process.env, PATH: `${dir}${delimiter}${process.env.PATH ?? ''}` },
    calls: () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : []),
    remove: () => {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
