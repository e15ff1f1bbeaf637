// The unchanged npm `@e2b/code-interpreter` SDK: runCode with Jupyter's rule for the last expression, logs, errors,
// state kept between runs, contexts, other languages.

import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';

import { Sandbox, type ExecutionError, type OutputMessage, type Result } from '@e2b/code-interpreter';

import { useEngine, test } from './engine.ts';
import { forTest } from './helpers.ts';

useEngine();
const sandbox = (t: TestContext) => forTest(t, () => Sandbox.create());

test('runCode: the last expression is the main result, and state carries over', async (t) => {
  const sb = await sandbox(t);
  const stdout: OutputMessage[] = [];
  const results: Result[] = [];
  const execution = await sb.runCode("x = 41\nprint('hi')\nx + 1", {
    onStdout: (out) => {
      stdout.push(out);
    },
    onResult: (result) => {
      results.push(result);
    },
  });
  assert.equal(execution.text, '42');
  assert.equal(execution.results.length, 1);
  assert.equal(execution.results[0]?.isMainResult, true);
  assert.deepEqual(execution.logs, { stdout: ['hi\n'], stderr: [] });
  assert.equal(execution.error, undefined);
  assert.deepEqual(
    stdout.map((o) => [o.line, o.error]),
    [['hi\n', false]],
  );
  assert.deepEqual(
    results.map((r) => r.text),
    ['42'],
  );

  const again = await sb.runCode('x');
  assert.equal(again.text, '41');
  assert.equal(again.executionCount, (execution.executionCount ?? 0) + 1);
  assert.equal((await sb.runCode('x = 1')).text, undefined);
});

test('runCode: stderr, streamed and collected', async (t) => {
  const sb = await sandbox(t);
  const stderr: OutputMessage[] = [];
  const execution = await sb.runCode("import sys\nprint('to stderr', file=sys.stderr)", {
    onStderr: (out) => {
      stderr.push(out);
    },
  });
  assert.deepEqual(execution.logs, { stdout: [], stderr: ['to stderr\n'] });
  assert.deepEqual(
    stderr.map((o) => [o.line, o.error]),
    [['to stderr\n', true]],
  );
});

test("runCode: a run's envs reach its code", async (t) => {
  const sb = await sandbox(t);
  // On an error answer the SDK leaves its request timer running: a short one keeps this process from idling 60 s.
  const opts = { envs: { MARK: 'from-envs' }, requestTimeoutMs: 5_000 };
  const python = await sb.runCode("import os\nos.environ['MARK']", opts);
  assert.equal(python.text, "'from-envs'");
  assert.deepEqual((await sb.runCode('echo $MARK', { ...opts, language: 'bash' })).logs.stdout, ['from-envs\n']);
  assert.equal((await sb.runCode("import os\nos.environ.get('MARK')")).text, undefined, 'only for that run');
});

test('runCode: an error has its name, value and traceback', async (t) => {
  const sb = await sandbox(t);
  const seen: ExecutionError[] = [];
  const execution = await sb.runCode("print('before')\n1/0", {
    onError: (error) => {
      seen.push(error);
    },
  });
  assert.ok(execution.error);
  assert.equal(execution.error.name, 'ZeroDivisionError');
  assert.equal(execution.error.value, 'division by zero');
  assert.match(execution.error.traceback, /<cell>/);
  assert.deepEqual(
    seen.map((e) => e.name),
    ['ZeroDivisionError'],
  );
  assert.deepEqual(execution.logs.stdout, ['before\n']);
});

test('contexts are separate namespaces: create, list, restart, remove', async (t) => {
  const sb = await sandbox(t);
  await sb.runCode("shared = 'default'");
  const context = await sb.createCodeContext();
  assert.equal(context.language, 'python');
  assert.ok(context.id.length > 0);
  const first = await sb.runCode('y = 5\ny * 2', { context });
  assert.equal(first.text, '10');
  assert.equal(first.executionCount, 1);
  const missing = await sb.runCode('shared', { context });
  assert.equal(missing.error?.name, 'NameError');
  assert.ok((await sb.listCodeContexts()).some((c) => c.id === context.id));
  await sb.restartCodeContext(context);
  const restarted = await sb.runCode('y', { context });
  assert.equal(restarted.error?.name, 'NameError');
  assert.equal(restarted.executionCount, 1, 'a restarted context counts its runs anew');
  await sb.removeCodeContext(context.id);
  assert.ok(!(await sb.listCodeContexts()).some((c) => c.id === context.id));

  const bash = await sb.createCodeContext({ language: 'bash', cwd: '/tmp' });
  assert.equal(bash.language, 'bash');
  assert.deepEqual((await sb.runCode('pwd', { context: bash })).logs.stdout, ['/tmp\n']);
});

test('runCode: bash and javascript', async (t) => {
  const sb = await sandbox(t);
  assert.deepEqual((await sb.runCode('echo from bash', { language: 'bash' })).logs.stdout, ['from bash\n']);
  assert.deepEqual((await sb.runCode('console.log(1 + 2)', { language: 'js' })).logs.stdout, ['3\n']);
});

test('runCode without a context: one default per language', async (t) => {
  const sb = await sandbox(t);
  assert.equal((await sb.runCode('echo a', { language: 'bash' })).executionCount, 1);
  assert.equal((await sb.runCode('a = 1')).executionCount, 1);
  const before = (await sb.listCodeContexts()).map((c) => `${c.language} ${c.id}`).sort();
  assert.deepEqual(
    before.map((c) => c.split(' ')[0]),
    ['bash', 'python'],
  );
  const second = await sb.runCode('echo b', { language: 'bash' });
  assert.deepEqual(second.logs.stdout, ['b\n']);
  assert.equal(second.executionCount, 2);
  const again = await sb.runCode('a');
  assert.equal(again.text, '1');
  assert.equal(again.executionCount, 2);
  assert.deepEqual((await sb.listCodeContexts()).map((c) => `${c.language} ${c.id}`).sort(), before);
});

test('runCode after its default context is removed gets a new one', async (t) => {
  const sb = await sandbox(t);
  await sb.runCode('a = 1');
  await sb.runCode('echo a', { language: 'bash' });
  const removed = new Set((await sb.listCodeContexts()).map((c) => c.id));
  assert.equal(removed.size, 2);
  for (const id of removed) await sb.removeCodeContext(id);
  const execution = await sb.runCode('1 + 1');
  assert.equal(execution.error, undefined);
  assert.equal(execution.text, '2');
  assert.equal(execution.executionCount, 1, 'a new default counts from one');
  const fresh = await sb.runCode('a');
  assert.equal(fresh.error?.name, 'NameError');
  const now = await sb.listCodeContexts();
  assert.deepEqual(now.map((c) => c.language).sort(), ['python']);
  assert.ok(!now.some((c) => removed.has(c.id)));
});

test('runCode: output without a final newline keeps the result', async (t) => {
  const sb = await sandbox(t);
  const execution = await sb.runCode("print('x', end='')\n41 + 1");
  assert.equal(execution.text, '42');
  assert.deepEqual(execution.logs.stdout, ['x']);
  assert.equal(execution.error, undefined);
  const failed = await sb.runCode("print('y', end='')\nraise ValueError('bad')");
  assert.deepEqual(failed.logs.stdout, ['y']);
  assert.equal(failed.error?.name, 'ValueError');
  assert.equal(failed.error?.value, 'bad');
});

test('the code-interpreter Sandbox is also a plain e2b Sandbox (commands, files)', async (t) => {
  const sb = await sandbox(t);
  await sb.files.write('/home/user/data.txt', '7');
  const execution = await sb.runCode("int(open('/home/user/data.txt').read()) * 6");
  assert.equal(execution.text, '42');
  assert.equal((await sb.commands.run('id -un')).stdout, 'user\n');
});
