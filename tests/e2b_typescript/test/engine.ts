// The engine under test, like tests/e2b_python/conftest.py: `svc e2b env` (target/debug/svc, or $SVC_BIN) in a
// temporary SVC_STATE_DIR starts an engine and prints `export E2B_API_URL=...`, `E2B_SANDBOX_URL`, `E2B_API_KEY`;
// the three go into process.env, where the unchanged SDK reads them (on each call, so setting them in `before`,
// ahead of any SDK call, is enough). At the end every sandbox the engine still lists is killed through the SDK and
// the engine stopped with `svc provider engine stop`.
//
// Each test file calls `useEngine()` at top level. node:test runs every file in its own process and Node 20 has no
// global setup hook (`--test-global-setup` is Node 24), so "one engine per run" is one per file's process: started
// in `before`, stopped in `after` (about 0.1 s each). Tests are declared with this module's `test`, which on a
// failure adds the tail of the engine's log as a diagnostic.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before } from 'node:test';

import { Sandbox } from 'e2b';

import { testShowing } from '../../ts-shared/node-test.mts';

export const REPO = resolve(import.meta.dirname, '..', '..', '..');
const EXPORTED = ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY'] as const;

export interface Engine {
  bin: string; // the svc binary
  stateDir: string; // SVC_STATE_DIR of this engine
  log: string; // its engine.log
  env: NodeJS.ProcessEnv; // the environment `svc` commands against this engine need
}

function binary(): string {
  const path = process.env['SVC_BIN'] || join(REPO, 'target', 'debug', 'svc');
  if (!existsSync(path)) {
    throw new Error(`${path} not found: build first with \`cargo build --workspace --bins\` (or set SVC_BIN)`);
  }
  return path;
}

export function tail(path: string, lines = 30): string {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

let current: Engine | undefined;

function stop(engine: Engine): void {
  try {
    execFileSync(engine.bin, ['provider', 'engine', 'stop'], { env: engine.env, stdio: 'ignore', timeout: 60_000 });
  } finally {
    rmSync(engine.stateDir, { recursive: true, force: true });
  }
}

// If this test process dies before `after`, the engine (detached) goes with it.
function stopOnExit(): void {
  if (current) {
    const engine = current;
    current = undefined;
    try {
      stop(engine);
    } catch {
      // best effort on the way out
    }
  }
}

/** Start an engine with `svc e2b env` and put its three variables in process.env. */
export function startEngine(): Engine {
  const bin = binary();
  const stateDir = mkdtempSync(join(tmpdir(), 'svc-e2b-ts-'));
  // The engine sees only this suite's state folder, not the caller's SVC_* / E2B_* settings.
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('SVC_') && !k.startsWith('E2B_')) env[k] = v;
  }
  env['SVC_STATE_DIR'] = stateDir;
  const engine: Engine = { bin, stateDir, log: join(stateDir, 'engine.log'), env };
  current = engine;
  process.once('exit', stopOnExit);
  const out = execFileSync(bin, ['e2b', 'env'], { env, encoding: 'utf8', timeout: 60_000 });
  const exported: Record<string, string> = {};
  for (const line of out.split('\n')) {
    if (!line.trim()) continue;
    const m = /^export ([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (!m?.[1] || m[2] === undefined) throw new Error(`unexpected line from \`svc e2b env\`: ${line}`);
    exported[m[1]] = m[2];
  }
  const names = Object.keys(exported).sort();
  if (names.join() !== [...EXPORTED].sort().join()) {
    throw new Error(`\`svc e2b env\` printed ${names.join(', ')}, not ${EXPORTED.join(', ')}:\n${out}`);
  }
  for (const name of EXPORTED) process.env[name] = exported[name];
  return engine;
}

/** Kill every sandbox the engine still lists, then stop it and remove its state folder. */
export async function stopEngine(engine: Engine): Promise<void> {
  try {
    const pages = Sandbox.list();
    while (pages.hasNext) {
      for (const listed of await pages.nextItems()) await Sandbox.kill(listed.sandboxId);
    }
  } finally {
    if (current === engine) current = undefined;
    process.removeListener('exit', stopOnExit);
    stop(engine);
  }
}

/** One engine for the calling test file. The returned object is filled in by `before`; read it inside tests. */
export function useEngine(): Engine {
  const holder = {} as Engine;
  before(() => {
    Object.assign(holder, startEngine());
  });
  after(async () => {
    if (holder.bin) await stopEngine(holder);
  });
  return holder;
}

/** node:test's `test`, showing the engine's log (tail) when a test that is not a todo fails. */
export const test = testShowing((t) => {
  if (current) t.diagnostic(`engine log (${current.log}), last lines:\n${tail(current.log)}`);
});
