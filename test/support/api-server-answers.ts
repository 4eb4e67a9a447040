/**
 * What a kube-apiserver answers on the non-resource URLs tolerator reads its feature gates from
 * (`/metrics`, `/version`), as text and objects for the fake API server and the scanner tests.
 */
/** A `/version` answer (apimachinery's version.Info) for `gitVersion`, with major and minor as the API server fills them. */
export function versionInfo(gitVersion: string): Record<string, string> {
  const [major = '', minor = ''] = gitVersion.replace(/^v/, '').split('.');
  return {
    major,
    minor,
    gitVersion,
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2026-01-01T00:00:00Z',
    goVersion: 'go1.25.5',
    compiler: 'gc',
    platform: 'linux/amd64',
  };
}

/**
 * A kube-apiserver exposition: families sorted by name as expfmt writes them, the feature family
 * after the apiserver_* ones and before the process_* ones, with a few gates tolerator does not
 * read around `gates` (true → 1, false → 0, a string → written as the value).
 */
export function featureMetricsText(gates: Readonly<Record<string, boolean | string>>): string {
  const features: [string, string, string][] = [
    ['AllAlpha', 'ALPHA', '0'],
    ['AllBeta', 'BETA', '0'],
    ['APIServerTracing', 'BETA', '1'],
    ...Object.entries(gates).map(([name, value]): [string, string, string] => [
      name,
      name === 'PodLevelResources' ? 'BETA' : 'ALPHA',
      typeof value === 'string' ? value : value ? '1' : '0',
    ]),
  ];
  features.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return [
    '# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.',
    '# TYPE apiserver_request_total counter',
    'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="nodes",scope="cluster",subresource="",verb="LIST",version="v1"} 42',
    'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="GET",version="v1"} 7',
    "# HELP kubernetes_build_info [ALPHA] A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.",
    '# TYPE kubernetes_build_info gauge',
    'kubernetes_build_info{build_date="2026-01-01T00:00:00Z",compiler="gc",git_commit="0",git_tree_state="clean",git_version="v1.35.2",go_version="go1.25.5",major="1",minor="35",platform="linux/amd64"} 1',
    '# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage and enablement of a k8s feature.',
    '# TYPE kubernetes_feature_enabled gauge',
    ...features.map(([name, stage, value]) => `kubernetes_feature_enabled{name="${name}",stage="${stage}"} ${value}`),
    '# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.',
    '# TYPE process_cpu_seconds_total counter',
    'process_cpu_seconds_total 1234.5',
    '',
  ].join('\n');
}
