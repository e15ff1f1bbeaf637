// Small helpers shared by the test files.

import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';

import { Sandbox } from 'e2b';

import { rejection, sleep, waitFor as waitWithin } from '../../ts-shared/node-test.mts';

export { sleep };

/** Awaits `call`, which must reject with an error of class `cls` (and a message matching `message`); returns it. */
export async function rejects<E extends Error>(
  call: Promise<unknown>,
  cls: abstract new (...args: never[]) => E,
  message?: RegExp,
): Promise<E> {
  const caught = await rejection(call, cls);
  if (message) assert.match(caught.message, message);
  return caught;
}

/** Polls `check` every 50 ms until it returns a value other than undefined, or fails after `timeoutMs`. */
export function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  return waitWithin(what, check, timeoutMs);
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
