import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { AdmissionConfigError, parseAdmissionConfig } from '../../src/plugins/admission-config.js';
import type { PodTolerationRestrictionConfig } from '../../src/plugins/pod-toleration-restriction.js';

/** A readFile over an in-memory map of files; records what was asked for. */
function filesystem(files: Record<string, string>) {
  const reads: string[] = [];
  const readFile = (path: string): string => {
    reads.push(path);
    const content = files[path];
    if (content === undefined) {
      throw new Error(`ENOENT: no such file or directory, open '${path}'`);
    }
    return content;
  };
  return { reads, readFile };
}

const noFiles = filesystem({}).readFile;
const options = { allowComparisonOperators: false, readFile: noFiles };

const bare = (apiVersion: string) => `apiVersion: ${apiVersion}
kind: Configuration
default:
- key: key1
  operator: Equal
  value: value1
whitelist:
- key: key2
  operator: Equal
  value: value2
`;

const parsedBare: PodTolerationRestrictionConfig = {
  default: [{ key: 'key1', operator: 'Equal', value: 'value1' }],
  whitelist: [{ key: 'key2', operator: 'Equal', value: 'value2' }],
};

describe('parseAdmissionConfig', () => {
  describe('accepted forms', () => {
    const rows: {
      name: string;
      given: { content: string; files?: Record<string, string>; path?: string };
      want: PodTolerationRestrictionConfig;
    }[] = [
      {
        name: 'the bare Configuration in podtolerationrestriction.admission.k8s.io/v1alpha1 (upstream TestConfigParse)',
        given: { content: bare('podtolerationrestriction.admission.k8s.io/v1alpha1') },
        want: parsedBare,
      },
      {
        name: 'the bare Configuration as JSON',
        given: {
          content: JSON.stringify({
            apiVersion: 'podtolerationrestriction.admission.k8s.io/v1alpha1',
            kind: 'Configuration',
            default: [{ key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 60 }],
          }),
        },
        want: { default: [{ key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 60 }] },
      },
      {
        name: 'a bare Configuration without lists is empty',
        given: { content: 'apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1\nkind: Configuration\n' },
        want: {},
      },
      {
        name: 'empty lists are kept as empty lists',
        given: {
          content: 'apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1\nkind: Configuration\ndefault: []\nwhitelist: null\n',
        },
        want: { default: [] },
      },
      {
        name: 'an AdmissionConfiguration (apiserver.config.k8s.io/v1) with an embedded configuration',
        given: {
          content: `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: EventRateLimit
  path: eventconfig.yaml
- name: PodTolerationRestriction
  configuration:
${bare('podtolerationrestriction.admission.k8s.io/v1alpha1')
  .split('\n')
  .map((line) => `    ${line}`)
  .join('\n')}
`,
        },
        want: parsedBare,
      },
      {
        name: 'an AdmissionConfiguration in apiserver.k8s.io/v1alpha1, the older registered version',
        given: {
          content: JSON.stringify({
            apiVersion: 'apiserver.k8s.io/v1alpha1',
            kind: 'AdmissionConfiguration',
            plugins: [
              {
                name: 'PodTolerationRestriction',
                configuration: {
                  apiVersion: 'podtolerationrestriction.admission.k8s.io/v1alpha1',
                  kind: 'Configuration',
                  whitelist: [{ key: 'a', operator: 'Exists' }],
                },
              },
            ],
          }),
        },
        want: { whitelist: [{ key: 'a', operator: 'Exists' }] },
      },
      {
        name: 'a relative path is read from the configuration file’s directory',
        given: {
          content:
            'apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodTolerationRestriction\n  path: ptr.yaml\n',
          files: { '/etc/kubernetes/ptr.yaml': bare('podtolerationrestriction.admission.k8s.io/v1alpha1') },
        },
        want: parsedBare,
      },
      {
        name: 'an absolute path is read as it is',
        given: {
          content:
            'apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodTolerationRestriction\n  path: /srv/ptr.json\n',
          files: {
            '/srv/ptr.json': JSON.stringify({
              apiVersion: 'podtolerationrestriction.admission.k8s.io/v1alpha1',
              kind: 'Configuration',
              default: [],
            }),
          },
        },
        want: { default: [] },
      },
      {
        name: 'an embedded configuration is used instead of the path',
        given: {
          content: JSON.stringify({
            apiVersion: 'apiserver.config.k8s.io/v1',
            kind: 'AdmissionConfiguration',
            plugins: [
              {
                name: 'PodTolerationRestriction',
                path: 'missing.yaml',
                configuration: { apiVersion: 'podtolerationrestriction.admission.k8s.io/v1alpha1', kind: 'Configuration' },
              },
            ],
          }),
        },
        want: {},
      },
      {
        name: 'the first PodTolerationRestriction entry wins',
        given: {
          content: JSON.stringify({
            apiVersion: 'apiserver.config.k8s.io/v1',
            kind: 'AdmissionConfiguration',
            plugins: [
              {
                name: 'PodTolerationRestriction',
                configuration: {
                  apiVersion: 'podtolerationrestriction.admission.k8s.io/v1alpha1',
                  kind: 'Configuration',
                  default: [{ key: 'first', operator: 'Exists' }],
                },
              },
              {
                name: 'PodTolerationRestriction',
                configuration: {
                  apiVersion: 'podtolerationrestriction.admission.k8s.io/v1alpha1',
                  kind: 'Configuration',
                  default: [{ key: 'second', operator: 'Exists' }],
                },
              },
            ],
          }),
        },
        want: { default: [{ key: 'first', operator: 'Exists' }] },
      },
      {
        name: 'an AdmissionConfiguration without a PodTolerationRestriction entry is no configuration, not an error',
        given: {
          content:
            'apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: EventRateLimit\n  path: x.yaml\n',
        },
        want: {},
      },
      {
        name: 'an AdmissionConfiguration without plugins is no configuration',
        given: { content: 'apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\n' },
        want: {},
      },
      {
        name: 'an entry with neither configuration nor path is no configuration',
        given: {
          content: 'apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodTolerationRestriction\n',
        },
        want: {},
      },
      {
        name: 'unknown fields are ignored, as the non-strict apimachinery decoder does',
        given: {
          content:
            'apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1\nkind: Configuration\nmetadata: {}\ndefault:\n- key: k\n  operator: Exists\n  comment: x\n',
        },
        want: { default: [{ key: 'k', operator: 'Exists' }] },
      },
    ];
    for (const row of rows) {
      it(row.name, () => {
        const fs = filesystem(row.given.files ?? {});
        assert.deepEqual(
          parseAdmissionConfig(row.given.content, row.given.path ?? '/etc/kubernetes/admission.yaml', {
            ...options,
            readFile: fs.readFile,
          }).podTolerationRestriction,
          row.want,
        );
      });
    }

    it('Gt/Lt tolerations are accepted when comparison operators are allowed', () => {
      const content =
        'apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1\nkind: Configuration\nwhitelist:\n- key: tier\n  operator: Gt\n  value: "5"\n';
      assert.deepEqual(parseAdmissionConfig(content, 'c.yaml', { ...options, allowComparisonOperators: true }).podTolerationRestriction, {
        whitelist: [{ key: 'tier', operator: 'Gt', value: '5' }],
      });
    });

    it('a default tolerationSeconds beyond 2^53 - 1 is refused at start: it would reach pods rounded (found by the differential suite)', () => {
      const content =
        'apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1\nkind: Configuration\ndefault:\n- key: k\n  operator: Exists\n  effect: NoExecute\n  tolerationSeconds: 9007199254740993\n';
      assert.throws(() => parseAdmissionConfig(content, 'c.yaml', options), {
        name: 'AdmissionConfigError',
        message: 'c.yaml: default[0].tolerationSeconds: beyond 9007199254740991 (2^53 - 1), which cannot be added to a pod exactly',
      });
      // A whitelist entry is only compared, never added: it loads.
      const whitelist = content.replace('default:', 'whitelist:');
      assert.equal(parseAdmissionConfig(whitelist, 'c.yaml', options).podTolerationRestriction.whitelist?.length, 1);
    });

    it('the path is resolved against the configuration file’s directory and read once', () => {
      const fs = filesystem({ 'conf/sub/ptr.yaml': bare('podtolerationrestriction.admission.k8s.io/v1alpha1') });
      parseAdmissionConfig(
        'apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodTolerationRestriction\n  path: sub/ptr.yaml\n',
        'conf/admission.yaml',
        {
          ...options,
          readFile: fs.readFile,
        },
      );
      assert.deepEqual(fs.reads, ['conf/sub/ptr.yaml']);
    });
  });

  describe('errors', () => {
    const admission = (plugin: object) =>
      JSON.stringify({ apiVersion: 'apiserver.config.k8s.io/v1', kind: 'AdmissionConfiguration', plugins: [plugin] });
    const rows: {
      name: string;
      given: { content: string; files?: Record<string, string>; allowComparisonOperators?: boolean };
      want: RegExp;
    }[] = [
      {
        name: 'YAML that does not parse',
        given: { content: 'apiVersion: [unclosed\n' },
        want: /^\/cfg\/a\.yaml: not valid YAML or JSON: /,
      },
      {
        name: 'a document that is not a mapping',
        given: { content: '- a\n- b\n' },
        want: /^\/cfg\/a\.yaml: must be a mapping with apiVersion and kind, got a list$/,
      },
      { name: 'a missing apiVersion', given: { content: 'kind: Configuration\n' }, want: /^\/cfg\/a\.yaml: apiVersion: missing$/ },
      { name: 'a missing kind', given: { content: 'apiVersion: apiserver.config.k8s.io/v1\n' }, want: /^\/cfg\/a\.yaml: kind: missing$/ },
      {
        name: 'an unknown apiVersion',
        given: { content: 'apiVersion: apiserver.config.k8s.io/v1alpha1\nkind: AdmissionConfiguration\n' },
        want: /^\/cfg\/a\.yaml: unknown apiVersion\/kind "apiserver\.config\.k8s\.io\/v1alpha1, Kind=AdmissionConfiguration": want kind AdmissionConfiguration/,
      },
      {
        name: 'a known apiVersion with the wrong kind',
        given: { content: 'apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1\nkind: AdmissionConfiguration\n' },
        want: /^\/cfg\/a\.yaml: unknown apiVersion\/kind "podtolerationrestriction\.admission\.k8s\.io\/v1alpha1, Kind=AdmissionConfiguration"/,
      },
      {
        // kube-apiserver v1.35.8 registers only v1alpha1 and refuses to start with a v1 file
        // (test/e2e/admission-plugins.e2e.ts starts one): a file tolerator takes must be one the
        // in-tree plugin takes.
        name: 'a bare Configuration in podtolerationrestriction.admission.k8s.io/v1 is refused, as kube-apiserver 1.35 refuses it',
        given: { content: bare('podtolerationrestriction.admission.k8s.io/v1') },
        want: /^\/cfg\/a\.yaml: unknown apiVersion\/kind "podtolerationrestriction\.admission\.k8s\.io\/v1, Kind=Configuration": .*kind Configuration \(podtolerationrestriction\.admission\.k8s\.io\/v1alpha1\)/,
      },
      {
        name: 'an embedded Configuration in podtolerationrestriction.admission.k8s.io/v1 is refused, as kube-apiserver 1.35 refuses it',
        given: {
          content: admission({
            name: 'PodTolerationRestriction',
            configuration: { apiVersion: 'podtolerationrestriction.admission.k8s.io/v1', kind: 'Configuration' },
          }),
        },
        want: /^\/cfg\/a\.yaml: plugins\[0\]\.configuration: unknown apiVersion\/kind "podtolerationrestriction\.admission\.k8s\.io\/v1, Kind=Configuration": want kind Configuration \(podtolerationrestriction\.admission\.k8s\.io\/v1alpha1\)$/,
      },
      {
        name: 'an apiVersion that is not a string',
        given: { content: 'apiVersion: 1\nkind: Configuration\n' },
        want: /^\/cfg\/a\.yaml: apiVersion: must be a string, got number 1$/,
      },
      {
        name: 'plugins that is not a list',
        given: { content: 'apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins: {}\n' },
        want: /^\/cfg\/a\.yaml: plugins: must be a list, got a mapping$/,
      },
      {
        name: 'a plugin entry that is not a mapping',
        given: { content: 'apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins: [x]\n' },
        want: /^\/cfg\/a\.yaml: plugins\[0\]: must be a mapping, got string "x"$/,
      },
      {
        name: 'an embedded configuration of another kind',
        given: {
          content: admission({
            name: 'PodTolerationRestriction',
            configuration: { apiVersion: 'eventratelimit.admission.k8s.io/v1alpha1', kind: 'Configuration' },
          }),
        },
        want: /^\/cfg\/a\.yaml: plugins\[0\]\.configuration: unknown apiVersion\/kind "eventratelimit\.admission\.k8s\.io\/v1alpha1, Kind=Configuration"/,
      },
      {
        name: 'an embedded configuration without apiVersion',
        given: { content: admission({ name: 'PodTolerationRestriction', configuration: { kind: 'Configuration' } }) },
        want: /^\/cfg\/a\.yaml: plugins\[0\]\.configuration\.apiVersion: missing$/,
      },
      {
        name: 'a path that cannot be read',
        given: { content: admission({ name: 'PodTolerationRestriction', path: 'ptr.yaml' }) },
        want: /^\/cfg\/a\.yaml: plugins\[0\]\.path: cannot read "\/cfg\/ptr\.yaml": ENOENT/,
      },
      {
        name: 'a path to a file that is not a PodTolerationRestriction Configuration names that file',
        given: {
          content: admission({ name: 'PodTolerationRestriction', path: 'ptr.yaml' }),
          files: { '/cfg/ptr.yaml': 'apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\n' },
        },
        want: /^\/cfg\/ptr\.yaml: unknown apiVersion\/kind "apiserver\.config\.k8s\.io\/v1, Kind=AdmissionConfiguration"/,
      },
      {
        name: 'a path to a file with an invalid toleration names that file and the field',
        given: {
          content: admission({ name: 'PodTolerationRestriction', path: 'ptr.yaml' }),
          files: {
            '/cfg/ptr.yaml':
              'apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1\nkind: Configuration\ndefault:\n- key: k\n  operator: Bad\n',
          },
        },
        want: /^\/cfg\/ptr\.yaml: invalid config: podtolerationrestriction\.default\[0\]\.operator: Unsupported value: "Bad": supported values: "Equal", "Exists"$/,
      },
      {
        name: 'default that is not a list',
        given: { content: 'apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1\nkind: Configuration\ndefault: {key: k}\n' },
        want: /^\/cfg\/a\.yaml: default: must be a list of tolerations, got object$/,
      },
      {
        name: 'a toleration that is not a mapping',
        given: { content: 'apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1\nkind: Configuration\nwhitelist:\n- k\n' },
        want: /^\/cfg\/a\.yaml: whitelist\[0\]: must be a toleration mapping, got string$/,
      },
      {
        name: 'a tolerationSeconds that is a string',
        given: {
          content:
            'apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1\nkind: Configuration\ndefault:\n- key: k\n  operator: Exists\n  effect: NoExecute\n  tolerationSeconds: "300"\n',
        },
        want: /^\/cfg\/a\.yaml: default\[0\]\.tolerationSeconds: must be int64, got string$/,
      },
      {
        name: 'a YAML 1.1 boolean where a string belongs (value: yes)',
        given: {
          content:
            'apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1\nkind: Configuration\ndefault:\n- key: k\n  operator: Equal\n  value: yes\n',
        },
        want: /^\/cfg\/a\.yaml: default\[0\]\.value: must be string, got bool$/,
      },
      {
        name: 'a wrong type inside an embedded configuration names the full field',
        given: {
          content: admission({
            name: 'PodTolerationRestriction',
            configuration: {
              apiVersion: 'podtolerationrestriction.admission.k8s.io/v1alpha1',
              kind: 'Configuration',
              whitelist: [{ effect: 3 }],
            },
          }),
        },
        want: /^\/cfg\/a\.yaml: plugins\[0\]\.configuration\.whitelist\[0\]\.effect: must be v1\.TaintEffect, got number$/,
      },
      {
        name: 'an invalid toleration in an embedded configuration gives the field error text',
        given: {
          content: admission({
            name: 'PodTolerationRestriction',
            configuration: {
              apiVersion: 'podtolerationrestriction.admission.k8s.io/v1alpha1',
              kind: 'Configuration',
              whitelist: [{ operator: 'Equal', value: 'v' }],
            },
          }),
        },
        want: /^\/cfg\/a\.yaml: plugins\[0\]\.configuration: invalid config: podtolerationrestriction\.whitelist\[0\]\.operator: Invalid value: "Equal": operator must be Exists when `key` is empty/,
      },
      {
        name: 'Gt is rejected while comparison operators are not allowed',
        given: {
          content:
            'apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1\nkind: Configuration\nwhitelist:\n- key: tier\n  operator: Gt\n  value: "5"\n',
        },
        want: /^\/cfg\/a\.yaml: invalid config: podtolerationrestriction\.whitelist\[0\]\.operator: Unsupported value: "Gt": supported values: "Equal", "Exists", "Lt", "Gt"$/,
      },
      {
        name: 'several invalid tolerations are all listed',
        given: {
          content:
            'apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1\nkind: Configuration\ndefault:\n- key: k\n  effect: Sometimes\n  operator: Exists\nwhitelist:\n- key: k\n  operator: Exists\n  tolerationSeconds: 5\n',
        },
        want: /^\/cfg\/a\.yaml: invalid config: \[podtolerationrestriction\.default\[0\]\.effect: Unsupported value: "Sometimes".*, podtolerationrestriction\.whitelist\[0\]\.effect: Invalid value: "": effect must be 'NoExecute' when `tolerationSeconds` is set\]$/,
      },
    ];
    for (const row of rows) {
      it(row.name, () => {
        const fs = filesystem(row.given.files ?? {});
        assert.throws(
          () =>
            parseAdmissionConfig(row.given.content, '/cfg/a.yaml', {
              allowComparisonOperators: row.given.allowComparisonOperators ?? false,
              readFile: fs.readFile,
            }),
          (error: unknown) => {
            assert.ok(error instanceof AdmissionConfigError);
            assert.equal(error.name, 'AdmissionConfigError');
            assert.match(error.message, row.want);
            return true;
          },
        );
      });
    }
  });
});

describe('parseAdmissionConfig: PodNodeSelector (readConfig, ConfigFor, the legacy form)', () => {
  /** The PodNodeSelector configuration as plain objects: the default, and whitelists by namespace. */
  function podNodeSelector(content: string, files: Record<string, string> = {}) {
    const parsed = parseAdmissionConfig(content, '/etc/kubernetes/admission.yaml', { ...options, readFile: filesystem(files).readFile });
    const { clusterDefault, whitelists } = parsed.podNodeSelector;
    return {
      clusterDefault: Object.fromEntries(clusterDefault),
      whitelists: Object.fromEntries([...whitelists].map(([name, labels]) => [name, Object.fromEntries(labels)])),
    };
  }
  const admission = (...plugins: object[]) =>
    JSON.stringify({ apiVersion: 'apiserver.config.k8s.io/v1', kind: 'AdmissionConfiguration', plugins });
  const none = { clusterDefault: {}, whitelists: {} };

  const rows: { name: string; content: string; files?: Record<string, string>; want: ReturnType<typeof podNodeSelector> }[] = [
    {
      name: 'an embedded configuration, which needs no apiVersion or kind',
      content: `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodNodeSelector
  configuration:
    podNodeSelectorPluginConfig:
      clusterDefaultNodeSelector: env=prod
      team-a: "env=prod, tier = web"
`,
      want: { clusterDefault: { env: 'prod' }, whitelists: { 'team-a': { env: 'prod', tier: 'web' } } },
    },
    {
      name: 'a path, relative to the configuration file',
      content: admission({ name: 'PodNodeSelector', path: 'pns.yaml' }),
      files: { '/etc/kubernetes/pns.yaml': 'podNodeSelectorPluginConfig:\n  clusterDefaultNodeSelector: zone=a\n' },
      want: { clusterDefault: { zone: 'a' }, whitelists: {} },
    },
    {
      name: 'a path to a JSON file',
      content: admission({ name: 'PodNodeSelector', path: '/srv/pns.json' }),
      files: { '/srv/pns.json': '{"podNodeSelectorPluginConfig": {"ns1": "zone=a"}}' },
      want: { clusterDefault: {}, whitelists: { ns1: { zone: 'a' } } },
    },
    {
      name: 'a path to an empty file is no configuration (readConfig decodes nothing)',
      content: admission({ name: 'PodNodeSelector', path: 'empty.yaml' }),
      files: { '/etc/kubernetes/empty.yaml': '\n' },
      want: none,
    },
    {
      name: 'the legacy form: a bare file with podNodeSelectorPluginConfig and no apiVersion (ReadAdmissionConfiguration)',
      content: 'podNodeSelectorPluginConfig:\n  clusterDefaultNodeSelector: "kubernetes.io/os=linux"\n  dev: "env=dev"\n',
      want: { clusterDefault: { 'kubernetes.io/os': 'linux' }, whitelists: { dev: { env: 'dev' } } },
    },
    {
      name: 'both plugins in one AdmissionConfiguration, each from its own entry',
      content: admission(
        {
          name: 'PodTolerationRestriction',
          configuration: { apiVersion: 'podtolerationrestriction.admission.k8s.io/v1alpha1', kind: 'Configuration' },
        },
        { name: 'PodNodeSelector', configuration: { podNodeSelectorPluginConfig: { clusterDefaultNodeSelector: 'a=b' } } },
      ),
      want: { clusterDefault: { a: 'b' }, whitelists: {} },
    },
    {
      name: 'the first PodNodeSelector entry wins',
      content: admission(
        { name: 'PodNodeSelector', configuration: { podNodeSelectorPluginConfig: { clusterDefaultNodeSelector: 'first=yes' } } },
        { name: 'PodNodeSelector', configuration: { podNodeSelectorPluginConfig: { clusterDefaultNodeSelector: 'second=yes' } } },
      ),
      want: { clusterDefault: { first: 'yes' }, whitelists: {} },
    },
    {
      name: 'no PodNodeSelector entry: no default, no whitelists',
      content: admission({ name: 'EventRateLimit', path: 'x.yaml' }),
      want: none,
    },
    { name: 'an entry with neither configuration nor path', content: admission({ name: 'PodNodeSelector' }), want: none },
    {
      name: "the field is matched as encoding/json matches it: case-insensitively, with Go's folding of U+017F to s",
      content: admission({
        name: 'PodNodeSelector',
        configuration: {
          PODNODESELECTORPLUGINCONFIG: { a: 'x=1' },
          'podNode\u017felectorPluginConfig': { b: 'x=2' },
          podNodeSelector: { c: 'x=3' },
        },
      }),
      want: { clusterDefault: {}, whitelists: { a: { x: '1' }, b: { x: '2' } } },
    },
    {
      name: 'matching keys decode into one map in order: a later entry overwrites, a null resets',
      content: admission({
        name: 'PodNodeSelector',
        configuration: {
          podNodeSelectorPluginConfig: { a: 'x=1' },
          PodNodeSelectorPluginConfig: null,
          podnodeselectorpluginconfig: { b: 'x=2' },
        },
      }),
      want: { clusterDefault: {}, whitelists: { b: { x: '2' } } },
    },
    {
      name: 'a null selector is the empty string (an empty whitelist allows everything)',
      content: 'podNodeSelectorPluginConfig:\n  clusterDefaultNodeSelector:\n  dev: ""\n',
      want: { clusterDefault: {}, whitelists: { dev: {} } },
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.deepEqual(podNodeSelector(row.content, row.files), row.want);
    });
  }

  it('the fixture AdmissionConfiguration configures both plugins', () => {
    const text = readFileSync(fileURLToPath(new URL('../fixtures/config/admission-configuration.yaml', import.meta.url)), 'utf8');
    const parsed = parseAdmissionConfig(text, 'admission-configuration.yaml', options);
    assert.equal(parsed.podTolerationRestriction.whitelist?.length, 5);
    assert.deepEqual(Object.fromEntries(parsed.podNodeSelector.clusterDefault), { 'kubernetes.io/os': 'linux' });
    assert.deepEqual([...parsed.podNodeSelector.whitelists.keys()], ['edge']);
  });

  const errors: { name: string; content: string; files?: Record<string, string>; want: RegExp }[] = [
    {
      name: 'a selector that does not parse names the file and the key, with upstream’s text',
      content: admission({
        name: 'PodNodeSelector',
        configuration: { podNodeSelectorPluginConfig: { clusterDefaultNodeSelector: 'env' } },
      }),
      want: /^\/cfg\/a\.yaml: plugins\[0\]\.configuration\.podNodeSelectorPluginConfig\.clusterDefaultNodeSelector: invalid selector: \[env\]$/,
    },
    {
      name: 'an invalid whitelist in a file given by path names that file',
      content: admission({ name: 'PodNodeSelector', path: 'pns.yaml' }),
      files: { '/cfg/pns.yaml': 'podNodeSelectorPluginConfig:\n  dev: "env=dev!"\n' },
      want: /^\/cfg\/pns\.yaml: podNodeSelectorPluginConfig\.dev: \[env\]: Invalid value: "dev!": a valid label must be/,
    },
    {
      name: 'a value that is not a string (upstream drops or converts it, depending on the file form)',
      content: 'podNodeSelectorPluginConfig:\n  dev: 5\n',
      want: /^\/cfg\/a\.yaml: podNodeSelectorPluginConfig\.dev: must be a string \(a label selector such as "env=prod"\), got number 5$/,
    },
    {
      name: 'a YAML 1.1 boolean where a selector belongs',
      content: 'podNodeSelectorPluginConfig:\n  dev: yes\n',
      want: /podNodeSelectorPluginConfig\.dev: must be a string .*got boolean true$/,
    },
    {
      name: 'podNodeSelectorPluginConfig that is not a mapping',
      content: admission({ name: 'PodNodeSelector', configuration: { podNodeSelectorPluginConfig: ['a=b'] } }),
      want: /^\/cfg\/a\.yaml: plugins\[0\]\.configuration\.podNodeSelectorPluginConfig: must be a mapping of strings, got a list$/,
    },
    {
      name: 'a bare file without podNodeSelectorPluginConfig needs an apiVersion',
      content: 'clusterDefaultNodeSelector: env=prod\n',
      want: /^\/cfg\/a\.yaml: apiVersion: missing$/,
    },
    {
      name: 'an unknown kind lists the legacy form among the accepted ones',
      content: 'apiVersion: v1\nkind: ConfigMap\n',
      want: /or PodNodeSelector's podNodeSelectorPluginConfig$/,
    },
  ];
  for (const row of errors) {
    it(row.name, () => {
      assert.throws(
        () => parseAdmissionConfig(row.content, '/cfg/a.yaml', { ...options, readFile: filesystem(row.files ?? {}).readFile }),
        (error: unknown) => {
          assert.ok(error instanceof AdmissionConfigError);
          assert.match(error.message, row.want);
          return true;
        },
      );
    });
  }
});
