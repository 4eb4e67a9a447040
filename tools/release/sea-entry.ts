/**
 * The single executable's entry (tools/release/release.ts). A single executable application
 * cannot be given node's command-line flags, so the V8 flag `npm start` and the image pass is set
 * here, before src/main.ts compiles any regular expression: V8 reads it when a regular expression
 * is compiled, so setting it before the first one has the effect of the flag.
 */
import { setFlagsFromString } from 'node:v8';

setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');
// A dynamic import, not a static one: static imports are hoisted above the call.
void import('../../src/main.js');
