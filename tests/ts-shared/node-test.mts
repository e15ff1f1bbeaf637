// What both TypeScript checks (`tests/typescript`, the OpenAI SDK against the server, and
// `tests/e2b_typescript`, the E2B SDK against the engine) need of node:test alike; each
// project imports this file by its path, so neither keeps a copy.

import assert from 'node:assert/strict';
import { test as nodeTest, type TestContext, type TestOptions } from 'node:test';

export const sleep = (ms: number) => new Promise<void>((res) => setTimeout(res, ms));

/** Polls `check` every 50 ms until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    assert.ok(Date.now() < deadline, `timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

/** Awaits `call`, which must reject with an error of class `cls`; returns what it rejected with. */
export async function rejection<E extends Error>(call: Promise<unknown>, cls: abstract new (...args: never[]) => E): Promise<E> {
  let caught: unknown;
  try {
    await call;
  } catch (err) {
    caught = err;
  }
  assert.ok(caught !== undefined, `expected ${cls.name}, but the call succeeded`);
  assert.ok(caught instanceof cls, `expected ${cls.name}, got ${String(caught)}`);
  return caught;
}

export type TestFn = (t: TestContext) => Promise<void>;

/** A node:test `test` that, when a test that is not a todo fails, first calls `diagnose` (to show a log's tail). */
export function testShowing(diagnose: (t: TestContext) => void) {
  function test(name: string, fn: TestFn): void;
  function test(name: string, options: TestOptions, fn: TestFn): void;
  function test(name: string, a: TestFn | TestOptions, b?: TestFn): void {
    const options = typeof a === 'function' ? {} : a;
    const fn = typeof a === 'function' ? a : b;
    if (!fn) throw new Error(`test ${name} has no body`);
    nodeTest(name, options, async (t) => {
      try {
        await fn(t);
      } catch (err) {
        if (!options.todo) diagnose(t);
        throw err;
      }
    });
  }
  return test;
}
