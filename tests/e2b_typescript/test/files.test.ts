// sandbox.files through the unchanged npm `e2b` SDK: write (text, bytes, several, multipart and octet-stream, over
// 2 MiB), read (text, bytes, blob, stream), list (depth), getInfo, exists, makeDir, rename, remove, watchDir.

import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';

import { FileNotFoundError, FileType, FilesystemEventType, Sandbox, type FilesystemEvent } from 'e2b';

import { useEngine, test } from './engine.ts';
import { forTest, rejects, waitFor } from './helpers.ts';

useEngine();
const sandbox = (t: TestContext) => forTest(t, () => Sandbox.create());

/** Bytes as an ArrayBuffer of exactly their length (what `files.write` takes for binary data). */
const buffer = (bytes: Uint8Array): ArrayBuffer => bytes.slice().buffer;

test('files: write, read, list, getInfo, exists, makeDir, rename, remove', async (t) => {
  const sb = await sandbox(t);
  const info = await sb.files.write('/home/user/dir/a.txt', 'data!');
  assert.equal(info.path, '/home/user/dir/a.txt');
  assert.equal(info.name, 'a.txt');
  assert.equal(info.type, FileType.FILE);
  assert.equal(await sb.files.read('/home/user/dir/a.txt'), 'data!');
  assert.equal(await sb.files.read('dir/a.txt'), 'data!', 'a relative path starts at the home folder');

  const binary = new Uint8Array(2000).map((_, i) => (i % 2 === 0 ? 0x00 : 0xff));
  await sb.files.write('/home/user/dir/b.bin', buffer(binary));
  assert.deepEqual(await sb.files.read('/home/user/dir/b.bin', { format: 'bytes' }), binary);
  const blob = await sb.files.read('/home/user/dir/b.bin', { format: 'blob' });
  assert.deepEqual(new Uint8Array(await blob.arrayBuffer()), binary);

  const written = await sb.files.write([
    { path: '/home/user/m1', data: '1' },
    { path: '/home/user/m2', data: new Blob(['2']) },
  ]);
  assert.deepEqual(
    written.map((w) => w.path),
    ['/home/user/m1', '/home/user/m2'],
  );
  assert.equal(await sb.files.read('/home/user/m2'), '2');
  const again = await sb.files.writeFiles([{ path: '/home/user/m3', data: '3' }]);
  assert.deepEqual(
    again.map((w) => w.path),
    ['/home/user/m3'],
  );

  const listed = await sb.files.list('/home/user/dir');
  assert.deepEqual(listed.map((e) => e.name).sort(), ['a.txt', 'b.bin']);
  const a = listed.find((e) => e.name === 'a.txt');
  assert.equal(a?.path, '/home/user/dir/a.txt');
  assert.equal(a?.type, FileType.FILE);
  assert.equal(a?.size, 5);
  const shallow = new Set((await sb.files.list('/home/user')).map((e) => e.path));
  assert.ok(shallow.has('/home/user/dir') && !shallow.has('/home/user/dir/a.txt'), [...shallow].join());
  const deep = new Set((await sb.files.list('/home/user', { depth: 2 })).map((e) => e.path));
  assert.ok(deep.has('/home/user/dir/a.txt'), [...deep].join());

  const stat = await sb.files.getInfo('/home/user/dir/b.bin');
  assert.equal(stat.size, 2000);
  assert.equal(stat.type, FileType.FILE);
  assert.match(stat.permissions, /^-rw/);
  assert.equal(stat.mode & 0o777, 0o644);
  assert.ok(stat.modifiedTime instanceof Date && Math.abs(stat.modifiedTime.getTime() - Date.now()) < 60_000);

  assert.equal(await sb.files.exists('/home/user/dir/a.txt'), true);
  assert.equal(await sb.files.exists('/home/user/nope'), false);
  assert.equal(await sb.files.makeDir('/home/user/new/deep'), true);
  assert.equal(await sb.files.makeDir('/home/user/new/deep'), false, 'it exists already');
  const dir = await sb.files.getInfo('/home/user/new/deep');
  assert.equal(dir.type, FileType.DIR);
  assert.match(dir.permissions, /^d/);

  const moved = await sb.files.rename('/home/user/dir/a.txt', '/home/user/dir/c.txt');
  assert.equal(moved.name, 'c.txt');
  assert.equal(moved.path, '/home/user/dir/c.txt');
  assert.equal(await sb.files.read('/home/user/dir/c.txt'), 'data!');
  assert.equal(await sb.files.exists('/home/user/dir/a.txt'), false);
  await sb.files.remove('/home/user/dir/c.txt');
  assert.equal(await sb.files.exists('/home/user/dir/c.txt'), false);
  await sb.files.remove('/home/user/new');
  assert.equal(await sb.files.exists('/home/user/new/deep'), false, 'a folder goes with its contents');

  await rejects(sb.files.read('/home/user/missing.txt'), FileNotFoundError);
  await rejects(sb.files.getInfo('/home/user/missing.txt'), FileNotFoundError);
  await rejects(sb.files.list('/home/user/missing'), FileNotFoundError);
});

test('files: a command sees what files wrote, files see what a command wrote, symlinks', async (t) => {
  const sb = await sandbox(t);
  await sb.files.write('/tmp/from-sdk.txt', 'sdk\n');
  assert.equal((await sb.commands.run('cat /tmp/from-sdk.txt; stat -c %U /tmp/from-sdk.txt')).stdout, 'sdk\nuser\n');
  await sb.commands.run('printf shell > /home/user/from-shell.txt; ln -s from-shell.txt /home/user/link');
  assert.equal(await sb.files.read('/home/user/from-shell.txt'), 'shell');
  const link = await sb.files.getInfo('/home/user/link');
  assert.equal(link.type, FileType.SYMLINK);
  assert.equal(link.symlinkTarget, 'from-shell.txt');
  assert.equal(await sb.files.read('/home/user/link'), 'shell');
});

test('files: over 2 MiB both ways, multipart and octet-stream, read as bytes and as a stream', async (t) => {
  const sb = await sandbox(t);
  const text = '0123456789abcdef'.repeat(384 * 1024); // 6 MiB
  await sb.files.write('/home/user/big.txt', text);
  assert.equal((await sb.files.getInfo('/home/user/big.txt')).size, text.length);
  assert.equal(await sb.files.read('/home/user/big.txt'), text);

  const blob = new Uint8Array(256 * 32 * 1024).map((_, i) => i % 256); // 8 MiB
  await sb.files.write('/home/user/big.bin', buffer(blob), { useOctetStream: true });
  assert.deepEqual(await sb.files.read('/home/user/big.bin', { format: 'bytes' }), blob);

  const streamed = new Blob([blob]).stream(); // a ReadableStream goes as octet-stream, unbuffered
  await sb.files.write('/home/user/streamed.bin', streamed);
  const back = await sb.files.read('/home/user/streamed.bin', { format: 'stream' });
  assert.deepEqual(new Uint8Array(await new Response(back).arrayBuffer()), blob);
  assert.equal((await sb.commands.run('sha256sum big.bin streamed.bin | cut -c1-64 | uniq | wc -l')).stdout, '1\n');
});

test('files: watchDir streams create, write, rename and remove events', async (t) => {
  const sb = await sandbox(t);
  await sb.files.makeDir('/home/user/watched/sub');
  const seen: FilesystemEvent[] = [];
  const handle = await sb.files.watchDir('/home/user/watched', (event) => {
    seen.push(event);
  });
  try {
    await sb.files.write('/home/user/watched/new.txt', 'x');
    await sb.files.rename('/home/user/watched/new.txt', '/home/user/watched/moved.txt');
    await sb.files.remove('/home/user/watched/moved.txt');
    await sb.files.write('/home/user/watched/sub/deeper.txt', 'x');
    await waitFor('the remove event', async () =>
      seen.some((e) => e.name === 'moved.txt' && e.type === FilesystemEventType.REMOVE) ? true : undefined,
    );
  } finally {
    await handle.stop();
  }
  const kinds = (name: string) => seen.filter((e) => e.name === name).map((e) => e.type);
  assert.ok(kinds('new.txt').includes(FilesystemEventType.CREATE), JSON.stringify(seen));
  assert.ok(kinds('moved.txt').includes(FilesystemEventType.RENAME), JSON.stringify(seen));
  assert.ok(!seen.some((e) => e.name.includes('deeper')), 'not recursive unless asked');
  const created = seen.filter((e) => e.type === FilesystemEventType.CREATE).map((e) => e.name);
  assert.deepEqual(created, ['new.txt']);

  // After stop, no more events.
  const count = seen.length;
  await sb.files.write('/home/user/watched/late.txt', 'x');
  await new Promise((res) => setTimeout(res, 300));
  assert.equal(seen.length, count);
});

test('files: watchDir recursive, with the entry of each event', async (t) => {
  const sb = await sandbox(t);
  await sb.files.makeDir('/home/user/tree/sub');
  const seen: FilesystemEvent[] = [];
  const handle = await sb.files.watchDir(
    '/home/user/tree',
    (event) => {
      seen.push(event);
    },
    { recursive: true, includeEntry: true },
  );
  try {
    await sb.files.write('/home/user/tree/sub/leaf.txt', 'leaf');
    await waitFor('the nested create', async () =>
      seen.some((e) => e.name === 'sub/leaf.txt' && e.type === FilesystemEventType.CREATE) ? true : undefined,
    );
  } finally {
    await handle.stop();
  }
  const created = seen.find((e) => e.type === FilesystemEventType.CREATE);
  assert.equal(created?.entry?.path, '/home/user/tree/sub/leaf.txt');
  assert.equal(created?.entry?.type, FileType.FILE);
  assert.equal(created?.entry?.owner, 'user', 'a watch event names the owner as getInfo does');
});

test(
  'files: metadata written with a file comes back from write and getInfo',
  async (t) => {
    const sb = await sandbox(t);
    const info = await sb.files.write('/home/user/tagged.txt', 'x', { metadata: { owner: 'me' } });
    assert.deepEqual(info.metadata, { owner: 'me' });
    assert.deepEqual((await sb.files.getInfo('/home/user/tagged.txt')).metadata, { owner: 'me' });
  },
);

test(
  "files: getInfo names the file's owner and group",
  async (t) => {
    const sb = await sandbox(t);
    await sb.files.write('/home/user/mine.txt', 'x');
    const info = await sb.files.getInfo('/home/user/mine.txt');
    assert.equal(info.owner, 'user');
    assert.equal(info.group, 'user');
  },
);

test(
  'files: a gzip-compressed upload',
  async (t) => {
    const sb = await sandbox(t);
    await sb.files.write('/home/user/zipped.txt', 'compressed on the way', { gzip: true });
    // The front never compresses a read (it answers the bytes as they are, which the SDK takes too): the read with
    // `gzip` only shows the upload arrived whole.
    assert.equal(await sb.files.read('/home/user/zipped.txt', { gzip: true }), 'compressed on the way');
  },
);
