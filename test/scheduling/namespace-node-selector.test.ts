import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Namespace } from '../../src/api/types.js';
import {
  conflictText,
  effectiveNamespaceNodeSelector,
  emptyPodNodeSelectorConfig,
  firstNotWhitelisted,
  judgeNamespaceNodeSelector,
  mergeNodeSelector,
  namespaceNodeSelectorAnnotation,
  nodeSelectorConflict,
  parseSelectorLabels,
  whitelistText,
  type PodNodeSelectorConfig,
} from '../../src/scheduling/namespace-node-selector.js';

const namePartFormat =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character " +
  "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const labelValueFormat =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character " +
  "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

const labels = (entries: Record<string, string>) => new Map(Object.entries(entries));

function namespace(annotation?: string, name = 'apps'): Namespace {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, ...(annotation === undefined ? {} : { annotations: { [namespaceNodeSelectorAnnotation]: annotation } }) },
  };
}

describe('ConvertSelectorToLabelsMap (parseSelectorLabels)', () => {
  const accepted: { name: string; selector: string; want: Record<string, string> }[] = [
    { name: 'the empty selector is the empty set', selector: '', want: {} },
    { name: 'one label', selector: 'infra=false', want: { infra: 'false' } },
    {
      name: 'white space around keys and values is trimmed (upstream test: " infra = false ")',
      selector: ' infra = false ',
      want: { infra: 'false' },
    },
    { name: 'several labels, comma-separated, with spaces', selector: 'infra=false, env = test', want: { infra: 'false', env: 'test' } },
    { name: 'a key named twice keeps its last value', selector: 'env=dev,env=prod', want: { env: 'prod' } },
    { name: 'an empty value is a valid label value', selector: 'env=', want: { env: '' } },
    { name: 'a prefixed key', selector: 'node-role.kubernetes.io/worker=true', want: { 'node-role.kubernetes.io/worker': 'true' } },
    {
      name: "Go's white space is trimmed: U+0085, U+00A0, U+2003, U+3000, tabs and newlines",
      selector: '\u00a0env\u3000=\u2003prod\u0085,\t\ntier\r=\vweb\f',
      want: { env: 'prod', tier: 'web' },
    },
  ];
  for (const row of accepted) {
    it(row.name, () => {
      const parsed = parseSelectorLabels(row.selector);
      assert.equal(parsed.error, undefined);
      assert.deepEqual(Object.fromEntries(parsed.labels), row.want);
      assert.deepEqual([...parsed.labels.keys()], Object.keys(row.want), 'in the order of the text');
    });
  }

  const refused: { name: string; selector: string; want: string }[] = [
    { name: 'a part without "=" prints its pieces as Go prints a []string', selector: 'infra', want: 'invalid selector: [infra]' },
    { name: '"==" is not accepted (three pieces)', selector: 'env==prod', want: 'invalid selector: [env  prod]' },
    { name: 'two "=" in one part', selector: 'a=b=c', want: 'invalid selector: [a b c]' },
    { name: 'a trailing comma leaves an empty part', selector: 'env=prod,', want: 'invalid selector: []' },
    { name: 'a selector of white space only is not empty', selector: ' ', want: 'invalid selector: [ ]' },
    {
      name: '"!=" makes the key "env!", which is no label key (a field error on a nil path)',
      selector: 'env!=prod',
      want: `<nil>: Invalid value: "env!": ${namePartFormat}`,
    },
    {
      name: 'an empty key fails both "non-empty" and the format',
      selector: '=prod',
      want: `<nil>: Invalid value: "": name part must be non-empty; ${namePartFormat}`,
    },
    {
      name: "a bad value names its key as the path (the nil path's Key)",
      selector: 'env=prod!',
      want: `[env]: Invalid value: "prod!": ${labelValueFormat}`,
    },
    {
      name: 'a value with inner white space',
      selector: 'env=pro d',
      want: `[env]: Invalid value: "pro d": ${labelValueFormat}`,
    },
    {
      name: 'U+FEFF is not Go white space (JavaScript trim() would drop it), so the key is invalid',
      selector: '\ufeffenv=prod',
      want: `<nil>: Invalid value: "\\ufeffenv": ${namePartFormat}`,
    },
    { name: 'the first error wins, in the order of the text', selector: 'a=b, c, d!=e', want: 'invalid selector: [ c]' },
    { name: 'the key is checked before the value', selector: 'k!=v!', want: `<nil>: Invalid value: "k!": ${namePartFormat}` },
  ];
  for (const row of refused) {
    it(row.name, () => {
      const parsed = parseSelectorLabels(row.selector);
      assert.equal(parsed.labels, undefined);
      assert.equal(parsed.error, row.want);
    });
  }
});

describe('labels.Conflicts, isSubset and labels.Merge', () => {
  it('a key with two values conflicts; the same value or a key on one side only does not', () => {
    assert.deepEqual(nodeSelectorConflict(labels({ infra: 'true' }), { infra: 'false' }), {
      key: 'infra',
      namespaceValue: 'true',
      podValue: 'false',
    });
    assert.equal(nodeSelectorConflict(labels({ infra: 'true' }), { infra: 'true', env: 'dev' }), undefined);
    assert.equal(nodeSelectorConflict(labels({ env: 'dev' }), {}), undefined);
    assert.equal(nodeSelectorConflict(new Map(), { env: 'dev' }), undefined);
  });

  it('an inherited property is not a label of the pod', () => {
    assert.equal(nodeSelectorConflict(labels({ toString: 'x' }), {}), undefined);
    assert.equal(
      nodeSelectorConflict(labels({ ['__proto__']: 'x' }), JSON.parse('{"__proto__":"y"}') as Record<string, string>)?.podValue,
      'y',
    );
  });

  it('an empty whitelist allows everything; otherwise every key must be there with the same value', () => {
    assert.equal(firstNotWhitelisted({ anything: 'goes' }, new Map()), undefined);
    assert.equal(firstNotWhitelisted({}, labels({ env: 'dev' })), undefined);
    assert.equal(firstNotWhitelisted({ env: 'dev' }, labels({ env: 'dev', color: 'blue' })), undefined);
    assert.equal(firstNotWhitelisted({ env: 'dev', color: 'red' }, labels({ env: 'dev', color: 'blue' })), 'color');
    assert.equal(firstNotWhitelisted({ tier: 'web' }, labels({ env: 'dev' })), 'tier');
  });

  it("the merge keeps the pod's entries and order and appends the namespace's missing keys", () => {
    const pod = { env: 'test' };
    assert.deepEqual(Object.entries(mergeNodeSelector(pod, labels({ infra: 'true', env: 'test' }))), [
      ['env', 'test'],
      ['infra', 'true'],
    ]);
    assert.equal(mergeNodeSelector(pod, labels({ env: 'test' })), pod, 'nothing missing: the same object');
    assert.equal(mergeNodeSelector(pod, new Map()), pod);
  });

  it('a merged key "__proto__" becomes a label, not the prototype', () => {
    const merged = mergeNodeSelector({}, labels({ ['__proto__']: 'x' }));
    assert.ok(Object.hasOwn(merged, '__proto__'));
    assert.equal(Object.getPrototypeOf(merged), Object.prototype);
  });
});

describe("the namespace's effective node selector (getNodeSelectorMap)", () => {
  const config: PodNodeSelectorConfig = { clusterDefault: labels({ infra: 'false' }), whitelists: new Map() };

  it('a namespace without the annotation gets the cluster default', () => {
    assert.deepEqual(effectiveNamespaceNodeSelector(namespace(), config), { selector: config.clusterDefault, source: 'cluster' });
  });

  it('an empty annotation is "no selector": the cluster default does not apply', () => {
    const effective = effectiveNamespaceNodeSelector(namespace(''), config);
    assert.equal(effective.source, 'namespace');
    assert.equal(effective.selector.size, 0);
  });

  it('the annotation replaces the cluster default; it does not merge with it', () => {
    const effective = effectiveNamespaceNodeSelector(namespace('infra=true, env=prod'), config);
    assert.deepEqual(Object.fromEntries(effective.selector ?? []), { infra: 'true', env: 'prod' });
  });

  it('an unknown namespace reads as one without the annotation', () => {
    assert.equal(effectiveNamespaceNodeSelector(undefined, config).source, 'cluster');
  });

  it('an annotation that does not parse is an error naming the namespace and the annotation', () => {
    assert.deepEqual(effectiveNamespaceNodeSelector(namespace('env'), config), {
      error: 'namespace "apps" annotation "scheduler.alpha.kubernetes.io/node-selector": invalid selector: [env]',
    });
  });

  it('no configuration: no cluster default', () => {
    assert.equal(effectiveNamespaceNodeSelector(namespace(), emptyPodNodeSelectorConfig).selector?.size, 0);
  });
});

describe('judgeNamespaceNodeSelector (the validation `tolerator audit` shares)', () => {
  const config: PodNodeSelectorConfig = {
    clusterDefault: labels({ env: 'dev' }),
    whitelists: new Map([['apps', labels({ env: 'dev', infra: 'false', color: 'blue' })]]),
  };
  const rows: { name: string; nodeSelector?: Record<string, string>; namespace?: Namespace; namespaceName?: string; want: string }[] = [
    {
      name: 'no nodeSelector, no whitelist of its own, cluster default only',
      namespace: namespace(undefined, 'other'),
      namespaceName: 'other',
      want: 'allowed',
    },
    {
      name: 'a conflict with the cluster default',
      nodeSelector: { env: 'prod' },
      namespace: namespace(undefined, 'other'),
      namespaceName: 'other',
      want: 'conflict',
    },
    { name: 'a conflict with the annotation', nodeSelector: { infra: 'true' }, namespace: namespace('infra=false'), want: 'conflict' },
    {
      name: 'within the whitelist',
      nodeSelector: { env: 'dev', color: 'blue' },
      namespace: namespace('infra=false, env=dev'),
      want: 'allowed',
    },
    {
      name: 'outside the whitelist',
      nodeSelector: { env: 'dev', color: 'red' },
      namespace: namespace('infra=false, env=dev'),
      want: 'not-whitelisted',
    },
    {
      name: "the whitelist applies by the request's namespace name even when the Namespace is unknown",
      nodeSelector: { tier: 'web' },
      want: 'not-whitelisted',
    },
    {
      name: 'a conflict is reported before a whitelist violation',
      nodeSelector: { env: 'prod', tier: 'web' },
      namespace: namespace('env=dev'),
      want: 'conflict',
    },
    { name: 'an annotation that does not parse', nodeSelector: {}, namespace: namespace('='), want: 'unreadable' },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const judgement = judgeNamespaceNodeSelector(row.nodeSelector, row.namespaceName ?? 'apps', row.namespace, config);
      assert.equal(judgement.verdict, row.want);
      if (judgement.verdict === 'conflict') assert.equal(judgement.message, conflictText);
      if (judgement.verdict === 'not-whitelisted') assert.equal(judgement.message, whitelistText);
    });
  }

  it("upstream's refusal texts", () => {
    assert.equal(conflictText, 'pod node label selector conflicts with its namespace node label selector');
    assert.equal(whitelistText, 'pod node label selector labels conflict with its namespace whitelist');
  });
});

describe('cost', () => {
  /** The least CPU time of five runs, in microseconds. */
  function leastCpuMicros(run: () => void): number {
    let least = Infinity;
    for (let i = 0; i < 5; i++) {
      const started = process.cpuUsage();
      run();
      const used = process.cpuUsage(started);
      least = Math.min(least, used.user + used.system);
    }
    return least;
  }

  /** Linear work grows ×4 for 4× the size, quadratic ×16; the bound 8 (their geometric mean) as test/properties/review-cost.slow.test.ts. */
  function assertLinear(build: (n: number) => () => void, n: number): void {
    const small = build(n);
    const large = build(4 * n);
    small();
    large();
    let ratio = Infinity;
    for (let attempt = 0; attempt < 4 && ratio > 8; attempt++) {
      ratio = Math.min(ratio, leastCpuMicros(large) / Math.max(leastCpuMicros(small), 1));
    }
    assert.ok(ratio <= 8, `cost grew ×${ratio.toFixed(2)} for 4× the size`);
  }

  it('parsing a selector of many labels, of one long label, and of many "=" is linear', () => {
    assertLinear((n) => {
      const text = Array.from({ length: n }, (_, i) => ` example.com/k${i} = v${i} `).join(',');
      return () => parseSelectorLabels(text);
    }, 5_000);
    assertLinear((n) => {
      const text = `k=${'v'.repeat(n)}`;
      return () => parseSelectorLabels(text);
    }, 200_000);
    assertLinear((n) => {
      const text = `k${'='.repeat(n)}`;
      return () => parseSelectorLabels(text);
    }, 50_000);
  });

  it('judging and merging a pod nodeSelector of many entries against a selector and a whitelist of many is linear', () => {
    assertLinear((n) => {
      const entries = Array.from({ length: n }, (_, i): [string, string] => [`example.com/k${i}`, `v${i}`]);
      const nodeSelector = Object.fromEntries(entries);
      const namespaceSelector = new Map(entries.map(([key, value], i) => [i % 2 === 0 ? key : `example.com/other${i}`, value]));
      const config = { clusterDefault: namespaceSelector, whitelists: new Map([['apps', new Map([...entries, ...namespaceSelector])]]) };
      return () => {
        const merged = mergeNodeSelector(nodeSelector, namespaceSelector);
        judgeNamespaceNodeSelector(merged, 'apps', undefined, config);
      };
    }, 5_000);
  });
});
