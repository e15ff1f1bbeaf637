// Small helpers shared by the test files.

import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';

import { Sandbox } from 'e2b';

export const sleep = (ms: number) => new Promise<void>((res) => setTimeout(res, ms));

type ErrorClass<E extends Error> = abstract new (...args: never[]) => E;

/** Awaits `call`, which must reject with an error of class `cls` (and a message matching `message`); returns it. */
export async function rejects<E extends Error>(call: Promise<unknown>, cls: ErrorClass<E>, message?: RegExp): Promise<E> {
  let caught: unknown;
  try {
    await call;
  } catch (err) {
    caught = err;
  }
  assert.ok(caught !== undefined, `expected ${cls.name}, but the call succeeded`);
  assert.ok(caught instanceof cls, `expected ${cls.name}, got ${String(caught)}`);
  if (message) assert.match(caught.message, message);
  return caught;
}

/** Polls `check` every 50 ms until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    assert.ok(Date.now() < deadline, `timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

/**
 * `create()`'s sandbox, killed when test `t` ends (like the Python fixture's `finally`; a test that killed it itself
 * makes this kill a no-op).
 */
export async function forTest<S extends { sandboxId: string }>(t: TestContext, create: () => Promise<S>): Promise<S> {
  const sandbox = await create();
  t.after(async () => {
    await Sandbox.kill(sandbox.sandboxId);
  });
  return sandbox;
}
