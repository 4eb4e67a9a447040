import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseFlags, UsageError } from '../../src/cli/flags.js';
import {
  admissionFlags,
  checkShutdownSeconds,
  maxShutdownSeconds,
  parseFeatureGates,
  readAdmissionSettings,
  unusedConfigurationWarnings,
} from '../../src/cli/options.js';
import { allPluginNames, selectPlugins } from '../../src/plugins/registry.js';

describe('flags in kube-apiserver style', () => {
  const rows: { name: string; argv: string[]; want: Record<string, unknown>; positionals?: string[] }[] = [
    {
      name: '--name=value and --name value are the same',
      argv: ['--policies=a', '--cluster-state', 'b'],
      want: { policies: 'a', 'cluster-state': 'b' },
    },
    { name: 'the last occurrence wins, as in pflag', argv: ['--policies=a', '--policies=b'], want: { policies: 'b' } },
    {
      name: 'an integer flag is read as an int64',
      argv: ['--default-not-ready-toleration-seconds=-5'],
      want: { 'default-not-ready-toleration-seconds': -5n },
    },
    {
      name: 'arguments that are not flags are positionals, and -- ends the flags',
      argv: ['a.yaml', '--', '--policies=x'],
      want: {},
      positionals: ['a.yaml', '--policies=x'],
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const parsed = parseFlags(row.argv, admissionFlags);
      assert.deepEqual(Object.fromEntries(parsed.values), row.want);
      assert.deepEqual(parsed.positionals, row.positionals ?? []);
    });
  }

  const errors: { name: string; argv: string[]; message: RegExp }[] = [
    {
      name: 'an unknown flag',
      argv: ['--feature-gate=x'],
      message: /^unknown option '--feature-gate=x'\n\(Did you mean --feature-gates\?\)$/,
    },
    { name: 'a flag without its value', argv: ['--policies'], message: /^option '--policies <DIR>' argument missing$/ },
    {
      name: 'a non-integer for an integer flag',
      argv: ['--default-unreachable-toleration-seconds=5m'],
      message: /invalid integer value "5m"/,
    },
    {
      name: 'an integer beyond int64',
      argv: ['--default-unreachable-toleration-seconds=9223372036854775808'],
      message: /out of the int64 range/,
    },
    {
      // strconv.ParseInt meets the overflow before the bad character, so Go calls it a range error.
      name: 'an overflow before a bad character',
      argv: ['--default-unreachable-toleration-seconds=99999999999999999999x'],
      message: /out of the int64 range/,
    },
  ];
  for (const row of errors) {
    it(`${row.name} is a usage error`, () => {
      assert.throws(
        () => parseFlags(row.argv, admissionFlags),
        (error: unknown) => error instanceof UsageError && row.message.test(error.message),
      );
    });
  }
});

describe('--feature-gates', () => {
  it('defaults to the Kubernetes 1.35 defaults: comparison operators off, pod-level resources on', () => {
    assert.deepEqual(parseFeatureGates(undefined), {
      TaintTolerationComparisonOperators: false,
      PodLevelResources: true,
      PodLevelResourcesFixKubeletQOSClass: false,
      DRADeviceTaints: false,
      DRADeviceTaintRules: false,
    });
  });
  it('takes comma-separated Name=bool pairs with strconv.ParseBool spellings', () => {
    assert.deepEqual(
      parseFeatureGates('TaintTolerationComparisonOperators=True, PodLevelResources=0, PodLevelResourcesFixKubeletQOSClass=t'),
      {
        TaintTolerationComparisonOperators: true,
        PodLevelResources: false,
        PodLevelResourcesFixKubeletQOSClass: true,
        DRADeviceTaints: false,
        DRADeviceTaintRules: false,
      },
    );
  });
  it('refuses an unknown gate, a missing value and a bad boolean', () => {
    assert.throws(() => parseFeatureGates('TaintTolerations=true'), /unrecognized feature gate: TaintTolerations/);
    assert.throws(() => parseFeatureGates('PodLevelResources'), /missing bool value for PodLevelResources/);
    assert.throws(() => parseFeatureGates('PodLevelResources=yes'), /invalid boolean value "yes"/);
  });
});

describe('--default-device-tolerations', () => {
  it('takes a JSON list of bounded NoExecute grace periods, and refuses one that tolerates forever or is not JSON', () => {
    const grace = { key: 'example.com/maintenance', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 600 };
    assert.deepEqual(
      readAdmissionSettings(parseFlags(['--default-device-tolerations', JSON.stringify([grace])], admissionFlags)).defaultDeviceTolerations,
      [grace],
    );
    assert.deepEqual(readAdmissionSettings(parseFlags([], admissionFlags)).defaultDeviceTolerations, []);
    assert.throws(
      () =>
        readAdmissionSettings(
          parseFlags(['--default-device-tolerations', '[{"key":"k","operator":"Exists","effect":"NoExecute"}]'], admissionFlags),
        ),
      /--default-device-tolerations: toleration \[0\]: a default device toleration is a grace period/,
    );
    assert.throws(
      () => readAdmissionSettings(parseFlags(['--default-device-tolerations', '[{'], admissionFlags)),
      /--default-device-tolerations: /,
    );
  });
});

describe('--device-taint-rule-safety', () => {
  it('is deny by default, warn when asked, and refuses anything else', () => {
    assert.equal(readAdmissionSettings(parseFlags([], admissionFlags)).deviceTaintRuleSafety, 'Deny');
    assert.equal(readAdmissionSettings(parseFlags(['--device-taint-rule-safety', 'warn'], admissionFlags)).deviceTaintRuleSafety, 'Warn');
    assert.throws(
      () => readAdmissionSettings(parseFlags(['--device-taint-rule-safety', 'Warn'], admissionFlags)),
      /--device-taint-rule-safety: "Warn" is neither deny nor warn/,
    );
  });
});

describe("--enable-plugins and --disable-plugins, as kube-apiserver's admission-plugin flags", () => {
  it('all plugins but PodNodeSelector and ExtendedResourceToleration are on by default, in the fixed order', () => {
    assert.deepEqual(
      selectPlugins([], []),
      allPluginNames.filter((name) => name !== 'PodNodeSelector' && name !== 'ExtendedResourceToleration'),
    );
  });
  it('PodNodeSelector is off by default, as upstream, and on when enabled, at its place in the order', () => {
    assert.deepEqual(
      selectPlugins(['PodNodeSelector'], []),
      allPluginNames.filter((name) => name !== 'ExtendedResourceToleration'),
    );
    assert.deepEqual(selectPlugins(['PodNodeSelector'], ['DaemonSetTolerations']).slice(0, 3), [
      'PodNodeSelector',
      'DefaultTolerationSeconds',
      'PodTolerationRestriction',
    ]);
  });
  it('disabling removes a plugin and keeps the order of the rest', () => {
    assert.deepEqual(selectPlugins([], ['DefaultTolerationSeconds', 'DaemonSetTolerations']), [
      'PodTolerationRestriction',
      'DedicatedNodes',
      'TolerationValidation',
      'DeviceTolerationRestriction',
      'DeviceTolerationValidation',
      'DeviceTaintRuleSafety',
      'SchedulingWarnings',
    ]);
  });
  it('the order of the flag never changes the order of the plugins', () => {
    assert.deepEqual(
      selectPlugins(['TolerationValidation', 'ExtendedResourceToleration', 'PodNodeSelector', 'DaemonSetTolerations'], []),
      allPluginNames,
    );
  });
  it('a plugin in both lists is an error', () => {
    assert.throws(
      () => selectPlugins(['DedicatedNodes'], ['DedicatedNodes']),
      /DedicatedNodes cannot be in both --enable-plugins and --disable-plugins/,
    );
  });
  it('an unknown plugin is an error that lists the known ones', () => {
    assert.throws(
      () => selectPlugins(['PodSecurity'], []),
      /unknown admission plugin "PodSecurity"; known plugins: DaemonSetTolerations, PodNodeSelector, /,
    );
  });
  it('reaches the settings through the flags', () => {
    const settings = readAdmissionSettings(
      parseFlags(['--disable-plugins=SchedulingWarnings', '--default-not-ready-toleration-seconds=60'], admissionFlags),
    );
    assert.equal(settings.enabled.includes('SchedulingWarnings'), false);
    assert.equal(settings.notReadySeconds, 60);
    assert.equal(settings.unreachableSeconds, 300);
  });
  it('a toleration-seconds flag beyond what a JSON number carries exactly is refused', () => {
    assert.throws(
      () => readAdmissionSettings(parseFlags(['--default-not-ready-toleration-seconds=9007199254740992'], admissionFlags)),
      /beyond what a JSON number carries exactly/,
    );
  });
});

describe('--shutdown-delay and --shutdown-grace', () => {
  it('take 0 up to the longest timer Node.js keeps (2^31 - 1 ms), and refuse what lies outside', () => {
    assert.equal(checkShutdownSeconds('shutdown-delay', 0), 0);
    assert.equal(checkShutdownSeconds('shutdown-grace', maxShutdownSeconds), maxShutdownSeconds);
    assert.ok(maxShutdownSeconds * 1000 <= 2 ** 31 - 1 && (maxShutdownSeconds + 1) * 1000 > 2 ** 31 - 1);
    assert.throws(
      () => checkShutdownSeconds('shutdown-grace', maxShutdownSeconds + 1),
      /--shutdown-grace must be between 0 and 2147483 seconds/,
    );
    assert.throws(() => checkShutdownSeconds('shutdown-delay', -1), /--shutdown-delay must be between 0 and 2147483 seconds .*got -1/);
  });
});

describe('configuration nothing uses', () => {
  const config = 'test/fixtures/config/pod-node-selector-admission.yaml';
  it('a PodNodeSelector configuration while the plugin is off is a warning; enabled, or without one, none', () => {
    const off = readAdmissionSettings(parseFlags([`--admission-config=${config}`], admissionFlags));
    assert.deepEqual(unusedConfigurationWarnings(off), [
      '--admission-config configures PodNodeSelector, which is not enabled: namespaces are not confined to their node selectors (--enable-plugins PodNodeSelector turns it on)',
    ]);
    const on = readAdmissionSettings(parseFlags([`--admission-config=${config}`, '--enable-plugins=PodNodeSelector'], admissionFlags));
    assert.deepEqual(unusedConfigurationWarnings(on), []);
    assert.deepEqual(unusedConfigurationWarnings(readAdmissionSettings(parseFlags([], admissionFlags))), []);
  });
});
