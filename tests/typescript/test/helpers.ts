// Small helpers shared by the test files.

import assert from 'node:assert/strict';

import { APIError } from 'openai';

import { rejection, sleep, waitFor as waitWithin } from '../../ts-shared/node-test.mts';

export const RUNTIMES = ['rt-one', 'rt-two'] as const;
export type Runtime = (typeof RUNTIMES)[number];

export { sleep };

/** Every item of an async iterable (an SDK PagePromise auto-paginates with `for await`). */
export async function collect<T>(items: AsyncIterable<T>, max = 1000): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) {
    out.push(item);
    assert.ok(out.length <= max, `more than ${max} items: the cursor never ends`);
  }
  return out;
}

/** Awaits `call`, which must reject with an SDK error of class `cls`; returns it for further checks. */
export async function rejects<E extends APIError>(
  call: Promise<unknown>,
  cls: abstract new (...args: never[]) => E,
  expected: { code?: string; param?: string } = {},
): Promise<E> {
  const caught = await rejection(call, cls);
  if (expected.code !== undefined) assert.equal(caught.code, expected.code);
  if (expected.param !== undefined) assert.equal(caught.param, expected.param);
  return caught;
}

/** Polls `check` every 50 ms until it returns a value other than undefined, or fails after `timeoutMs`. */
export function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  return waitWithin(what, check, timeoutMs);
}

export function b64(text: string): string {
  return Buffer.from(text).toString('base64');
}

/**
 * The SDK does not validate responses at run time, so the tests check that the fields its types declare as required
 * are present (a missing one would be `undefined` behind a non-optional type).
 */
export function assertFields<T extends object>(value: T, fields: ReadonlyArray<keyof T & string>, what: string): void {
  const missing = fields.filter((f) => !(f in value) || value[f] === undefined);
  assert.deepEqual(missing, [], `${what} lacks required fields ${missing.join(', ')}: ${JSON.stringify(value)}`);
}
