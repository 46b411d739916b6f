/**
 * A session's event socket that survives drops: it remembers the last `seq` it delivered and
 * reconnects with `?since=` that seq, so a viewer misses nothing and sees nothing twice.
 *
 * The socket and the timer are injected (`SocketFactory`, `Scheduler`) so the reconnect logic is
 * tested without a browser or a server.
 */
import type { NiniEvent } from './api';

/** The part of `WebSocket` the stream uses. */
export interface SocketLike {
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: unknown) => void) | null;
  onerror: ((event: unknown) => void) | null;
  close(code?: number, reason?: string): void;
}

export type SocketFactory = (url: string) => SocketLike;

export interface Scheduler {
  set(callback: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export const browserScheduler: Scheduler = {
  set: (callback, ms) => setTimeout(callback, ms),
  clear: handle => clearTimeout(handle as ReturnType<typeof setTimeout>)
};

export type StreamState = 'connecting' | 'open' | 'waiting' | 'closed';

export interface StreamOptions {
  url: (since: number) => string;
  onEvents: (events: NiniEvent[]) => void;
  onState?: (state: StreamState, retryInMs?: number) => void;
  createSocket?: SocketFactory;
  scheduler?: Scheduler;
  since?: number;
  /** Backoff of the reconnects: first delay, doubled each time up to `maxDelayMs`. */
  firstDelayMs?: number;
  maxDelayMs?: number;
}

export class EventStream {
  lastSeq: number;
  reconnects = 0;
  private socket: SocketLike | null = null;
  private timer: unknown = null;
  private delay: number;
  private disposed = false;
  private readonly createSocket: SocketFactory;
  private readonly scheduler: Scheduler;

  constructor(private readonly options: StreamOptions) {
    this.lastSeq = options.since ?? 0;
    this.delay = options.firstDelayMs ?? 500;
    this.createSocket =
      options.createSocket ??
      (url => new WebSocket(url) as unknown as SocketLike);
    this.scheduler = options.scheduler ?? browserScheduler;
    this.connect();
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  /** Close for good: no reconnect after this. */
  dispose(): void {
    if (this.disposed) {
      return;
    }
    this.disposed = true;
    if (this.timer !== null) {
      this.scheduler.clear(this.timer);
      this.timer = null;
    }
    const socket = this.socket;
    this.socket = null;
    if (socket !== null) {
      socket.onclose = socket.onmessage = socket.onerror = socket.onopen = null;
      socket.close(1000, 'viewer closed');
    }
    this.options.onState?.('closed');
  }

  private connect(): void {
    this.timer = null;
    if (this.disposed) {
      return;
    }
    this.options.onState?.('connecting');
    const socket = this.createSocket(this.options.url(this.lastSeq));
    this.socket = socket;
    socket.onopen = () => {
      this.options.onState?.('open');
    };
    socket.onmessage = message => this.receive(message.data);
    socket.onerror = () => {
      /* onclose follows and reconnects */
    };
    socket.onclose = () => {
      if (this.socket === socket) {
        this.socket = null;
        this.retry();
      }
    };
  }

  /** One message: an event, or (the server batches a burst for `?batch=1`) an array of them. */
  private receive(raw: unknown): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(String(raw));
    } catch {
      return; // not an event: ignore it rather than stop the stream
    }
    const fresh: NiniEvent[] = [];
    for (const event of (Array.isArray(parsed)
      ? parsed
      : [parsed]) as NiniEvent[]) {
      if (typeof event?.seq === 'number' && event.seq > this.lastSeq) {
        this.lastSeq = event.seq; // an older seq is a replayed duplicate after a reconnect
        fresh.push(event);
      }
    }
    if (fresh.length) {
      this.delay = this.options.firstDelayMs ?? 500; // it works again: the next drop retries quickly
      this.options.onEvents(fresh);
    }
  }

  private retry(): void {
    if (this.disposed) {
      return;
    }
    const wait = this.delay;
    this.delay = Math.min(this.delay * 2, this.options.maxDelayMs ?? 10_000);
    this.reconnects += 1;
    this.options.onState?.('waiting', wait);
    this.timer = this.scheduler.set(() => this.connect(), wait);
  }
}
