/**
 * The live status line's state: what the chat is waiting for, and since when.
 *
 * Pure (no DOM, no clock of its own): the chat feeds it what the user did (asked, stopped) and the
 * session's events, each with the time it happened, and asks for the words to show at any later
 * time. So every wait says what it is and how long it has lasted ("Thinking · 4 s", "Running step
 * 3 · 2.1 s", "Starting sandbox…"), and the rules are tested in node on event lists.
 */
import type { NiniEvent } from './api';
import { __ } from './i18n';

export type StatusPhase =
  'idle' | 'thinking' | 'writing' | 'running' | 'approval' | 'stopping';

export interface Status {
  phase: StatusPhase;
  /** When the phase began (the clock's ms). */
  since: number;
  /** The turn followed (null before its first event is in). */
  turn: string | null;
  /** Steps of this turn so far: the running one's number. */
  step: number;
  /** The running step's tool and label. */
  tool: string;
  label: string;
  /** When the running step began. */
  stepSince: number;
  /** A kernel starting for the session: when it began, where ("bwrap", "none", "gateway"), and
   * whether it replaces one the server shut down (idle, or over its cap: its variables are gone). */
  kernel: { since: number; where: string; culled: boolean } | null;
  /** Turns whose `done` came: their later events (stop hooks' steps) are not waited for. */
  ended: string[];
}

export type StatusInput =
  | { kind: 'ask' } // the user pressed Enter: the question is on its way
  | { kind: 'ask_failed' } // the server refused it
  | { kind: 'stop' } // the user pressed Stop
  | { kind: 'stop_missed' } // the server had no run to stop
  | { kind: 'event'; event: NiniEvent };

export const IDLE: Status = {
  phase: 'idle',
  since: 0,
  turn: null,
  step: 0,
  tool: '',
  label: '',
  stepSince: 0,
  kernel: null,
  ended: []
};

const ENDED_KEPT = 20; // enough to recognise a late stop hook's events; older turns are long over

/** The status after `input`, which happened at `now` (ms). */
export function nextStatus(
  status: Status,
  input: StatusInput,
  now: number
): Status {
  switch (input.kind) {
    case 'ask':
      return { ...IDLE, ended: status.ended, phase: 'thinking', since: now };
    case 'ask_failed':
      return { ...IDLE, ended: status.ended };
    case 'stop':
      return status.phase === 'idle'
        ? status
        : { ...status, phase: 'stopping', since: now };
    case 'stop_missed':
      return status.phase === 'stopping'
        ? { ...IDLE, ended: status.ended }
        : status;
    case 'event':
      return onEvent(status, input.event, now);
  }
}

function onEvent(status: Status, event: NiniEvent, now: number): Status {
  const turn = event.turn_id;
  if (turn !== null && status.ended.includes(turn)) {
    return status; // after the answer: a stop hook's work, nobody waits for it
  }
  if (event.type === 'user_message') {
    const same =
      status.phase !== 'idle' && (status.turn === null || status.turn === turn);
    const waited = same && status.phase === 'thinking' ? status.since : now; // the ask's seconds go on
    return {
      ...IDLE,
      ended: status.ended,
      phase: 'thinking',
      since: waited,
      turn
    };
  }
  if (status.phase === 'idle') {
    return status; // no question going: another client's call, a stop hook's work after an answer
  }
  const mine = { ...status, turn: status.turn ?? turn };
  if (event.type === 'done') {
    return { ...IDLE, ended: [...status.ended, turn ?? ''].slice(-ENDED_KEPT) };
  }
  if (status.phase === 'stopping') {
    return mine; // only the run's end ends a stop
  }
  const data = event.data ?? {};
  switch (event.type) {
    case 'assistant_delta':
      return mine.phase === 'writing'
        ? mine
        : { ...mine, phase: 'writing', since: now };
    case 'tool_call': {
      const args = data.arguments ?? {};
      const label = String(args.label ?? args.name ?? args.path ?? '');
      return {
        ...mine,
        phase: 'running',
        since: now,
        step: mine.step + 1,
        tool: String(data.name ?? ''),
        label,
        stepSince: now
      };
    }
    case 'tool_result':
      return { ...mine, phase: 'thinking', since: now, kernel: null };
    case 'approval_required':
      return { ...mine, phase: 'approval', since: now };
    case 'approval_resolved':
      return mine.phase === 'approval'
        ? { ...mine, phase: 'running', since: mine.stepSince }
        : mine;
    case 'kernel_start':
      return {
        ...mine,
        kernel:
          data.state === 'starting'
            ? {
                since: now,
                where: String(data.sandbox ?? ''),
                culled: Boolean(data.culled)
              }
            : null
      };
    default:
      return mine;
  }
}

/** Whether the chat waits for something (the line shows, Stop can be pressed). */
export function waiting(status: Status): boolean {
  return status.phase !== 'idle';
}

/** The line's words at `now`: empty when nothing is awaited. */
export function statusText(status: Status, now: number): string {
  const seconds = (since: number) => Math.max(0, now - since) / 1000;
  const whole = (since: number) => Math.floor(seconds(since));
  if (status.phase === 'idle') {
    return '';
  }
  if (status.phase === 'stopping') {
    return __('Stopping… · %1 s', whole(status.since));
  }
  if (status.phase === 'approval') {
    return __('Waiting for your OK · %1 s', whole(status.since));
  }
  if (status.kernel !== null) {
    const words = status.kernel.culled
      ? __('The idle kernel was shut down; starting a new one…')
      : status.kernel.where === 'bwrap'
        ? __('Starting sandbox…')
        : __('Starting the kernel…');
    return `${words} · ${__('%1 s', whole(status.kernel.since))}`;
  }
  switch (status.phase) {
    case 'thinking':
      return __('Thinking · %1 s', whole(status.since));
    case 'writing':
      return __('Writing the answer · %1 s', whole(status.since));
    case 'running':
      return __(
        'Running step %1 · %2 s',
        status.step,
        seconds(status.stepSince).toFixed(1)
      );
  }
}
