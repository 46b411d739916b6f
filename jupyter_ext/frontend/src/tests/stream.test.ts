/** EventStream's reconnects, with a fake socket and a manual clock. */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { NiniEvent } from '../api';
import { EventStream, Scheduler, SocketLike } from '../stream';

class FakeSocket implements SocketLike {
  onopen: ((event: unknown) => void) | null = null;
  onmessage: ((event: { data: unknown }) => void) | null = null;
  onclose: ((event: unknown) => void) | null = null;
  onerror: ((event: unknown) => void) | null = null;
  closed = false;
  constructor(readonly url: string) {}
  open(): void {
    this.onopen?.({});
  }
  send(seq: number, type = 'tool_call'): void {
    this.onmessage?.({
      data: JSON.stringify({
        seq,
        type,
        turn_id: 't',
        tool_call_id: null,
        data: {}
      })
    });
  }
  drop(): void {
    this.onerror?.({});
    this.onclose?.({});
  }
  close(): void {
    this.closed = true;
  }
}

class ManualClock implements Scheduler {
  pending: { callback: () => void; ms: number }[] = [];
  set(callback: () => void, ms: number): unknown {
    const entry = { callback, ms };
    this.pending.push(entry);
    return entry;
  }
  clear(handle: unknown): void {
    this.pending = this.pending.filter(entry => entry !== handle);
  }
  fire(): number {
    const entry = this.pending.shift();
    assert.ok(entry, 'nothing scheduled');
    entry.callback();
    return entry.ms;
  }
}

function harness(since = 0) {
  const sockets: FakeSocket[] = [];
  const received: NiniEvent[] = [];
  const clock = new ManualClock();
  const stream = new EventStream({
    url: after => `ws://host/events?since=${after}`,
    onEvents: events => received.push(...events),
    createSocket: url => {
      const socket = new FakeSocket(url);
      sockets.push(socket);
      return socket;
    },
    scheduler: clock,
    since,
    firstDelayMs: 100,
    maxDelayMs: 800
  });
  return { stream, sockets, received, clock };
}

test('a dropped socket reconnects from the last seq it delivered', () => {
  const { sockets, received, clock } = harness();
  assert.equal(sockets[0].url, 'ws://host/events?since=0');
  sockets[0].open();
  [1, 2, 3].forEach(seq => sockets[0].send(seq));
  sockets[0].drop();
  assert.equal(clock.fire(), 100);
  assert.equal(sockets[1].url, 'ws://host/events?since=3');
  // the server replays from since; anything at or below 3 is not delivered twice
  [3, 4].forEach(seq => sockets[1].send(seq));
  assert.deepEqual(
    received.map(event => event.seq),
    [1, 2, 3, 4]
  );
});

test('retries back off, and a delivered event resets the backoff', () => {
  const { sockets, clock } = harness(10);
  sockets[0].drop();
  assert.equal(clock.fire(), 100);
  sockets[1].drop();
  assert.equal(clock.fire(), 200);
  sockets[2].drop();
  assert.equal(clock.fire(), 400);
  sockets[3].drop();
  assert.equal(clock.fire(), 800);
  sockets[4].drop();
  assert.equal(clock.fire(), 800); // capped
  sockets[5].send(11);
  sockets[5].drop();
  assert.equal(clock.fire(), 100);
  assert.equal(sockets[6].url, 'ws://host/events?since=11');
});

test('dispose closes the socket and stops reconnecting', () => {
  const { stream, sockets, clock } = harness();
  sockets[0].drop();
  assert.equal(clock.pending.length, 1);
  stream.dispose();
  assert.equal(clock.pending.length, 0);
  const { stream: second, sockets: open } = harness();
  second.dispose();
  assert.equal(open[0].closed, true);
  open[0].onclose?.({});
  assert.equal(open.length, 1);
});

test('what is not an event is ignored and the stream goes on', () => {
  const { sockets, received } = harness();
  sockets[0].onmessage?.({ data: 'not json' });
  sockets[0].onmessage?.({ data: '{"no": "seq"}' });
  sockets[0].send(1);
  assert.deepEqual(
    received.map(event => event.seq),
    [1]
  );
});

test('a batched message delivers its events in one call, less those already seen', () => {
  const calls: number[][] = [];
  const sockets: FakeSocket[] = [];
  new EventStream({
    url: after => `ws://host/events?since=${after}`,
    onEvents: events => calls.push(events.map(event => event.seq)),
    createSocket: url => {
      const socket = new FakeSocket(url);
      sockets.push(socket);
      return socket;
    },
    scheduler: new ManualClock()
  });
  const batch = (seqs: number[]) =>
    JSON.stringify(
      seqs.map(seq => ({ seq, type: 'tool_call', session_id: 's', data: {} }))
    );
  sockets[0].send(1);
  sockets[0].onmessage?.({ data: batch([1, 2, 3]) });
  sockets[0].onmessage?.({ data: batch([4, 5]) });
  sockets[0].onmessage?.({ data: batch([5]) }); // all seen: no call
  assert.deepEqual(calls, [[1], [2, 3], [4, 5]]);
});
