// client.beta.agents.environments: environments, their files (token pagination) and templates.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import OpenAI from 'openai';

import { assertFields, b64, collect, rejects } from './helpers.ts';
import { test, useServer } from './server.ts';

const server = useServer();

test('environments: create, retrieve, list, and files written and listed page by page', async () => {
  const envs = server.client.beta.agents.environments;
  const created = await envs.create({ environment: { type: 'openai_hosted' } });
  assertFields(created, ['id', 'files', 'object', 'plugins', 'skills', 'status', 'type'], 'EnvironmentInfo');
  assert.equal(created.object, 'agent.environment');
  assert.equal(created.type, 'self_hosted');
  assert.equal(created.status, 'ready');
  assert.match(created.id, /^env_/);
  assert.equal((await envs.retrieve(created.id)).id, created.id);
  assert.ok((await collect(envs.list({ limit: 1 }))).some((e) => e.id === created.id));

  const written = await envs.files.create(created.id, {
    type: 'inline',
    path: '/workspace/ts/a.txt',
    data: b64('alpha'),
  });
  assertFields(written, ['environment_id', 'object', 'path', 'size_bytes'], 'EnvironmentFile');
  assert.equal(written.size_bytes, 5);
  assert.equal(written.environment_id, created.id);
  assert.match(written.path, /\/ts\/a\.txt$/);
  for (const name of ['b.txt', 'c.txt', 'd.txt']) {
    await envs.files.create(created.id, { type: 'inline', path: `ts/${name}`, data: b64(name) });
  }
  // TokenPage follows `next` on its own.
  const files = await collect(envs.files.list(created.id, { limit: 2, order: 'asc', path: '/workspace/ts' }));
  assert.deepEqual(
    files.map((f) => f.path.split('/').at(-1)),
    ['a.txt', 'b.txt', 'c.txt', 'd.txt'],
  );

  await rejects(
    envs.files.create(created.id, { type: 'inline', path: 'AGENTS.md', data: b64('x') }),
    OpenAI.BadRequestError,
    { code: 'agents.path_refused' },
  );
  await rejects(
    envs.files.create(created.id, { type: 'inline', path: 'ts/a.txt', data: b64('changed') }),
    OpenAI.BadRequestError,
    { code: 'agents.file_exists' },
  );
  await rejects(
    envs.create({ environment: { type: 'openai_hosted', network: { access: 'enabled' } } }),
    OpenAI.BadRequestError,
    { code: 'invalid_request' },
  );
});

test('templates: create, retrieve, update, list (auto-paginated), a session from one, delete', async () => {
  const client = server.client;
  const templates = client.beta.agents.environments.templates;
  const t = await templates.create({
    name: 'ts',
    env: { TS_MODE: 'strict' },
    files: [{ type: 'inline', path: '/workspace/seed.txt', data: b64('seed') }],
  });
  assertFields(t, ['id', 'capability_directories', 'created_at', 'files', 'name', 'network', 'object', 'packages',
    'plugins', 'skills'], 'EnvironmentTemplate');
  assert.equal(t.object, 'agent.environment.template');
  assert.equal(t.files.length, 1);
  const [file] = t.files;
  assert.ok(file?.type === 'inline');
  assert.equal(file.size_bytes, 4);
  assert.ok(!JSON.stringify(t).includes('strict'), 'an env value came back');
  assert.equal((await templates.retrieve(t.id)).name, 'ts');
  const other = await templates.create({ name: 'ts-other' });
  const listed = (await collect(templates.list({ limit: 1 }))).map((x) => x.id);
  assert.ok(listed.includes(t.id) && listed.includes(other.id), String(listed));
  assert.equal(new Set(listed).size, listed.length);

  const updated = await templates.update(t.id, { name: 'renamed' });
  assert.equal(updated.name, 'renamed');
  assert.equal(updated.files.length, 1);

  // The SDK types `environment_template_id` only inside an `openai_hosted` environment, which the server refuses
  // with configuration (see the todo test below); the top-level field is sent as an untyped extra body field, like
  // tests/python does with `extra_body`.
  const body = { environment: { type: 'none' }, agent: { model: 'rt-one' }, environment_template_id: t.id } as const;
  const session = await client.beta.agents.sessions.create(body);
  assert.match(session.id, /^agsess_/);
  assert.equal(readFileSync(join(server.workspace, 'seed.txt'), 'utf8'), 'seed', 'the template file was not written');
  const result = await client.beta.agents.sessions.stream(session.id, { input: 'hi' }).finalResult();
  assert.equal(result.output_text, 'echo (turn 1): hi');

  const deleted = await templates.delete(t.id);
  assert.deepEqual([deleted.id, deleted.object, deleted.deleted], [t.id, 'agent.environment.template.deleted', true]);
  await rejects(templates.retrieve(t.id), OpenAI.NotFoundError, { code: 'resource_not_found' });
  await templates.delete(other.id);
});

// The SDK's only typed place for a template on a session is `environment: {type: 'openai_hosted',
// environment_template_id}`; an `openai_hosted` environment cannot run locally, so the server refuses it with a typed
// 400 naming `environment.type` and saying what to send instead (the test above sends the template as the top-level
// `environment_template_id`, which the server documents). This pins that answer.
test('templates: an openai_hosted environment with a template is a typed refusal pointing to self_hosted', async () => {
  const client = server.client;
  const t = await client.beta.agents.environments.templates.create({ name: 'ts-typed' });
  try {
    await rejects(
      client.beta.agents.sessions.create({
        environment: { type: 'openai_hosted', environment_template_id: t.id },
        agent: { model: 'rt-one' },
      }),
      OpenAI.BadRequestError,
      { code: 'invalid_request', param: 'environment.type' },
    );
  } finally {
    await client.beta.agents.environments.templates.delete(t.id);
  }
});
