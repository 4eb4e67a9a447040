/**
 * kubernetes_feature_enabled read from the API server's /metrics as it streams: the samples of the
 * gates tolerator reads, whatever the chunking, tolerant of every other line, stopping at the end
 * of the family, and bounded on broken or hostile bodies.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FeatureEnabledScanner, maxLineBytes, parseFeatureSample, type FeatureEnabledScan } from '../../src/api/feature-gate-metrics.js';
import { featureMetricsText } from '../support/api-server-answers.js';

function scan(body: string | Buffer, chunkSize = 64 * 1024): { result: FeatureEnabledScan; stoppedAt: number | undefined } {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const scanner = new FeatureEnabledScanner();
  for (let offset = 0; offset < bytes.length; offset += chunkSize) {
    if (scanner.push(bytes.subarray(offset, offset + chunkSize))) return { result: scanner.end(), stoppedAt: offset };
  }
  return { result: scanner.end(), stoppedAt: undefined };
}

function gates(result: FeatureEnabledScan): Record<string, boolean> {
  return Object.fromEntries([...result.samples].map(([name, sample]) => [name, sample.enabled]));
}

const family = (...lines: string[]): string =>
  [
    '# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage and enablement of a k8s feature.',
    '# TYPE kubernetes_feature_enabled gauge',
    ...lines,
    '',
  ].join('\n');

describe('FeatureEnabledScanner', () => {
  it('reads the gates from a kube-apiserver exposition, with their stage, and ignores the gates it does not know', () => {
    const { result } = scan(featureMetricsText({ TaintTolerationComparisonOperators: true, PodLevelResources: false }));
    assert.deepEqual(gates(result), { PodLevelResources: false, TaintTolerationComparisonOperators: true });
    assert.equal(result.samples.get('TaintTolerationComparisonOperators')?.stage, 'ALPHA');
    assert.equal(result.familySeen, true);
    assert.equal(result.malformedLines, 0);
  });

  it('gives the same answer however the body is cut into chunks (every split point, and byte by byte)', () => {
    const body = Buffer.from(featureMetricsText({ TaintTolerationComparisonOperators: true, PodLevelResources: true }));
    const expected = gates(scan(body).result);
    for (let split = 0; split <= body.length; split++) {
      const scanner = new FeatureEnabledScanner();
      if (!scanner.push(body.subarray(0, split))) scanner.push(body.subarray(split));
      assert.deepEqual(gates(scanner.end()), expected, `split at ${split}`);
    }
    assert.deepEqual(gates(scan(body, 1).result), expected);
  });

  it('stops at the first line of the next family: the rest of a large body is never read', () => {
    const tail = 'process_cpu_seconds_total 1\n'.repeat(100_000);
    const body = Buffer.from(family('kubernetes_feature_enabled{name="TaintTolerationComparisonOperators",stage="ALPHA"} 1') + tail);
    const { result, stoppedAt } = scan(body, 4096);
    assert.equal(stoppedAt, 0, 'stopped within the first chunk');
    assert.deepEqual(gates(result), { TaintTolerationComparisonOperators: true });
  });

  it('reads past other families before it, and a comment that is neither HELP nor TYPE changes nothing', () => {
    const body =
      'go_goroutines 250\n# a free comment\n\n' +
      family('kubernetes_feature_enabled{name="PodLevelResources",stage="BETA"} 1', '# another free comment') +
      'zzz_last 1\n';
    const { result, stoppedAt } = scan(body);
    assert.deepEqual(gates(result), { PodLevelResources: true });
    assert.equal(stoppedAt, 0);
  });

  it('reads a body that ends without a newline, and one with CRLF line ends', () => {
    assert.deepEqual(gates(scan('kubernetes_feature_enabled{name="PodLevelResources"} 0').result), { PodLevelResources: false });
    assert.deepEqual(
      gates(scan(family('kubernetes_feature_enabled{name="PodLevelResources",stage="BETA"} 1').replaceAll('\n', '\r\n')).result),
      {
        PodLevelResources: true,
      },
    );
  });

  it('finds nothing, and says so, in a body without the family', () => {
    const { result } = scan('# HELP up x\n# TYPE up gauge\nup 1\nkubernetes_feature_enabled_total 3\n');
    assert.deepEqual(gates(result), {});
    assert.equal(result.familySeen, false);
  });

  it('leaves a gate unknown when its samples contradict each other, however many follow', () => {
    const { result } = scan(
      family(
        'kubernetes_feature_enabled{name="TaintTolerationComparisonOperators",stage="ALPHA"} 1',
        'kubernetes_feature_enabled{name="TaintTolerationComparisonOperators",stage="BETA"} 0',
        'kubernetes_feature_enabled{name="TaintTolerationComparisonOperators",stage="ALPHA"} 1',
        'kubernetes_feature_enabled{name="PodLevelResources",stage="BETA"} 1',
        'kubernetes_feature_enabled{name="PodLevelResources",stage="BETA"} 1',
      ),
    );
    assert.deepEqual(gates(result), { PodLevelResources: true });
    assert.equal(result.malformedLines, 2);
  });

  it('counts a sample line longer than maxLineBytes as malformed, holding no more than that of it', () => {
    const long = `kubernetes_feature_enabled{name="PodLevelResources",padding="${'x'.repeat(maxLineBytes)}"} 1`;
    const { result } = scan(family(long, 'kubernetes_feature_enabled{name="TaintTolerationComparisonOperators"} 1'), 100);
    assert.deepEqual(gates(result), { TaintTolerationComparisonOperators: true });
    assert.equal(result.malformedLines, 1);
  });

  it('survives garbage: binary bytes, a body of newlines, one endless line', () => {
    const random = Buffer.from(Array.from({ length: 100_000 }, (_, i) => (i * 7919 + 13) % 256));
    assert.deepEqual(gates(scan(random).result), {});
    assert.deepEqual(gates(scan('\n'.repeat(100_000)).result), {});
    const endless = scan(Buffer.alloc(1_000_000, 'kubernetes_feature_enabled{'), 4096).result;
    assert.deepEqual(gates(endless), {});
    assert.equal(endless.malformedLines, 1);
  });
});

describe('parseFeatureSample', () => {
  const rows: [string, string, { name: string | undefined; enabled: boolean; stage: string } | undefined][] = [
    [
      'the usual line',
      'kubernetes_feature_enabled{name="PodLevelResources",stage="BETA"} 1',
      { name: 'PodLevelResources', enabled: true, stage: 'BETA' },
    ],
    [
      'GA: an empty stage',
      'kubernetes_feature_enabled{name="PodLevelResources",stage=""} 1',
      { name: 'PodLevelResources', enabled: true, stage: '' },
    ],
    [
      'labels in another order',
      'kubernetes_feature_enabled{stage="ALPHA",name="PodLevelResources"} 0',
      { name: 'PodLevelResources', enabled: false, stage: 'ALPHA' },
    ],
    [
      'a trailing comma and blanks',
      'kubernetes_feature_enabled{ name = "PodLevelResources" , } 1',
      { name: 'PodLevelResources', enabled: true, stage: '' },
    ],
    [
      'an extra label',
      'kubernetes_feature_enabled{name="PodLevelResources",stage="BETA",instance="a"} 1',
      { name: 'PodLevelResources', enabled: true, stage: 'BETA' },
    ],
    [
      'a timestamp',
      'kubernetes_feature_enabled{name="PodLevelResources"} 1 1764460800000',
      { name: 'PodLevelResources', enabled: true, stage: '' },
    ],
    [
      'a tab before the value',
      'kubernetes_feature_enabled{name="PodLevelResources"}\t1',
      { name: 'PodLevelResources', enabled: true, stage: '' },
    ],
    [
      'a float spelling of 1',
      'kubernetes_feature_enabled{name="PodLevelResources"} 1e+00',
      { name: 'PodLevelResources', enabled: true, stage: '' },
    ],
    [
      'a gate tolerator does not read',
      'kubernetes_feature_enabled{name="AllAlpha",stage="ALPHA"} 0',
      { name: undefined, enabled: false, stage: 'ALPHA' },
    ],
    [
      'escapes in a label value',
      'kubernetes_feature_enabled{name="PodLevel\\"Resources\\\\",stage="a\\nb"} 1',
      { name: undefined, enabled: true, stage: 'a\nb' },
    ],
    ['value 2', 'kubernetes_feature_enabled{name="PodLevelResources"} 2', undefined],
    ['value NaN', 'kubernetes_feature_enabled{name="PodLevelResources"} NaN', undefined],
    ['value 0x1', 'kubernetes_feature_enabled{name="PodLevelResources"} 0x1', undefined],
    ['no value', 'kubernetes_feature_enabled{name="PodLevelResources"}', undefined],
    ['no blank before the value', 'kubernetes_feature_enabled{name="PodLevelResources"}1', undefined],
    ['a bad timestamp', 'kubernetes_feature_enabled{name="PodLevelResources"} 1 soon', undefined],
    ['too many fields', 'kubernetes_feature_enabled{name="PodLevelResources"} 1 2 3', undefined],
    ['no name label', 'kubernetes_feature_enabled{stage="BETA"} 1', undefined],
    ['no labels', 'kubernetes_feature_enabled 1', undefined],
    ['an unterminated label value', 'kubernetes_feature_enabled{name="PodLevelResources} 1', undefined],
    ['an unknown escape', 'kubernetes_feature_enabled{name="Pod\\tLevel"} 1', undefined],
    ['a duplicate label', 'kubernetes_feature_enabled{name="PodLevelResources",name="X"} 1', undefined],
    ['a label without quotes', 'kubernetes_feature_enabled{name=PodLevelResources} 1', undefined],
    ['a label name starting with a digit', 'kubernetes_feature_enabled{1name="PodLevelResources"} 1', undefined],
  ];
  for (const [name, line, expected] of rows) {
    it(`${name}: ${expected === undefined ? 'malformed' : `${expected.name ?? '(ignored)'} ${expected.enabled ? 'on' : 'off'}`}`, () => {
      const parsed = parseFeatureSample(line);
      assert.deepEqual(
        parsed === undefined ? undefined : { name: parsed.name, enabled: parsed.sample.enabled, stage: parsed.sample.stage },
        expected,
      );
    });
  }
});

/**
 * CPU time at n and 4n, as test/properties/review-cost.slow.test.ts measures reviews: the least of five
 * runs after a warm-up, a ratio over the bound measured again before it counts. Linear work grows
 * 4-fold, quadratic 16-fold; 6.5 is review-cost's bound. Each run scans the body `repeats` times
 * (the same count at n and 4n), so that a run lasts milliseconds and the clock's microseconds
 * do not decide the ratio.
 */
describe('the cost of a body', () => {
  const maxRatio = 6.5;
  const cpuMicros = (body: Buffer, repeats: number): number => {
    let least = Infinity;
    for (let run = 0; run < 5; run++) {
      const started = process.cpuUsage();
      for (let repeat = 0; repeat < repeats; repeat++) scan(body, 64 * 1024);
      const used = process.cpuUsage(started);
      least = Math.min(least, used.user + used.system);
    }
    return least;
  };
  const shapes: [string, (n: number) => Buffer][] = [
    [
      'samples of the family, each label value full of escapes',
      (n) =>
        Buffer.from(
          family(...Array.from({ length: n }, (_, i) => `kubernetes_feature_enabled{name="G${i}${'\\"'.repeat(400)}",stage="ALPHA"} 1`)),
        ),
    ],
    // 64 KB and 256 KB, scanned many times: bodies that stay in the processor's caches at n and at
    // 4n. Megabytes of a line scanned by memchr measured memory, not the scanner: 2 MB stayed
    // cached across runs and 8 MB did not, which made this linear scan look ×8.
    ['one sample line without end', (n) => Buffer.alloc(n * 32, 'kubernetes_feature_enabled{name="')],
    ['other families only', (n) => Buffer.from('apiserver_request_total{code="200",verb="GET"} 1\n'.repeat(n * 20))],
  ];
  for (const [name, build] of shapes) {
    it(`${name}: linear`, () => {
      const n = 2000;
      const small = build(n);
      const large = build(4 * n);
      // About 16 MB scanned per run at n, whatever the shape's size.
      const repeats = Math.max(1, Math.round(16e6 / small.length));
      cpuMicros(small, repeats);
      cpuMicros(large, repeats);
      let best = Infinity;
      for (let attempt = 0; attempt < 4 && best > maxRatio; attempt++) {
        best = Math.min(best, cpuMicros(large, repeats) / Math.max(cpuMicros(small, repeats), 1));
      }
      assert.ok(best <= maxRatio, `${name}: ×${best.toFixed(1)} from n to 4n`);
    });
  }
});
