// client.beta.agents.sessions: create, the sessions.stream(...) helper and its finalResult(), streamed create
// (`stream: true`) and its finalResult(), events, items (auto-paginated), list and delete, on both fake runtimes.

import assert from 'node:assert/strict';

import OpenAI from 'openai';
import type {
  AgentSession,
  AgentSessionEvent,
  AgentSessionItem,
} from 'openai/resources/beta/agents/agents';

import { assertFields, collect, rejects, RUNTIMES, type Runtime, waitFor } from './helpers.ts';
import { test, useServer } from './server.ts';

const server = useServer();

const SESSION_FIELDS = [
  'id', 'agent', 'created_at', 'environment', 'error', 'last_active_at', 'metadata', 'object', 'required_actions',
  'status', 'usage', 'vault_ids',
] as const;
const TURN_FIELDS = [
  'id', 'agent_id', 'completed_at', 'created_at', 'error', 'object', 'session_id', 'started_at', 'status',
  'subagent_id',
] as const;
const MISSING_SESSION = 'agsess_' + '0'.repeat(24);

function newSession(model: Runtime, extra: Partial<OpenAI.Beta.Agents.SessionCreateParamsNonStreaming> = {}) {
  return server.client.beta.agents.sessions.create({ environment: { type: 'none' }, agent: { model }, ...extra });
}

function textOf(item: AgentSessionItem): string {
  if (item.type !== 'message') return '';
  return item.content.map((part) => ('text' in part ? part.text : '')).join('');
}

for (const model of RUNTIMES) {
  test(`sessions: create, retrieve, update, delete (${model})`, async () => {
    const sessions = server.client.beta.agents.sessions;
    const created = await newSession(model, { metadata: { suite: 'typescript' } });
    assertFields(created, SESSION_FIELDS, 'AgentSession');
    assert.equal(created.object, 'agent.session');
    assert.match(created.id, /^agsess_/);
    assert.equal(created.status, 'idle');
    assert.equal(created.agent.model, model);
    assert.deepEqual(created.metadata, { suite: 'typescript' });

    const got = await sessions.retrieve(created.id);
    assert.deepEqual([got.id, got.agent.model, got.created_at], [created.id, model, created.created_at]);
    const updated = await sessions.update(created.id, { metadata: { k: 'v' } });
    assert.deepEqual(updated.metadata, { k: 'v' });

    const deleted = await sessions.delete(created.id);
    assert.deepEqual(
      { id: deleted.id, object: deleted.object, deleted: deleted.deleted },
      { id: created.id, object: 'agent.session.deleted', deleted: true },
    );
    await rejects(sessions.retrieve(created.id), OpenAI.NotFoundError, { code: 'resource_not_found' });
    await rejects(sessions.items.list(created.id), OpenAI.NotFoundError, { code: 'resource_not_found' });
    await rejects(sessions.delete(created.id), OpenAI.NotFoundError, { code: 'resource_not_found' });
  });

  test(`sessions: the sessions.stream helper, finalResult and a resumed turn (${model})`, async () => {
    const sessions = server.client.beta.agents.sessions;
    const session = await newSession(model);
    try {
      const first = await sessions.stream(session.id, { input: 'hi' }).finalResult();
      assert.equal(first.output_text, 'echo (turn 1): hi');
      assertFields(first.turn, TURN_FIELDS, 'Turn');
      assert.equal(first.turn.status, 'completed');
      assert.equal(first.session_id, session.id);
      assert.ok(first.messages.length > 0 && first.messages.every((m) => m.role === 'assistant'));

      // Iterating the helper (with result collection) shows the events; the last one is the session's idle.
      const stream = sessions.stream(session.id, { input: 'again' }).withResultCollection();
      const events: AgentSessionEvent[] = [];
      for await (const event of stream) events.push(event);
      const second = await stream.finalResult();
      assert.equal(second.output_text, 'echo (turn 2): again', 'the second turn resumes the runtime thread');
      assert.notEqual(second.turn_id, first.turn_id);
      const types = events.map((e) => e.type);
      assert.equal(types.at(-1), 'agent.session.idle', types.join(' '));
      const lifecycle = types.filter((t) =>
        ['agent.session.turn.created', 'agent.session.turn.in_progress', 'agent.session.turn.completed',
          'agent.session.idle'].includes(t),
      );
      assert.deepEqual(lifecycle, [
        'agent.session.turn.created', 'agent.session.turn.in_progress', 'agent.session.turn.completed',
        'agent.session.idle',
      ]);
      const after = await sessions.retrieve(session.id);
      assert.equal(after.status, 'idle');
      assert.equal(after.error, null);
    } finally {
      await sessions.delete(session.id);
    }
  });

  test(`sessions: streamed create (stream: true) and its finalResult (${model})`, async () => {
    const sessions = server.client.beta.agents.sessions;
    const stream = await sessions.create({
      environment: { type: 'none' },
      agent: { model },
      input: 'made while streaming',
      stream: true,
    });
    stream.withResultCollection();
    const events: AgentSessionEvent[] = [];
    for await (const event of stream) events.push(event);
    const result = await stream.finalResult();
    const types = events.map((e) => e.type);
    assert.equal(types[0], 'agent.session.created', types.join(' '));
    assert.equal(types.at(-1), 'agent.session.idle', types.join(' '));
    const created = events[0];
    assert.ok(created?.type === 'agent.session.created');
    assertFields(created.session, SESSION_FIELDS, 'AgentSessionCreatedEvent.session');
    assert.equal(result.output_text, 'echo (turn 1): made while streaming');
    assert.equal(result.turn.status, 'completed');
    assert.equal(result.session_id, created.session.id);
    assert.equal((await sessions.retrieve(result.session_id)).status, 'idle');

    // finalResult() alone drains the stream itself.
    const again = await sessions.create({ environment: { type: 'none' }, agent: { model }, input: 'hi', stream: true });
    assert.equal((await again.finalResult()).output_text, 'echo (turn 1): hi');
  });

  test(`sessions: items, auto-paginated, from a reasoning turn (${model})`, async () => {
    const sessions = server.client.beta.agents.sessions;
    const session = await newSession(model);
    try {
      await sessions.stream(session.id, { input: 'think [[scenario:reasoning]]' }).finalResult();
      const asc: AgentSessionItem[] = await collect(sessions.items.list(session.id, { order: 'asc', limit: 1 }));
      const types = asc.map((i) => i.type);
      assert.ok(types.includes('reasoning'), types.join(' '));
      const messages = asc.filter((i) => i.type === 'message');
      assert.deepEqual(
        messages.map((m) => [m.role, textOf(m)]),
        [
          ['user', 'think [[scenario:reasoning]]'],
          ['assistant', 'echo (turn 1): think [[scenario:reasoning]]'],
        ],
      );
      for (const m of messages) assertFields(m, ['id', 'content', 'role', 'status', 'turn_id', 'type'], 'message');
      assert.equal(messages[1]?.phase, 'final_answer');
      const reasoning = asc.find((i) => i.type === 'reasoning');
      assert.ok(reasoning?.type === 'reasoning');
      assertFields(reasoning, ['id', 'summary', 'status', 'turn_id', 'type'], 'reasoning item');
      assert.equal(reasoning.turn_id, messages[0]?.turn_id);
      const desc = await collect(sessions.items.list(session.id, { order: 'desc', limit: 2 }));
      assert.deepEqual(
        desc.map((i) => i.id),
        asc.map((i) => i.id).reverse(),
      );
    } finally {
      await sessions.delete(session.id);
    }
  });
}

test('sessions: events.stream sees a turn sent with events.create', async () => {
  const sessions = server.client.beta.agents.sessions;
  const session = await newSession('rt-one');
  try {
    const stream = await sessions.events.stream(session.id); // subscribed (headers are back), then send input
    await sessions.events.create(session.id, {
      events: [
        {
          type: 'agent.session.input.message',
          input: [{ role: 'user', content: [{ type: 'input_text', text: 'lifecycle please' }] }],
        },
      ],
    });
    const events: AgentSessionEvent[] = [];
    for await (const event of stream) {
      events.push(event);
      if (event.type === 'agent.session.idle') break; // closes the connection
    }
    const types = events.map((e) => e.type);
    assert.equal(types[0], 'agent.session.turn.created', types.join(' '));
    const done = events.find((e) => e.type === 'agent.session.turn.output_text.done');
    assert.ok(done?.type === 'agent.session.turn.output_text.done', types.join(' '));
    assert.equal(done.text, 'echo (turn 1): lifecycle please');
  } finally {
    await sessions.delete(session.id);
  }
});

test('sessions: list auto-paginates one per page, newest first', async () => {
  const sessions = server.client.beta.agents.sessions;
  const mine: string[] = [];
  for (let i = 0; i < 3; i++) mine.push((await newSession('rt-one')).id);
  try {
    const first = await sessions.list({ limit: 1 });
    assert.equal(first.data.length, 1);
    assert.equal(first.has_more, true);
    const listed: AgentSession[] = await collect(sessions.list({ limit: 1 }));
    const ids = listed.map((s) => s.id);
    assert.equal(new Set(ids).size, ids.length, `a session was listed twice: ${ids}`);
    for (const id of mine) assert.ok(ids.includes(id), `${id} not listed`);
    const stamps = listed.map((s) => s.created_at);
    assert.deepEqual(stamps, [...stamps].sort((a, b) => b - a));
    assert.deepEqual(
      (await collect(sessions.list({ limit: 2, order: 'asc' }))).map((s) => s.id),
      [...ids].reverse(),
    );
  } finally {
    for (const id of mine) await sessions.delete(id);
  }
});

test('sessions: a missing session is a typed 404', async () => {
  const err = await rejects(server.client.beta.agents.sessions.retrieve(MISSING_SESSION), OpenAI.NotFoundError, {
    code: 'resource_not_found',
    param: 'id',
  });
  assert.equal(err.status, 404);
  assert.equal(err.type, 'not_found_error');
  assert.equal(err.headers.get('x-svc-local'), '1');
});

// SERVER BUG (user message phase): items.list returns user messages without `phase`; the SDK's AgentSessionMessage
// declares `phase: 'commentary' | 'final_answer' | null` as always present ("Null for user messages").
test('sessions: user message items carry phase: null', async () => {
  const sessions = server.client.beta.agents.sessions;
  const session = await newSession('rt-one', { input: 'hi' });
  try {
    const items = await waitFor('the first turn to settle', async () => {
      const all = await collect(sessions.items.list(session.id, { order: 'asc' }));
      return all.some((i) => i.type === 'message' && i.role === 'assistant') ? all : undefined;
    });
    const user = items.find((i) => i.type === 'message' && i.role === 'user');
    assert.ok(user?.type === 'message');
    assertFields(user, ['id', 'content', 'phase', 'role', 'status', 'turn_id', 'type'], 'user message');
    assert.equal(user.phase, null);
  } finally {
    await sessions.delete(session.id);
  }
});
