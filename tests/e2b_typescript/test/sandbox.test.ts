// The sandbox lifecycle through the unchanged npm `e2b` SDK: create, getInfo, list (metadata filter, paging),
// setTimeout, getMetrics, pause and connect (resume), kill, and calls the local engine does not offer.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import type { TestContext } from 'node:test';

import { Sandbox, SandboxError, SandboxNotFoundError } from 'e2b';

import { useEngine, test } from './engine.ts';
import { forTest, rejects } from './helpers.ts';

const engine = useEngine();
const sandbox = (t: TestContext) => forTest(t, () => Sandbox.create({ metadata: { suite: 'e2b-typescript' } }));

test('create: a running sandbox whose getInfo has its id, template, metadata and state', async (t) => {
  const sb = await sandbox(t);
  assert.match(sb.sandboxId, /^\S+$/);
  assert.equal(await sb.isRunning(), true);
  const info = await sb.getInfo();
  assert.equal(info.sandboxId, sb.sandboxId);
  assert.deepEqual(info.metadata, { suite: 'e2b-typescript' });
  assert.equal(info.state, 'running');
  assert.ok(info.templateId.length > 0, 'a template id');
  assert.ok(info.cpuCount >= 1, `cpuCount ${info.cpuCount}`);
  assert.ok(info.memoryMB > 0, `memoryMB ${info.memoryMB}`);
  assert.ok(info.startedAt instanceof Date && info.endAt instanceof Date);
  assert.ok(info.startedAt.getTime() <= Date.now() + 1000, `startedAt ${info.startedAt.toISOString()}`);
  assert.ok(info.endAt > info.startedAt);
  const [major = 0, minor = 0, patch = 0] = info.envdVersion.split('.').map(Number);
  assert.ok(major * 1e6 + minor * 1e3 + patch >= 6004, `envdVersion ${info.envdVersion} is at least 0.6.4`);
  // The static form answers the same.
  assert.equal((await Sandbox.getInfo(sb.sandboxId)).sandboxId, sb.sandboxId);
});

test('list: metadata filter and paging by limit', async (t) => {
  const sb = await sandbox(t);
  const other = await forTest(t, () => Sandbox.create({ metadata: { suite: 'other' } }));
  const mine = await Sandbox.list({ query: { metadata: { suite: 'e2b-typescript' } } }).nextItems();
  assert.deepEqual(
    mine.map((s) => s.sandboxId),
    [sb.sandboxId],
  );
  const theirs = await Sandbox.list({ query: { metadata: { suite: 'other' } } }).nextItems();
  assert.deepEqual(
    theirs.map((s) => s.sandboxId),
    [other.sandboxId],
  );

  const pages = Sandbox.list({ limit: 1 });
  const first = await pages.nextItems();
  assert.equal(first.length, 1);
  assert.equal(pages.hasNext, true);
  assert.ok(pages.nextToken, 'a next token');
  const second = await pages.nextItems();
  assert.equal(second.length, 1);
  assert.notEqual(second[0]?.sandboxId, first[0]?.sandboxId);
  const all = new Set<string>();
  const walk = Sandbox.list({ limit: 1 });
  while (walk.hasNext) for (const s of await walk.nextItems()) all.add(s.sandboxId);
  assert.ok(all.has(sb.sandboxId) && all.has(other.sandboxId), `${[...all]}`);
  await assert.rejects(walk.nextItems(), /no more items/i);
});

test('setTimeout moves endAt to now + the timeout', async (t) => {
  const sb = await sandbox(t);
  await sb.setTimeout(120_000);
  const remaining = ((await sb.getInfo()).endAt.getTime() - Date.now()) / 1000;
  assert.ok(remaining >= 110 && remaining <= 121, `${remaining} s left`);
  await Sandbox.setTimeout(sb.sandboxId, 300_000);
  const later = ((await sb.getInfo()).endAt.getTime() - Date.now()) / 1000;
  assert.ok(later >= 290 && later <= 301, `${later} s left`);
});

test('getMetrics: real figures while a process runs', async (t) => {
  const sb = await sandbox(t);
  await sb.commands.run('sleep 30', { background: true });
  const metrics = await sb.getMetrics();
  assert.ok(metrics.length >= 1, 'one reading at least');
  const m = metrics[0]!;
  assert.ok(m.cpuCount >= 1, `cpuCount ${m.cpuCount}`);
  assert.ok(m.memTotal > 0, `memTotal ${m.memTotal}`);
  assert.ok(m.memUsed > 0, 'a running process has resident memory');
  assert.ok(m.diskTotal > 0, `diskTotal ${m.diskTotal}`);
  assert.ok(m.cpuUsedPct >= 0, `cpuUsedPct ${m.cpuUsedPct}`);
  assert.ok(m.timestamp instanceof Date && !Number.isNaN(m.timestamp.getTime()));
});

test('an E2B sandbox is an engine sandbox (`svc sandbox list`)', async (t) => {
  const sb = await sandbox(t);
  const listed = execFileSync(engine.bin, ['sandbox', 'list', '--json'], { env: engine.env, encoding: 'utf8' });
  const ids = (JSON.parse(listed) as { sandboxes: { sandbox_id: string }[] }).sandboxes.map((s) => s.sandbox_id);
  assert.ok(ids.includes(sb.sandboxId), `${sb.sandboxId} not in ${ids}`);
});

test('pause, then connect resumes it with its background process', async (t) => {
  const sb = await sandbox(t);
  const background = await sb.commands.run('sleep 1; echo survived', { background: true });
  assert.equal(await sb.pause(), true);
  assert.equal((await sb.getInfo()).state, 'paused');
  assert.equal(await Sandbox.pause(sb.sandboxId), false, 'already paused');
  const resumed = await Sandbox.connect(sb.sandboxId);
  assert.equal(resumed.sandboxId, sb.sandboxId);
  assert.equal((await resumed.getInfo()).state, 'running');
  const result = await (await resumed.commands.connect(background.pid)).wait();
  assert.equal(result.stdout, 'survived\n');
});

test('connect to a running sandbox: the same files and metadata', async (t) => {
  const sb = await sandbox(t);
  await sb.files.write('/home/user/marker', 'here');
  const again = await Sandbox.connect(sb.sandboxId);
  assert.equal(await again.files.read('/home/user/marker'), 'here');
  assert.deepEqual((await again.getInfo()).metadata, { suite: 'e2b-typescript' });
  const fromInstance = await sb.connect();
  assert.equal(fromInstance.sandboxId, sb.sandboxId);
});

test('kill ends the sandbox: not running, calls fail, getInfo is not found', async () => {
  const sb = await Sandbox.create();
  assert.equal(await sb.isRunning(), true);
  assert.equal(await sb.kill(), true);
  assert.equal(await sb.isRunning(), false);
  // The SDK's own words when envd answers `unavailable` for a sandbox that is gone.
  await rejects(sb.commands.run('true'), SandboxNotFoundError, /not running anymore/);
  await rejects(sb.files.read('/home/user/x'), SandboxError);
  await rejects(Sandbox.getInfo(sb.sandboxId), SandboxNotFoundError);
  assert.equal(await Sandbox.kill(sb.sandboxId), false, 'a second kill finds nothing');
  await rejects(Sandbox.connect(sb.sandboxId), SandboxNotFoundError);
});

test('cloud-only calls say so', async () => {
  await assert.rejects(
    Sandbox.create('base', { mcp: { exa: { apiKey: 'x' } } }),
    /not available in a local engine/,
  );
});
