// sandbox.commands and sandbox.pty through the unchanged npm `e2b` SDK: run (output, exit code, CommandExitError,
// envs, cwd, user, streamed callbacks, timeout), background commands (connect, list, kill), stdin, and a PTY.

import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';

import { CommandExitError, Sandbox, TimeoutError, type SandboxOpts } from 'e2b';

import { useEngine, test } from './engine.ts';
import { forTest, rejects, waitFor } from './helpers.ts';

useEngine();
const sandbox = (t: TestContext, opts: SandboxOpts = {}) => forTest(t, () => Sandbox.create(opts));

test('run: a command runs as user in its home and exits 0', async (t) => {
  const sb = await sandbox(t);
  const result = await sb.commands.run('echo hello; id -un; pwd; echo $HOME');
  assert.equal(result.exitCode, 0);
  assert.equal(result.stderr, '');
  assert.deepEqual(result.stdout.split('\n'), ['hello', 'user', '/home/user', '/home/user', '']);
});

test('run: a failing command throws CommandExitError with its exit code and output', async (t) => {
  const sb = await sandbox(t);
  const caught = await rejects(sb.commands.run('echo out; echo err >&2; exit 3'), CommandExitError);
  assert.equal(caught.exitCode, 3);
  assert.equal(caught.stdout, 'out\n');
  assert.equal(caught.stderr, 'err\n');
});

test('run: envs, cwd, user root, and streamed stdout/stderr callbacks', async (t) => {
  const sb = await sandbox(t);
  const out: string[] = [];
  const err: string[] = [];
  const result = await sb.commands.run('echo $GREETING; pwd; id -un; id -u; echo oops >&2', {
    envs: { GREETING: 'hi' },
    cwd: '/tmp',
    user: 'root',
    onStdout: (data) => {
      out.push(data);
    },
    onStderr: (data) => {
      err.push(data);
    },
  });
  assert.equal(result.stdout, 'hi\n/tmp\nroot\n0\n');
  assert.equal(result.stderr, 'oops\n');
  assert.equal(out.join(''), result.stdout);
  assert.equal(err.join(''), result.stderr);

  const asUser = await sb.commands.run('id -un; pwd; touch /root/x 2>/dev/null || echo denied', { user: 'user' });
  assert.equal(asUser.stdout, 'user\n/home/user\ndenied\n');
});

test("run: the sandbox's envs reach every command, a command's envs override them", async (t) => {
  const sb = await sandbox(t, { envs: { FROM_SANDBOX: 'sandbox', BOTH: 'sandbox' } });
  const result = await sb.commands.run('echo $FROM_SANDBOX $BOTH', { envs: { BOTH: 'command' } });
  assert.equal(result.stdout, 'sandbox command\n');
});

test('run: timeoutMs ends a command that runs too long', async (t) => {
  const sb = await sandbox(t);
  const started = Date.now();
  await assert.rejects(sb.commands.run('sleep 10', { timeoutMs: 1000 }), TimeoutError);
  assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`);
});

test('background: connect by pid, list, kill', async (t) => {
  const sb = await sandbox(t);
  const first = await sb.commands.run('sleep 0.5; echo done', { background: true });
  assert.ok(first.pid > 0);
  const again = await sb.commands.connect(first.pid);
  assert.equal(again.pid, first.pid);
  const finished = await again.wait();
  assert.equal(finished.stdout, 'done\n');
  assert.equal(finished.exitCode, 0);

  const sleeper = await sb.commands.run('sleep 60', { background: true, envs: { TAG: 'sleeper' }, cwd: '/tmp' });
  const listed = new Map((await sb.commands.list()).map((p) => [p.pid, p]));
  const info = listed.get(sleeper.pid);
  assert.ok(info, `${sleeper.pid} not in ${[...listed.keys()]}`);
  assert.deepEqual(info.args, ['-l', '-c', 'sleep 60']);
  assert.equal(info.cmd, '/bin/bash');
  assert.equal(info.cwd, '/tmp');
  assert.equal(info.envs['TAG'], 'sleeper');
  assert.equal(sleeper.exitCode, undefined, 'still running');

  assert.equal(await sb.commands.kill(sleeper.pid), true);
  const caught = await rejects(sleeper.wait(), CommandExitError);
  assert.notEqual(caught.exitCode, 0);
  assert.ok(!(await sb.commands.list()).some((p) => p.pid === sleeper.pid));
  assert.equal(await sb.commands.kill(sleeper.pid), false, 'a second kill finds nothing');
});

test('background: the handle kills its command, disconnect leaves it running', async (t) => {
  const sb = await sandbox(t);
  const seen: string[] = [];
  const ticker = await sb.commands.run('for i in 1 2 3 4 5 6 7 8 9; do echo $i; sleep 0.2; done', {
    background: true,
    onStdout: (data) => {
      seen.push(data);
    },
  });
  await waitFor('the first line', async () => (seen.join('').includes('1\n') ? true : undefined));
  await ticker.disconnect();
  assert.ok((await sb.commands.list()).some((p) => p.pid === ticker.pid), 'still running after disconnect');
  const back = await sb.commands.connect(ticker.pid);
  assert.equal(await back.kill(), true);
  await assert.rejects(back.wait(), CommandExitError);
  assert.ok(!(await sb.commands.list()).some((p) => p.pid === ticker.pid));
});

test('stdin: sendStdin writes, closeStdin ends the input', async (t) => {
  const sb = await sandbox(t);
  const cat = await sb.commands.run('cat', { background: true, stdin: true });
  await sb.commands.sendStdin(cat.pid, 'through stdin\n');
  await cat.sendStdin(new TextEncoder().encode('and bytes\n'));
  await sb.commands.closeStdin(cat.pid);
  const result = await cat.wait();
  assert.equal(result.stdout, 'through stdin\nand bytes\n');
  assert.equal(result.exitCode, 0);
});

const encode = (text: string) => new TextEncoder().encode(text);

type PtyOpts = Omit<Parameters<Sandbox['pty']['create']>[0], 'onData'>;

/** A PTY made with `opts` (or, given a `pid`, connected to again), its output gathered: the handle, and its output so far. */
async function openPty(sb: Sandbox, opts: PtyOpts | { pid: number }) {
  const chunks: Uint8Array[] = [];
  const onData = (data: Uint8Array) => {
    chunks.push(data);
  };
  const terminal = 'pid' in opts ? await sb.pty.connect(opts.pid, { onData }) : await sb.pty.create({ ...opts, onData });
  return { terminal, text: () => Buffer.concat(chunks).toString('utf8') };
}

test('pty: create, sendInput, resize, output, exit', async (t) => {
  const sb = await sandbox(t);
  const { terminal, text } = await openPty(sb, { rows: 20, cols: 70 });
  assert.ok(terminal.pid > 0);
  await sb.pty.sendInput(terminal.pid, encode('stty size; [ -t 0 ] && echo on-a-terminal; echo $TERM; id -un\n'));
  await waitFor('`stty size` at 20x70', async () => (text().includes('20 70') ? true : undefined));
  await sb.pty.resize(terminal.pid, { rows: 30, cols: 90 });
  await sb.pty.sendInput(terminal.pid, encode('stty size; exit\n'));
  const result = await terminal.wait();
  assert.equal(result.exitCode, 0);
  assert.match(text(), /20 70\r\non-a-terminal\r\nxterm-256color\r\nuser\r\n/);
  assert.match(text(), /30 90\r\n/);
});

test('pty: disconnect and connect again, list, kill', async (t) => {
  const sb = await sandbox(t);
  const terminal = await sb.pty.create({ rows: 24, cols: 80, onData: () => {} });
  await terminal.disconnect();
  const { terminal: again, text } = await openPty(sb, { pid: terminal.pid });
  assert.equal(again.pid, terminal.pid);
  await sb.pty.sendInput(terminal.pid, encode('echo reattached-$((40 + 2))\n'));
  await waitFor('the output after reattaching', async () => (text().includes('reattached-42\r\n') ? true : undefined));
  assert.ok((await sb.commands.list()).some((p) => p.pid === terminal.pid), 'the PTY is listed');
  assert.equal(await sb.pty.kill(terminal.pid), true);
  await assert.rejects(again.wait(), CommandExitError);
  assert.ok(!(await sb.commands.list()).some((p) => p.pid === terminal.pid));
  assert.equal(await sb.pty.kill(terminal.pid), false, 'a second kill finds nothing');
});

test('pty: envs, cwd and user reach the shell', async (t) => {
  const sb = await sandbox(t);
  const { terminal, text } = await openPty(sb, {
    rows: 24,
    cols: 80,
    envs: { MARK: 'pty-env' },
    cwd: '/tmp',
    user: 'root',
  });
  await sb.pty.sendInput(terminal.pid, encode('echo "[$MARK]"; pwd; id -un; exit\n'));
  await terminal.wait();
  assert.match(text(), /\[pty-env\]\r\n\/tmp\r\nroot\r\n/);
});

test('pty: a shell that exits with a code ends with it: wait() throws CommandExitError', async (t) => {
  const sb = await sandbox(t);
  const { terminal } = await openPty(sb, { rows: 24, cols: 80 });
  await sb.pty.sendInput(terminal.pid, encode('exit 7\n'));
  const caught = await terminal.wait().then(
    () => assert.fail('a shell that exits 7 is not a success'),
    (e: unknown) => e,
  );
  assert.ok(caught instanceof CommandExitError, String(caught));
  assert.equal(caught.exitCode, 7);
});

test('pty: the terminal has a name in the sandbox (`tty`)', async (t) => {
  const sb = await sandbox(t);
  const { terminal, text } = await openPty(sb, { rows: 24, cols: 80 });
  await sb.pty.sendInput(terminal.pid, encode('tty; exit\n'));
  await terminal.wait();
  // After the echoed line bash may switch bracketed paste off (`\x1b[?2004l\r`) first.
  assert.match(text(), /[\r\n]\/dev\/pts\/\d+\r\n/);
});
