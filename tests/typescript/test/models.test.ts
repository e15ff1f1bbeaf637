// client.models against the agents group's runtimes and saved definitions.

import assert from 'node:assert/strict';

import OpenAI from 'openai';
import type { Model } from 'openai/resources/models';

import { collect, rejects } from './helpers.ts';
import { test, useServer } from './server.ts';

const server = useServer();

test('models: list (auto-paginated) and retrieve runtimes and definitions', async () => {
  const client = server.client;
  const definition = await client.beta.agents.create({ model: 'rt-one' });
  const models: Model[] = await collect(client.models.list());
  const ids = models.map((m) => m.id);
  for (const id of ['rt-one', 'rt-two', definition.id]) assert.ok(ids.includes(id), `${id} not in ${ids}`);
  assert.ok(models.every((m) => m.object === 'model' && typeof m.created === 'number'));

  const model = await client.models.retrieve('rt-two');
  assert.equal(model.id, 'rt-two');
  assert.equal(model.object, 'model');
  assert.equal(model.owned_by, 'svc-local');
  assert.equal((await client.models.retrieve(definition.id)).id, definition.id);

  const missing = await rejects(client.models.retrieve('no-such-model'), OpenAI.NotFoundError, {
    code: 'model_not_found',
  });
  assert.equal(missing.status, 404);
});
