// The server under test, like tests/python/conftest.py: `target/debug/svc serve --port 0` (or $SVC_BIN) with only the
// agents group on, a temporary workspace and fake-runtime state dir, `target/debug` first on PATH so the fake
// runtimes rt-one / rt-two are what it runs, RT_FAKE_* passed to the runtimes, in its own process group.
//
// Each test file calls `useServer()` at top level: one server per file (node:test runs files in separate processes),
// started in `before` and stopped with SIGTERM (then SIGKILL of the whole group) in `after`. Tests are declared with
// this module's `test`, which on a failure adds the tail of every running server's stderr as a diagnostic.

import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { after, before } from 'node:test';
import { createInterface } from 'node:readline';

import OpenAI from 'openai';

import { testShowing } from '../../ts-shared/node-test.mts';

export const REPO = resolve(import.meta.dirname, '..', '..', '..');
const LISTENING = /^listening on (http:\/\/\S+?)\/?$/;
const STARTUP_TIMEOUT_MS = 30_000;
const live = new Set<string>(); // the stderr logs of the servers this process runs

export interface Server {
  url: string; // http://HOST:PORT (no /v1)
  workspace: string; // SVC_AGENTS_WORKSPACE
  log: string; // the server's stderr
  client: OpenAI;
  stop(): Promise<void>;
}

function binary(): string {
  const path = process.env['SVC_BIN'] || join(REPO, 'target', 'debug', 'svc');
  if (!existsSync(path)) {
    throw new Error(
      `server binary ${path} not found: build first with \`cargo build --workspace --bins\` (or set SVC_BIN)`,
    );
  }
  return path;
}

function serverEnv(tmp: string, extra: Record<string, string>): NodeJS.ProcessEnv {
  // The server must see only what this suite sets, not the caller's SVC_* / fake-runtime config.
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('SVC_') && !k.startsWith('RT_FAKE_')) env[k] = v;
  }
  Object.assign(env, {
    SVC_SERVER_ENABLED_GROUPS: 'agents',
    SVC_AGENTS_WORKSPACE: join(tmp, 'workspace'),
    RT_FAKE_STATE_DIR: join(tmp, 'rt-state'),
    SVC_SERVER_CHILD_ENV: 'RT_FAKE_*',
    PATH: [join(REPO, 'target', 'debug'), process.env['PATH'] ?? ''].join(delimiter),
    ...extra,
  });
  return env;
}

export function tail(path: string, lines = 40): string {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

export function makeClient(url: string): OpenAI {
  return new OpenAI({ apiKey: 'unused', baseURL: `${url}/v1`, maxRetries: 0, timeout: 30_000 });
}

function killGroup(proc: ChildProcess, signal: NodeJS.Signals): void {
  if (proc.pid === undefined) return;
  try {
    process.kill(-proc.pid, signal);
  } catch {
    // already gone
  }
}

/** Start `svc serve --port 0` with this suite's settings plus `extra`; resolves once it prints `listening on`. */
export async function startServer(extra: Record<string, string> = {}): Promise<Server> {
  const bin = binary();
  const tmp = mkdtempSync(join(tmpdir(), 'svc-ts-'));
  const log = join(tmp, 'server.log');
  const stderr = openSync(log, 'w');
  const proc = spawn(bin, ['serve', '--port', '0'], {
    cwd: tmp,
    env: serverEnv(tmp, extra),
    stdio: ['ignore', 'pipe', stderr],
    detached: true, // its own process group, so teardown can reap runtimes it left behind
  });
  closeSync(stderr);
  live.add(log);
  // If this test process dies first, take the server's group with it.
  const onExit = () => killGroup(proc, 'SIGKILL');
  process.once('exit', onExit);

  const exited = new Promise<number | null>((res) => proc.once('exit', (code) => res(code)));
  const url = await new Promise<string>((res, rej) => {
    const timer = setTimeout(
      () => rej(new Error(`svc printed no \`listening on\` line in ${STARTUP_TIMEOUT_MS} ms\n${tail(log)}`)),
      STARTUP_TIMEOUT_MS,
    );
    const lines = createInterface({ input: proc.stdout! });
    lines.on('line', (line) => {
      const m = LISTENING.exec(line.trim());
      if (m?.[1]) {
        clearTimeout(timer);
        res(m[1].replace('://0.0.0.0:', '://127.0.0.1:'));
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      rej(new Error(`svc exited (${code}) before listening\n${tail(log)}`));
    });
  }).catch((err: unknown) => {
    killGroup(proc, 'SIGKILL');
    throw err;
  });
  // The readline interface keeps draining stdout, so the server never blocks on a full pipe.

  return {
    url,
    workspace: join(tmp, 'workspace'),
    log,
    client: makeClient(url),
    async stop() {
      live.delete(log);
      process.removeListener('exit', onExit);
      if (proc.exitCode !== null || proc.signalCode !== null) {
        killGroup(proc, 'SIGKILL');
        throw new Error(`svc exited (${proc.exitCode ?? proc.signalCode}) before the tests ended\n${tail(log)}`);
      }
      proc.kill('SIGTERM');
      const timeout = new Promise<'timeout'>((res) => setTimeout(res, 10_000, 'timeout').unref());
      const outcome = await Promise.race([exited, timeout]);
      killGroup(proc, 'SIGKILL'); // runtimes it may have left behind
      if (outcome === 'timeout') {
        await exited;
        throw new Error(`svc ignored SIGTERM for 10 s\n${tail(log)}`);
      }
      // A failing test has already shown the log's tail; the workspace and state go with the server.
      rmSync(tmp, { recursive: true, force: true });
    },
  };
}

/**
 * One server for the calling test file. The returned object is filled in by `before`; read its fields inside tests.
 */
export function useServer(extra: Record<string, string> = {}): Server {
  const holder = {} as Server;
  before(async () => {
    Object.assign(holder, await startServer(extra));
  });
  after(async () => {
    if (holder.stop) await holder.stop();
  });
  return holder;
}

/** node:test's `test`, showing the servers' stderr (tail) when a test that is not a todo fails. */
export const test = testShowing((t) => {
  for (const log of live) t.diagnostic(`svc stderr (${log}), last lines:\n${tail(log, 20)}`);
});
