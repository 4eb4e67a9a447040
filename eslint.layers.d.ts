/** Types of eslint.layers.js, for test/lint/layers.test.ts. */
import type { Linter } from 'eslint';

export declare const layerConfigs: Linter.Config[];
