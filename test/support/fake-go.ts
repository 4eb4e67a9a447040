/**
 * A stand-in `go` for the tests of the control plane's build and suite runner
 * (test/cluster/build.test.ts, run-suite.test.ts): a shell script in a temporary folder, first on
 * the PATH, that answers `go env GOVERSION` with the version a test chooses, fails every `go build`
 * as a Go too old for the module does, and logs each call (its GOTOOLCHAIN, then its arguments),
 * so a test sees what was asked of Go without building anything.
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

export function fakeGo(version: string): FakeGo {
  const dir = mkdtempSync(join(tmpdir(), 'tolerator-fake-go-'));
  const log = join(dir, 'calls.log');
  const script = [
    '#!/bin/sh',
    `echo "\${GOTOOLCHAIN:-unset} $*" >> '${log}'`,
    'case "$1" in',
    `  env) echo '${version}' ;;`,
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
