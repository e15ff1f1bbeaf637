// client.webhooks: endpoint lifecycle and refusals, and real deliveries to a local HTTP receiver verified twice: by an
// independent Standard Webhooks HMAC check (node:crypto) and by the SDK's own `client.webhooks.unwrap`.
//
// Deliveries need a server that may post to a loopback receiver over http, so those tests use a second server with
// SVC_AGENTS_WEBHOOK_ALLOW_HTTP=1 and SVC_AGENTS_ALLOW_PRIVATE_URLS=1 (local development switches) and 50 ms retries.

import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after } from 'node:test';

import OpenAI, { InvalidWebhookSignatureError } from 'openai';
import type { UnwrapWebhookEvent } from 'openai/resources/webhooks/webhooks';

import { assertFields, collect, rejects, sleep } from './helpers.ts';
import { test, useServer } from './server.ts';

const server = useServer();
const hooks = useServer({
  SVC_AGENTS_WEBHOOK_ALLOW_HTTP: '1',
  SVC_AGENTS_ALLOW_PRIVATE_URLS: '1',
  SVC_AGENTS_WEBHOOK_RETRY_BASE_MS: '50',
});

const SESSION_TYPES = [
  'agent.session.created',
  'agent.session.in_progress',
  'agent.session.idle',
  'agent.session.failed',
] as const;
const ARRIVAL_TIMEOUT_MS = 30_000;

interface Delivery {
  headers: Record<string, string>;
  body: string;
}

/** A local HTTP receiver that records every POST and answers the given statuses in turn (then 200). */
class Receiver {
  readonly deliveries: Delivery[] = [];
  url = '';
  readonly #statuses: number[];
  readonly #server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      this.deliveries.push({ headers: flat(req.headers), body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(this.#statuses.shift() ?? 200, { 'content-length': '0' }).end();
    });
  });

  constructor(statuses: number[] = []) {
    this.#statuses = [...statuses];
  }

  async start(): Promise<this> {
    await new Promise<void>((res) => this.#server.listen(0, '127.0.0.1', res));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/hook`;
    return this;
  }

  async wait(n: number): Promise<Delivery[]> {
    const deadline = Date.now() + ARRIVAL_TIMEOUT_MS;
    while (this.deliveries.length < n) {
      assert.ok(Date.now() < deadline, `${n} deliveries expected in ${ARRIVAL_TIMEOUT_MS} ms, got ${this.deliveries.length}`);
      await sleep(50);
    }
    return [...this.deliveries];
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((res) => this.#server.close(() => res()));
  }
}

const receivers: Receiver[] = [];
after(async () => {
  for (const r of receivers) await r.close();
});

async function receiver(statuses: number[] = []): Promise<Receiver> {
  const r = await new Receiver(statuses).start();
  receivers.push(r);
  return r;
}

function flat(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

/** The Standard Webhooks check, written independently of the SDK: HMAC-SHA256 of `id.timestamp.body`. */
function standardVerify(secret: string, { headers, body }: Delivery): void {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  assert.ok(id && timestamp && signatures, `missing webhook headers: ${JSON.stringify(headers)}`);
  assert.ok(Math.abs(Date.now() / 1000 - Number(timestamp)) < 300, `stale timestamp ${timestamp}`);
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  const ok = signatures.split(' ').some((sig) => {
    const [version, value] = sig.split(',');
    if (version !== 'v1' || !value) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  assert.ok(ok, `no v1 signature matches: ${signatures}`);
}

/** Both verifiers accept the delivery; returns the SDK's event. */
async function verified(client: OpenAI, secret: string, delivery: Delivery): Promise<UnwrapWebhookEvent> {
  standardVerify(secret, delivery);
  const event = await client.webhooks.unwrap(delivery.body, delivery.headers, secret);
  assertFields(event, ['id', 'created_at', 'data', 'object', 'type'], 'webhook event');
  assert.equal(event.object, 'event');
  return event;
}

test('webhooks: endpoint create, retrieve, list, update, rotateSecret, eventTypes, delete', async () => {
  const webhooks = server.client.webhooks;
  const created = await webhooks.create({
    url: 'https://hooks.example.com/ts',
    event_types: ['agent.session.idle'],
    name: 'ts',
  });
  assertFields(created, ['id', 'created_at', 'event_types', 'name', 'object', 'signing_secret'], 'WebhookEndpointWithSecret');
  assert.equal(created.object, 'webhook_endpoint');
  const secret = created.signing_secret;
  assert.match(secret, /^whsec_/);

  const fetched = await webhooks.retrieve(created.id);
  assert.equal(fetched.url, 'https://hooks.example.com/ts');
  assert.ok(!JSON.stringify(fetched).includes(secret.slice(6)), 'the secret came back on retrieve');
  const listed = await collect(webhooks.list());
  assert.ok(listed.some((e) => e.id === created.id));
  assert.ok(!JSON.stringify(listed).includes(secret.slice(6)), 'the secret came back in the list');

  const updated = await webhooks.update(created.id, {
    name: 'ts2',
    event_types: ['agent.session.created', 'agent.session.failed'],
  });
  assert.equal(updated.name, 'ts2');
  assert.deepEqual(updated.event_types, ['agent.session.created', 'agent.session.failed']);
  assert.equal(updated.url, 'https://hooks.example.com/ts');

  const rotated = await webhooks.rotateSecret(created.id);
  assert.match(rotated.signing_secret, /^whsec_/);
  assert.notEqual(rotated.signing_secret, secret);
  await rejects(
    webhooks.rotateSecret(created.id, { keep_old_secret_active_for_24_hours: true }),
    OpenAI.BadRequestError,
    { param: 'keep_old_secret_active_for_24_hours' },
  );

  const types = await webhooks.eventTypes.list();
  assert.equal(types.object, 'list');
  assert.deepEqual(types.data, SESSION_TYPES);

  const deleted = await webhooks.delete(created.id);
  assert.deepEqual([deleted.id, deleted.deleted], [created.id, true]);
  await rejects(webhooks.retrieve(created.id), OpenAI.NotFoundError, { code: 'resource_not_found' });
});

test('webhooks: refusals name the param', async () => {
  const webhooks = server.client.webhooks;
  await rejects(
    webhooks.create({ url: 'https://hooks.example.com/ts', event_types: ['agent.session.action_required'], name: 'x' }),
    OpenAI.BadRequestError,
    { param: 'event_types' },
  );
  for (const url of ['http://hooks.example.com/ts', 'https://127.0.0.1/ts', 'https://hooks.example.com/ts?a=1']) {
    await rejects(webhooks.create({ url, event_types: ['agent.session.idle'], name: 'x' }), OpenAI.BadRequestError, {
      param: 'url',
    });
  }
});

test('webhooks: test deliveries verify with both checks; a rotated secret replaces the old one', async () => {
  const client = hooks.client;
  const r = await receiver();
  const created = await client.webhooks.create({ url: r.url, event_types: ['agent.session.idle'], name: 'ts' });
  try {
    const result = await client.webhooks.test(created.id, { event_type: 'agent.session.failed' });
    assert.equal(result.object, 'webhook_endpoint.test');
    assert.equal(result.status_code, 200);
    assert.equal(result.success, true);
    assert.equal(result.webhook_endpoint_id, created.id);
    const [first] = await r.wait(1);
    assert.ok(first);
    assert.equal((await verified(client, created.signing_secret, first)).type, 'agent.session.failed');

    const rotated = await client.webhooks.rotateSecret(created.id);
    await client.webhooks.test(created.id, { event_type: 'agent.session.idle' });
    const second = (await r.wait(2))[1];
    assert.ok(second);
    assert.equal((await verified(client, rotated.signing_secret, second)).type, 'agent.session.idle');
    await assert.rejects(
      client.webhooks.unwrap(second.body, second.headers, created.signing_secret),
      InvalidWebhookSignatureError,
    );
    assert.throws(() => standardVerify(created.signing_secret, second), /no v1 signature matches/);
  } finally {
    await client.webhooks.delete(created.id);
  }
});

test('webhooks: a session\'s created, in_progress and idle are delivered in order', async () => {
  const client = hooks.client;
  const r = await receiver();
  const created = await client.webhooks.create({ url: r.url, event_types: [...SESSION_TYPES], name: 'ts' });
  try {
    const session = await client.beta.agents.sessions.create({
      environment: { type: 'none' },
      agent: { model: 'rt-two' },
      input: 'hello webhooks',
    });
    const events: UnwrapWebhookEvent[] = [];
    for (const d of await r.wait(3)) events.push(await verified(client, created.signing_secret, d));
    assert.deepEqual(
      events.map((e) => e.type),
      ['agent.session.created', 'agent.session.in_progress', 'agent.session.idle'],
    );
    for (const e of events) {
      assert.ok(
        e.type === 'agent.session.created' || e.type === 'agent.session.in_progress' || e.type === 'agent.session.idle',
      );
      assert.equal(e.data.id, session.id);
    }
    assert.equal(new Set(events.map((e) => e.id)).size, 3);
  } finally {
    await client.webhooks.delete(created.id);
  }
});

test('webhooks: a failed delivery is retried under the same webhook-id', async () => {
  const client = hooks.client;
  const r = await receiver([500]);
  const created = await client.webhooks.create({ url: r.url, event_types: ['agent.session.created'], name: 'ts' });
  try {
    const session = await client.beta.agents.sessions.create({ environment: { type: 'none' }, agent: { model: 'rt-one' } });
    const [first, second] = await r.wait(2);
    assert.ok(first && second);
    assert.equal(first.headers['webhook-id'], second.headers['webhook-id']);
    const event = await verified(client, created.signing_secret, second);
    assert.ok(event.type === 'agent.session.created', event.type);
    assert.equal(event.data.id, session.id);
  } finally {
    await client.webhooks.delete(created.id);
  }
});
