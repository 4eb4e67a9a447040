/**
 * `explain writes control characters` (issue 28, finding 5): what `explain`, `simulate` and
 * `test` print as text comes from manifests, node files and test cases nobody validated, and a
 * name may hold an escape sequence that clears the operator's terminal (ESC [2J), sets its title,
 * rings its bell (BEL) or writes its clipboard (OSC 52). Each command writes them escaped, with
 * the function the audit writes its tables with (terminalSafe, src/audit/audit-summary.ts), and
 * keeps its own line breaks.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { explainCommand } from '../../src/cli/explain.js';
import { testCommand } from '../../src/cli/policy-test.js';
import { simulateCommand } from '../../src/cli/simulate.js';
import { runCommand } from '../support/command-io.js';

const root = join(import.meta.dirname, '..', '..');
/** In YAML's double quotes: clear the screen, an OSC 52 clipboard write ended by BEL, a C1 CSI. */
const hostile = String.raw`evil\e[2J\e]52;c;cm0gLXJmIH4=\a\u009b31m`;

function assertEscaped(text: string): void {
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  assert.ok(!/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/.test(text), `no raw control character in ${JSON.stringify(text)}`);
  assert.ok(text.includes(String.raw`evil\x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07\u009b31m`), `the name, escaped, in ${JSON.stringify(text)}`);
}

const pod = (name: string): string => `apiVersion: v1
kind: Pod
metadata: { name: "${name}", namespace: default }
spec: { containers: [{ name: app, image: x }] }
`;

describe('explain writes control characters: no more, in explain, simulate and test', () => {
  it('explain writes control characters: a pod name with ESC, BEL and OSC 52 is printed escaped', async () => {
    const { stdout, stderr } = await runCommand(explainCommand, ['-'], {}, { stdin: pod(hostile) });
    assertEscaped(stdout);
    assert.ok(!stderr.includes('\u001b'));
  });

  it('explain writes control characters: simulate prints a hostile pod name escaped, in its table and on stderr', async () => {
    const { stdout, stderr } = await runCommand(simulateCommand, ['--nodes', join(root, 'examples', 'cluster-nodes.yaml'), 'pods.yaml'], {
      'pods.yaml': pod(hostile).replace('spec: {', 'spec: { nodeSelector: { none: none },'),
    });
    assertEscaped(stdout);
    assertEscaped(stderr);
  });

  it('explain writes control characters: test prints a hostile case name escaped', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tolerator-escapes-'));
    copyFileSync(join(root, 'policies', 'tests', 'cluster.yaml'), join(dir, 'cluster.yaml'));
    writeFileSync(
      join(dir, 'cases.test.yaml'),
      `name: "${hostile}"
policies: ${join(root, 'policies')}
clusterState: cluster.yaml
resource:
${pod('x')
  .split('\n')
  .map((line) => `  ${line}`)
  .join('\n')}
expect:
  allowed: false
`,
    );
    const { stdout } = await runCommand(testCommand, [dir]);
    assertEscaped(stdout);
  });
});
