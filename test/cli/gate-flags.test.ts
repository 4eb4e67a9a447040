/** The flags of cluster-read gates: which gates --feature-gates sets explicitly, and the refresh interval as a Go duration. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseDuration } from '../../src/cli/flags.js';
import { parseExplicitFeatureGates, parseRefreshInterval } from '../../src/cli/options.js';

describe('parseExplicitFeatureGates', () => {
  it('holds only the gates the flag names, the last value of a name winning', () => {
    assert.deepEqual(parseExplicitFeatureGates(undefined), {});
    assert.deepEqual(parseExplicitFeatureGates(''), {});
    assert.deepEqual(parseExplicitFeatureGates('PodLevelResources=false'), { PodLevelResources: false });
    assert.deepEqual(parseExplicitFeatureGates('TaintTolerationComparisonOperators=true,TaintTolerationComparisonOperators=0'), {
      TaintTolerationComparisonOperators: false,
    });
  });

  it('refuses an unknown gate, including a name inherited from Object', () => {
    assert.throws(() => parseExplicitFeatureGates('toString=true'), /unrecognized feature gate: toString/);
  });
});

describe('parseDuration (Go time.ParseDuration)', () => {
  const valid: [string, number][] = [
    ['0', 0],
    ['5m', 300_000],
    ['90s', 90_000],
    ['1h30m', 5_400_000],
    ['1.5h', 5_400_000],
    ['+10s', 10_000],
    ['250ms', 250],
    ['1m0.5s', 60_500],
    ['2us', 0.002],
    ['1\u00b5s', 0.001],
  ];
  for (const [raw, ms] of valid) {
    it(`${raw} is ${ms} ms`, () => {
      assert.equal(parseDuration('x', raw), ms);
    });
  }
  for (const raw of ['', '5', 'm', '5 m', '1.2.3s', '.s', '5min', '1d', 'five minutes', '5m!']) {
    it(`refuses ${JSON.stringify(raw)}`, () => {
      assert.throws(() => parseDuration('x', raw), /invalid duration .* for --x \(for example 30s, 5m, 1h30m\)/);
    });
  }
  it('refuses a negative duration', () => {
    assert.throws(() => parseDuration('x', '-5m'), /--x may not be negative/);
  });
});

describe('parseRefreshInterval', () => {
  it('is 5 min by default, 0 for "at start only", and at least 10 s otherwise', () => {
    assert.equal(parseRefreshInterval(undefined), 300_000);
    assert.equal(parseRefreshInterval('0'), 0);
    assert.equal(parseRefreshInterval('10s'), 10_000);
    assert.throws(() => parseRefreshInterval('9s'), /must be 0 \(read once, at start\) or at least 10s, got 9s/);
  });

  // setTimeout fires after 1 ms for any delay above 2^31 - 1 ms (TimeoutOverflowWarning): a month
  // meant as "almost never" would re-read the API server's /metrics back to back.
  it('refuses an interval longer than the longest timer Node.js keeps (2^31 - 1 ms, 596 h)', () => {
    assert.equal(parseRefreshInterval('596h'), 596 * 3_600_000);
    assert.throws(() => parseRefreshInterval('720h'), /must be at most 596h \(the longest timer Node\.js keeps\), got 720h/);
    assert.throws(() => parseRefreshInterval('99999999999999999999h'), /must be at most 596h/);
  });
});
