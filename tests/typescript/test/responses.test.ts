// client.responses: sync create, the responses.stream helper, background + retrieve + cancel, continuation with
// previous_response_id, input items.

import assert from 'node:assert/strict';

import OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';

import { collect, rejects, RUNTIMES, waitFor } from './helpers.ts';
import { test, useServer } from './server.ts';

const server = useServer();

for (const model of RUNTIMES) {
  test(`responses: create and continue (${model})`, async () => {
    const client = server.client;
    const first = await client.responses.create({
      model,
      input: 'hello [[scenario:reasoning]]',
      instructions: 'be brief',
    });
    assert.equal(first.object, 'response');
    assert.equal(first.status, 'completed');
    assert.equal(first.output_text, 'echo (turn 1): hello [[scenario:reasoning]]');
    assert.ok(first.usage && first.usage.total_tokens > 0);
    assert.deepEqual(
      first.output.map((o) => o.type),
      ['reasoning', 'message'],
    );

    const second = await client.responses.create({ model, input: 'again', previous_response_id: first.id });
    assert.equal(second.output_text, 'echo (turn 2): again'); // the runtime's own thread
    assert.equal(second.previous_response_id, first.id);
    await rejects(
      client.responses.create({ model, input: 'x', previous_response_id: first.id }),
      OpenAI.BadRequestError,
      { code: 'agents.previous_response_not_latest' },
    );
  });

  test(`responses: the responses.stream helper and a replay (${model})`, async () => {
    const client = server.client;
    const stream = client.responses.stream({ model, input: 'streamed [[scenario:stream:10]]' });
    const types: string[] = [];
    let deltas = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') deltas += event.delta;
    }
    const final = await stream.finalResponse();
    assert.equal(types[0], 'response.created');
    assert.equal(types.at(-1), 'response.completed');
    assert.ok(types.includes('response.output_text.delta'), types.join(' '));
    assert.equal(final.output_text, 'echo (turn 1): streamed [[scenario:stream:10]]');
    assert.equal(deltas, final.output_text);

    const replay: ResponseStreamEvent[] = await collect(
      await client.responses.retrieve(final.id, { stream: true, starting_after: 2 }),
    );
    assert.ok(replay.length > 0);
    assert.deepEqual(
      replay.map((e) => e.sequence_number),
      replay.map((_, i) => 3 + i),
    );
    assert.equal(replay.at(-1)?.type, 'response.completed');
  });

  test(`responses: background, retrieve and cancel (${model})`, async () => {
    const client = server.client;
    const running = await client.responses.create({ model, input: 'wait [[scenario:hang]]', background: true });
    assert.ok(['queued', 'in_progress'].includes(running.status ?? ''), String(running.status));
    const cancelled = await client.responses.cancel(running.id);
    assert.equal(cancelled.status, 'cancelled');
    assert.equal((await client.responses.retrieve(running.id)).status, 'cancelled');
    await rejects(client.responses.cancel(running.id), OpenAI.BadRequestError, { code: 'agents.not_cancellable' });

    const later = await client.responses.create({ model, input: 'later', background: true });
    const done = await waitFor('the background response to complete', async () => {
      const r = await client.responses.retrieve(later.id);
      return r.status === 'completed' ? r : undefined;
    });
    assert.equal(done.output_text, 'echo (turn 1): later');
  });
}

test('responses: input items (auto-paginated) and delete', async () => {
  const client = server.client;
  const response = await client.responses.create({
    model: 'rt-one',
    input: [
      { role: 'developer', content: 'answer tersely' },
      { role: 'user', content: [{ type: 'input_text', text: 'hi' }] },
    ],
  });
  assert.equal(response.output_text, 'echo (turn 1): hi');
  const items = await collect(client.responses.inputItems.list(response.id, { order: 'asc', limit: 1 }));
  const pairs = items.map((item) => {
    assert.equal(item.type, 'message');
    if (item.type !== 'message' || !('role' in item)) throw new Error(`not a message: ${JSON.stringify(item)}`);
    const part = item.content[0];
    return [item.role, part?.type === 'input_text' ? part.text : JSON.stringify(part)];
  });
  assert.deepEqual(pairs, [
    ['developer', 'answer tersely'],
    ['user', 'hi'],
  ]);

  await client.responses.delete(response.id); // typed `void` by the SDK
  await rejects(client.responses.retrieve(response.id), OpenAI.NotFoundError);
});

test('responses: refusals name the param', async () => {
  const client = server.client;
  await rejects(
    client.responses.create({ model: 'rt-one', input: 'x', tools: [{ type: 'web_search' }] }),
    OpenAI.BadRequestError,
    { param: 'tools[0].type' },
  );
  await rejects(
    client.responses.create({ model: 'rt-one', input: 'x', store: false, background: true }),
    OpenAI.BadRequestError,
    { param: 'store' },
  );
});
