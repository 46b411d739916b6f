/**
 * The live status line above the composer: what the chat waits for and for how long, with Stop
 * beside it. Its state is ./status (pure); this is its element and its clock: the seconds tick
 * while something is awaited, and the line is hidden when nothing is.
 */
import type { NiniEvent } from './api';
import { el } from './dom';
import {
  IDLE,
  nextStatus,
  Status,
  StatusInput,
  statusText,
  waiting
} from './status';

const TICK_MS = 100; // "Running step 3 · 2.1 s" shows tenths

export class StatusLine {
  readonly node = el('div', 'nini-status-line');
  private readonly text = el('span', 'nini-status-text');
  private state: Status = IDLE;
  private timer: ReturnType<typeof setInterval> | null = null;

  /** `stop`: the chat's Stop button, shown beside the words. */
  constructor(
    stop: HTMLElement,
    private readonly now: () => number = () => performance.now()
  ) {
    const pulse = el('span', 'nini-status-pulse');
    pulse.setAttribute('aria-hidden', 'true');
    this.node.append(pulse, this.text, stop);
    this.show();
  }

  get status(): Status {
    return this.state;
  }

  /** Whether something is awaited (a question sent, a run going, a stop asked). */
  get waiting(): boolean {
    return waiting(this.state);
  }

  /** What the user did (asked, stopped...). */
  apply(input: StatusInput): void {
    this.state = nextStatus(this.state, input, this.now());
    this.show();
  }

  /** A batch of the session's events, as they arrive. */
  events(events: NiniEvent[]): void {
    const now = this.now();
    let state = this.state;
    for (const event of events) {
      state = nextStatus(state, { kind: 'event', event }, now);
    }
    this.state = state;
    this.show();
  }

  /** Another session is shown: nothing is awaited in it yet. */
  reset(): void {
    this.state = IDLE;
    this.show();
  }

  dispose(): void {
    this.reset();
  }

  private show(): void {
    const on = waiting(this.state);
    this.node.hidden = !on;
    this.node.dataset.phase = this.state.phase;
    this.render();
    if (on && this.timer === null) {
      this.timer = setInterval(() => this.render(), TICK_MS);
    } else if (!on && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  private render(): void {
    const words = statusText(this.state, this.now());
    if (this.text.textContent !== words) {
      this.text.textContent = words;
    }
    this.node.title =
      this.state.phase === 'running'
        ? [this.state.tool, this.state.label].filter(Boolean).join(' · ')
        : '';
  }
}
