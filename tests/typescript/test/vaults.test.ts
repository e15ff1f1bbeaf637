// client.beta.agents.vaults and their credentials, with the SDK's auto-pagination (`for await` over list pages).

import assert from 'node:assert/strict';

import OpenAI from 'openai';
import type { Vault } from 'openai/resources/beta/agents/vaults/vaults';
import type { Credential } from 'openai/resources/beta/agents/vaults/credentials';

import { assertFields, collect, rejects } from './helpers.ts';
import { test, useServer } from './server.ts';

const server = useServer();

const MCP_URL = 'https://mcp.example.com/mcp';
// One MCP server per credential: two credentials of a vault for the same server make a session's tool ambiguous.
const urlOf = (name: string) => (name === 'docs' ? MCP_URL : `https://${name}.example.com/mcp`);

test('vaults: create, retrieve, update, list (auto-paginated), delete', async () => {
  const vaults = server.client.beta.agents.vaults;
  const mine: Vault[] = [];
  for (const name of ['ts-a', 'ts-b', 'ts-c']) mine.push(await vaults.create({ name, metadata: { suite: 'ts' } }));
  const [a] = mine;
  assert.ok(a);
  assertFields(a, ['id', 'created_at', 'metadata', 'name'], 'Vault');
  assert.match(a.id, /^vault_/);
  assert.deepEqual(a.metadata, { suite: 'ts' });
  assert.equal((await vaults.retrieve(a.id)).name, 'ts-a');
  assert.equal((await vaults.update(a.id, { name: 'ts-renamed' })).name, 'ts-renamed');

  const first = await vaults.list({ limit: 1 });
  assert.equal(first.data.length, 1);
  assert.equal(first.has_more, true);
  const listed = (await collect(vaults.list({ limit: 1 }))).map((v) => v.id);
  assert.equal(new Set(listed).size, listed.length, `a vault was listed twice: ${listed}`);
  assert.deepEqual(
    listed.filter((id) => mine.some((v) => v.id === id)).sort(),
    mine.map((v) => v.id).sort(),
  );
  // Pages one by one, the SDK's way.
  let pages = 0;
  for await (const page of (await vaults.list({ limit: 2 })).iterPages()) {
    pages += 1;
    assert.ok(page.data.length <= 2);
  }
  assert.equal(pages, Math.ceil(listed.length / 2));

  const deleted = await vaults.delete(a.id);
  assert.equal(deleted.id, a.id);
  assert.equal(deleted.deleted, true);
  await rejects(vaults.retrieve(a.id), OpenAI.NotFoundError, { code: 'resource_not_found' });
});

// A deliberate deviation from the SDK's Vault type, which declares `object: "vault"`: the spec fixes a vault at
// exactly `id`, `name`, `metadata`, `created_at` (tests/python reads vaults leniently for the same reason). This test
// pins what the server promises, so a change either way is seen.
test('vaults: a vault has exactly the four fields of the spec', async () => {
  const vault = await server.client.beta.agents.vaults.create({ name: 'ts-object' });
  try {
    assert.deepEqual(Object.keys(vault).sort(), ['created_at', 'id', 'metadata', 'name']);
  } finally {
    await server.client.beta.agents.vaults.delete(vault.id);
  }
});

test('credentials: create (secret write-only), list (auto-paginated), retrieve, delete; used by a session', async () => {
  const client = server.client;
  const vaults = client.beta.agents.vaults;
  const vault = await vaults.create({ name: 'ts-creds' });
  const made: Credential[] = [];
  for (const name of ['docs', 'wiki', 'misc']) {
    made.push(
      await vaults.credentials.create(vault.id, {
        name,
        auth: { type: 'static_bearer', token: `ts-secret-${name}`, mcp_server_url: urlOf(name) },
      }),
    );
  }
  const [docs] = made;
  assert.ok(docs);
  assertFields(docs, ['id', 'auth', 'created_at', 'metadata', 'name', 'object', 'updated_at', 'vault_id'], 'Credential');
  assert.equal(docs.object, 'vault.credential');
  assert.equal(docs.vault_id, vault.id);
  assert.deepEqual(docs.auth, { type: 'static_bearer', mcp_server_url: MCP_URL });
  assert.ok(!JSON.stringify(made).includes('ts-secret'), 'a secret came back');

  const listed = await collect(vaults.credentials.list(vault.id, { limit: 1 }));
  assert.deepEqual(
    listed.map((c) => c.id).sort(),
    made.map((c) => c.id).sort(),
  );
  assert.ok(!JSON.stringify(listed).includes('ts-secret'));
  const got = await vaults.credentials.retrieve(docs.id, { vault_id: vault.id });
  assert.equal(got.name, 'docs');

  const tool = {
    type: 'mcp' as const,
    server_label: 'docs',
    transport: { type: 'http' as const, server_url: MCP_URL },
  };
  const session = await client.beta.agents.sessions.create({
    environment: { type: 'none' },
    agent: { model: 'rt-one', tools: [tool] },
    vault_ids: [vault.id],
  });
  assert.deepEqual(session.vault_ids, [vault.id]);

  for (const c of made) {
    const deleted = await vaults.credentials.delete(c.id, { vault_id: vault.id });
    assert.deepEqual([deleted.id, deleted.object, deleted.deleted], [c.id, 'vault.credential.deleted', true]);
  }
  assert.deepEqual(await collect(vaults.credentials.list(vault.id)), []);
  await rejects(
    client.beta.agents.sessions.events.create(session.id, {
      events: [
        {
          type: 'agent.session.input.message',
          input: [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }],
        },
      ],
    }),
    OpenAI.BadRequestError,
    { code: 'agents.credential_unavailable' },
  );
});

test('credentials: refusals name the param', async () => {
  const vaults = server.client.beta.agents.vaults;
  const vault = await vaults.create({ name: 'ts-refusals' });
  const err = await rejects(
    vaults.credentials.create(vault.id, {
      name: 'plain',
      auth: { type: 'static_bearer', token: 't', mcp_server_url: 'http://mcp.example.com/mcp' },
    }),
    OpenAI.BadRequestError,
  );
  assert.match(err.param ?? '', /mcp_server_url/);
});
