#!/usr/bin/env node
// The `tolerator` and `kubectl-tolerator` commands of package.json. In a source checkout
// (src/main.ts is there) it runs the sources through tsx, so `npx tolerator` works from a fresh
// clone without a build and never runs a stale dist/; elsewhere it runs the built dist/main.js.
// Either way src/main.ts does the rest, so every way of starting tolerator behaves the same.
import { existsSync } from 'node:fs';
import { URL } from 'node:url';

const source = new URL('../src/main.ts', import.meta.url);
if (existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(source.href);
} else {
  await import(new URL('../dist/main.js', import.meta.url).href);
}
